/* lvec.c -- Lua binding of vec.c: otskit.core.vec.
 *   pack(list [, n]) -> the float32 BLOB of the list's n (default #list)
 *     numbers | nil, message (a value that is not a number, NaN, or
 *     beyond the float32 range)
 *   unpack(blob) -> { the float32 values as numbers }
 *   METRIC = { EUCLIDEAN = 0, COSINE = 1, DOT_PRODUCT = 2 } (vec_topk's) */
#include <stdlib.h>

#include "compat.h"
#include "laux.h"
#include "parts.h"
#include "vec.h"

enum { MAX_DIM = 65536 };

static int l_pack(lua_State *L) {
  lua_Integer n, i;
  double stack[512], *x = stack;
  unsigned char *out;
  luaL_checktype(L, 1, LUA_TTABLE);
  n = lua_isnoneornil(L, 2) ? (lua_Integer)lua_rawlen(L, 1) : luaL_checkinteger(L, 2);
  if (n < 0 || n > MAX_DIM) return otsk_error(L, "vec", "pack: a vector has 0..%d values", MAX_DIM);
  if (n > 512) {
    x = (double *)lua_newuserdatauv(L, (size_t)n * sizeof *x, 0);
  }
  for (i = 0; i < n; i++) {
    lua_rawgeti(L, 1, i + 1);
    if (lua_type(L, -1) != LUA_TNUMBER) {
      lua_pushnil(L);
      lua_pushfstring(L, "value %d is not a number", (int)(i + 1));
      return 2;
    }
    x[i] = (double)lua_tonumber(L, -1);
    lua_pop(L, 1);
  }
  out = (unsigned char *)lua_newuserdatauv(L, (size_t)n * 4 + 1, 0);
  if (vec_pack(x, (size_t)n, out) != 0) {
    lua_pushnil(L);
    lua_pushliteral(L, "a value is NaN or beyond the float32 range");
    return 2;
  }
  lua_pushlstring(L, (const char *)out, (size_t)n * 4);
  return 1;
}

static int l_unpack(lua_State *L) {
  size_t len, i;
  const unsigned char *b = (const unsigned char *)luaL_checklstring(L, 1, &len);
  if (len % 4 != 0) return otsk_error(L, "vec", "unpack: a packed vector has a multiple of 4 bytes, got %d", (int)len);
  lua_createtable(L, (int)(len / 4), 0);
  for (i = 0; i < len / 4; i++) {
    lua_pushnumber(L, (lua_Number)vec_get(b, i));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

static const luaL_Reg funcs[] = {{"pack", l_pack}, {"unpack", l_unpack}, {NULL, NULL}};

int otsk_open_vec(lua_State *L) {
  lua_newtable(L);
  otsk_setfuncs(L, funcs);
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, VEC_EUCLIDEAN);
  lua_setfield(L, -2, "EUCLIDEAN");
  lua_pushinteger(L, VEC_COSINE);
  lua_setfield(L, -2, "COSINE");
  lua_pushinteger(L, VEC_DOT_PRODUCT);
  lua_setfield(L, -2, "DOT_PRODUCT");
  lua_setfield(L, -2, "METRIC");
  return 1;
}
