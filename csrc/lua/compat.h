/* compat.h -- the few shims between the Lua 5.4 and Lua 5.1/LuaJIT C APIs.
 * Bindings include this instead of lua.h directly. */
#ifndef OTSKIT_COMPAT_H
#define OTSKIT_COMPAT_H

#include <lua.h>
#include <lauxlib.h>

#if LUA_VERSION_NUM < 502          /* Lua 5.1 / LuaJIT */
#define OTSKIT_LUA51 1
#define lua_rawlen(L, i)        lua_objlen((L), (i))
#define lua_absindex(L, i) \
  (((i) > 0 || (i) <= LUA_REGISTRYINDEX) ? (i) : lua_gettop(L) + (i) + 1)
#define luaL_len(L, i)          ((lua_Integer)lua_objlen((L), (i)))
#define luaL_prepbuffsize(B, n) luaL_prepbuffer(B)
#define lua_newuserdatauv(L, sz, nuv) lua_newuserdata((L), (sz))
#define luaL_pushfail(L)        lua_pushnil(L)
#define LUA_MAXINTEGER_D        9223372036854775807.0
#else
#define OTSKIT_LUA51 0
#endif

#if LUA_VERSION_NUM < 504
#ifndef luaL_pushfail
#define luaL_pushfail(L)        lua_pushnil(L)
#endif
#endif

#endif
