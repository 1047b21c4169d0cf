/* lkey.c -- Lua binding of the key part: otskit.core.key (the tuple codec
 * from ltuple.c, spliced keys from lsplice.c, hash prefixes and
 * buckets from lprefix.c). */
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

int otsk_open_key(lua_State *L) {
  lua_newtable(L);
  otsk_key_open_tuple(L);
  otsk_key_open_splice(L);
  otsk_key_open_prefix(L);
  return 1;
}
