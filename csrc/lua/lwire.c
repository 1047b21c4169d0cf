/* lwire.c -- Lua binding of plainbuffer.c and sign.c: otskit.core.wire.
 * Rows go between Lua tables and PlainBuffer bytes directly (no
 * intermediate objects); otskit.wire (Lua) builds the messages on top. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "laux.h"
#include "parts.h"
#include "plainbuffer.h"
#include "sign.h"

int otsk_wire_proto_register(lua_State *L); /* lpbmsg.c */

/* The context (upvalue 1 of every function): the store's typed-value
 * metatable and sentinels (set by wire.init), a scratch writer and the
 * scratch row of decode_rows (take_scratch). */
enum { CTX_TYPED = 1, CTX_INF_MIN, CTX_INF_MAX, CTX_AUTO, CTX_WRITER, CTX_KEYS, CTX_WEAK_KEYS, CTX_SCRATCH };
#define WRITER_MT "otskit.wire.writer"
#define TWO53 9007199254740992.0

static int writer_gc(lua_State *L) {
  pb_writer *w = luaL_checkudata(L, 1, WRITER_MT);
  pb_writer_free(w);
  return 0;
}

/* ------------------------------------------------------------ encoding */

typedef struct {
  lua_State *L;
  int typed, inf_min, inf_max, autoinc; /* stack slots of the context */
  pb_writer *w;
  char err[160];
} enc;

/* Pushes the context onto the stack; the scratch writer is reset. */
static void enc_open(lua_State *L, enc *e) {
  int ctx = lua_upvalueindex(1);
  e->L = L;
  lua_rawgeti(L, ctx, CTX_TYPED); e->typed = lua_gettop(L);
  lua_rawgeti(L, ctx, CTX_INF_MIN); e->inf_min = lua_gettop(L);
  lua_rawgeti(L, ctx, CTX_INF_MAX); e->inf_max = lua_gettop(L);
  lua_rawgeti(L, ctx, CTX_AUTO); e->autoinc = lua_gettop(L);
  lua_rawgeti(L, ctx, CTX_WRITER);
  e->w = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (lua_isnil(L, e->typed)) luaL_error(L, "otskit.wire: core.wire.init was not called");
  pb_writer_reset(e->w);
  e->err[0] = 0;
}

static int enc_fail(enc *e, const char *fmt, const char *a, const char *b) {
  snprintf(e->err, sizeof e->err, fmt, a, b);
  return 0;
}

/* Reads the value at idx into *v (pointers into Lua strings the caller's
 * tables anchor). what: for messages. allow: INF/AUTO sentinels allowed. */
static int to_value(enc *e, int idx, pb_value *v, int allow_inf, int allow_auto, const char *what) {
  lua_State *L = e->L;
  const char *why = NULL;
  idx = lua_absindex(L, idx);
  memset(v, 0, sizeof *v);
  switch (lua_type(L, idx)) {
  case LUA_TSTRING:
    v->vt = PB_VT_STRING;
    v->s = lua_tolstring(L, idx, &v->n);
    return 1;
  case LUA_TBOOLEAN:
    v->vt = PB_VT_BOOLEAN;
    v->i = lua_toboolean(L, idx);
    return 1;
  case LUA_TNUMBER: {
    lua_Number d;
#if !OTSKIT_LUA51
    if (lua_isinteger(L, idx)) { v->vt = PB_VT_INTEGER; v->i = (int64_t)lua_tointeger(L, idx); return 1; }
    d = lua_tonumber(L, idx);
#else
    d = lua_tonumber(L, idx);
    /* integral: INTEGER, as on 5.4 -- but -0.0, an INTEGER 0 would lose
     * its sign: DOUBLE, as 5.4 writes the float -0.0 */
    if (d == floor(d) && !(d == 0 && signbit(d)) && d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
      v->vt = PB_VT_INTEGER; v->i = (int64_t)d; return 1;
    }
#endif
    if (d != d || d == HUGE_VAL || d == -HUGE_VAL) return enc_fail(e, "%s: NaN or infinite number%s", what, "");
    v->vt = PB_VT_DOUBLE; v->d = d;
    return 1;
  }
  case LUA_TTABLE: {
    const char *ty;
    int ok = 1;
    if (lua_rawequal(L, idx, e->inf_min) || lua_rawequal(L, idx, e->inf_max)) {
      if (!allow_inf) return enc_fail(e, "%s: INF_MIN/INF_MAX only bound a range%s", what, "");
      v->vt = lua_rawequal(L, idx, e->inf_min) ? PB_VT_INF_MIN : PB_VT_INF_MAX;
      return 1;
    }
    if (lua_rawequal(L, idx, e->autoinc)) {
      if (!allow_auto) return enc_fail(e, "%s: AUTO_INCREMENT only in a primary key of put_row%s", what, "");
      v->vt = PB_VT_AUTO_INCREMENT;
      return 1;
    }
    if (!lua_getmetatable(L, idx)) break;
    ok = lua_rawequal(L, -1, e->typed);
    lua_pop(L, 1);
    if (!ok) break;
    lua_pushliteral(L, "type"); lua_rawget(L, idx);
    lua_pushliteral(L, "value"); lua_rawget(L, idx);
    ty = lua_tostring(L, -2);
    ok = 0;
    if (ty == NULL) {
    } else if (strcmp(ty, "BINARY") == 0 || strcmp(ty, "STRING") == 0) {
      if (lua_type(L, -1) == LUA_TSTRING) {
        v->vt = ty[0] == 'B' ? PB_VT_BLOB : PB_VT_STRING;
        v->s = lua_tolstring(L, -1, &v->n); /* anchored by the typed table */
        ok = 1;
      }
    } else if (strcmp(ty, "INTEGER") == 0) {
      ok = otsk_toint64(L, -1, &v->i, &why);
      v->vt = PB_VT_INTEGER;
    } else if (strcmp(ty, "DOUBLE") == 0) {
      if (lua_type(L, -1) == LUA_TNUMBER) {
        v->vt = PB_VT_DOUBLE; v->d = lua_tonumber(L, -1); ok = 1;
        if (v->d != v->d || v->d == HUGE_VAL || v->d == -HUGE_VAL) ok = 0;
      }
    } else if (strcmp(ty, "BOOLEAN") == 0) {
      v->vt = PB_VT_BOOLEAN; v->i = lua_toboolean(L, -1); ok = 1;
    }
    lua_pop(L, 2);
    if (!ok) return enc_fail(e, "%s: bad typed value%s", what, "");
    return 1;
  }
  default:
    break;
  }
  return enc_fail(e, "%s: unsupported value type %s", what, luaL_typename(L, idx));
}

static int name_at(enc *e, int idx, pb_cell *c, const char *what) {
  if (lua_type(e->L, idx) != LUA_TSTRING) return enc_fail(e, "%s: column name must be a string, got %s", what, luaL_typename(e->L, idx));
  c->name = lua_tolstring(e->L, idx, &c->name_len);
  return 1;
}

static int ts_at(enc *e, int idx, pb_cell *c, const char *what) {
  const char *why = NULL;
  if (lua_isnil(e->L, idx)) return 1;
  if (!otsk_toint64(e->L, idx, &c->ts, &why)) return enc_fail(e, "%s: timestamp %s", what, why);
  c->has_ts = 1;
  return 1;
}

/* The type named at tidx (a read cell's 4th field: the store returns BINARY
 * values as strings, LuaJIT int64s past 2^53 as decimal text) applied to
 * the value v read from vidx. */
static int retype(enc *e, int tidx, int vidx, pb_value *v, const char *what) {
  lua_State *L = e->L;
  const char *ty, *why = NULL;
  if (lua_isnil(L, tidx)) return 1;
  ty = lua_tostring(L, tidx);
  if (ty == NULL) return enc_fail(e, "%s: a cell's type must be a string%s", what, "");
  if (strcmp(ty, "BINARY") == 0 && (v->vt == PB_VT_STRING || v->vt == PB_VT_BLOB)) { v->vt = PB_VT_BLOB; return 1; }
  if (strcmp(ty, "STRING") == 0 && v->vt == PB_VT_STRING) return 1;
  if (strcmp(ty, "BOOLEAN") == 0 && v->vt == PB_VT_BOOLEAN) return 1;
  if (strcmp(ty, "DOUBLE") == 0 && v->vt == PB_VT_INTEGER && lua_type(L, vidx) == LUA_TNUMBER) {
    v->vt = PB_VT_DOUBLE; v->d = lua_tonumber(L, vidx); return 1;
  }
  if (strcmp(ty, "DOUBLE") == 0 && v->vt == PB_VT_DOUBLE) return 1;
  if (strcmp(ty, "INTEGER") == 0 && v->vt == PB_VT_INTEGER) return 1;
  if (strcmp(ty, "INTEGER") == 0 && v->vt == PB_VT_STRING) {
    if (!otsk_toint64(L, vidx, &v->i, &why)) return enc_fail(e, "%s: INTEGER cell: %s", what, why);
    v->vt = PB_VT_INTEGER;
    return 1;
  }
  return enc_fail(e, "%s: a cell's value does not have its type %s", what, ty);
}

/* the primary key list at idx: {{name, value [, type]}, ...} */
static int write_pk(enc *e, int idx, int allow_inf, int allow_auto) {
  lua_State *L = e->L;
  size_t i, n;
  if (lua_type(L, idx) != LUA_TTABLE) return enc_fail(e, "primary_key must be a list of {name, value}%s%s", "", "");
  n = lua_rawlen(L, idx);
  if (n == 0) return enc_fail(e, "primary_key is empty%s%s", "", "");
  pb_row_begin(e->w);
  for (i = 1; i <= n; i++) {
    pb_cell c;
    int ok;
    memset(&c, 0, sizeof c);
    lua_rawgeti(L, idx, (lua_Integer)i);
    if (lua_type(L, -1) != LUA_TTABLE) { lua_pop(L, 1); return enc_fail(e, "primary_key entries must be {name, value}%s%s", "", ""); }
    lua_rawgeti(L, -1, 1);
    lua_rawgeti(L, -2, 2);
    lua_rawgeti(L, -3, 3);
    ok = name_at(e, -3, &c, "primary_key") && to_value(e, -2, &c.v, allow_inf, allow_auto, "primary_key") &&
         (c.v.vt == PB_VT_INF_MIN || c.v.vt == PB_VT_INF_MAX || c.v.vt == PB_VT_AUTO_INCREMENT ||
          retype(e, -1, -2, &c.v, "primary_key"));
    if (ok) pb_write_cell(e->w, &c);
    lua_pop(L, 4);
    if (!ok) return 0;
  }
  return 1;
}

/* one attribute cell from a {name, value [, ts [, type]]} entry at idx (op: cell op) */
static int write_entry(enc *e, int idx, int op, const char *what) {
  lua_State *L = e->L;
  pb_cell c;
  int ok;
  memset(&c, 0, sizeof c);
  c.op = op;
  if (lua_type(L, idx) != LUA_TTABLE) return enc_fail(e, "%s entries must be {name, value [, timestamp]}%s", what, "");
  lua_rawgeti(L, idx, 1);
  lua_rawgeti(L, idx, 2);
  lua_rawgeti(L, idx, 3);
  lua_rawgeti(L, idx, 4);
  ok = name_at(e, -4, &c, what) && to_value(e, -3, &c.v, 0, 0, what) && ts_at(e, -2, &c, what) &&
       retype(e, -1, -3, &c.v, what);
  if (ok) pb_write_cell(e->w, &c);
  lua_pop(L, 4);
  return ok;
}

typedef struct { const char *s; size_t n; int ref; } keyref;

static int key_cmp(const void *a, const void *b) {
  const keyref *x = a, *y = b;
  size_t n = x->n < y->n ? x->n : y->n;
  int r = memcmp(x->s, y->s, n);
  return r ? r : (x->n < y->n ? -1 : x->n > y->n);
}

/* The columns at idx: a list of {name, value [, ts]} (order kept) or a
 * map {name = value} (name order). op: cell op for every cell. */
static int write_columns(enc *e, int idx, int op, const char *what) {
  lua_State *L = e->L;
  size_t i, n;
  if (lua_isnil(L, idx)) return 1;
  if (lua_type(L, idx) != LUA_TTABLE) return enc_fail(e, "%s must be a table%s", what, "");
  n = lua_rawlen(L, idx);
  if (n > 0) {
    for (i = 1; i <= n; i++) {
      int ok;
      lua_rawgeti(L, idx, (lua_Integer)i);
      ok = write_entry(e, lua_gettop(L), op, what);
      lua_pop(L, 1);
      if (!ok) return 0;
    }
    return 1;
  }
  {
    size_t cnt = 0, cap = 16;
    keyref *keys;
    int kidx, ok = 1;
    keys = lua_newuserdata(L, cap * sizeof *keys); /* collected with the stack */
    kidx = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
      lua_pop(L, 1);
      if (lua_type(L, -1) != LUA_TSTRING) { lua_pop(L, 1); lua_remove(L, kidx); return enc_fail(e, "%s: column name must be a string%s", what, ""); }
      if (cnt == cap) {
        keyref *k2 = lua_newuserdata(L, cap * 2 * sizeof *keys);
        memcpy(k2, keys, cap * sizeof *keys);
        lua_replace(L, kidx);  /* the old array is garbage now */
        keys = k2; cap *= 2;
      }
      keys[cnt].s = lua_tolstring(L, -1, &keys[cnt].n); /* anchored: a key of the table */
      cnt++;
    }
    qsort(keys, cnt, sizeof *keys, key_cmp);
    for (i = 0; i < cnt && ok; i++) {
      pb_cell c;
      memset(&c, 0, sizeof c);
      c.op = op;
      c.name = keys[i].s; c.name_len = keys[i].n;
      lua_pushlstring(L, keys[i].s, keys[i].n);
      lua_rawget(L, idx);
      ok = to_value(e, -1, &c.v, 0, 0, what);
      if (ok) pb_write_cell(e->w, &c);
      lua_pop(L, 1);
    }
    lua_remove(L, kidx);
    return ok;
  }
}

static int enc_result(lua_State *L, enc *e, int ok) {
  if (!ok) return otsk_fail(L, "OTSParameterInvalid", "%s", e->err);
  if (e->w->oom) return luaL_error(L, "otskit.wire: out of memory");
  lua_pushlstring(L, (const char *)e->w->p, e->w->len);
  return 1;
}

/* a row of the key at 1 alone: allow_inf, with the delete marker or not */
static int encode_key_row(lua_State *L, int allow_inf, int deleted) {
  enc e;
  int ok;
  enc_open(L, &e);
  pb_write_header(e.w);
  ok = write_pk(&e, 1, allow_inf, 0);
  if (ok) pb_row_end(e.w, deleted);
  return enc_result(L, &e, ok);
}

/* encode_pk(pk) -> bytes | nil, msg, code (INF_MIN/INF_MAX allowed) */
static int l_encode_pk(lua_State *L) { return encode_key_row(L, 1, 0); }

/* encode_put(pk, columns) -> bytes | nil, msg, code */
static int l_encode_put(lua_State *L) {
  enc e;
  int ok;
  enc_open(L, &e);
  pb_write_header(e.w);
  ok = write_pk(&e, 1, 0, 1);
  if (ok && lua_type(L, 2) == LUA_TTABLE && lua_next(L, (lua_pushnil(L), 2))) {
    lua_pop(L, 2);
    pb_row_data(e.w);
    ok = write_columns(&e, 2, PB_OP_NONE, "columns");
  } else if (ok && !lua_isnil(L, 2) && lua_type(L, 2) != LUA_TTABLE) {
    ok = enc_fail(&e, "columns must be a table%s%s", "", "");
  }
  if (ok) pb_row_end(e.w, 0);
  return enc_result(L, &e, ok);
}

/* encode_rows(rows) -> bytes | nil, msg, code: one buffer of rows in the
 * store's read shape ({primary_key, cells} or {primary_key, columns}), as a
 * GetRange response carries them */
static int l_encode_rows(lua_State *L) {
  enc e;
  int ok = 1;
  size_t i, n;
  luaL_checktype(L, 1, LUA_TTABLE);
  enc_open(L, &e);
  n = lua_rawlen(L, 1);
  if (n) pb_write_header(e.w);
  for (i = 1; ok && i <= n; i++) {
    int row, cols;
    lua_rawgeti(L, 1, (lua_Integer)i);
    row = lua_gettop(L);
    if (lua_type(L, row) != LUA_TTABLE) { lua_pop(L, 1); ok = enc_fail(&e, "rows must be tables%s%s", "", ""); break; }
    lua_getfield(L, row, "primary_key");
    ok = write_pk(&e, lua_gettop(L), 0, 0);
    lua_getfield(L, row, "cells");
    if (lua_isnil(L, -1)) { lua_pop(L, 1); lua_getfield(L, row, "columns"); }
    cols = lua_gettop(L);
    if (ok && lua_type(L, cols) == LUA_TTABLE) {
      lua_pushnil(L);
      if (lua_next(L, cols)) {
        lua_pop(L, 2);
        pb_row_data(e.w);
        ok = write_columns(&e, cols, PB_OP_NONE, "columns");
      }
    }
    if (ok) pb_row_end(e.w, 0);
    lua_settop(L, row - 1);
  }
  return enc_result(L, &e, ok);
}

/* encode_delete(pk) -> bytes | nil, msg, code (with the delete marker) */
static int l_encode_delete(lua_State *L) { return encode_key_row(L, 0, 1); }

/* encode_update(pk, ops): ops a list of {"PUT", name, value [, ts]},
 * {"DELETE", name, ts}, {"DELETE_ALL", name}, {"INCREMENT", name, delta} */
static int l_encode_update(lua_State *L) {
  enc e;
  int ok;
  size_t i, n;
  enc_open(L, &e);
  pb_write_header(e.w);
  ok = write_pk(&e, 1, 0, 0);
  if (ok && lua_type(L, 2) != LUA_TTABLE) ok = enc_fail(&e, "update ops must be a list%s%s", "", "");
  n = ok ? lua_rawlen(L, 2) : 0;
  if (ok && n > 0) pb_row_data(e.w);
  for (i = 1; ok && i <= n; i++) {
    pb_cell c;
    const char *op;
    memset(&c, 0, sizeof c);
    lua_rawgeti(L, 2, (lua_Integer)i);
    if (lua_type(L, -1) != LUA_TTABLE) { lua_pop(L, 1); ok = enc_fail(&e, "update ops must be lists like {\"PUT\", name, value}%s%s", "", ""); break; }
    lua_rawgeti(L, -1, 1);
    lua_rawgeti(L, -2, 2);
    lua_rawgeti(L, -3, 3);
    lua_rawgeti(L, -4, 4);
    op = lua_tostring(L, -4);
    ok = name_at(&e, -3, &c, "update");
    if (!ok) {
    } else if (op && strcmp(op, "PUT") == 0) {
      ok = to_value(&e, -2, &c.v, 0, 0, "update PUT") && ts_at(&e, -1, &c, "update PUT");
    } else if (op && strcmp(op, "DELETE") == 0) {
      c.v.vt = PB_VT_NONE; c.op = PB_OP_DELETE_ONE;
      ok = ts_at(&e, -2, &c, "update DELETE");
      if (ok && !c.has_ts) ok = enc_fail(&e, "update DELETE of '%s' needs a timestamp (DELETE_ALL deletes every version)%s", c.name, "");
    } else if (op && strcmp(op, "DELETE_ALL") == 0) {
      c.v.vt = PB_VT_NONE; c.op = PB_OP_DELETE_ALL;
    } else if (op && strcmp(op, "INCREMENT") == 0) {
      c.op = PB_OP_INCREMENT;
      ok = to_value(&e, -2, &c.v, 0, 0, "update INCREMENT");
      if (ok && c.v.vt != PB_VT_INTEGER) ok = enc_fail(&e, "update INCREMENT of '%s' needs an integer%s", c.name, "");
    } else {
      ok = enc_fail(&e, "update op must be PUT, DELETE, DELETE_ALL or INCREMENT, got %s%s", op ? op : "?", "");
    }
    if (ok) pb_write_cell(e.w, &c);
    lua_pop(L, 5);
  }
  if (ok) pb_row_end(e.w, 0);
  return enc_result(L, &e, ok);
}

/* encode_value(v) -> type byte + payload (a filter's column value) */
static int l_encode_value(lua_State *L) {
  enc e;
  pb_value v;
  int ok;
  enc_open(L, &e);
  ok = to_value(&e, 1, &v, 0, 0, "value");
  if (ok) pb_write_value(e.w, &v);
  return enc_result(L, &e, ok);
}

/* ------------------------------------------------------------ decoding */

/* decode's constants, in the order dec_push pushes them: stack slots of a
 * decode call, or the first upvalues of a decode's lazy cells closure */
enum { K_TYPED, K_INF_MIN, K_INF_MAX, K_AUTO, K_PK, K_COLS, K_CELLS, K_DELETED, K_TYPE, K_VALUE, K_OP,
       K_INTEGER, K_DOUBLE, K_BOOLEAN, K_STRING, K_BINARY, K_N };
/* names cached by their position in a row (key cells, attribute cells) */
#define NAMES 16
/* the lazy cells closure's upvalues after the constants: then NAMES
 * attribute names (nil when not cached) */
enum { U_BYTES = K_N + 1, U_OFFSETS, U_SCRATCH, U_NAMES, U_N = U_NAMES + NAMES - 1 };

/* The column names of one decode by position: most rows of a response
 * have the same names in the same order, and a name pushed from a stack
 * slot or an upvalue costs no hash and no lookup in the VM's string table
 * (which, large and cold, cost more than building a cell). s[i] points
 * into the Lua string that slot i anchors. */
typedef struct {
  const char *s[NAMES];
  size_t n[NAMES];
} name_cache;

/* where decode's constants are */
typedef struct {
  int typed, inf_min, inf_max, autoinc, k_pk, k_cols, k_cells, k_deleted, k_type, k_value, k_op;
  int k_vt[12];   /* the type names by PlainBuffer type, 0 when none */
  int want_typed; /* BINARY (and on LuaJIT ambiguous numbers) as typed values */
  name_cache *pkc, *atc; /* key / attribute names, or NULL */
  int pk_base, at_base;  /* their slots: stack indices, or (at_upv) upvalue numbers */
  int at_upv;            /* the attribute names are upvalues: read only */
} dec;

/* d's constants at the stack slots first.. (upv 0) or the upvalues 1.. (upv 1) */
static void dec_index(dec *d, int first, int upv) {
#define DEC_AT(k) (upv ? lua_upvalueindex(1 + (k)) : first + (k))
  d->typed = DEC_AT(K_TYPED); d->inf_min = DEC_AT(K_INF_MIN); d->inf_max = DEC_AT(K_INF_MAX);
  d->autoinc = DEC_AT(K_AUTO); d->k_pk = DEC_AT(K_PK); d->k_cols = DEC_AT(K_COLS);
  d->k_cells = DEC_AT(K_CELLS); d->k_deleted = DEC_AT(K_DELETED); d->k_type = DEC_AT(K_TYPE);
  d->k_value = DEC_AT(K_VALUE); d->k_op = DEC_AT(K_OP);
  memset(d->k_vt, 0, sizeof d->k_vt);
  d->k_vt[PB_VT_INTEGER] = DEC_AT(K_INTEGER); d->k_vt[PB_VT_DOUBLE] = DEC_AT(K_DOUBLE);
  d->k_vt[PB_VT_BOOLEAN] = DEC_AT(K_BOOLEAN); d->k_vt[PB_VT_STRING] = DEC_AT(K_STRING);
  d->k_vt[PB_VT_BLOB] = DEC_AT(K_BINARY);
  d->want_typed = 0;
  d->pkc = d->atc = NULL;
  d->pk_base = d->at_base = d->at_upv = 0;
#undef DEC_AT
}

static void push_typed(lua_State *L, const dec *d, const char *ty, int vidx) {
  lua_createtable(L, 0, 2);
  lua_pushvalue(L, d->k_type);
  lua_pushstring(L, ty);
  lua_rawset(L, -3);
  lua_pushvalue(L, d->k_value);
  lua_pushvalue(L, vidx < 0 ? vidx - 2 : vidx);
  lua_rawset(L, -3);
  lua_pushvalue(L, d->typed);
  lua_setmetatable(L, -2);
}

/* Pushes a decoded value. pk: LuaJIT int64 past 2^53 as decimal text (the
 * store's key form) rather than a typed INTEGER. */
static void push_value(lua_State *L, const dec *d, const pb_value *v, int pk) {
  switch (v->vt) {
  case PB_VT_INTEGER:
#if OTSKIT_LUA51
    /* compared as integers: (double) would round 2^53 + 1 down to 2^53 */
    if (v->i > (int64_t)TWO53 || v->i < -(int64_t)TWO53) {
      otsk_pushint64(L, v->i);
      if (!pk && d->want_typed) { push_typed(L, d, "INTEGER", -1); lua_remove(L, -2); }
      return;
    }
    lua_pushnumber(L, (lua_Number)v->i);
#else
    (void)pk;
    lua_pushinteger(L, (lua_Integer)v->i);
#endif
    return;
  case PB_VT_DOUBLE:
    lua_pushnumber(L, v->d);
#if OTSKIT_LUA51
    /* an integral double would read back as an INTEGER: keep its type */
    if (d->want_typed && v->d == floor(v->d)) { push_typed(L, d, "DOUBLE", -1); lua_remove(L, -2); }
#endif
    return;
  case PB_VT_BOOLEAN: lua_pushboolean(L, (int)v->i); return;
  case PB_VT_STRING: lua_pushlstring(L, v->s, v->n); return;
  case PB_VT_BLOB:
    lua_pushlstring(L, v->s, v->n);
    if (d->want_typed) { push_typed(L, d, "BINARY", -1); lua_remove(L, -2); }
    return;
  case PB_VT_INF_MIN: lua_pushvalue(L, d->inf_min); return;
  case PB_VT_INF_MAX: lua_pushvalue(L, d->inf_max); return;
  case PB_VT_AUTO_INCREMENT: lua_pushvalue(L, d->autoinc); return;
  default: lua_pushnil(L); return;
  }
}

static const char *op_name(int op) {
  return op == PB_OP_DELETE_ALL ? "DELETE_ALL" : op == PB_OP_DELETE_ONE ? "DELETE" : "INCREMENT";
}

/* Pushes the name of the i-th key (attr 0) or attribute (attr 1) cell,
 * from the cache when it holds the same bytes; a cache on the stack takes
 * the name on a miss. */
static void push_name(lua_State *L, const dec *d, int attr, size_t i, const pb_cell *c) {
  name_cache *nc = attr ? d->atc : d->pkc;
  int slot;
  if (!nc || i >= NAMES) { lua_pushlstring(L, c->name, c->name_len); return; }
  slot = attr && d->at_upv ? lua_upvalueindex(d->at_base + (int)i) : (attr ? d->at_base : d->pk_base) + (int)i;
  if (nc->s[i] && nc->n[i] == c->name_len && memcmp(nc->s[i], c->name, c->name_len) == 0) {
    lua_pushvalue(L, slot);
    return;
  }
  lua_pushlstring(L, c->name, c->name_len);
  if (attr && d->at_upv) return;
  lua_pushvalue(L, -1);
  lua_replace(L, slot);
  nc->s[i] = lua_tolstring(L, slot, &nc->n[i]);
}

/* Pushes the primary key: {{name, value [, type]}, ...} */
static void push_key(lua_State *L, const dec *d, const pb_row *row) {
  size_t i;
  lua_createtable(L, (int)row->npk, 0);
  for (i = 0; i < row->npk; i++) {
    const pb_cell *c = &row->cells[i];
    int text;
    lua_createtable(L, 3, 0);
    push_name(L, d, 0, i, c);
    lua_rawseti(L, -2, 1);
    push_value(L, d, &c->v, 1);
    text = lua_type(L, -1) == LUA_TSTRING;
    lua_rawseti(L, -2, 2);
    /* the type when the value alone does not say it: a BINARY as a
     * string, a LuaJIT int64 past 2^53 as decimal text */
    if ((c->v.vt == PB_VT_BLOB || c->v.vt == PB_VT_INTEGER) && text) {
      lua_pushvalue(L, d->k_vt[c->v.vt]);
      lua_rawseti(L, -2, 3);
    }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

/* the first cell of a name (not an update op) is its newest version */
static int newest(const pb_cell *c, const pb_cell *prev) {
  return !c->op && (!prev || prev->name_len != c->name_len || memcmp(prev->name, c->name, c->name_len) != 0);
}

/* Pushes the cells {{name, value, ts, type [, op = ...]}, ...}; with cols
 * (a stack index, else 0) also sets cols[name] = newest value. With from
 * (a stack index, else 0: the row's columns, built from these cells
 * before), a newest STRING/BINARY value is taken from from[name] when
 * that still holds the same bytes: no second copy of the string. */
static void push_cells(lua_State *L, const dec *d, const pb_row *row, int cols, int from) {
  size_t i, nattr = row->ncells - row->npk;
  const pb_cell *prev = NULL;
  lua_createtable(L, (int)nattr, 0);
  for (i = 0; i < nattr; i++) {
    const pb_cell *c = &row->cells[row->npk + i];
    int nw = newest(c, prev);
    if (nw) prev = c;
    lua_createtable(L, 4, c->op ? 1 : 0);
    push_name(L, d, 1, i, c);
    if (c->v.vt != PB_VT_NONE) {
      int have = 0;
      if (from && nw && (c->v.vt == PB_VT_STRING || c->v.vt == PB_VT_BLOB)) {
        size_t n;
        const char *s;
        lua_pushvalue(L, -1);
        lua_rawget(L, from);
        s = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &n) : NULL;
        have = s && n == c->v.n && memcmp(s, c->v.s, n) == 0;
        if (!have) lua_pop(L, 1);
      }
      if (!have) push_value(L, d, &c->v, 0);
      lua_rawseti(L, -3, 2);
      if (d->k_vt[c->v.vt]) {
        lua_pushvalue(L, d->k_vt[c->v.vt]);
        lua_rawseti(L, -3, 4);
      }
    }
    if (cols && nw) {
      lua_pushvalue(L, -1);
      lua_rawgeti(L, -3, 2);
      lua_rawset(L, cols);
    }
    lua_rawseti(L, -2, 1);
    if (c->has_ts) {
      otsk_pushint64(L, c->ts);
      lua_rawseti(L, -2, 3);
    }
    if (c->op) {
      lua_pushvalue(L, d->k_op);
      lua_pushstring(L, op_name(c->op));
      lua_rawset(L, -3);
    }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

/* Pushes one row: { primary_key = {{name, value [, type]}, ...}, columns = {name =
 * newest value}, cells = {{name, value, ts, type [, op = ...]}, ...}
 * [, deleted = true] }. With mt (a stack index, else 0), cells is left
 * out and the row gets the metatable mt, whose __index builds it when
 * first read (lazy_cells). */
static void push_row(lua_State *L, const dec *d, const pb_row *row, int mt) {
  size_t i, nattr = row->ncells - row->npk;
  int cols;
  lua_createtable(L, 0, 3 + (row->deleted ? 1 : 0));
  lua_pushvalue(L, d->k_pk);
  push_key(L, d, row);
  lua_rawset(L, -3);
  lua_pushvalue(L, d->k_cols);
  lua_createtable(L, 0, (int)nattr);
  cols = lua_gettop(L);
  if (mt) {
    const pb_cell *prev = NULL;
    for (i = 0; i < nattr; i++) {
      const pb_cell *c = &row->cells[row->npk + i];
      if (!newest(c, prev)) continue;
      push_name(L, d, 1, i, c);
      push_value(L, d, &c->v, 0);
      lua_rawset(L, cols);
      prev = c;
    }
    lua_rawset(L, -3);
    lua_pushvalue(L, mt);
    lua_setmetatable(L, -2);
  } else {
    lua_pushvalue(L, d->k_cells);
    push_cells(L, d, row, cols, 0);
    lua_rawset(L, -5);
    lua_rawset(L, -3);
  }
  if (row->deleted) {
    lua_pushvalue(L, d->k_deleted);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
  }
}

/* Pushes decode's constants (K_N values, in the K_* order) onto the stack
 * and points d at them. */
static void dec_open(lua_State *L, dec *d) {
  int ctx = lua_upvalueindex(1);
  /* the constants, a decode's lazy state and a row being built (row, key, table, cell, value) */
  luaL_checkstack(L, 2 * K_N + 2 * NAMES + 16, "otskit.wire: decode");
  lua_rawgeti(L, ctx, CTX_TYPED);
  if (lua_isnil(L, -1)) luaL_error(L, "otskit.wire: core.wire.init was not called");
  lua_rawgeti(L, ctx, CTX_INF_MIN);
  lua_rawgeti(L, ctx, CTX_INF_MAX);
  lua_rawgeti(L, ctx, CTX_AUTO);
  lua_pushliteral(L, "primary_key");
  lua_pushliteral(L, "columns");
  lua_pushliteral(L, "cells");
  lua_pushliteral(L, "deleted");
  lua_pushliteral(L, "type");
  lua_pushliteral(L, "value");
  lua_pushliteral(L, "op");
  lua_pushliteral(L, "INTEGER");
  lua_pushliteral(L, "DOUBLE");
  lua_pushliteral(L, "BOOLEAN");
  lua_pushliteral(L, "STRING");
  lua_pushliteral(L, "BINARY");
  dec_index(d, lua_gettop(L) - K_N + 1, 0);
}

#define ROW_MT "otskit.wire.row"
/* a pb_row to read rows into (decode_rows, lazy_cells) */
typedef struct {
  pb_row row;
  name_cache names; /* lazy_cells': of the closure's name upvalues */
} scratch_row;

static int row_gc(lua_State *L) {
  scratch_row *s = luaL_checkudata(L, 1, ROW_MT);
  pb_row_free(&s->row);
  return 0;
}

static scratch_row *new_scratch(lua_State *L) {
  scratch_row *s = lua_newuserdata(L, sizeof *s);
  memset(s, 0, sizeof *s);
  luaL_getmetatable(L, ROW_MT);
  lua_setmetatable(L, -2);
  return s;
}

/* The scratch row kept at slot idx (the context's CTX_SCRATCH, or
 * lazy_cells' upvalue), reused (no object with a finalizer per decode: a
 * finalizer the GC runs while LuaJIT records a trace aborts it), pushed.
 * It is taken out of the slot while in use and put back by put_scratch
 * (its cells' memory kept): a decode inside a decode (a finalizer run
 * during it) gets a new one, and one an error raised out of a decode
 * took is garbage, never left marked in use: the next decode makes the
 * next one. */
static scratch_row *take_scratch(lua_State *L, int tbl, int idx) {
  scratch_row *s;
  if (tbl) lua_rawgeti(L, tbl, idx); else lua_pushvalue(L, idx);
  s = (scratch_row *)lua_touserdata(L, -1);
  if (s == NULL) {
    lua_pop(L, 1);
    return new_scratch(L);
  }
  lua_pushnil(L);
  if (tbl) lua_rawseti(L, tbl, idx); else lua_replace(L, idx);
  return s;
}

static void put_scratch(lua_State *L, int tbl, int idx, int at) {
  lua_pushvalue(L, at);
  if (tbl) lua_rawseti(L, tbl, idx); else lua_replace(L, idx);
}

/* __index of the untyped rows of one decode whose cells were not read yet
 * (row, key) -> row.cells | nil. The closure's upvalues: decode's
 * constants, the bytes (checked when first decoded), the offsets {row =
 * offset of its attribute cells in the bytes} (weak keys) and the scratch
 * row. Reading cells parses those cells again (no checksums), builds the cells with their
 * values shared with row.columns, sets row.cells and drops the metatable
 * and the offset. Every other key is nil (a plain row's). */
static int lazy_cells(lua_State *L) {
  size_t n;
  const char *s;
  pb_reader r;
  scratch_row *sc;
  dec d;
  lua_Integer off;
  int at;
  if (!lua_rawequal(L, 2, lua_upvalueindex(1 + K_CELLS))) return 0;
  lua_settop(L, 1);
  lua_pushvalue(L, 1);
  lua_rawget(L, lua_upvalueindex(U_OFFSETS));
  off = lua_type(L, 2) == LUA_TNUMBER ? lua_tointeger(L, 2) : -1;
  s = lua_tolstring(L, lua_upvalueindex(U_BYTES), &n);
  if (off < 0 || (size_t)off > n) return luaL_error(L, "otskit.wire: row.cells of a table that is not a decoded row (its metatable was copied)");
  luaL_checkstack(L, 16, "otskit.wire: decode");
  sc = take_scratch(L, 0, lua_upvalueindex(U_SCRATCH));
  at = lua_gettop(L);
  dec_index(&d, 0, 1);
  d.atc = &sc->names; d.at_base = U_NAMES; d.at_upv = 1;
  r.start = (const unsigned char *)s; r.p = r.start + off; r.end = r.start + n;
  r.err = NULL; r.err_at = 0;
  r.trusted = 1; /* verified by decode_rows */
  if (pb_read_cells(&r, &sc->row) != 1) {
    put_scratch(L, 0, lua_upvalueindex(U_SCRATCH), at);
    return luaL_error(L, "otskit.wire: a decoded row's bytes changed");
  }
  lua_pushvalue(L, d.k_cols);
  lua_rawget(L, 1);
  push_cells(L, &d, &sc->row, 0, lua_type(L, -1) == LUA_TTABLE ? lua_gettop(L) : 0);
  put_scratch(L, 0, lua_upvalueindex(U_SCRATCH), at);
  lua_pushvalue(L, d.k_cells);
  lua_pushvalue(L, -2);
  lua_rawset(L, 1);
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  lua_rawset(L, lua_upvalueindex(U_OFFSETS));
  lua_pushnil(L);
  lua_setmetatable(L, 1);
  return 1;
}

/* decode_rows(bytes [, max [, typed [, eager [, off, len]]]]) -> rows | nil, msg, "CorruptPlainBuffer".
 * max: refuse more rows than this (1 for a single-row field); typed: BINARY
 * values as typed tables (what the store takes) rather than strings with
 * the type in cells[i][4] (what the store returns). Untyped rows (a
 * response's) build row.cells when first read (lazy_cells): a reader of
 * primary_key and columns allocates no table per cell; the rows of one
 * call share one metatable. eager: build every row.cells now (the
 * representation the lazy rows equal). off, len: the rows are the len
 * bytes at off of bytes (a response's field where it is); then a second
 * value, the rows' order (pb_order's flags: 1 each row's key after the one
 * before, 2 before it, 3 both: fewer than two rows, 0 neither), is
 * returned: what otskit.client.verify needs not check again. */
static int l_decode_rows(lua_State *L) {
  size_t n, nrows = 0, max;
  const char *base = luaL_checklstring(L, 1, &n), *s = base;
  pb_reader r;
  pb_order ord;
  scratch_row *sc, *lsc = NULL;
  dec d;
  int rc, out, typed, eager, mt = 0, offsets = 0, fn = 0, k, sc_at, span = 0;
  const int ctx = lua_upvalueindex(1);
  name_cache pkc, atc;
  max = (size_t)luaL_optinteger(L, 2, 0);
  typed = lua_toboolean(L, 3);
  eager = lua_toboolean(L, 4);
  if (!lua_isnoneornil(L, 5)) {
    /* the rows are the len bytes at off (0-based) of bytes: a field of the
     * message in bytes, read where it is (no copy of it) */
    lua_Integer off = luaL_checkinteger(L, 5), len = luaL_checkinteger(L, 6);
    if (off < 0 || len < 0 || (size_t)off > n || (size_t)len > n - (size_t)off)
      return luaL_error(L, "otskit.wire: decode_rows: the span is outside the bytes");
    s = base + off;
    n = (size_t)len;
    span = 1;
  }
  pb_order_init(&ord);
  lua_settop(L, 1);
  dec_open(L, &d);
  d.want_typed = typed;
  memset(&pkc, 0, sizeof pkc);
  memset(&atc, 0, sizeof atc);
  for (k = 0; k < 2 * NAMES; k++) lua_pushnil(L);
  d.pkc = &pkc; d.atc = &atc;
  d.pk_base = lua_gettop(L) - 2 * NAMES + 1; d.at_base = d.pk_base + NAMES;
  sc = take_scratch(L, ctx, CTX_SCRATCH);
  sc_at = lua_gettop(L);
  /* presize: rows are rarely under ~16 bytes */
  lua_createtable(L, (int)(n / 64 < 4096 ? n / 64 : 4096), 0);
  out = lua_gettop(L);
  if (!pb_reader_init(&r, s, n)) {
    put_scratch(L, ctx, CTX_SCRATCH, sc_at);
    return otsk_fail(L, "CorruptPlainBuffer", "PlainBuffer: %s", r.err);
  }
  if (!typed && !eager && n) {
    /* the rows' metatable {__index = lazy_cells with its upvalues} */
    lua_createtable(L, 0, 1);
    mt = lua_gettop(L);
    lua_createtable(L, 0, (int)(n / 128 < 4096 ? n / 128 : 4096));
    offsets = lua_gettop(L);
    lua_rawgeti(L, ctx, CTX_WEAK_KEYS);
    lua_setmetatable(L, offsets);
    for (k = 0; k < K_N; k++) lua_pushvalue(L, d.typed + k);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, offsets);
    lsc = new_scratch(L);
    for (k = 0; k < NAMES; k++) lua_pushnil(L);
    lua_pushcclosure(L, lazy_cells, U_N);
    fn = lua_gettop(L);
    lua_pushliteral(L, "__index");
    lua_pushvalue(L, fn);
    lua_rawset(L, mt);
  }
  for (;;) {
    if ((rc = pb_read_row(&r, &sc->row)) != 1) break;
    if (max && nrows == max) {
      put_scratch(L, ctx, CTX_SCRATCH, sc_at);
      return otsk_fail(L, "CorruptPlainBuffer", "PlainBuffer: more than %d row(s)", (int)max);
    }
    if (span) pb_order_add(&ord, &sc->row);
    push_row(L, &d, &sc->row, mt);
    if (mt) { /* where its attribute cells start (6 bytes before the first name), else the row's end */
      const pb_row *pr = &sc->row;
      const char *at = pr->ncells > pr->npk ? pr->cells[pr->npk].name - 6 : (const char *)r.p;
      lua_pushvalue(L, -1);
      lua_pushinteger(L, (lua_Integer)(at - base));
      lua_rawset(L, offsets);
    }
    lua_rawseti(L, out, (lua_Integer)++nrows);
  }
  put_scratch(L, ctx, CTX_SCRATCH, sc_at); /* (its cells' memory kept for the next decode) */
  if (rc < 0) return otsk_fail(L, "CorruptPlainBuffer", "PlainBuffer: %s at byte %d", r.err, (int)r.err_at);
  if (fn) { /* the last row's attribute names for lazy_cells */
    for (k = 0; k < NAMES; k++) {
      if (!atc.s[k]) continue;
      lua_pushvalue(L, d.at_base + k);
      lua_setupvalue(L, fn, U_NAMES + k);
      lsc->names.s[k] = atc.s[k]; /* the string the upvalue anchors */
      lsc->names.n[k] = atc.n[k];
    }
  }
  lua_pushvalue(L, out);
  if (span) {
    lua_pushinteger(L, ord.flags);
    return 2;
  }
  return 1;
}

/* decode_value(bytes) -> value | nil, msg, code (a filter's column value) */
static int l_decode_value(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n), *why = NULL;
  pb_value v;
  dec d;
  dec_open(L, &d);
  d.want_typed = 1;
  if (!pb_read_value(s, n, &v, &why)) return otsk_fail(L, "OTSParameterInvalid", "column value: %s", why);
  if (v.vt == PB_VT_INF_MIN || v.vt == PB_VT_INF_MAX || v.vt == PB_VT_AUTO_INCREMENT)
    return otsk_fail(L, "OTSParameterInvalid", "column value: INF_MIN/INF_MAX/AUTO_INCREMENT is not a value");
  push_value(L, &d, &v, 0);
  return 1;
}

/* rows_length(bytes) -> the length up to the last row's checksum (what
 * follows is padding) | nil, msg, code */
static int l_rows_length(lua_State *L) {
  size_t n, rows, end;
  const char *s = luaL_checklstring(L, 1, &n);
  pb_reader r;
  if (!pb_scan_rows(&r, s, n, &rows, &end)) {
    if (r.p == r.start) return otsk_fail(L, "CorruptPlainBuffer", "PlainBuffer: %s", r.err); /* the header */
    return otsk_fail(L, "CorruptPlainBuffer", "PlainBuffer: %s at byte %d", r.err, (int)r.err_at);
  }
  lua_pushinteger(L, (lua_Integer)end);
  return 1;
}

/* ------------------------------------------------------------ signing */

/* hmac_sha1_b64(key, msg) -> base64 signature */
static int l_hmac_sha1_b64(lua_State *L) {
  size_t kl, ml;
  const char *k = luaL_checklstring(L, 1, &kl), *m = luaL_checklstring(L, 2, &ml);
  char out[29];
  if (!sign_hmac_sha1_b64(k, kl, m, ml, out)) return luaL_error(L, "otskit.wire: HMAC-SHA1 failed");
  lua_pushlstring(L, out, 28);
  return 1;
}

/* sign_headers(key, head, headers, tail) -> base64 HMAC-SHA1 of head, the
 * canonical x-ots-* lines of the headers table (sign_headers_b64), tail
 * | nil when an x-ots-* value is not a string (the caller's Lua path
 * decides). Keys that are not strings are not x-ots-* names: skipped. */
static int l_sign_headers(lua_State *L) {
  size_t kl, hl, tl, n = 0, cap = 0;
  const char *k = luaL_checklstring(L, 1, &kl), *head = luaL_checklstring(L, 2, &hl);
  const char *tail = luaL_checklstring(L, 4, &tl);
  sign_header small[24], *h = small;
  char out[29];
  luaL_checktype(L, 3, LUA_TTABLE);
  lua_settop(L, 4);
  lua_pushnil(L);
  while (lua_next(L, 3)) { lua_pop(L, 1); cap++; }
  if (cap > sizeof small / sizeof small[0]) h = lua_newuserdatauv(L, cap * sizeof *h, 0); /* 5 */
  lua_pushnil(L);
  while (lua_next(L, 3)) {
    if (lua_type(L, -2) == LUA_TSTRING && n < cap) {
      size_t nl;
      const char *name = lua_tolstring(L, -2, &nl);
      if (nl >= 6 && (name[0] | 32) == 'x' && name[1] == '-' && (name[2] | 32) == 'o' && (name[3] | 32) == 't'
          && (name[4] | 32) == 's' && name[5] == '-') {
        if (lua_type(L, -1) != LUA_TSTRING) { lua_pushnil(L); return 1; }
        h[n].name = name; h[n].nlen = nl; /* anchored by the table */
        h[n].val = lua_tolstring(L, -1, &h[n].vlen);
        n++;
      }
    }
    lua_pop(L, 1);
  }
  if (!sign_headers_b64(k, kl, head, hl, h, n, tail, tl, out)) return luaL_error(L, "otskit.wire: HMAC-SHA1 failed");
  lua_pushlstring(L, out, 28);
  return 1;
}

/* content_md5(body) -> base64 of MD5(body) */
static int l_content_md5(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  char out[25];
  if (!sign_md5_b64(s, n, out)) return luaL_error(L, "otskit.wire: MD5 failed");
  lua_pushlstring(L, out, 24);
  return 1;
}

/* equal(a, b) -> boolean, in time independent of where they differ */
static int l_equal(lua_State *L) {
  size_t an, bn;
  const char *a = luaL_checklstring(L, 1, &an), *b = luaL_checklstring(L, 2, &bn);
  lua_pushboolean(L, sign_equal(a, an, b, bn));
  return 1;
}

/* unknown_key(t, allowed) -> the first key of t (in next's order) that
 * allowed does not map to a true value, or nil. In C so that a request's
 * field check is no short Lua loop: LuaJIT aborts the traces of the
 * request path that reach one ("inner loop in root trace") and stitches
 * around a C call instead. */
static int l_unknown_key(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  lua_pushnil(L);
  while (lua_next(L, 1)) {
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_rawget(L, 2);
    if (!lua_toboolean(L, -1)) { lua_pop(L, 1); return 1; }
    lua_pop(L, 1);
  }
  lua_pushnil(L);
  return 1;
}

/* list_key(t, prefix) -> the first string key of t (in next's order)
 * that starts with prefix and whose value is not a string (a header
 * nginx gives as a list: sent twice), or nil. The loop in C: a Lua loop
 * that every request runs is where LuaJIT aborts a trace. */
static int l_list_key(lua_State *L) {
  size_t pl;
  const char *prefix;
  luaL_checktype(L, 1, LUA_TTABLE);
  prefix = luaL_checklstring(L, 2, &pl);
  lua_settop(L, 2);
  lua_pushnil(L);
  while (lua_next(L, 1)) {
    if (lua_type(L, -1) != LUA_TSTRING && lua_type(L, -2) == LUA_TSTRING) {
      size_t kl;
      const char *k = lua_tolstring(L, -2, &kl);
      if (kl >= pl && memcmp(k, prefix, pl) == 0) { lua_pop(L, 1); return 1; }
    }
    lua_pop(L, 1);
  }
  lua_pushnil(L);
  return 1;
}

/* ------------------------------------------------ otskit serve's requests */

/* raw_api(raw) -> the API of raw's request line "POST /<Api> HTTP/1.x"
 * (ngx.req.raw_header()) | nil for any other line */
static int l_raw_api(lua_State *L) {
  size_t n, alen;
  const char *raw = luaL_checklstring(L, 1, &n), *api;
  if (!sign_raw_api(raw, n, &api, &alen)) { lua_pushnil(L); return 1; }
  lua_pushlstring(L, api, alen);
  return 1;
}

/* raw_verify(raw, body, secret, access_key_id, instance, now_ms) -> true
 * when the request verifies (sign_raw_verify), else false: the caller's
 * general path (otskit.server.auth over ngx.req.get_headers()) decides */
static int l_raw_verify(lua_State *L) {
  size_t n, blen;
  sign_keys k;
  const char *raw = luaL_checklstring(L, 1, &n), *body = luaL_checklstring(L, 2, &blen);
  k.secret = luaL_checklstring(L, 3, &k.slen);
  k.akid = luaL_checklstring(L, 4, &k.aklen);
  k.inst = luaL_checklstring(L, 5, &k.ilen);
  lua_pushboolean(L, sign_raw_verify(raw, n, body, blen, &k, luaL_checknumber(L, 6)));
  return 1;
}

/* answer(secret, access_key_id, api, body, ms, rid [, n]) ->
 * x-ots-contentmd5, x-ots-date, authorization ("OTS <id>:<signature>"),
 * x-ots-requestid of an answer with body at ms since the epoch (an
 * integer) | nil when sign_answer does not take it (the caller's Lua path
 * makes them). The request id is rid, or with n (an integer in
 * 0..2^32-1) rid followed by n as 8 lowercase hex digits: one string made
 * per answer, not three. */
static int l_answer(lua_State *L) {
  size_t alen, blen, rlen;
  sign_keys k;
  sign_answer_t a;
  luaL_Buffer b;
  const char *api, *body, *rid;
  char id[64];
  lua_Number ms;
  k.secret = luaL_checklstring(L, 1, &k.slen);
  k.akid = luaL_checklstring(L, 2, &k.aklen);
  api = luaL_checklstring(L, 3, &alen);
  body = luaL_checklstring(L, 4, &blen);
  ms = luaL_checknumber(L, 5);
  rid = luaL_checklstring(L, 6, &rlen);
  if (!lua_isnoneornil(L, 7)) {
    lua_Number n = luaL_checknumber(L, 7);
    unsigned long v;
    int d;
    if (!(n >= 0 && n <= 4294967295.0) || n != floor(n)) return luaL_argerror(L, 7, "an integer in 0..2^32-1");
    v = (unsigned long)n;
    if (rlen > 56) { lua_pushnil(L); return 1; } /* (sign_answer's 64 bytes) */
    memcpy(id, rid, rlen);
    for (d = 7; d >= 0; d--, v >>= 4) id[rlen + (size_t)d] = "0123456789abcdef"[v & 15];
    rid = id;
    rlen += 8;
  }
  if (!(ms >= 0 && ms < 253402300800000.0) || ms != floor(ms)) { lua_pushnil(L); return 1; }
  if (!sign_answer(&k, api, alen, body, blen, (long long)ms, rid, rlen, &a)) { lua_pushnil(L); return 1; }
  lua_pushlstring(L, a.md5, 24);
  lua_pushlstring(L, a.date, 24);
  luaL_buffinit(L, &b);
  luaL_addlstring(&b, "OTS ", 4);
  luaL_addlstring(&b, k.akid, k.aklen);
  luaL_addchar(&b, ':');
  luaL_addlstring(&b, a.sig, 28);
  luaL_pushresult(&b);
  if (rid == id) lua_pushlstring(L, id, rlen);
  else lua_pushvalue(L, 6);
  return 4;
}

/* parse_date(s) -> ms | nil (sign_parse_date; for the spec that checks it
 * against otskit.wire.sign.parse_date) */
static int l_parse_date(lua_State *L) {
  size_t n;
  long long ms;
  const char *s = luaL_checklstring(L, 1, &n);
  if (!sign_parse_date(s, n, &ms)) { lua_pushnil(L); return 1; }
  lua_pushnumber(L, (lua_Number)ms);
  return 1;
}

/* init(typed_mt, INF_MIN, INF_MAX, AUTO_INCREMENT): the store's objects */
static int l_init(lua_State *L) {
  int ctx = lua_upvalueindex(1), i;
  luaL_checktype(L, 1, LUA_TTABLE);
  for (i = 2; i <= 4; i++) luaL_checktype(L, i, LUA_TTABLE);
  for (i = 1; i <= 4; i++) {
    lua_pushvalue(L, i);
    lua_rawseti(L, ctx, i);
  }
  return 0;
}

static const luaL_Reg funcs[] = {
  {"init", l_init},
  {"encode_pk", l_encode_pk},
  {"encode_put", l_encode_put},
  {"encode_update", l_encode_update},
  {"encode_delete", l_encode_delete},
  {"encode_rows", l_encode_rows},
  {"encode_value", l_encode_value},
  {"decode_rows", l_decode_rows},
  {"decode_value", l_decode_value},
  {"rows_length", l_rows_length},
  {"hmac_sha1_b64", l_hmac_sha1_b64},
  {"content_md5", l_content_md5},
  {"sign_headers", l_sign_headers},
  {"equal", l_equal},
  {"unknown_key", l_unknown_key},
  {"list_key", l_list_key},
  {"raw_api", l_raw_api},
  {"raw_verify", l_raw_verify},
  {"answer", l_answer},
  {"parse_date", l_parse_date},
  {NULL, NULL}
};

int otsk_open_wire(lua_State *L) {
  const luaL_Reg *f;
  pb_writer *w;
  luaL_newmetatable(L, WRITER_MT);
  lua_pushcfunction(L, writer_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  luaL_newmetatable(L, ROW_MT);
  lua_pushcfunction(L, row_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  lua_newtable(L);                 /* the module */
  lua_createtable(L, CTX_SCRATCH, 0); /* the context (CTX_SCRATCH: nil until the first decode) */
  w = lua_newuserdata(L, sizeof *w);
  pb_writer_init(w);
  luaL_getmetatable(L, WRITER_MT);
  lua_setmetatable(L, -2);
  lua_rawseti(L, -2, CTX_WRITER);
  lua_createtable(L, 0, 1);        /* the metatable of a decode's offsets */
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_rawseti(L, -2, CTX_WEAK_KEYS);
  for (f = funcs; f->name; f++) {
    lua_pushvalue(L, -1);
    lua_pushcclosure(L, f->func, 1);
    lua_setfield(L, -3, f->name);
  }
  lua_pop(L, 1);
  otsk_wire_proto_register(L);
  return 1;
}
