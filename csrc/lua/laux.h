/* laux.h -- argument helpers shared by the Lua bindings (range-checked
 * integers on both ABIs, the nil/message/code failure triple). */
#ifndef OTSKIT_LAUX_H
#define OTSKIT_LAUX_H

#include <stdint.h>
#include "compat.h"

/* Pushes nil, msg, code and returns 3: the "expected failure" triple. */
int otsk_fail(lua_State *L, const char *code, const char *fmt, ...);

/* Raises "otskit.<mod>: <message>": for programming mistakes. */
int otsk_error(lua_State *L, const char *mod, const char *fmt, ...);

/* Reads an int64 at idx: a Lua 5.4 integer, an integral float that fits,
 * or (for 64-bit values LuaJIT's doubles cannot hold) a decimal string.
 * Returns 1 on success; 0 and an error message in *why otherwise. */
int otsk_toint64(lua_State *L, int idx, int64_t *out, const char **why);

/* Like otsk_toint64 but raises "otskit.<mod>: bad argument <what>". */
int64_t otsk_checkint64(lua_State *L, int idx, const char *mod, const char *what);

/* An optional integer field of the table at idx within [lo, hi], or def. */
int64_t otsk_optintfield(lua_State *L, int idx, const char *field, int64_t def,
                         int64_t lo, int64_t hi, const char *mod);

/* The bytes of a key argument: a string as is; an integer (or integral
 * float) as its decimal text, the same on both ABIs (5.4 would print 3.0,
 * LuaJIT 3). buf must hold 24 bytes. Returns NULL for anything else, with
 * the reason in *why. */
const char *otsk_tokeybytes(lua_State *L, int idx, size_t *len, char *buf,
                            const char **why);

/* Pushes an int64 exactly: an integer on 5.4; on LuaJIT a number when it
 * is exact as a double, else its decimal string. */
void otsk_pushint64(lua_State *L, int64_t v);

/* The metatable idiom: registers tname with the given methods as __index
 * and the metamethods; leaves nothing on the stack. */
void otsk_newclass(lua_State *L, const char *tname, const luaL_Reg *methods,
                   const luaL_Reg *metamethods);

/* The metamethods of a class whose objects fn closes, for a luaL_Reg
 * list: __gc, and __close where the VM has to-be-closed variables. */
#if LUA_VERSION_NUM >= 504
#define OTSK_CLOSE_META(fn) {"__gc", fn}, {"__close", fn}
#else
#define OTSK_CLOSE_META(fn) {"__gc", fn}
#endif

/* Sets t[name] = f for the table on top of the stack. */
void otsk_setfuncs(lua_State *L, const luaL_Reg *l);

/* A box: memory from a C allocator owned by a userdata pushed on the
 * stack, so a call that raises between allocating and freeing it (an
 * argument check, lua_pushlstring, lua_rawseti out of memory) leaks
 * nothing: the box's __gc (also __close) frees it. otsk_box_new pushes an
 * empty box; fill p, n and free (free(p, n) releases it); otsk_box_release
 * frees it at once (idempotent). */
typedef struct otsk_box {
  void *p;
  size_t n;
  void (*free)(void *p, size_t n);
} otsk_box;
otsk_box *otsk_box_new(lua_State *L);
void otsk_box_release(otsk_box *b);

#endif
