/* lrow.c -- Lua binding of row.c: otskit.core.row, the cell encoding of
 * the embedded store's rows (encode, decode). */
#include <string.h>

#include "compat.h"
#include "laux.h"
#include "lkv.h"
#include "otskit_ffi.h"
#include "parts.h"
#include "row.h"

/* the ROW_* code of a type name, or 0 */
static int row_type(const char *t, size_t n) {
  if (n == 6 && memcmp(t, "STRING", 6) == 0) return ROW_STRING;
  if (n == 6 && memcmp(t, "BINARY", 6) == 0) return ROW_BINARY;
  if (n == 7 && memcmp(t, "INTEGER", 7) == 0) return ROW_INTEGER;
  if (n == 6 && memcmp(t, "DOUBLE", 6) == 0) return ROW_DOUBLE;
  if (n == 7 && memcmp(t, "BOOLEAN", 7) == 0) return ROW_TRUE;
  return 0;
}

/* reads cell i of the names/types/values arrays at 1..3 into c */
static void read_cell(lua_State *L, int i, row_cell *c) {
  size_t tl;
  const char *t, *why = NULL;
  lua_rawgeti(L, 1, i);
  if (lua_type(L, -1) != LUA_TSTRING) otsk_error(L, "row", "encode: name %d is not a string", i);
  c->name = lua_tolstring(L, -1, &c->name_len);
  lua_rawgeti(L, 2, i);
  t = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &tl) : NULL;
  lua_rawgeti(L, 3, i);
  c->type = t ? row_type(t, tl) : 0;
  switch (c->type) {
  case ROW_STRING: case ROW_BINARY:
    if (lua_type(L, -1) != LUA_TSTRING) otsk_error(L, "row", "encode: value %d is not a string", i);
    c->s = lua_tolstring(L, -1, &c->s_len);
    break;
  case ROW_INTEGER:
    if (!otsk_toint64(L, -1, &c->i, &why)) otsk_error(L, "row", "encode: value %d: %s", i, why);
    break;
  case ROW_DOUBLE:
    if (lua_type(L, -1) != LUA_TNUMBER) otsk_error(L, "row", "encode: value %d is not a number", i);
    c->d = (double)lua_tonumber(L, -1);
    break;
  case ROW_TRUE:
    if (lua_type(L, -1) != LUA_TBOOLEAN) otsk_error(L, "row", "encode: value %d is not a boolean", i);
    c->type = lua_toboolean(L, -1) ? ROW_TRUE : ROW_FALSE;
    break;
  default:
    otsk_error(L, "row", "encode: type %d must be STRING, BINARY, INTEGER, DOUBLE or BOOLEAN", i);
  }
}

/* reads cell i's timestamp from the optional table at 4 (nil entry: none) */
static void read_ts(lua_State *L, int i, row_cell *c, int has_def, int64_t def) {
  const char *why = NULL;
  c->has_ts = has_def;
  c->ts = has_def ? def : 0;
  if (lua_isnoneornil(L, 4)) return;
  lua_rawgeti(L, 4, i);
  if (!lua_isnil(L, -1) && !(lua_isboolean(L, -1) && !lua_toboolean(L, -1))) {
    if (!otsk_toint64(L, -1, &c->ts, &why)) otsk_error(L, "row", "encode: timestamp %d: %s", i, why);
    c->has_ts = 1;
  }
  lua_pop(L, 1);
}

/* row.encode(names, types, values [, timestamps [, default_ts]]) -> bytes
 * | nil, i: the cells sorted by name, newest first within a name (row.h);
 * a cell whose timestamp entry is nil or false (or with no timestamps
 * table) takes default_ts, or none without it; nil and
 * the index of the first STRING value that is not UTF-8. The strings stay
 * referenced by the argument tables while encoding. */
static int l_encode_row(lua_State *L) {
  int n, i;
  size_t total = 0, off = 0;
  unsigned char *buf;
  row_cell small[16], *cells;
  int has_def;
  int64_t def;
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checktype(L, 3, LUA_TTABLE);
  if (!lua_isnoneornil(L, 4)) luaL_checktype(L, 4, LUA_TTABLE);
  has_def = !lua_isnoneornil(L, 5);
  def = has_def ? otsk_checkint64(L, 5, "row", "#5 (default_ts)") : 0;
  n = (int)lua_rawlen(L, 1);
  lua_settop(L, 4);
  /* most rows are small: their cells on the C stack, no allocation */
  if (n <= (int)(sizeof small / sizeof small[0])) {
    cells = small;
    lua_pushnil(L); /* 5 */
  } else {
    cells = (row_cell *)lua_newuserdatauv(L, (size_t)n * sizeof *cells, 0); /* 5 */
  }
  for (i = 1; i <= n; i++) { /* validate and size */
    row_cell *c = &cells[i - 1];
    read_cell(L, i, c);
    read_ts(L, i, c, has_def, def);
    lua_settop(L, 5);
    if (c->type == ROW_STRING && !row_utf8_valid(c->s, c->s_len)) {
      lua_pushnil(L);
      lua_pushinteger(L, i);
      return 2;
    }
    total += row_cell_size(c);
  }
  row_sort(cells, (size_t)n);
  buf = (unsigned char *)lua_newuserdatauv(L, total ? total : 1, 0); /* GC-owned scratch */
  for (i = 0; i < n; i++) off += row_put_cell(buf + off, &cells[i]);
  lua_pushlstring(L, (const char *)buf, off);
  return 1;
}

static const char *type_name(int t) {
  return t == ROW_INTEGER ? "INTEGER" : t == ROW_DOUBLE ? "DOUBLE" : t == ROW_STRING ? "STRING"
       : t == ROW_BINARY ? "BINARY" : "BOOLEAN";
}

/* pushes a cell's value; returns its Tablestore size */
static int64_t push_value(lua_State *L, const row_cell *c) {
  switch (c->type) {
  case ROW_INTEGER: otsk_pushint64(L, c->i); return 8;
  case ROW_DOUBLE: lua_pushnumber(L, (lua_Number)c->d); return 8;
  case ROW_TRUE: case ROW_FALSE: lua_pushboolean(L, c->type == ROW_TRUE); return 1;
  default: lua_pushlstring(L, c->s, c->s_len); return (int64_t)c->s_len;
  }
}

static int64_t opt_int64(lua_State *L, int idx, int64_t def, const char *what) {
  if (lua_isnoneornil(L, idx)) return def;
  return otsk_checkint64(L, idx, "row", what);
}

/* row.decode(bytes [, want [, with_types [, lo, hi, max_versions [,
 * with_cells]]]]) -> cols, types|nil, size, kept, cells|nil, newest
 * | nil, msg, "CorruptRow".
 * Keeps the cells whose name is in want (nil: every name) and whose
 * timestamp is in [lo, hi) (nil: unbounded), at most max_versions
 * (default 1) per name, newest first. cols: name -> value of the newest
 * kept version; types: name -> its type (with_types); size: Tablestore's
 * size of the kept cells (name + value bytes, 8 for numbers, 1 for
 * booleans); kept: how many cells were kept; cells (with_cells): every
 * kept cell as {name, value, ts, type}, in stored order; newest: the
 * largest timestamp of a kept cell, or 0 when none is larger. */
static int l_decode_row(lua_State *L) {
  size_t len, pos = 0, pnl = 0;
  const unsigned char *buf = (const unsigned char *)luaL_checklstring(L, 1, &len);
  int want = !lua_isnoneornil(L, 2), types = lua_toboolean(L, 3), rc;
  int64_t lo = opt_int64(L, 4, INT64_MIN, "#4 (lo)"), hi = opt_int64(L, 5, INT64_MAX, "#5 (hi)");
  int64_t maxv = opt_int64(L, 6, 1, "#6 (max_versions)"), size = 0, kept = 0, nv = 0, newest = 0;
  int with_cells = lua_toboolean(L, 7), skip = 0;
  const char *pn = NULL;
  row_cell c;
  if (want) luaL_checktype(L, 2, LUA_TTABLE);
  if (maxv < 1) return otsk_error(L, "row", "max_versions must be >= 1");
  lua_settop(L, 7);
  lua_newtable(L);                                  /* 8: cols */
  if (types) lua_newtable(L); else lua_pushnil(L);  /* 9: types */
  if (with_cells) lua_newtable(L); else lua_pushnil(L); /* 10: cells */
  while ((rc = row_next(buf, len, &pos, &c)) == 1) {
    int first = pn == NULL || pnl != c.name_len || memcmp(pn, c.name, pnl) != 0;
    if (first) { /* a new name: is it wanted? */
      pn = c.name; pnl = c.name_len; nv = 0; skip = 0;
      if (want) {
        lua_pushlstring(L, c.name, c.name_len);
        lua_rawget(L, 2);
        skip = !lua_toboolean(L, -1);
        lua_pop(L, 1);
      }
    }
    if (skip || c.ts < lo || c.ts >= hi || nv >= maxv) continue;
    nv++;
    kept++;
    if (c.ts > newest) newest = c.ts;
    size += (int64_t)c.name_len;
    if (nv == 1) { /* newest kept version: the columns view */
      lua_pushlstring(L, c.name, c.name_len);
      size += push_value(L, &c);
      if (types) {
        lua_pushvalue(L, -2);
        lua_pushstring(L, type_name(c.type));
        lua_rawset(L, 9);
      }
      lua_rawset(L, 8);
    } else {
      size += c.type == ROW_STRING || c.type == ROW_BINARY ? (int64_t)c.s_len
            : c.type == ROW_TRUE || c.type == ROW_FALSE ? 1 : 8;
    }
    if (with_cells) {
      lua_createtable(L, 4, 0);
      lua_pushlstring(L, c.name, c.name_len);
      lua_rawseti(L, -2, 1);
      push_value(L, &c);
      lua_rawseti(L, -2, 2);
      otsk_pushint64(L, c.ts);
      lua_rawseti(L, -2, 3);
      lua_pushstring(L, type_name(c.type));
      lua_rawseti(L, -2, 4);
      lua_rawseti(L, 10, (int)kept);
    }
  }
  if (rc < 0) return otsk_fail(L, "CorruptRow", "corrupt row at byte %d", (int)pos);
  lua_pushvalue(L, 8);
  lua_pushvalue(L, 9);
  otsk_pushint64(L, size);
  otsk_pushint64(L, kept);
  lua_pushvalue(L, 10);
  otsk_pushint64(L, newest);
  return 6;
}

/* row.utf8(s) -> whether s is well-formed UTF-8 */
static int l_utf8(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  lua_pushboolean(L, row_utf8_valid(s, n));
  return 1;
}

/* row.now() -> seconds since the epoch, sub-millisecond: the wall clock
 * the store stamps cells with (the plain parts may not read clocks; the
 * FFI's otskit_now is the one clock, otskit.clock reads it directly) */
static int l_now(lua_State *L) {
  lua_pushnumber(L, (lua_Number)otskit_now());
  return 1;
}

static const luaL_Reg funcs[] = {
  {"encode", l_encode_row}, {"decode", l_decode_row}, {"utf8", l_utf8}, {"now", l_now}, {"from_put_pb", otsk_row_from_put_pb},
  {NULL, NULL}
};

int otsk_open_row(lua_State *L) {
  lua_newtable(L);
  otsk_setfuncs(L, funcs);
  return 1;
}
