/* lhash.c -- Lua binding of hash.c: otskit.core.hash. */
#include <string.h>

#include "compat.h"
#include "hash.h"
#include "laux.h"
#include "parts.h"

/* in hash_algo order */
static const char *const algo_names[] = {"md5", "xxh3", "crc32c", "sha1", NULL};

/* digest(algo, v [, "hex"]) -> raw digest (or lowercase hex) of v */
static int l_digest(lua_State *L) {
  hash_algo algo = (hash_algo)luaL_checkoption(L, 1, NULL, algo_names);
  size_t n, dl = hash_digest_len(algo);
  char nb[24];
  const char *why = NULL;
  const char *p = otsk_tokeybytes(L, 2, &n, nb, &why);
  unsigned char d[HASH_MAX_DIGEST];
  if (p == NULL) return otsk_error(L, "hash", "bad argument #2 (%s)", why);
  if (!hash_digest(algo, p, n, d)) return otsk_error(L, "hash", "%s failed (OpenSSL)", algo_names[algo]);
  if (lua_toboolean(L, 3)) {
    char hex[2 * HASH_MAX_DIGEST];
    hash_hex(d, dl, hex);
    lua_pushlstring(L, hex, 2 * dl);
  } else {
    lua_pushlstring(L, (const char *)d, dl);
  }
  return 1;
}

/* hex_prefix(algo, v, ndigits) -> the first ndigits hex digits of the digest */
static int l_hex_prefix(lua_State *L) {
  hash_algo algo = (hash_algo)luaL_checkoption(L, 1, NULL, algo_names);
  size_t n;
  char nb[24], out[2 * HASH_MAX_DIGEST];
  const char *why = NULL;
  const char *p = otsk_tokeybytes(L, 2, &n, nb, &why);
  int64_t nd = otsk_checkint64(L, 3, "hash", "#3");
  if (p == NULL) return otsk_error(L, "hash", "bad argument #2 (%s)", why);
  if (nd < 1 || nd > 2 * (int64_t)hash_digest_len(algo))
    return otsk_error(L, "hash", "len must be 1..%d for %s",
                      (int)(2 * hash_digest_len(algo)), algo_names[algo]);
  if (!hash_hex_prefix(algo, p, n, (int)nd, out))
    return otsk_error(L, "hash", "%s failed (OpenSSL)", algo_names[algo]);
  lua_pushlstring(L, out, (size_t)nd);
  return 1;
}

static const luaL_Reg funcs[] = {
  {"digest", l_digest},
  {"hex_prefix", l_hex_prefix},
  {NULL, NULL}
};

int otsk_open_hash(lua_State *L) {
  lua_newtable(L);
  otsk_setfuncs(L, funcs);
  return 1;
}
