/* lprefix.c -- hash-prefixed keys (the userdata behind key.hash_prefix)
 * and bucket numbers, over hash.c. */
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "laux.h"
#include "lkey.h"
#include "otskit_ffi.h"

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
    otskit_prefix_encode((int)self->algo, self->len, p, n, buf);
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
    lua_pushinteger(L, otskit_bucket_mod(v, (int32_t)n));
  } else {
    size_t len;
    char nb[24];
    const char *p = key_bytes(L, 4, &len, nb, 0);
    lua_pushinteger(L, otskit_bucket_hash((int)algo, p, len, (int32_t)n));
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

/* ---- bench-only: the C limit for hash-prefixed keys ---- */

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
  const unsigned char *s = (const unsigned char *)p;
  size_t i;
  for (i = 0; i < n; i++) { h ^= s[i]; h *= 1099511628211ULL; }
  return h;
}

/* prefix .. key into buf (32 + SHORT_KEY bytes); returns its length */
static size_t build_key(const lprefix *self, const char *p, size_t n, char *buf) {
  hash_hex_prefix(self->algo, p, n, self->len, buf);
  memcpy(buf + self->len, p, n);
  return (size_t)self->len + n;
}

/* The short string keys of the array at idx, as malloc'ed pointer and
 * length arrays (the strings stay alive while the array does). */
static int collect_keys(lua_State *L, int idx, const char ***ps, size_t **ns) {
  int n = (int)lua_rawlen(L, idx), k;
  *ps = (const char **)malloc(sizeof **ps * (size_t)(n + 1));
  *ns = (size_t *)malloc(sizeof **ns * (size_t)(n + 1));
  if (*ps == NULL || *ns == NULL) {
    free(*ps); free(*ns);
    otsk_error(L, "key", "out of memory");
  }
  for (k = 0; k < n; k++) {
    lua_rawgeti(L, idx, k + 1);
    (*ps)[k] = lua_tolstring(L, -1, &(*ns)[k]);
    lua_pop(L, 1);
    if ((*ps)[k] == NULL || (*ns)[k] > SHORT_KEY) {
      free(*ps); free(*ns);
      otsk_error(L, "key", "bench keys must be strings of at most %d bytes", SHORT_KEY);
    }
  }
  return n;
}

/* _bench_prefix_loop(hp, keys, reps) -> n: the C limit of hp:encode.
 * Builds prefix .. key for every key, reps times, into a C buffer: no Lua
 * call and no Lua string per key. A cheap sink keeps the work live. */
static int l_bench_prefix_loop(lua_State *L) {
  const lprefix *self = (const lprefix *)luaL_checkudata(L, 1, MT_PREFIX);
  const char **ps;
  size_t *ns;
  int n, k, r, reps = (int)luaL_checkinteger(L, 3);
  unsigned sink = 0;
  char buf[32 + SHORT_KEY];
  luaL_checktype(L, 2, LUA_TTABLE);
  n = collect_keys(L, 2, &ps, &ns);
  for (r = 0; r < reps; r++) {
    for (k = 0; k < n; k++) {
      size_t len = build_key(self, ps[k], ns[k], buf);
      sink += (unsigned char)buf[0] + (unsigned char)buf[len - 1];
    }
  }
  free(ps);
  free(ns);
  lua_pushinteger(L, (lua_Integer)sink);
  return 1;
}

/* _bench_prefix_check(hp, keys) -> FNV-1a (hex) of the keys the C loop
 * builds, to compare with _bench_fnv over what the Lua API returned. */
static int l_bench_prefix_check(lua_State *L) {
  const lprefix *self = (const lprefix *)luaL_checkudata(L, 1, MT_PREFIX);
  const char **ps;
  size_t *ns;
  int n, k;
  uint64_t h = 14695981039346656037ULL;
  char buf[32 + SHORT_KEY], hex[17];
  luaL_checktype(L, 2, LUA_TTABLE);
  n = collect_keys(L, 2, &ps, &ns);
  for (k = 0; k < n; k++) h = fnv1a(h, buf, build_key(self, ps[k], ns[k], buf));
  free(ps);
  free(ns);
  hash_hex((const unsigned char *)&h, 8, hex);
  lua_pushlstring(L, hex, 16);
  return 1;
}

/* _bench_fnv(strings) -> FNV-1a (hex) over the strings, as above */
static int l_bench_fnv(lua_State *L) {
  uint64_t h = 14695981039346656037ULL;
  int n, k;
  char hex[17];
  luaL_checktype(L, 1, LUA_TTABLE);
  n = (int)lua_rawlen(L, 1);
  for (k = 1; k <= n; k++) {
    size_t len;
    const char *s;
    lua_rawgeti(L, 1, k);
    s = luaL_checklstring(L, -1, &len);
    h = fnv1a(h, s, len);
    lua_pop(L, 1);
  }
  hash_hex((const unsigned char *)&h, 8, hex);
  lua_pushlstring(L, hex, 16);
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
    {"reverse_ts", l_reverse_ts},
    {"_bench_prefix_loop", l_bench_prefix_loop},
    {"_bench_prefix_check", l_bench_prefix_check}, {"_bench_fnv", l_bench_fnv},
    {NULL, NULL}
  };
  otsk_newclass_uv(L, MT_PREFIX, methods, meta);
  otsk_setfuncs(L, fns);
}
