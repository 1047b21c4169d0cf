/* lkey.h -- the pieces of the otskit.core.key binding (lkey.c opens the
 * part; each l<piece>.c adds its functions to the table on the stack). */
#ifndef OTSKIT_LKEY_H
#define OTSKIT_LKEY_H

#include "compat.h"

/* pack, unpack, pack_desc, unpack_desc, null, text, int, double */
void otsk_key_open_tuple(lua_State *L);

/* splice, hash_prefix */
void otsk_key_open_splice(lua_State *L);

#endif
