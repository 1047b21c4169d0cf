/* lrowstream.c -- the store's plain reads answered as PlainBuffer bytes
 * (rowstream.c): db:get_pb and db:range_pb of otskit.core.kv, used by
 * otskit.store.stream. Stored rows go from SQLite into one response
 * buffer without a Lua table per row or per cell. */
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "laux.h"
#include "lkv.h"
#include "rowstream.h"

#define WRITER_KEY "otskit.rowstream.scratch_writer" /* (not WRITER_MT: the metatable stays findable for __gc) */
#define WRITER_MT "otskit.rowstream.writer"

static int writer_gc(lua_State *L) {
  pb_writer_free((pb_writer *)luaL_checkudata(L, 1, WRITER_MT));
  return 0;
}

/* the scratch writer of this Lua state (one buffer reused by every call) */
static pb_writer *scratch_writer(lua_State *L) {
  pb_writer *w;
  lua_getfield(L, LUA_REGISTRYINDEX, WRITER_KEY);
  w = (pb_writer *)lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (w != NULL) { pb_writer_reset(w); return w; }
  w = (pb_writer *)lua_newuserdatauv(L, sizeof *w, 0);
  pb_writer_init(w);
  if (luaL_newmetatable(L, WRITER_MT)) {
    lua_pushcfunction(L, writer_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, WRITER_KEY);
  return w;
}

static int64_t opt_field_int64(lua_State *L, int idx, const char *k, int64_t def) {
  int64_t v;
  const char *why = NULL;
  lua_getfield(L, idx, k);
  if (lua_isnil(L, -1)) v = def;
  else if (!otsk_toint64(L, -1, &v, &why)) otsk_error(L, "kv", "read spec: %s: %s", k, why);
  lua_pop(L, 1);
  return v;
}

static int cmp_names(const void *a, const void *b) { return rs_name_cmp(a, b); }

/* The read spec at idx -> *o: { pk = {{name =, type =}, ...} (the table's
 * key schema), want = {name = true} | nil, lo =, hi = (timestamps, ms;
 * nil: unbounded), maxv = (versions per name, default 1), plain = bool }.
 * The names stay anchored by the spec; the want array is a userdata left
 * on the stack. */
static void read_spec(lua_State *L, int idx, rs_opts *o) {
  size_t i, n;
  memset(o, 0, sizeof *o);
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_getfield(L, idx, "pk");
  if (lua_type(L, -1) != LUA_TTABLE) otsk_error(L, "kv", "read spec: pk must be a list");
  n = (size_t)lua_rawlen(L, -1);
  if (n < 1 || n > RS_MAX_PK) otsk_error(L, "kv", "read spec: pk must have 1 to 4 columns");
  o->npk = n;
  for (i = 0; i < n; i++) {
    const char *ty;
    lua_rawgeti(L, -1, (lua_Integer)(i + 1));
    if (lua_type(L, -1) != LUA_TTABLE) otsk_error(L, "kv", "read spec: pk entries must be tables");
    lua_getfield(L, -1, "name");
    lua_getfield(L, -2, "type");
    o->pk_name[i].s = lua_tolstring(L, -2, &o->pk_name[i].n); /* anchored by the spec */
    ty = lua_tostring(L, -1);
    if (o->pk_name[i].s == NULL || ty == NULL) otsk_error(L, "kv", "read spec: pk entries need name and type");
    o->pk_type[i] = strcmp(ty, "INTEGER") == 0 ? RS_PK_INTEGER : strcmp(ty, "STRING") == 0 ? RS_PK_STRING
                  : strcmp(ty, "BINARY") == 0 ? RS_PK_BINARY : 0;
    if (o->pk_type[i] == 0) otsk_error(L, "kv", "read spec: bad key type %s", ty);
    lua_pop(L, 3);
  }
  lua_pop(L, 1);
  o->lo = opt_field_int64(L, idx, "lo", INT64_MIN);
  o->hi = opt_field_int64(L, idx, "hi", INT64_MAX);
  o->maxv = opt_field_int64(L, idx, "maxv", 1);
  if (o->maxv < 1) otsk_error(L, "kv", "read spec: maxv must be >= 1");
  lua_getfield(L, idx, "plain");
  o->plain = lua_toboolean(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, idx, "want");
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_pushnil(L); /* the want array's slot */
    return;
  }
  if (lua_type(L, -1) != LUA_TTABLE) otsk_error(L, "kv", "read spec: want must be a set of names");
  {
    int set = lua_gettop(L);
    size_t cnt = 0, cap = 0;
    rs_name *names;
    lua_pushnil(L);
    while (lua_next(L, set)) { lua_pop(L, 1); cap++; }
    names = (rs_name *)lua_newuserdatauv(L, (cap ? cap : 1) * sizeof *names, 0);
    lua_pushnil(L);
    while (lua_next(L, set)) {
      lua_pop(L, 1);
      if (lua_type(L, -1) != LUA_TSTRING) otsk_error(L, "kv", "read spec: want keys must be names");
      if (cnt < cap) { names[cnt].s = lua_tolstring(L, -1, &names[cnt].n); cnt++; } /* anchored by the set */
    }
    qsort(names, cnt, sizeof *names, cmp_names);
    o->want = names;
    o->nwant = cnt;
    lua_remove(L, set); /* the spec anchors the set; the array stays on the stack */
  }
}

/* nil, msg, "Damaged": a stored row or key that is not what the schema says */
static int damaged(lua_State *L, int rc, const char *err) {
  return otsk_fail(L, "Damaged", "%s: %s", rc == RS_BADKEY ? "a stored key" : "a stored row", err);
}

/* db:get_pb(table, key, spec) -> bytes, size | false, size (not returned:
 * no cell kept) | false, 0 (no row) | nil, msg, code. bytes: the
 * PlainBuffer header and the stored row at key, read as spec says
 * (read_spec); size: its Tablestore size. */
int otsk_kv_get_pb(lua_State *L) {
  kv_db *db = otsk_kv_checkdb(L);
  kv_table *t = otsk_kv_checktable(L, db);
  size_t kl, vl;
  const char *k, *err = NULL;
  const void *v;
  rs_opts o;
  pb_writer *w;
  int64_t size = 0;
  int rc;
  if (t == NULL) return 3;
  k = luaL_checklstring(L, 3, &kl);
  read_spec(L, 4, &o);
  w = scratch_writer(L);
  rc = kv_get(t, k, kl, &v, &vl);
  if (rc == KV_NOTFOUND) { lua_pushboolean(L, 0); lua_pushinteger(L, 0); return 2; }
  if (rc != KV_OK) return otsk_kv_fail(L, db);
  pb_write_header(w);
  rc = rs_row(w, &o, k, kl, v, vl, &size, &err);
  kv_get_done(t);
  if (rc < 0) return damaged(L, rc, err);
  if (w->oom) return luaL_error(L, "otskit.kv: out of memory");
  if (rc == RS_SKIP) lua_pushboolean(L, 0);
  else lua_pushlstring(L, (const char *)w->p, w->len);
  otsk_pushint64(L, size);
  return 2;
}

/* db:range_pb(table, lo, hi, reverse, limit, page_rows, page_bytes, spec
 * [, keys]) -> bytes, n, scanned, size, next_key, first_key, keys
 * | nil, msg, code.
 * The rows with keys in [lo, hi), ascending or (reverse) descending, read
 * as spec says (read_spec), as get_range pages them: the page stops before
 * the row past limit returned rows or page_rows scanned rows, or before
 * a row (not the first) whose size would bring the scanned size past
 * page_bytes; that row's key is next_key (nil: the range is exhausted).
 * bytes: one PlainBuffer buffer of the n returned rows ("" when none);
 * scanned: rows read, returned or not; size: their Tablestore size;
 * first_key: the first scanned key (nil: none); keys (when asked): the
 * scanned keys in order. */
int otsk_kv_range_pb(lua_State *L) {
  kv_db *db = otsk_kv_checkdb(L);
  kv_table *t = otsk_kv_checktable(L, db);
  size_t lol, hil;
  const char *lo, *hi;
  int reverse, want_keys, rc = KV_OK, cur_idx, keys_idx = 0, first_idx = 0, next_idx = 0;
  int64_t limit, page_rows, page_bytes, n = 0, scanned = 0, bytes = 0;
  rs_opts o;
  pb_writer *w;
  kv_cursor *cur;
  if (t == NULL) return 3;
  lo = luaL_checklstring(L, 3, &lol);
  hi = luaL_checklstring(L, 4, &hil);
  reverse = lua_toboolean(L, 5);
  limit = otsk_checkint64(L, 6, "kv", "#6 (limit)");
  page_rows = otsk_checkint64(L, 7, "kv", "#7 (page_rows)");
  page_bytes = otsk_checkint64(L, 8, "kv", "#8 (page_bytes)");
  if (limit < 1 || page_rows < 1 || page_bytes < 1) return otsk_error(L, "kv", "range_pb: limit and page sizes must be >= 1");
  want_keys = lua_toboolean(L, 10);
  lua_settop(L, 10);
  read_spec(L, 9, &o); /* 11: the want array */
  lua_pushnil(L);      /* 12: first key */
  first_idx = lua_gettop(L);
  lua_pushnil(L);      /* 13: next key */
  next_idx = lua_gettop(L);
  if (want_keys) lua_createtable(L, 64, 0); else lua_pushnil(L); /* 14 */
  keys_idx = lua_gettop(L);
  cur = otsk_kv_scratchcursor(L); /* 15 */
  cur_idx = lua_gettop(L);
  w = scratch_writer(L);
  if (kv_scan(t, cur, lo, lol, hi, hil, reverse, page_rows + 1) != KV_OK) return otsk_kv_fail(L, db);
  for (;;) {
    const void *k, *v;
    size_t kl, vl, mark;
    int64_t size = 0;
    const char *err = NULL;
    int r;
    rc = kv_next(cur, &k, &kl, &v, &vl);
    if (rc != KV_ROW) break;
    if (n == limit || scanned == page_rows) {
      lua_pushlstring(L, (const char *)k, kl);
      lua_replace(L, next_idx);
      break;
    }
    mark = w->len;
    if (n == 0) pb_write_header(w); /* taken back below when no row is returned */
    r = rs_row(w, &o, k, kl, v, vl, &size, &err);
    if (r < 0) { otsk_kv_scratchcursor_done(L, cur_idx); return damaged(L, r, err); }
    if (scanned > 0 && bytes + size > page_bytes) {
      w->len = mark;
      lua_pushlstring(L, (const char *)k, kl);
      lua_replace(L, next_idx);
      break;
    }
    if (r == RS_SKIP) w->len = mark; else n++;
    scanned++;
    bytes += size;
    if (scanned == 1) { lua_pushlstring(L, (const char *)k, kl); lua_replace(L, first_idx); }
    if (want_keys) {
      lua_pushlstring(L, (const char *)k, kl);
      lua_rawseti(L, keys_idx, (int)scanned);
    }
  }
  if (rc == KV_ERR) { int nr = otsk_kv_fail(L, db); otsk_kv_scratchcursor_done(L, cur_idx); return nr; }
  otsk_kv_scratchcursor_done(L, cur_idx);
  if (w->oom) return luaL_error(L, "otskit.kv: out of memory");
  lua_pushlstring(L, (const char *)w->p, n ? w->len : 0);
  otsk_pushint64(L, n);
  otsk_pushint64(L, scanned);
  otsk_pushint64(L, bytes);
  lua_pushvalue(L, next_idx);
  lua_pushvalue(L, first_idx);
  lua_pushvalue(L, keys_idx);
  return 7;
}

/* row.from_put_pb(bytes, pk, now, dev, max_cols, max_cell, max_pk_cell,
 * max_row) -> key, value, size, any_ts | false, why.
 * bytes: the row field of a PutRow request; pk: the table's key schema
 * ({{name =, type =}, ...}); now, dev: the store's clock and the table's
 * max_time_deviation (ms); the limits of otskit.store.base.LIMITS. key and
 * value: what the store keeps for the row (rs_put_row); size its
 * Tablestore size; any_ts: a cell was sent with a timestamp. false: the
 * request is not one this answers (why: a short reason) -- the store's
 * general path decides. */
int otsk_row_from_put_pb(lua_State *L) {
  size_t n, i, np, vlen = 0;
  const char *bytes = luaL_checklstring(L, 1, &n);
  rs_opts o;
  rs_put_limits lim;
  tuple_buf key;
  unsigned char *val = NULL;
  int64_t size = 0, v;
  const char *why = NULL;
  int any_ts = 0, rc;
  memset(&o, 0, sizeof o);
  luaL_checktype(L, 2, LUA_TTABLE);
  np = (size_t)lua_rawlen(L, 2);
  if (np < 1 || np > RS_MAX_PK) return otsk_error(L, "row", "from_put_pb: pk must have 1 to 4 columns");
  o.npk = np;
  for (i = 0; i < np; i++) {
    const char *ty;
    lua_rawgeti(L, 2, (lua_Integer)(i + 1));
    if (lua_type(L, -1) != LUA_TTABLE) return otsk_error(L, "row", "from_put_pb: pk entries must be tables");
    lua_getfield(L, -1, "name");
    lua_getfield(L, -2, "type");
    o.pk_name[i].s = lua_tolstring(L, -2, &o.pk_name[i].n); /* anchored by pk */
    ty = lua_tostring(L, -1);
    if (o.pk_name[i].s == NULL || ty == NULL) return otsk_error(L, "row", "from_put_pb: pk entries need name and type");
    o.pk_type[i] = strcmp(ty, "INTEGER") == 0 ? RS_PK_INTEGER : strcmp(ty, "STRING") == 0 ? RS_PK_STRING
                 : strcmp(ty, "BINARY") == 0 ? RS_PK_BINARY : 0;
    if (o.pk_type[i] == 0) return otsk_error(L, "row", "from_put_pb: bad key type %s", ty);
    lua_pop(L, 3);
  }
  lim.now = otsk_checkint64(L, 3, "row", "#3 (now)");
  lim.dev = otsk_checkint64(L, 4, "row", "#4 (dev)");
  v = otsk_checkint64(L, 5, "row", "#5 (max_cols)"); lim.max_cols = v < 0 ? 0 : (size_t)v;
  v = otsk_checkint64(L, 6, "row", "#6 (max_cell)"); lim.max_cell = v < 0 ? 0 : (size_t)v;
  v = otsk_checkint64(L, 7, "row", "#7 (max_pk_cell)"); lim.max_pk_cell = v < 0 ? 0 : (size_t)v;
  lim.max_row = otsk_checkint64(L, 8, "row", "#8 (max_row)");
  tuple_buf_init(&key);
  rc = rs_put_row(bytes, n, &o, &lim, &key, &val, &vlen, &size, &any_ts, &why);
  if (rc == RS_PUT_OK) {
    /* out of memory in a push raises: copy first, free, then push */
    lua_pushlstring(L, key.len ? (const char *)key.p : "", key.len);
    tuple_buf_free(&key);
    /* (a raise here would leak val: lua_pushlstring only raises on OOM) */
    lua_pushlstring(L, vlen ? (const char *)val : "", vlen);
    free(val);
    otsk_pushint64(L, size);
    lua_pushboolean(L, any_ts);
    return 4;
  }
  tuple_buf_free(&key);
  free(val);
  if (rc == RS_PUT_OOM) return luaL_error(L, "otskit.row: out of memory");
  lua_pushboolean(L, 0);
  lua_pushstring(L, why);
  return 2;
}
