/* lprefix.c -- hash-prefixed keys (the userdata behind key.hash_prefix)
 * and bucket numbers, over hash.c. */
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "laux.h"
#include "lkey.h"
#include "num.h"

#define MT_PREFIX "otskit.key.hash_prefix"
#define SHORT_KEY 1024   /* keys up to this size are built on the stack */

static const char *const algo_names[] = {"md5", "xxh3", "crc32c", NULL};

typedef struct lprefix { hash_algo algo; int len; } lprefix;

/* self at index 1 (methods carry the metatable as upvalue 1) */
static lprefix *check_prefix(lua_State *L) {
  void *p = lua_touserdata(L, 1);
  if (p == NULL || !lua_getmetatable(L, 1) || !lua_rawequal(L, -1, lua_upvalueindex(1)))
    otsk_error(L, "key", "bad self (expected %s; call with a colon)", MT_PREFIX);
  lua_pop(L, 1);
  return (lprefix *)p;
}

/* hash_prefix_new(algo, len) -> encoder (key.lua checked len) */
static int l_prefix_new(lua_State *L) {
  hash_algo algo = (hash_algo)luaL_checkoption(L, 1, "md5", algo_names);
  int64_t len = otsk_checkint64(L, 2, "key", "len");
  lprefix *self;
  if (len < 1 || len > 2 * (int64_t)hash_digest_len(algo))
    return otsk_error(L, "key", "len must be 1..%d for %s",
                      (int)(2 * hash_digest_len(algo)), algo_names[algo]);
  self = (lprefix *)lua_newuserdatauv(L, sizeof *self, 0);
  luaL_getmetatable(L, MT_PREFIX);
  lua_setmetatable(L, -2);
  self->algo = algo;
  self->len = (int)len;
  return 1;
}

/* The bytes of the key at idx (a string, or an integer as decimal text);
 * raises otherwise. nb: 24 bytes of scratch. */
static const char *key_bytes(lua_State *L, int idx, size_t *n, char *nb, int k) {
  const char *why = NULL;
  const char *p = otsk_tokeybytes(L, idx, n, nb, &why);
  if (p == NULL) {
    if (k > 0) otsk_error(L, "key", "key %d: %s, got %s", k, why, luaL_typename(L, idx));
    otsk_error(L, "key", "bad key (%s, got %s)", why, luaL_typename(L, idx));
  }
  return p;
}

/* Pushes prefix(p) .. p. */
static void push_prefixed(lua_State *L, const lprefix *self, const char *p, size_t n) {
  char buf[32 + SHORT_KEY];
  if (n <= SHORT_KEY) {
    hash_prefix_key(self->algo, self->len, p, n, buf);
    lua_pushlstring(L, buf, (size_t)self->len + n);
  } else {
    hash_hex_prefix(self->algo, p, n, self->len, buf);
    lua_pushlstring(L, buf, (size_t)self->len);
    lua_pushlstring(L, p, n);
    lua_concat(L, 2);
  }
}

static int m_prefix(lua_State *L) {
  const lprefix *self = check_prefix(L);
  size_t n;
  char nb[24], out[32];
  const char *p = key_bytes(L, 2, &n, nb, 0);
  hash_hex_prefix(self->algo, p, n, self->len, out);
  lua_pushlstring(L, out, (size_t)self->len);
  return 1;
}

static int m_encode(lua_State *L) {
  const lprefix *self = check_prefix(L);
  size_t n;
  char nb[24];
  const char *p = key_bytes(L, 2, &n, nb, 0);
  push_prefixed(L, self, p, n);
  return 1;
}

static int m_encode_many(lua_State *L) {
  const lprefix *self = check_prefix(L);
  int n, k;
  luaL_checktype(L, 2, LUA_TTABLE);
  n = (int)lua_rawlen(L, 2);
  lua_createtable(L, n, 0);
  for (k = 1; k <= n; k++) {
    size_t len;
    char nb[24];
    const char *p;
    lua_rawgeti(L, 2, k);
    p = key_bytes(L, -1, &len, nb, k);
    push_prefixed(L, self, p, len);
    lua_rawseti(L, -3, k);
    lua_pop(L, 1);
  }
  return 1;
}

/* decode(s) -> the key without its prefix | nil, msg, "BadPrefix" when the
 * prefix is missing or is not the hash of the rest. */
static int m_decode(lua_State *L) {
  const lprefix *self = check_prefix(L);
  size_t n;
  const char *s = luaL_checklstring(L, 2, &n);
  char want[32];
  if (n < (size_t)self->len)
    return otsk_fail(L, "BadPrefix", "key shorter than its %d-digit prefix", self->len);
  hash_hex_prefix(self->algo, s + self->len, n - (size_t)self->len, self->len, want);
  if (memcmp(want, s, (size_t)self->len) != 0)
    return otsk_fail(L, "BadPrefix", "prefix is not the %s of the key", algo_names[self->algo]);
  lua_pushlstring(L, s + self->len, n - (size_t)self->len);
  return 1;
}

static int m_tostring(lua_State *L) {
  const lprefix *self = check_prefix(L);
  lua_pushfstring(L, "otskit.key.hash_prefix (%s, %d hex digits)",
                  algo_names[self->algo], self->len);
  return 1;
}

/* bucket(by, algo, n, v) -> bucket number 0..n-1 of v: by "mod": v mod n
 * (v an int64, result never negative); by "hash": the first 8 digest bytes
 * (4 for crc32c) of v's bytes, big-endian, mod n. */
static int l_bucket(lua_State *L) {
  static const char *const bys[] = {"mod", "hash", NULL};
  int by = luaL_checkoption(L, 1, NULL, bys);
  hash_algo algo = (hash_algo)luaL_checkoption(L, 2, "md5", algo_names);
  int64_t n = otsk_checkint64(L, 3, "key", "n");
  if (n < 1) return otsk_error(L, "key", "n must be positive");
  if (n > INT32_MAX) return otsk_error(L, "key", "n must be 1..2147483647");
  if (by == 0) {
    int64_t v = otsk_checkint64(L, 4, "key", "value (mod buckets take integers)");
    lua_pushinteger(L, num_bucket_mod(v, (int32_t)n));
  } else {
    size_t len;
    char nb[24];
    const char *p = key_bytes(L, 4, &len, nb, 0);
    lua_pushinteger(L, num_bucket_hash(algo, p, len, (int32_t)n));
  }
  return 1;
}

/* reverse_ts(ts [, max]) -> max - ts (max defaults to INT64_MAX): newer
 * timestamps give smaller values. Raises unless 0 <= ts <= max. */
static int l_reverse_ts(lua_State *L) {
  int64_t ts = otsk_checkint64(L, 1, "key", "ts to reverse_ts");
  int64_t max = lua_isnoneornil(L, 2) ? INT64_MAX
                                      : otsk_checkint64(L, 2, "key", "max to reverse_ts");
  if (ts < 0 || ts > max)
    return otsk_error(L, "key", "reverse_ts: ts must be in 0..max");
  otsk_pushint64(L, max - ts);
  return 1;
}

void otsk_key_open_prefix(lua_State *L) {
  static const luaL_Reg methods[] = {
    {"prefix", m_prefix}, {"encode", m_encode}, {"encode_many", m_encode_many},
    {"decode", m_decode}, {NULL, NULL}
  };
  static const luaL_Reg meta[] = {{"__tostring", m_tostring}, {NULL, NULL}};
  static const luaL_Reg fns[] = {
    {"hash_prefix_new", l_prefix_new}, {"bucket", l_bucket},
    {"reverse_ts", l_reverse_ts}, {NULL, NULL}
  };
  otsk_newclass_uv(L, MT_PREFIX, methods, meta);
  otsk_setfuncs(L, fns);
}
