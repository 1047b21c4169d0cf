/* lkey.h -- the pieces of the otskit.core.key binding (lkey.c opens the
 * part; each l<piece>.c adds its functions to the table on the stack). */
#ifndef OTSKIT_LKEY_H
#define OTSKIT_LKEY_H

#include "compat.h"

/* pack, unpack, pack_desc, unpack_desc, null, text, int, double, first */
void otsk_key_open_tuple(lua_State *L);

/* splice_new and the splice encoder class */
void otsk_key_open_splice(lua_State *L);

/* hash_prefix_new, bucket, the hash-prefix encoder class, bench helpers */
void otsk_key_open_prefix(lua_State *L);

/* Like otsk_newclass, but every method and metamethod gets the metatable
 * as upvalue 1, for a self check without a registry lookup. */
void otsk_newclass_uv(lua_State *L, const char *tname, const luaL_Reg *methods,
                      const luaL_Reg *metamethods);

/* key.compare(a, b) -> -1, 0, 1 (bytes_cmp); kv.cmp is the same function. */
int otsk_key_compare(lua_State *L);

#endif
