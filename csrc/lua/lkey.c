/* lkey.c -- Lua binding of the key part: otskit.core.key (the tuple codec
 * from ltuple.c, spliced keys from lsplice.c, hash prefixes and
 * buckets from lprefix.c). */
#include "bytes.h"
#include "compat.h"
#include "lkey.h"
#include "parts.h"

static void setfuncs_uv(lua_State *L, int mt, const luaL_Reg *l) {
  for (; l->name != NULL; l++) {
    lua_pushvalue(L, mt);
    lua_pushcclosure(L, l->func, 1);
    lua_setfield(L, -2, l->name);
  }
}

void otsk_newclass_uv(lua_State *L, const char *tname, const luaL_Reg *methods,
                      const luaL_Reg *metamethods) {
  int mt;
  luaL_newmetatable(L, tname);
  mt = lua_gettop(L);
  if (metamethods) setfuncs_uv(L, mt, metamethods);
  lua_newtable(L);
  if (methods) setfuncs_uv(L, mt, methods);
  lua_setfield(L, mt, "__index");
  lua_pushstring(L, tname);
  lua_setfield(L, mt, "__name");
  lua_pop(L, 1);
}

/* compare(a, b) -> -1, 0, 1: byte order of two keys (bytes_cmp: memcmp,
 * shorter first on a common prefix), never the locale's string order.
 * Also bound as kv.cmp (lkv.c). */
int otsk_key_compare(lua_State *L) {
  size_t na, nb;
  const char *a = luaL_checklstring(L, 1, &na);
  const char *b = luaL_checklstring(L, 2, &nb);
  int c = bytes_cmp(a, na, b, nb);
  lua_pushinteger(L, c < 0 ? -1 : c > 0);
  return 1;
}

int otsk_open_key(lua_State *L) {
  lua_newtable(L);
  lua_pushcfunction(L, otsk_key_compare);
  lua_setfield(L, -2, "compare");
  otsk_key_open_tuple(L);
  otsk_key_open_splice(L);
  otsk_key_open_prefix(L);
  return 1;
}
