/* laux.c -- argument helpers shared by the Lua bindings. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "laux.h"
#include "num.h"

int otsk_fail(lua_State *L, const char *code, const char *fmt, ...) {
  va_list ap;
  lua_pushnil(L);
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  lua_pushstring(L, code);
  return 3;
}

int otsk_error(lua_State *L, const char *mod, const char *fmt, ...) {
  va_list ap;
  lua_pushfstring(L, "otskit.%s: ", mod);
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  lua_concat(L, 2);
  return lua_error(L);
}

int otsk_toint64(lua_State *L, int idx, int64_t *out, const char **why) {
  int t = lua_type(L, idx);
  if (t == LUA_TNUMBER) {
#if !OTSKIT_LUA51
    if (lua_isinteger(L, idx)) {
      *out = (int64_t)lua_tointeger(L, idx);
      return 1;
    }
#endif
    {
      lua_Number d = lua_tonumber(L, idx);
      if (d != d || d != floor(d)) { *why = "not an integer"; return 0; }
      /* [-2^63, 2^63): both bounds exact as doubles */
      if (d < -9223372036854775808.0 || d >= 9223372036854775808.0) {
        *why = "integer out of int64 range";
        return 0;
      }
      *out = (int64_t)d;
      return 1;
    }
  }
  if (t == LUA_TSTRING) {
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    if (num_parse_int64(s, len, out)) return 1;
    *why = "not a decimal int64 string";
    return 0;
  }
  *why = "not an integer";
  return 0;
}

int64_t otsk_checkint64(lua_State *L, int idx, const char *mod, const char *what) {
  int64_t v = 0;
  const char *why = NULL;
  if (!otsk_toint64(L, idx, &v, &why))
    otsk_error(L, mod, "bad argument %s (%s, got %s)", what, why,
               luaL_typename(L, idx));
  return v;
}

int64_t otsk_optintfield(lua_State *L, int idx, const char *field, int64_t def,
                         int64_t lo, int64_t hi, const char *mod) {
  int64_t v = def;
  const char *why = NULL;
  idx = lua_absindex(L, idx);
  lua_getfield(L, idx, field);
  if (!lua_isnil(L, -1)) {
    if (!otsk_toint64(L, -1, &v, &why))
      otsk_error(L, mod, "%s must be an integer (%s)", field, why);
  }
  lua_pop(L, 1);
  if (v < lo || v > hi) {
    char range[64]; /* LuaJIT's pushfstring has no 64-bit format */
    snprintf(range, sizeof range, "%lld..%lld", (long long)lo, (long long)hi);
    otsk_error(L, mod, "%s must be %s", field, range);
  }
  return v;
}

const char *otsk_tokeybytes(lua_State *L, int idx, size_t *len, char *buf,
                            const char **why) {
  int64_t v;
  if (lua_type(L, idx) == LUA_TSTRING) return lua_tolstring(L, idx, len);
  if (lua_type(L, idx) != LUA_TNUMBER) { *why = "expected a string or an integer"; return NULL; }
  if (!otsk_toint64(L, idx, &v, why)) return NULL;
  *len = (size_t)num_int64_text(v, buf);
  return buf;
}

void otsk_pushint64(lua_State *L, int64_t v) {
#if OTSKIT_LUA51
  if (v >= -9007199254740992LL && v <= 9007199254740992LL) {
    lua_pushnumber(L, (lua_Number)v);
  } else {
    char buf[32];
    lua_pushlstring(L, buf, (size_t)num_int64_text(v, buf));
  }
#else
  lua_pushinteger(L, (lua_Integer)v);
#endif
}

void otsk_setfuncs(lua_State *L, const luaL_Reg *l) {
  for (; l->name != NULL; l++) {
    lua_pushcfunction(L, l->func);
    lua_setfield(L, -2, l->name);
  }
}

void otsk_newclass(lua_State *L, const char *tname, const luaL_Reg *methods,
                   const luaL_Reg *metamethods) {
  luaL_newmetatable(L, tname);
  if (metamethods) otsk_setfuncs(L, metamethods);
  lua_newtable(L);
  if (methods) otsk_setfuncs(L, methods);
  lua_setfield(L, -2, "__index");
  lua_pushstring(L, tname);
  lua_setfield(L, -2, "__name");
  lua_pop(L, 1);
}

#define BOX_MT "otskit.box"

void otsk_box_release(otsk_box *b) {
  if (b->p && b->free) b->free(b->p, b->n);
  b->p = NULL;
}

static int box_gc(lua_State *L) {
  otsk_box_release((otsk_box *)luaL_checkudata(L, 1, BOX_MT));
  return 0;
}

otsk_box *otsk_box_new(lua_State *L) {
  otsk_box *b = (otsk_box *)lua_newuserdata(L, sizeof *b);
  b->p = NULL;
  b->n = 0;
  b->free = NULL;
  if (luaL_newmetatable(L, BOX_MT)) {
    lua_pushcfunction(L, box_gc);
    lua_setfield(L, -2, "__gc");
#if LUA_VERSION_NUM >= 504
    lua_pushcfunction(L, box_gc);
    lua_setfield(L, -2, "__close");
#endif
  }
  lua_setmetatable(L, -2);
  return b;
}
