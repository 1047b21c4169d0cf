/* otskit.c -- luaopen_otskit_core: one table, one sub-table per part. */
#include "compat.h"
#include "parts.h"

#define OTSKIT_VERSION "0.1.0"

#if defined(__GNUC__)
#define OTSKIT_EXPORT __attribute__((visibility("default")))
#else
#define OTSKIT_EXPORT
#endif

#define OTSKIT_OPEN_PART(name) \
  otsk_open_##name(L);         \
  lua_setfield(L, -2, #name);

OTSKIT_EXPORT int luaopen_otskit_core(lua_State *L) {
  lua_newtable(L);
  OTSKIT_PARTS(OTSKIT_OPEN_PART)
  lua_pushstring(L, OTSKIT_VERSION);
  lua_setfield(L, -2, "version");
#if OTSKIT_LUA51
  lua_pushstring(L, "luajit");
#else
  lua_pushstring(L, "5.4");
#endif
  lua_setfield(L, -2, "abi");
  return 1;
}
