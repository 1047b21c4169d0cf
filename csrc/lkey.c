/* lkey.c -- Lua binding of the key part: otskit.core.key (the tuple codec
 * from ltuple.c, spliced keys from lsplice.c, hash prefixes and
 * buckets from lprefix.c). */
#include "compat.h"
#include "lkey.h"
#include "parts.h"

int otsk_open_key(lua_State *L) {
  lua_newtable(L);
  otsk_key_open_tuple(L);
  otsk_key_open_splice(L);
  otsk_key_open_prefix(L);
  return 1;
}
