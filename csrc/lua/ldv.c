/* ldv.c -- Lua binding of docval.c: otskit.core.dv, doc values of a
 * search index (see otskit.store.search.docvalues).
 *   dv.stamp(db) -> string | nil: the content stamp of the kv db's main
 *     database (docval.h dv_stamp), to compare for equality only.
 *   dv.column(db, text, kind, n) -> col | nil, "unfit" | nil, msg, code:
 *     a column ("i64", "f64" or "ord") of document ids 0..n-1 loaded from
 *     statement text's rows (id, value; "ord": in the values' order).
 *     "unfit": a value the kind cannot hold exactly (keep to SQL).
 *     col:bytes() -> the memory it holds; col:free(): releases it at once
 *     (a filter over it then fails its statement instead of answering).
 *   dv.filter(clauses) -> filter | nil, "unfit": clauses a list of
 *     { col, op, neg, ... }: op "exists"; "range" with lo, lo_in, hi,
 *     hi_in (lo or hi nil: no bound); "in" with a list of values at [4].
 *     A value binds as the SQL path's parameter does (an integer, other
 *     numbers REAL, NaN NULL; LuaJIT: an integral number within +-9.2e18
 *     an integer); a string on a numeric column is the decimal integer
 *     the SQL path's CAST(? AS INTEGER) makes of it. The filter is a
 *     parameter of otskit.core.sql's statements (bound as a pointer):
 *     otskit_dv(?N, id) is 1 when document id passes every clause.
 *   dv.count(filter) -> { n1, n2, ... } | nil: for each clause alone,
 *     the documents of its column that pass it (nil: a column freed). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "docval.h"
#include "kvsql.h"
#include "laux.h"
#include "lkv.h"
#include "parts.h"

#define COL_MT "otskit.dv.column"
#define FILTER_MT "otskit.dv.filter"

static int l_stamp(lua_State *L) {
  kv_db *db = otsk_kv_checkdb(L);
  unsigned v;
  int64_t ch;
  if (!dv_stamp((sqlite3 *)kv_sqlite(db), &v, &ch)) {
    lua_pushnil(L);
    return 1;
  }
  {
    char buf[64];
    snprintf(buf, sizeof buf, "%u:%lld", v, (long long)ch);
    lua_pushstring(L, buf);
  }
  return 1;
}

static int l_column(lua_State *L) {
  kv_db *db = otsk_kv_checkdb(L);
  size_t len;
  const char *text = luaL_checklstring(L, 2, &len);
  static const char *const kinds[] = {"i64", "f64", "ord", NULL};
  int kind = luaL_checkoption(L, 3, NULL, kinds) + 1;
  int64_t n = otsk_checkint64(L, 4, "dv", "n");
  dv_col *c = (dv_col *)lua_newuserdata(L, sizeof *c);
  sqlite3_stmt *st;
  int rc;
  memset(c, 0, sizeof *c);
  luaL_getmetatable(L, COL_MT);
  lua_setmetatable(L, -2);
  st = kvsql_prepare(db, text, len);
  if (st == NULL) return otsk_fail(L, "KVError", "sqlite: %s", sqlite3_errmsg((sqlite3 *)kv_sqlite(db)));
  rc = dv_col_load(c, kind, n, st);
  if (rc == DV_UNFIT) {
    lua_pushnil(L);
    lua_pushliteral(L, "unfit");
    return 2;
  }
  if (rc == DV_NOMEM) return luaL_error(L, "not enough memory");
  if (rc != DV_OK) {
    int x = rc & 0xff;
    return otsk_fail(L, x == SQLITE_BUSY || x == SQLITE_LOCKED ? "KVBusy" : x == SQLITE_CORRUPT ? "KVCorrupt" : "KVError",
                     "sqlite: %s", sqlite3_errmsg((sqlite3 *)kv_sqlite(db)));
  }
  return 1;
}

static int col_gc(lua_State *L) {
  dv_col_free((dv_col *)luaL_checkudata(L, 1, COL_MT));
  return 0;
}

static int col_bytes(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)((dv_col *)luaL_checkudata(L, 1, COL_MT))->bytes);
  return 1;
}

typedef struct {
  dv_filter f;
  int cap;
} lfilter;

static void filter_release(lfilter *x) {
  int k;
  for (k = 0; k < x->f.n; k++) dv_clause_free(&x->f.c[k]);
  free(x->f.c);
  x->f.c = NULL, x->f.n = 0;
}

static int filter_gc(lua_State *L) {
  filter_release((lfilter *)luaL_checkudata(L, 1, FILTER_MT));
  return 0;
}

/* the value at idx as the SQL path binds it, for a column of kind:
 * DV_OK, or DV_UNFIT */
static int val_of(lua_State *L, int idx, int kind, dv_val *v) {
  memset(v, 0, sizeof *v);
  switch (lua_type(L, idx)) {
  case LUA_TNUMBER: {
    lua_Number d = lua_tonumber(L, idx);
#if LUA_VERSION_NUM >= 503
    if (lua_isinteger(L, idx)) {
      v->type = SQLITE_INTEGER, v->i = (int64_t)lua_tointeger(L, idx);
      return DV_OK;
    }
#else
    if (d == floor(d) && d >= -9.2e18 && d <= 9.2e18) {
      v->type = SQLITE_INTEGER, v->i = (int64_t)d;
      return DV_OK;
    }
#endif
    if (d != d) v->type = SQLITE_NULL; /* SQLite binds NaN as NULL */
    else v->type = SQLITE_FLOAT, v->d = (double)d;
    return DV_OK;
  }
  case LUA_TBOOLEAN: v->type = SQLITE_INTEGER, v->i = lua_toboolean(L, idx); return DV_OK;
  case LUA_TSTRING: {
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    if (kind == DV_ORD) {
      v->type = SQLITE_TEXT, v->s = s, v->len = len;
      return DV_OK;
    } else { /* CAST(? AS INTEGER) of a decimal int64: anything else is not taken */
      char *end;
      long long x;
      size_t k = (len > 0 && s[0] == '-') ? 1 : 0;
      if (len == k || len > 20) return DV_UNFIT;
      for (; k < len; k++)
        if (s[k] < '0' || s[k] > '9') return DV_UNFIT;
      errno = 0;
      x = strtoll(s, &end, 10);
      if (errno != 0 || end != s + len) return DV_UNFIT;
      v->type = SQLITE_INTEGER, v->i = (int64_t)x;
      return DV_OK;
    }
  }
  default: return DV_UNFIT;
  }
}

static int unfit(lua_State *L) {
  lua_pushnil(L);
  lua_pushliteral(L, "unfit");
  return 2;
}

static int l_filter(lua_State *L) {
  int n, k, rc = DV_OK;
  lfilter *x;
  luaL_checktype(L, 1, LUA_TTABLE);
  n = (int)lua_rawlen(L, 1);
  x = (lfilter *)lua_newuserdata(L, sizeof *x);
  memset(x, 0, sizeof *x);
  luaL_getmetatable(L, FILTER_MT);
  lua_setmetatable(L, -2);
  if (n < 1 || n > 1024) return unfit(L);
  x->f.c = (dv_clause *)calloc((size_t)n, sizeof *x->f.c);
  if (x->f.c == NULL) return luaL_error(L, "not enough memory");
  for (k = 0; k < n && rc == DV_OK; k++) {
    dv_col *col;
    const char *op;
    int neg, top;
    lua_rawgeti(L, 1, k + 1);
    top = lua_gettop(L);
    luaL_checktype(L, top, LUA_TTABLE);
    lua_rawgeti(L, top, 1);
    col = (dv_col *)luaL_checkudata(L, -1, COL_MT);
    lua_rawgeti(L, top, 2);
    op = luaL_checkstring(L, -1);
    lua_rawgeti(L, top, 3);
    neg = lua_toboolean(L, -1);
    if (col->n == 0) rc = DV_UNFIT;
    else if (strcmp(op, "exists") == 0) rc = dv_clause_exists(&x->f.c[k], col, neg);
    else if (strcmp(op, "range") == 0) {
      dv_val lo, hi;
      int has_lo, has_hi, lo_in, hi_in;
      lua_rawgeti(L, top, 4), lua_rawgeti(L, top, 5), lua_rawgeti(L, top, 6), lua_rawgeti(L, top, 7);
      has_lo = !lua_isnil(L, -4), lo_in = lua_toboolean(L, -3);
      has_hi = !lua_isnil(L, -2), hi_in = lua_toboolean(L, -1);
      if (has_lo) rc = val_of(L, -4, col->kind, &lo);
      if (rc == DV_OK && has_hi) rc = val_of(L, -2, col->kind, &hi);
      if (rc == DV_OK) rc = dv_clause_range(&x->f.c[k], col, neg, has_lo ? &lo : NULL, lo_in, has_hi ? &hi : NULL, hi_in);
    } else if (strcmp(op, "in") == 0) {
      int m, j;
      dv_val *vals;
      lua_rawgeti(L, top, 4);
      luaL_checktype(L, -1, LUA_TTABLE);
      m = (int)lua_rawlen(L, -1);
      if (m < 1 || m > 4096) rc = DV_UNFIT;
      else {
        /* (the strings stay referenced by the list while the clause is made) */
        vals = (dv_val *)lua_newuserdata(L, (size_t)m * sizeof *vals);
        for (j = 0; j < m && rc == DV_OK; j++) {
          lua_rawgeti(L, -2, j + 1);
          rc = val_of(L, -1, col->kind, &vals[j]);
          lua_pop(L, 1);
        }
        if (rc == DV_OK) rc = dv_clause_in(&x->f.c[k], col, neg, vals, m);
      }
    } else rc = DV_UNFIT;
    if (rc == DV_OK) x->f.n = k + 1;
    lua_settop(L, top - 1);
  }
  if (rc == DV_NOMEM) return luaL_error(L, "not enough memory");
  if (rc != DV_OK) {
    filter_release(x);
    return unfit(L);
  }
  /* the columns stay alive while the filter is */
  lua_pushvalue(L, 1);
#if LUA_VERSION_NUM >= 504
  lua_setiuservalue(L, -2, 1);
#else
  lua_setfenv(L, -2);
#endif
  return 1;
}

static int l_count(lua_State *L) {
  lfilter *x = (lfilter *)luaL_checkudata(L, 1, FILTER_MT);
  int k;
  lua_createtable(L, x->f.n, 0);
  for (k = 0; k < x->f.n; k++) {
    int64_t n = dv_count(&x->f.c[k]);
    if (n < 0) {
      lua_pushnil(L);
      return 1;
    }
    lua_pushinteger(L, (lua_Integer)n);
    lua_rawseti(L, -2, k + 1);
  }
  return 1;
}

/* (otskit.core.sql binds a filter as a pointer: lsql.c) */
const dv_filter *otsk_dv_testfilter(lua_State *L, int idx) {
  lfilter *x = (lfilter *)luaL_testudata(L, idx, FILTER_MT);
  return x && x->f.c ? &x->f : NULL;
}

int otsk_open_dv(lua_State *L) {
  static const luaL_Reg fns[] = {{"stamp", l_stamp}, {"column", l_column}, {"filter", l_filter}, {"count", l_count}, {NULL, NULL}};
  static const luaL_Reg colm[] = {{"bytes", col_bytes}, {"free", col_gc}, {NULL, NULL}};
  static const luaL_Reg colmeta[] = {{"__gc", col_gc}, {NULL, NULL}};
  static const luaL_Reg fmeta[] = {{"__gc", filter_gc}, {NULL, NULL}};
  otsk_newclass(L, COL_MT, colm, colmeta);
  otsk_newclass(L, FILTER_MT, NULL, fmeta);
  lua_newtable(L);
  otsk_setfuncs(L, fns);
  return 1;
}
