/* lrow.c -- Lua binding of row.c: otskit.core.row, the cell encoding of
 * the embedded store's rows (encode, decode). */
#include <string.h>

#include "compat.h"
#include "laux.h"
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

/* row.encode(names, types, values) -> bytes: the cells in list order.
 * The strings stay referenced by the argument tables while encoding. */
static int l_encode_row(lua_State *L) {
  int n, i;
  size_t total = 0, off = 0;
  unsigned char *buf;
  row_cell c;
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checktype(L, 3, LUA_TTABLE);
  n = (int)lua_rawlen(L, 1);
  lua_settop(L, 3);
  for (i = 1; i <= n; i++) { /* pass 1: validate and size */
    read_cell(L, i, &c);
    total += row_cell_size(&c);
    lua_settop(L, 3);
  }
  buf = (unsigned char *)lua_newuserdatauv(L, total ? total : 1, 0); /* GC-owned scratch */
  for (i = 1; i <= n; i++) { /* pass 2: write; cannot fail, all checked */
    read_cell(L, i, &c);
    off += row_put_cell(buf + off, &c);
    lua_settop(L, 4);
  }
  lua_pushlstring(L, (const char *)buf, off);
  return 1;
}

/* row.decode(bytes [, want [, with_types]]) -> cols, types|nil, size
 * | nil, msg, "CorruptRow". want: nil (every column) or a set of names to
 * keep; size: Tablestore's size of the kept cells (name + value bytes,
 * 8 for numbers, 1 for booleans). */
static int l_decode_row(lua_State *L) {
  size_t len, pos = 0;
  const unsigned char *buf = (const unsigned char *)luaL_checklstring(L, 1, &len);
  int want = !lua_isnoneornil(L, 2), types = lua_toboolean(L, 3), rc;
  int64_t size = 0;
  row_cell c;
  if (want) luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 3);
  lua_newtable(L);                       /* 4: cols */
  if (types) lua_newtable(L); else lua_pushnil(L); /* 5: types */
  while ((rc = row_next(buf, len, &pos, &c)) == 1) {
    lua_pushlstring(L, c.name, c.name_len);
    if (want) {
      lua_pushvalue(L, -1);
      lua_rawget(L, 2);
      if (!lua_toboolean(L, -1)) { lua_pop(L, 2); continue; }
      lua_pop(L, 1);
    }
    size += (int64_t)c.name_len;
    switch (c.type) {
    case ROW_INTEGER: otsk_pushint64(L, c.i); size += 8; break;
    case ROW_DOUBLE: lua_pushnumber(L, (lua_Number)c.d); size += 8; break;
    case ROW_TRUE: case ROW_FALSE: lua_pushboolean(L, c.type == ROW_TRUE); size += 1; break;
    default: lua_pushlstring(L, c.s, c.s_len); size += (int64_t)c.s_len; break;
    }
    if (types) {
      const char *tn = c.type == ROW_INTEGER ? "INTEGER" : c.type == ROW_DOUBLE ? "DOUBLE"
                     : c.type == ROW_STRING ? "STRING" : c.type == ROW_BINARY ? "BINARY" : "BOOLEAN";
      lua_pushvalue(L, -2);
      lua_pushstring(L, tn);
      lua_rawset(L, 5);
    }
    lua_rawset(L, 4);
  }
  if (rc < 0) return otsk_fail(L, "CorruptRow", "corrupt row at byte %d", (int)pos);
  otsk_pushint64(L, size);
  return 3;
}

static const luaL_Reg funcs[] = {
  {"encode", l_encode_row}, {"decode", l_decode_row}, {NULL, NULL}
};

int otsk_open_row(lua_State *L) {
  lua_newtable(L);
  otsk_setfuncs(L, funcs);
  return 1;
}
