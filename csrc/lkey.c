/* lkey.c -- Lua binding of the key part: otskit.core.key (the tuple codec
 * from ltuple.c, spliced keys and hash prefixes from lsplice.c). */
#include "compat.h"
#include "lkey.h"
#include "parts.h"

int otsk_open_key(lua_State *L) {
  lua_newtable(L);
  otsk_key_open_tuple(L);
  return 1;
}
