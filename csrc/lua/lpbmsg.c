/* lpbmsg.c -- protobuf messages <-> Lua tables through protoc-c's
 * descriptors (otskit.core.wire.proto_encode / proto_decode). Fields by their
 * .proto names, enums by value name, int64 exact, bytes as strings; the
 * mapping to the store's vocabulary is otskit.wire's (Lua). */
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "compat.h"
#include "laux.h"
#include "tablestore.pb-c.h"
#include "tablestore_filter.pb-c.h"
#include "search.pb-c.h"
#include "search_agg.pb-c.h"
#include "search_score.pb-c.h"

static const ProtobufCMessageDescriptor *const messages[] = {
  &ots__error__descriptor,
  &ots__create_table_request__descriptor, &ots__create_table_response__descriptor,
  &ots__update_table_request__descriptor, &ots__update_table_response__descriptor,
  &ots__describe_table_request__descriptor, &ots__describe_table_response__descriptor,
  &ots__list_table_request__descriptor, &ots__list_table_response__descriptor,
  &ots__delete_table_request__descriptor, &ots__delete_table_response__descriptor,
  &ots__get_row_request__descriptor, &ots__get_row_response__descriptor,
  &ots__put_row_request__descriptor, &ots__put_row_response__descriptor,
  &ots__update_row_request__descriptor, &ots__update_row_response__descriptor,
  &ots__delete_row_request__descriptor, &ots__delete_row_response__descriptor,
  &ots__batch_get_row_request__descriptor, &ots__batch_get_row_response__descriptor,
  &ots__batch_write_row_request__descriptor, &ots__batch_write_row_response__descriptor,
  &ots__get_range_request__descriptor, &ots__get_range_response__descriptor,
  &ots__compute_split_points_by_size_request__descriptor,
  &ots__compute_split_points_by_size_response__descriptor,
  &ots__create_index_request__descriptor, &ots__create_index_response__descriptor,
  &ots__drop_index_request__descriptor, &ots__drop_index_response__descriptor,
  &ots__add_defined_column_request__descriptor, &ots__add_defined_column_response__descriptor,
  &ots__delete_defined_column_request__descriptor, &ots__delete_defined_column_response__descriptor,
  &ots__start_local_transaction_request__descriptor, &ots__start_local_transaction_response__descriptor,
  &ots__commit_transaction_request__descriptor, &ots__commit_transaction_response__descriptor,
  &ots__abort_transaction_request__descriptor, &ots__abort_transaction_response__descriptor,
  &ots__sqlquery_request__descriptor, &ots__sqlquery_response__descriptor,
  &ots__table_consumed_capacity__descriptor,
  &ots__filter__filter__descriptor, &ots__filter__single_column_value_filter__descriptor,
  &ots__filter__composite_column_value_filter__descriptor,
  &ots__filter__column_pagination_filter__descriptor,
  /* search.proto */
  &ots__search__query__descriptor, &ots__search__match_all_query__descriptor,
  &ots__search__match_query__descriptor, &ots__search__match_phrase_query__descriptor,
  &ots__search__term_query__descriptor, &ots__search__terms_query__descriptor,
  &ots__search__range_query__descriptor, &ots__search__prefix_query__descriptor,
  &ots__search__wildcard_query__descriptor, &ots__search__exists_query__descriptor,
  &ots__search__bool_query__descriptor, &ots__search__const_score_query__descriptor, &ots__search__field_value_factor__descriptor,
  &ots__search__function_score_query__descriptor,
  &ots__search__nested_query__descriptor, &ots__search__geo_bounding_box_query__descriptor,
  &ots__search__geo_distance_query__descriptor, &ots__search__geo_polygon_query__descriptor,
  &ots__search__nested_filter__descriptor, &ots__search__field_sort__descriptor,
  &ots__search__geo_distance_sort__descriptor, &ots__search__score_sort__descriptor,
  &ots__search__primary_key_sort__descriptor, &ots__search__doc_sort__descriptor,
  &ots__search__sorter__descriptor, &ots__search__sort__descriptor, &ots__search__search_query__descriptor,
  &ots__search__columns_to_get__descriptor, &ots__search__search_request__descriptor,
  &ots__search__search_hit__descriptor, &ots__search__search_response__descriptor,
  &ots__search__single_word_analyzer_parameter__descriptor,
  &ots__search__split_analyzer_parameter__descriptor, &ots__search__fuzzy_analyzer_parameter__descriptor,
  &ots__search__vector_options__descriptor, &ots__search__field_schema__descriptor,
  &ots__search__index_setting__descriptor, &ots__search__index_schema__descriptor,
  &ots__search__create_search_index_request__descriptor,
  &ots__search__create_search_index_response__descriptor,
  &ots__search__update_search_index_request__descriptor,
  &ots__search__update_search_index_response__descriptor, &ots__search__index_info__descriptor,
  &ots__search__list_search_index_request__descriptor, &ots__search__list_search_index_response__descriptor,
  &ots__search__delete_search_index_request__descriptor,
  &ots__search__delete_search_index_response__descriptor, &ots__search__sync_stat__descriptor,
  &ots__search__metering_info__descriptor, &ots__search__index_status__descriptor,
  &ots__search__describe_search_index_request__descriptor,
  &ots__search__describe_search_index_response__descriptor,
  &ots__search__search_index_splits_options__descriptor, &ots__search__compute_splits_request__descriptor,
  &ots__search__compute_splits_response__descriptor, &ots__search__scan_query__descriptor,
  &ots__search__parallel_scan_request__descriptor, &ots__search__parallel_scan_response__descriptor,
  /* search_score.proto */
  &ots__search__field_value_factor_function__descriptor,
  &ots__search__decay_func_numeric_param__descriptor,
  &ots__search__decay_func_date_param__descriptor, &ots__search__decay_func_geo_param__descriptor,
  &ots__search__decay_function__descriptor,
  &ots__search__random_score_function__descriptor,
  &ots__search__function__descriptor,
  &ots__search__functions_score_query__descriptor,
  &ots__search__knn_vector_query__descriptor,
  /* search_agg.proto */
  &ots__search__aggregation__descriptor, &ots__search__aggregations__descriptor,
  &ots__search__group_by__descriptor, &ots__search__group_bys__descriptor,
  &ots__search__collapse__descriptor, &ots__search__avg_aggregation__descriptor,
  &ots__search__max_aggregation__descriptor, &ots__search__min_aggregation__descriptor,
  &ots__search__sum_aggregation__descriptor, &ots__search__count_aggregation__descriptor,
  &ots__search__distinct_count_aggregation__descriptor, &ots__search__top_rows_aggregation__descriptor,
  &ots__search__percentiles_aggregation__descriptor, &ots__search__date_time_value__descriptor,
  &ots__search__field_range__descriptor, &ots__search__group_key_sort__descriptor,
  &ots__search__row_count_sort__descriptor, &ots__search__sub_agg_sort__descriptor,
  &ots__search__group_by_sorter__descriptor, &ots__search__group_by_sort__descriptor,
  &ots__search__group_by_field__descriptor, &ots__search__range__descriptor,
  &ots__search__group_by_range__descriptor, &ots__search__group_by_filter__descriptor,
  &ots__search__geo_point__descriptor, &ots__search__group_by_geo_distance__descriptor,
  &ots__search__group_by_histogram__descriptor, &ots__search__group_by_date_histogram__descriptor,
  &ots__search__group_by_geo_grid__descriptor, &ots__search__group_by_composite__descriptor,
  &ots__search__avg_aggregation_result__descriptor, &ots__search__max_aggregation_result__descriptor,
  &ots__search__min_aggregation_result__descriptor, &ots__search__sum_aggregation_result__descriptor,
  &ots__search__count_aggregation_result__descriptor,
  &ots__search__distinct_count_aggregation_result__descriptor,
  &ots__search__top_rows_aggregation_result__descriptor,
  &ots__search__percentiles_aggregation_item__descriptor,
  &ots__search__percentiles_aggregation_result__descriptor, &ots__search__aggregation_result__descriptor,
  &ots__search__aggregations_result__descriptor, &ots__search__group_by_result__descriptor,
  &ots__search__group_bys_result__descriptor, &ots__search__group_by_field_result_item__descriptor,
  &ots__search__group_by_field_result__descriptor, &ots__search__group_by_range_result_item__descriptor,
  &ots__search__group_by_range_result__descriptor,
  &ots__search__group_by_geo_distance_result_item__descriptor,
  &ots__search__group_by_geo_distance_result__descriptor,
  &ots__search__group_by_filter_result_item__descriptor, &ots__search__group_by_filter_result__descriptor,
  &ots__search__group_by_histogram_item__descriptor, &ots__search__group_by_histogram_result__descriptor,
  &ots__search__group_by_date_histogram_item__descriptor,
  &ots__search__group_by_date_histogram_result__descriptor, &ots__search__geo_grid__descriptor,
  &ots__search__group_by_geo_grid_result_item__descriptor,
  &ots__search__group_by_geo_grid_result__descriptor,
  &ots__search__group_by_composite_result_item__descriptor,
  &ots__search__group_by_composite_result__descriptor,
  NULL
};

static const ProtobufCMessageDescriptor *find_message(lua_State *L, int idx) {
  const char *name = luaL_checkstring(L, idx);
  int i;
  for (i = 0; messages[i]; i++)
    if (strcmp(messages[i]->short_name, name) == 0) return messages[i];
  luaL_error(L, "otskit.wire: unknown message %s", name);
  return NULL;
}

/* ------------------------------------------------------------ arena:
 * every allocation of one encode or decode is a userdata without a
 * metatable, anchored in a plain table on the stack (anchor): the GC frees
 * them, also when an error unwinds past the call. No object with a
 * finalizer per call: a finalizer run by the GC while LuaJIT records a
 * trace aborts that trace ("hook called during recording"). */
typedef struct { lua_State *L; int anchor; lua_Integer n; } arena;

/* NULL when n is too large; raises on out of memory */
static void *arena_alloc(arena *a, size_t n) {
  void *p;
  if (n > (size_t)1 << 40) return NULL;
  p = lua_newuserdata(a->L, n ? n : 1);
  lua_rawseti(a->L, a->anchor, ++a->n);
  return p;
}

static void arena_init(arena *a, lua_State *L) {
  lua_newtable(L);
  a->L = L;
  a->anchor = lua_gettop(L);
  a->n = 0;
}

/* protobuf-c's allocator over an arena (unpacked messages) */
static void *pa_alloc(void *data, size_t size) { return arena_alloc((arena *)data, size); }
static void pa_free(void *data, void *p) { (void)data; (void)p; }

/* ------------------------------------------------------------ encode */

typedef struct { lua_State *L; arena *a; char err[200]; } penc;

static int perr(penc *e, const ProtobufCFieldDescriptor *f, const char *why) {
  snprintf(e->err, sizeof e->err, "field %s: %s", f->name, why);
  return 0;
}

static int fill(penc *e, int idx, const ProtobufCMessageDescriptor *d, ProtobufCMessage *m);

/* an integer field takes a Lua number: a numeric string ("7") is a
 * caller's type mistake, refused rather than coerced onto the wire. The
 * one exception is LuaJIT's int64 convention (the decoder's too): a 64-bit
 * field beyond +-2^53, which no double holds exactly, as a decimal string. */
static int int_typed(penc *e, int idx, const ProtobufCFieldDescriptor *f, int wide) {
  lua_State *L = e->L;
  if (lua_type(L, idx) == LUA_TNUMBER) return 1;
#if OTSKIT_LUA51
  if (wide && lua_type(L, idx) == LUA_TSTRING) {
    int64_t v = 0;
    const char *why = NULL;
    if (otsk_toint64(L, idx, &v, &why) && (v < -9007199254740992LL || v > 9007199254740992LL))
      return 1;
  }
#else
  (void)wide;
#endif
  snprintf(e->err, sizeof e->err, "field %s: must be an integer number, got %s", f->name,
           luaL_typename(L, idx));
  return 0;
}

/* the Lua value at idx into the member at dst */
static int scalar(penc *e, int idx, const ProtobufCFieldDescriptor *f, void *dst) {
  lua_State *L = e->L;
  int64_t v = 0;
  const char *why = NULL;
  switch (f->type) {
  case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
  case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32:
    if (!int_typed(e, idx, f, 0)) return 0;
    break;
  case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
  case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64:
    if (!int_typed(e, idx, f, 1)) return 0;
    break;
  default: break;
  }
  switch (f->type) {
  case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
    if (!otsk_toint64(L, idx, &v, &why)) return perr(e, f, why);
    if (v < INT32_MIN || v > INT32_MAX) return perr(e, f, "out of int32 range");
    *(int32_t *)dst = (int32_t)v;
    return 1;
  case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32:
    if (!otsk_toint64(L, idx, &v, &why)) return perr(e, f, why);
    if (v < 0 || v > (int64_t)UINT32_MAX) return perr(e, f, "out of uint32 range");
    *(uint32_t *)dst = (uint32_t)v;
    return 1;
  case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
  case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64:
    if (!otsk_toint64(L, idx, &v, &why)) return perr(e, f, why);
    *(int64_t *)dst = v;
    return 1;
  case PROTOBUF_C_TYPE_FLOAT:
    if (lua_type(L, idx) != LUA_TNUMBER) return perr(e, f, "not a number");
    *(float *)dst = (float)lua_tonumber(L, idx);
    return 1;
  case PROTOBUF_C_TYPE_DOUBLE:
    if (lua_type(L, idx) != LUA_TNUMBER) return perr(e, f, "not a number");
    *(double *)dst = (double)lua_tonumber(L, idx);
    return 1;
  case PROTOBUF_C_TYPE_BOOL:
    if (lua_type(L, idx) != LUA_TBOOLEAN) return perr(e, f, "not a boolean");
    *(protobuf_c_boolean *)dst = lua_toboolean(L, idx);
    return 1;
  case PROTOBUF_C_TYPE_ENUM: {
    const ProtobufCEnumDescriptor *ed = f->descriptor;
    const ProtobufCEnumValue *ev = NULL;
    if (lua_type(L, idx) == LUA_TSTRING) ev = protobuf_c_enum_descriptor_get_value_by_name(ed, lua_tostring(L, idx));
    else if (otsk_toint64(L, idx, &v, &why) && v >= INT32_MIN && v <= INT32_MAX)
      ev = protobuf_c_enum_descriptor_get_value(ed, (int)v);
    if (!ev) return perr(e, f, "not a value of the enum");
    *(int *)dst = ev->value;
    return 1;
  }
  case PROTOBUF_C_TYPE_STRING: {
    size_t n;
    const char *s;
    if (lua_type(L, idx) != LUA_TSTRING) return perr(e, f, "not a string");
    s = lua_tolstring(L, idx, &n);
    if (strlen(s) != n) return perr(e, f, "string with a NUL byte");
    *(const char **)dst = s; /* anchored by the caller's table */
    return 1;
  }
  case PROTOBUF_C_TYPE_BYTES: {
    ProtobufCBinaryData *b = dst;
    if (lua_type(L, idx) != LUA_TSTRING) return perr(e, f, "not a string");
    b->data = (uint8_t *)lua_tolstring(L, idx, &b->len);
    return 1;
  }
  case PROTOBUF_C_TYPE_MESSAGE: {
    const ProtobufCMessageDescriptor *md = f->descriptor;
    ProtobufCMessage *sub;
    if (lua_type(L, idx) != LUA_TTABLE) return perr(e, f, "not a table");
    if (!(sub = arena_alloc(e->a, md->sizeof_message))) return perr(e, f, "out of memory");
    md->message_init(sub);
    *(ProtobufCMessage **)dst = sub;
    return fill(e, lua_absindex(L, idx), md, sub);
  }
  }
  return perr(e, f, "unsupported field type");
}

static size_t elem_size(const ProtobufCFieldDescriptor *f) {
  switch (f->type) {
  case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
  case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64: case PROTOBUF_C_TYPE_DOUBLE: return 8;
  case PROTOBUF_C_TYPE_BOOL: return sizeof(protobuf_c_boolean);
  case PROTOBUF_C_TYPE_ENUM: return sizeof(int);
  case PROTOBUF_C_TYPE_STRING: return sizeof(char *);
  case PROTOBUF_C_TYPE_BYTES: return sizeof(ProtobufCBinaryData);
  case PROTOBUF_C_TYPE_MESSAGE: return sizeof(ProtobufCMessage *);
  default: return 4;
  }
}

static int fill(penc *e, int idx, const ProtobufCMessageDescriptor *d, ProtobufCMessage *m) {
  lua_State *L = e->L;
  unsigned i;
  if (!lua_checkstack(L, 8)) { snprintf(e->err, sizeof e->err, "nested too deep"); return 0; }
  for (i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    char *member = (char *)m + f->offset;
    int ok = 1;
    lua_getfield(L, idx, f->name);
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      if (f->label == PROTOBUF_C_LABEL_REQUIRED) {
        snprintf(e->err, sizeof e->err, "%s: missing required field %s", d->short_name, f->name);
        return 0;
      }
      continue;
    }
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t n, j, es = elem_size(f);
      char *arr;
      if (lua_type(L, -1) != LUA_TTABLE) { lua_pop(L, 1); return perr(e, f, "not a list"); }
      n = lua_rawlen(L, -1);
      if (n) {
        if (!(arr = arena_alloc(e->a, n * es))) { lua_pop(L, 1); return perr(e, f, "out of memory"); }
        for (j = 0; j < n && ok; j++) {
          lua_rawgeti(L, -1, (lua_Integer)j + 1);
          ok = scalar(e, lua_gettop(L), f, arr + j * es);
          lua_pop(L, 1);
        }
        *(size_t *)((char *)m + f->quantifier_offset) = n;
        *(void **)member = arr;
      }
    } else {
      ok = scalar(e, lua_gettop(L), f, member);
      if (ok && f->label == PROTOBUF_C_LABEL_OPTIONAL && f->type != PROTOBUF_C_TYPE_STRING &&
          f->type != PROTOBUF_C_TYPE_MESSAGE)
        *(protobuf_c_boolean *)((char *)m + f->quantifier_offset) = 1;
    }
    lua_pop(L, 1);
    if (!ok) return 0;
  }
  return 1;
}

/* proto_encode(message_name, t) -> bytes | nil, msg, "OTSParameterInvalid" */
static int l_proto_encode(lua_State *L) {
  const ProtobufCMessageDescriptor *d = find_message(L, 1);
  arena ar, *a = &ar;
  penc e;
  ProtobufCMessage *m;
  size_t n;
  uint8_t *buf;
  luaL_checktype(L, 2, LUA_TTABLE);
  arena_init(a, L);
  e.L = L; e.a = a; e.err[0] = 0;
  if (!(m = arena_alloc(a, d->sizeof_message))) return luaL_error(L, "otskit.wire: out of memory");
  d->message_init(m);
  if (!fill(&e, 2, d, m)) return otsk_fail(L, "OTSParameterInvalid", "%s", e.err);
  n = protobuf_c_message_get_packed_size(m);
  if (!(buf = arena_alloc(a, n))) return luaL_error(L, "otskit.wire: out of memory");
  protobuf_c_message_pack(m, buf);
  lua_pushlstring(L, (const char *)buf, n);
  return 1;
}

/* ------------------------------------------------------------ decode */

static void push_msg(lua_State *L, const ProtobufCMessage *m, unsigned *unknown);

static void push_scalar(lua_State *L, const ProtobufCFieldDescriptor *f, const void *p, unsigned *unknown) {
  switch (f->type) {
  case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
    lua_pushinteger(L, *(const int32_t *)p); return;
  case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32:
    otsk_pushint64(L, *(const uint32_t *)p); return;
  case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
  case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64:
    otsk_pushint64(L, *(const int64_t *)p); return;
  case PROTOBUF_C_TYPE_FLOAT: lua_pushnumber(L, *(const float *)p); return;
  case PROTOBUF_C_TYPE_DOUBLE: lua_pushnumber(L, *(const double *)p); return;
  case PROTOBUF_C_TYPE_BOOL: lua_pushboolean(L, *(const protobuf_c_boolean *)p); return;
  case PROTOBUF_C_TYPE_ENUM: {
    const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(f->descriptor, *(const int *)p);
    if (ev) lua_pushstring(L, ev->name);
    else lua_pushinteger(L, *(const int *)p);
    return;
  }
  case PROTOBUF_C_TYPE_STRING: lua_pushstring(L, *(char *const *)p); return;
  case PROTOBUF_C_TYPE_BYTES: {
    const ProtobufCBinaryData *b = p;
    lua_pushlstring(L, (const char *)b->data, b->len);
    return;
  }
  case PROTOBUF_C_TYPE_MESSAGE: push_msg(L, *(ProtobufCMessage *const *)p, unknown); return;
  }
  lua_pushnil(L);
}

static void push_msg(lua_State *L, const ProtobufCMessage *m, unsigned *unknown) {
  const ProtobufCMessageDescriptor *d = m->descriptor;
  unsigned i;
  luaL_checkstack(L, 8, "otskit.wire: message nested too deep");
  if (m->n_unknown_fields && !*unknown) *unknown = m->unknown_fields[0].tag;
  lua_createtable(L, 0, (int)d->n_fields);
  for (i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    const char *member = (const char *)m + f->offset;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t n = *(const size_t *)((const char *)m + f->quantifier_offset), j, es = elem_size(f);
      const char *arr = *(char *const *)member;
      if (n == 0) continue;
      lua_createtable(L, (int)n, 0);
      for (j = 0; j < n; j++) {
        push_scalar(L, f, arr + j * es, unknown);
        lua_rawseti(L, -2, (lua_Integer)j + 1);
      }
    } else {
      if (f->label == PROTOBUF_C_LABEL_OPTIONAL) {
        if (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_MESSAGE) {
          if (*(void *const *)member == NULL) continue;
        } else if (!*(const protobuf_c_boolean *)((const char *)m + f->quantifier_offset)) {
          continue;
        }
      }
      push_scalar(L, f, member, unknown);
    }
    lua_setfield(L, -2, f->name);
  }
}

/* proto_decode(message_name, bytes) -> t, first unknown field number or nil
 * | nil, msg, "CorruptMessage" (malformed, or a required field missing) */
static int l_proto_decode(lua_State *L) {
  const ProtobufCMessageDescriptor *d = find_message(L, 1);
  size_t n;
  const char *s = luaL_checklstring(L, 2, &n);
  unsigned unknown = 0;
  arena a;
  ProtobufCAllocator alloc;
  ProtobufCMessage *m;
  arena_init(&a, L);
  alloc.alloc = pa_alloc;
  alloc.free = pa_free;
  alloc.allocator_data = &a;
  /* the message's memory is the arena's: the GC frees it */
  m = protobuf_c_message_unpack(d, &alloc, n, (const uint8_t *)s);
  if (!m) return otsk_fail(L, "CorruptMessage", "%s: malformed protobuf or a required field missing", d->short_name);
  push_msg(L, m, &unknown);
  if (unknown) { lua_pushinteger(L, (lua_Integer)unknown); return 2; }
  return 1;
}

/* A varint of at most max bytes at *p (< end): 1 and *p past it, or 0. */
static int span_varint(const uint8_t **p, const uint8_t *end, unsigned max, uint64_t *v) {
  unsigned i;
  *v = 0;
  for (i = 0; i < max && *p + i < end; i++) {
    *v |= (uint64_t)((*p)[i] & 0x7f) << (7 * i);
    if (!((*p)[i] & 0x80)) {
      *p += i + 1;
      return 1;
    }
  }
  return 0;
}

/* proto_decode_span(message_name, bytes, field) -> t, first unknown field
 * number or false, off, len | nil: proto_decode's answer with the bytes
 * field number `field` (a top-level one) left where it is: t.field is ""
 * and the field's value is the len bytes at off (0-based) of bytes. No
 * copy of a large field (a GetRange answer's rows). nil: the field does
 * not appear exactly once as a length-delimited field, or the top level
 * is not plain (a group, field number 0, a tag or a length of more than
 * 4 varint bytes, a varint too long, truncated): call proto_decode, which says what it finds. The
 * message is unpacked with the field emptied (its length 0): the rest of
 * the bytes are the same, so t is what proto_decode gives but that field.
 * Tags and lengths of at most 4 varint bytes are read alike by every
 * protobuf-c. */
static int l_proto_decode_span(lua_State *L) {
  const ProtobufCMessageDescriptor *d = find_message(L, 1);
  size_t n;
  const uint8_t *s = (const uint8_t *)luaL_checklstring(L, 2, &n), *p = s, *end = s + n;
  lua_Integer want = luaL_checkinteger(L, 3);
  const uint8_t *len_at = NULL, *data = NULL, *data_end = NULL;
  int count = 0;
  unsigned unknown = 0;
  arena a;
  ProtobufCAllocator alloc;
  ProtobufCMessage *m;
  uint8_t *small;
  size_t head, tail;
  while (p < end) {
    uint64_t tag, v;
    const uint8_t *at;
    if (!span_varint(&p, end, 4, &tag) || (tag >> 3) == 0) return 0;
    switch (tag & 7) {
    case 0:
      if (!span_varint(&p, end, 10, &v)) return 0;
      if ((lua_Integer)(tag >> 3) == want) return 0;
      break;
    case 1:
      if ((size_t)(end - p) < 8 || (lua_Integer)(tag >> 3) == want) return 0;
      p += 8;
      break;
    case 5:
      if ((size_t)(end - p) < 4 || (lua_Integer)(tag >> 3) == want) return 0;
      p += 4;
      break;
    case 2:
      at = p;
      if (!span_varint(&p, end, 4, &v) || v > (size_t)(end - p)) return 0;
      if ((lua_Integer)(tag >> 3) == want) {
        count++;
        len_at = at; data = p; data_end = p + v;
      }
      p += v;
      break;
    default: return 0; /* groups, wire types 6 and 7 */
    }
  }
  if (count != 1) return 0;
  /* bytes with the field's value cut out: its length byte 0 */
  head = (size_t)(len_at - s);
  tail = (size_t)(end - data_end);
  arena_init(&a, L);
  small = (uint8_t *)arena_alloc(&a, head + 1 + tail);
  if (small == NULL) return 0;
  memcpy(small, s, head);
  small[head] = 0;
  if (tail) memcpy(small + head + 1, data_end, tail);
  alloc.alloc = pa_alloc;
  alloc.free = pa_free;
  alloc.allocator_data = &a;
  m = protobuf_c_message_unpack(d, &alloc, head + 1 + tail, small);
  if (!m) return 0;
  push_msg(L, m, &unknown);
  if (unknown) lua_pushinteger(L, (lua_Integer)unknown);
  else lua_pushboolean(L, 0);
  lua_pushinteger(L, (lua_Integer)(data - s));
  lua_pushinteger(L, (lua_Integer)(data_end - data));
  return 4;
}

static const luaL_Reg funcs[] = {
  {"proto_encode", l_proto_encode},
  {"proto_decode", l_proto_decode},
  {"proto_decode_span", l_proto_decode_span},
  {NULL, NULL}
};

/* adds proto_encode / proto_decode to the table on top of the stack */
int otsk_wire_proto_register(lua_State *L) {
  otsk_setfuncs(L, funcs);
  return 0;
}
