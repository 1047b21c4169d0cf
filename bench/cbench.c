/* cbench.c -- the C limits the benches compare otskit against, built by
 * `make bench` as build/<abi>/otskit_bench.so (require "otskit_bench"),
 * never part of core.so. Each function does what otskit does, in C alone,
 * so a bench can say how far the Lua API is from the floor.
 * Scratch memory is Lua userdata (collected if a call raises); library
 * contexts are freed before anything that can raise. */
#include <stdlib.h>
#include <string.h>

#include <lz4.h>
#include <zlib.h>
#include <zstd.h>

#include "compat.h"
#include "frame.h"
#include "hash.h"
#include "laux.h"
#include "merge.h"
#include "plainbuffer.h"
#include "kv.h"
#include "rowstream.h"
#include "sign.h"
#include "tablestore.pb-c.h"
#include "tuple.h"
#include <time.h>

#if defined(__GNUC__)
#define BENCH_EXPORT __attribute__((visibility("default")))
#else
#define BENCH_EXPORT
#endif

#define MERGE_MT "otskit_bench.merge_keys"
#define CHUNK 1024       /* items per merge_pull call */
#define SHORT_KEY 1024   /* longest key of the prefix loop */

static const char *const algo_names[] = {"md5", "xxh3", "crc32c", NULL};
static const char *const codec_names[] = {"raw", "zstd", "lz4", "zlib", NULL};

/* ---- hash-prefixed keys ------------------------------------------------ */

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
  const unsigned char *s = (const unsigned char *)p;
  size_t i;
  for (i = 0; i < n; i++) { h ^= s[i]; h *= 1099511628211ULL; }
  return h;
}

static void push_fnv(lua_State *L, uint64_t h) {
  char hex[17];
  hash_hex((const unsigned char *)&h, 8, hex);
  lua_pushlstring(L, hex, 16);
}

typedef struct prefix_args {
  hash_algo algo;
  int len, n;
  const char **ps;  /* the key strings, alive in the argument table */
  size_t *ns;
} prefix_args;

/* algo, len, keys at 1..3 */
static void check_prefix_args(lua_State *L, prefix_args *a) {
  int k;
  void *scratch;
  a->algo = (hash_algo)luaL_checkoption(L, 1, NULL, algo_names);
  a->len = (int)luaL_checkinteger(L, 2);
  if (a->len < 1 || a->len > 2 * (int)hash_digest_len(a->algo)) otsk_error(L, "bench", "bad len");
  luaL_checktype(L, 3, LUA_TTABLE);
  a->n = (int)lua_rawlen(L, 3);
  scratch = lua_newuserdata(L, (sizeof(char *) + sizeof(size_t)) * (size_t)(a->n + 1));
  a->ps = (const char **)scratch;
  a->ns = (size_t *)(a->ps + a->n + 1);
  for (k = 0; k < a->n; k++) {
    lua_rawgeti(L, 3, k + 1);
    a->ps[k] = lua_tolstring(L, -1, &a->ns[k]);
    lua_pop(L, 1);
    if (a->ps[k] == NULL || a->ns[k] > SHORT_KEY)
      otsk_error(L, "bench", "keys must be strings of at most %d bytes", SHORT_KEY);
  }
}

/* prefix .. key into buf (32 + SHORT_KEY bytes); returns its length */
static size_t build_key(const prefix_args *a, int k, char *buf) {
  hash_hex_prefix(a->algo, a->ps[k], a->ns[k], a->len, buf);
  memcpy(buf + a->len, a->ps[k], a->ns[k]);
  return (size_t)a->len + a->ns[k];
}

/* prefix_loop(algo, len, keys, reps) -> n: the C limit of hp:encode.
 * Builds prefix .. key for every key, reps times, into a C buffer: no Lua
 * call and no Lua string per key. A cheap sink keeps the work live. */
static int l_prefix_loop(lua_State *L) {
  prefix_args a;
  int k, r, reps = (int)luaL_checkinteger(L, 4);
  unsigned sink = 0;
  char buf[32 + SHORT_KEY];
  check_prefix_args(L, &a);
  for (r = 0; r < reps; r++)
    for (k = 0; k < a.n; k++) {
      size_t len = build_key(&a, k, buf);
      sink += (unsigned char)buf[0] + (unsigned char)buf[len - 1];
    }
  lua_pushinteger(L, (lua_Integer)sink);
  return 1;
}

/* prefix_check(algo, len, keys) -> FNV-1a (hex) of the keys the C loop
 * builds, to compare with fnv over what the Lua API returned. */
static int l_prefix_check(lua_State *L) {
  prefix_args a;
  int k;
  uint64_t h = 14695981039346656037ULL;
  char buf[32 + SHORT_KEY];
  check_prefix_args(L, &a);
  for (k = 0; k < a.n; k++) h = fnv1a(h, buf, build_key(&a, k, buf));
  push_fnv(L, h);
  return 1;
}

/* fnv(strings) -> FNV-1a (hex) over the strings, as above */
static int l_fnv(lua_State *L) {
  uint64_t h = 14695981039346656037ULL;
  int n, k;
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
  push_fnv(L, h);
  return 1;
}

/* ---- the C merge alone over prebuilt keys ------------------------------ */

typedef struct bkeys {
  int k;
  unsigned char **arena;   /* per source: all keys back to back */
  size_t **ends;           /* per source: end offsets */
  size_t *n;
  size_t *next;            /* run(): per source, the next row to feed, then the batch offset */
  merge *m;                /* reused by every run, as a careful C caller would */
} bkeys;

static int b_gc(lua_State *L) {
  bkeys *b = (bkeys *)luaL_checkudata(L, 1, MERGE_MT);
  int i;
  for (i = 0; i < b->k; i++) {
    if (b->arena) free(b->arena[i]);
    if (b->ends) free(b->ends[i]);
  }
  free(b->arena);
  free(b->ends);
  free(b->n);
  free(b->next);
  merge_free(b->m);
  memset(b, 0, sizeof *b);
  return 0;
}

/* merge_keys(lists) -> handle: copies k sorted arrays of key strings into
 * C once, so run() times the merge (push + pull in C) and nothing else.
 * Everything hangs off the handle, which frees it (__gc), also when a
 * call here raises. */
static int l_merge_keys(lua_State *L) {
  bkeys *b;
  int k, i;
  luaL_checktype(L, 1, LUA_TTABLE);
  k = (int)lua_rawlen(L, 1);
  if (k < 1 || k > MERGE_MAX_SOURCES) return otsk_error(L, "bench", "1..1024 lists");
  b = (bkeys *)lua_newuserdata(L, sizeof *b);
  memset(b, 0, sizeof *b);
  luaL_getmetatable(L, MERGE_MT);
  lua_setmetatable(L, -2);
  b->arena = (unsigned char **)calloc((size_t)k, sizeof *b->arena);
  b->ends = (size_t **)calloc((size_t)k, sizeof *b->ends);
  b->n = (size_t *)calloc((size_t)k, sizeof *b->n);
  b->next = (size_t *)calloc((size_t)k * 2, sizeof *b->next);
  b->m = merge_new(k, 0, 0, 0);
  b->k = k;
  if (!b->arena || !b->ends || !b->n || !b->next || !b->m) return otsk_error(L, "bench", "out of memory");
  for (i = 0; i < k; i++) {
    size_t j, n, tot = 0;
    lua_rawgeti(L, 1, i + 1);
    luaL_checktype(L, -1, LUA_TTABLE);
    n = (size_t)lua_rawlen(L, -1);
    for (j = 1; j <= n; j++) {
      lua_rawgeti(L, -1, (lua_Integer)j);
      tot += lua_rawlen(L, -1);
      lua_pop(L, 1);
    }
    b->arena[i] = (unsigned char *)malloc(tot ? tot : 1);
    b->ends[i] = (size_t *)malloc((n ? n : 1) * sizeof(size_t));
    if (!b->arena[i] || !b->ends[i]) return otsk_error(L, "bench", "out of memory");
    tot = 0;
    for (j = 1; j <= n; j++) {
      size_t len;
      const char *s;
      lua_rawgeti(L, -1, (lua_Integer)j);
      s = luaL_checklstring(L, -1, &len);
      memcpy(b->arena[i] + tot, s, len);
      tot += len;
      b->ends[i][j - 1] = tot;
      lua_pop(L, 1);
    }
    b->n[i] = n;
    lua_pop(L, 1);
  }
  return 1;
}

static void feed(bkeys *b, int s, size_t from, size_t cnt) {
  size_t r;
  merge_begin(b->m, s, cnt);
  for (r = from; r < from + cnt; r++) {
    size_t st0 = r ? b->ends[s][r - 1] : 0;
    merge_add(b->m, s, b->arena[s] + st0, b->ends[s][r] - st0);
  }
}

/* h:run(page [, collect]) -> rows merged [, array of keys in order]:
 * feeds each source page keys at a time, as the merge asks for them.
 * h:run(page, false, "ingest") -> rows: only what feeding costs (every
 * page of every source through merge_begin/merge_add, then dropped), so
 * the bench can tell ingest and merge apart. */
static int l_merge_run(lua_State *L) {
  bkeys *b = (bkeys *)luaL_checkudata(L, 1, MERGE_MT);
  int64_t page = otsk_checkint64(L, 2, "bench", "page");
  int collect = lua_toboolean(L, 3), k = b->k, si;
  int ingest = !lua_isnoneornil(L, 4) && strcmp(luaL_checkstring(L, 4), "ingest") == 0;
  size_t *next = b->next, *off = b->next + k, total = 0;
  merge_item items[CHUNK];
  merge *m = b->m;
  if (m == NULL) return otsk_error(L, "bench", "handle is closed");
  if (page < 1) return otsk_error(L, "bench", "page must be >= 1");
  if (merge_reset(m, k, 0, 0, 0) != MERGE_OK) return otsk_error(L, "bench", "out of memory");
  memset(next, 0, sizeof *next * (size_t)k * 2);
  if (collect) lua_newtable(L);
  if (ingest) {
    for (si = 0; si < k; si++) {
      size_t r, cnt;
      for (r = 0; r < b->n[si]; r += cnt) {
        cnt = b->n[si] - r < (size_t)page ? b->n[si] - r : (size_t)page;
        feed(b, si, r, cnt);
        merge_abort(m, si);
        total += cnt;
      }
    }
  }
  while (!ingest) {
    size_t got, j;
    merge_status st = merge_pull(m, items, CHUNK, &got);
    if (collect)
      for (j = 0; j < got; j++) {
        int s = (int)items[j].src;
        size_t r = off[s] + items[j].row, st0 = r ? b->ends[s][r - 1] : 0;
        lua_pushlstring(L, (const char *)b->arena[s] + st0, b->ends[s][r] - st0);
        lua_rawseti(L, -2, (lua_Integer)(total + j + 1));
      }
    total += got;
    if (st == MERGE_NEED) {
      int s = merge_need(m);
      size_t cnt = b->n[s] - next[s] < (size_t)page ? b->n[s] - next[s] : (size_t)page;
      off[s] = next[s];
      feed(b, s, next[s], cnt);
      next[s] += cnt;
      merge_end(m, s, next[s] == b->n[s]);
    } else if (st != MERGE_MORE) {
      break;
    }
  }
  lua_pushinteger(L, (lua_Integer)total);
  if (collect) {
    lua_insert(L, -2);
    return 2;
  }
  return 1;
}

/* ---- compression libraries called directly, no frame ------------------- */

/* direct(op, codec, level, input, reps [, out_len]) -> output of the last
 * of reps calls of the library itself ("compress" or "decompress"), with
 * contexts reused as a careful C caller would. "decompress_xxh3" also
 * hashes each output, to show what the checksum costs; "decompress_floor"
 * does all unpack must (payload check, decompress, checksum, the value
 * copied to a fresh buffer as any API returning it copies): the C limit of
 * an unpack with these guarantees. */
static int l_direct(lua_State *L) {
  static const char *const ops[] = {"compress", "decompress", "decompress_xxh3",
                                    "decompress_floor", NULL};
  int op = luaL_checkoption(L, 1, NULL, ops);
  int codec = luaL_checkoption(L, 2, NULL, codec_names);
  int level = (int)otsk_checkint64(L, 3, "bench", "level");
  size_t n, cap, r = 0;
  const char *in = luaL_checklstring(L, 4, &n);
  int64_t reps = otsk_checkint64(L, 5, "bench", "reps"), i;
  unsigned char *out;
  ZSTD_CCtx *zc = NULL;
  ZSTD_DCtx *zd = NULL;
  void *lz = NULL;
  z_stream zs;
  int zinit = 0, bad = 0;
  volatile uint64_t sink = 0;
  if (op == 0) cap = frame_bound((frame_codec)codec, n);
  else {
    int64_t ol = otsk_checkint64(L, 6, "bench", "out_len");
    if (ol < 0) return otsk_error(L, "bench", "out_len must be >= 0");
    cap = (size_t)ol;
  }
  /* scratch owned by the GC, allocated before any library context */
  out = (unsigned char *)lua_newuserdata(L, cap + 1);
  if (codec == FRAME_LZ4) lz = lua_newuserdata(L, (size_t)LZ4_sizeofState());
  memset(&zs, 0, sizeof zs);
  if (codec == FRAME_ZSTD) {
    zc = ZSTD_createCCtx();
    zd = ZSTD_createDCtx();
    bad = zc == NULL || zd == NULL;
  }
  if (codec == FRAME_ZLIB) {
    zinit = (op == 0 ? deflateInit(&zs, level) : inflateInit(&zs)) == Z_OK;
    bad = !zinit;
  }
  for (i = 0; i < reps && !bad; i++) {
    if (op == 3) sink ^= otsk_xxh3_64(in, n);
    switch (codec) {
    case FRAME_ZSTD:
      r = op == 0 ? ZSTD_compressCCtx(zc, out, cap, in, n, level)
                  : ZSTD_decompressDCtx(zd, out, cap, in, n);
      bad = ZSTD_isError(r);
      break;
    case FRAME_LZ4: {
      int k = op == 0 ? LZ4_compress_fast_extState(lz, in, (char *)out, (int)n, (int)cap, 1)
                      : LZ4_decompress_safe(in, (char *)out, (int)n, (int)cap);
      bad = k < 0 || (op == 0 && k == 0);
      r = (size_t)k;
      break;
    }
    case FRAME_ZLIB:
      if (op == 0) deflateReset(&zs); else inflateReset(&zs);
      zs.next_in = (Bytef *)(uintptr_t)in; zs.avail_in = (uInt)n;
      zs.next_out = out; zs.avail_out = (uInt)cap;
      bad = (op == 0 ? deflate(&zs, Z_FINISH) : inflate(&zs, Z_FINISH)) != Z_STREAM_END;
      r = zs.total_out;
      break;
    default:
      memcpy(out, in, n < cap ? n : cap);
      r = n < cap ? n : cap;
    }
    if (op >= 2 && !bad) sink ^= frame_checksum(FRAME_XXH3, out, r);
    if (op == 3 && !bad) {
      unsigned char *copy = (unsigned char *)malloc(r + 1);
      if (!copy) { bad = 1; break; }
      memcpy(copy, out, r);
      sink ^= copy[r / 2];
      free(copy);
    }
  }
  (void)sink;
  ZSTD_freeCCtx(zc);
  ZSTD_freeDCtx(zd);
  if (zinit) { if (op == 0) deflateEnd(&zs); else inflateEnd(&zs); }
  if (bad) return otsk_error(L, "bench", "direct: library call failed");
  lua_pushlstring(L, (const char *)out, r);
  return 1;
}

/* ---- PlainBuffer ------------------------------------------------------ */

/* plainbuffer_count(bytes) -> rows: the C-only decode of otskit.wire
 * (every cell parsed, checksums verified, no Lua objects) | nil, msg */
static int l_plainbuffer_count(lua_State *L) {
  size_t n, nrows, end;
  const char *s = luaL_checklstring(L, 1, &n);
  pb_reader r;
  if (!pb_scan_rows(&r, s, n, &nrows, &end)) { lua_pushnil(L); lua_pushstring(L, r.err); return 2; }
  lua_pushinteger(L, (lua_Integer)nrows);
  return 1;
}


/* ---- otskit serve's request work, in C alone ---------------------------- */

/* The headers table at idx as sign_header entries (userdata left on the
 * stack; names and values anchored by the table); *n set. */
static sign_header *headers_of(lua_State *L, int idx, size_t *n) {
  size_t cap = 0, k = 0;
  sign_header *h;
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, idx)) { lua_pop(L, 1); cap++; }
  h = (sign_header *)lua_newuserdatauv(L, (cap ? cap : 1) * sizeof *h, 0);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING && k < cap) {
      h[k].name = lua_tolstring(L, -2, &h[k].nlen);
      h[k].val = lua_tolstring(L, -1, &h[k].vlen);
      k++;
    }
    lua_pop(L, 1);
  }
  *n = k;
  return h;
}

/* the stored key (a tuple of the integer key cells) of the PlainBuffer
 * primary key pk into b; 1, or 0 when it is not one of integers */
static int key_of(const ProtobufCBinaryData *pk, tuple_buf *b) {
  pb_reader r;
  pb_row row;
  size_t i;
  int ok = 0;
  memset(&row, 0, sizeof row);
  b->len = 0;
  if (!pb_reader_init(&r, pk->data, pk->len) || pb_read_row(&r, &row) != 1) { pb_row_free(&row); return 0; }
  for (i = 0; i < row.npk; i++) {
    const pb_value *v = &row.cells[i].v;
    if (v->vt != PB_VT_INTEGER || tuple_put_int(b, v->i) != 0) goto done;
  }
  ok = 1;
done:
  pb_row_free(&row);
  return ok;
}

#define LIMIT_MT "otskit_bench.serve_limit"

/* what serve_limit_open holds between runs (its arguments anchored in
 * the registry until __gc) */
typedef struct {
  kv_db *db;
  kv_table *t, *meta;
  rs_opts o;
  pb_writer w;
  tuple_buf k1, k2;
  unsigned char *out;
  size_t outcap, bl, sl, akl, nreq;
  const char *body, *secret, *akid;
  sign_header *rq;
  int range, put, anchors;
  int verified;      /* GetRow: the definitions checked at data version `version` */
  unsigned version;
  size_t plen;       /* the last answer: out[0..plen), its headers' values */
  unsigned long n;   /* answers made: the request id's counter */
  sign_answer_t a;
  char rid[48];
  char head[64], tail[16];
} limit;

static void limit_close(lua_State *L, limit *s) {
  if (s->db) kv_close_db(s->db);
  s->db = NULL;
  free(s->out);
  s->out = NULL;
  pb_writer_free(&s->w);
  tuple_buf_free(&s->k1); tuple_buf_free(&s->k2);
  luaL_unref(L, LUA_REGISTRYINDEX, s->anchors);
  s->anchors = LUA_NOREF;
}

static int limit_gc(lua_State *L) {
  limit_close(L, (limit *)luaL_checkudata(L, 1, LIMIT_MT));
  return 0;
}

/* serve_limit_open(path, table, mode, body, req_headers, secret,
 * access_key_id) -> lim: the store at path opened once for lim:run (see
 * serve_limit) */
static int l_serve_limit_open(lua_State *L) {
  size_t pl;
  const char *path = luaL_checklstring(L, 1, &pl);
  const char *tname = luaL_checkstring(L, 2);
  const char *mode = luaL_checkstring(L, 3);
  char err[256];
  int found;
  limit *s;
  luaL_checkstring(L, 4);
  luaL_checktype(L, 5, LUA_TTABLE);
  luaL_checkstring(L, 6);
  luaL_checkstring(L, 7);
  lua_settop(L, 7);
  s = (limit *)lua_newuserdatauv(L, sizeof *s, 0); /* 8 */
  memset(s, 0, sizeof *s);
  s->anchors = LUA_NOREF;
  luaL_setmetatable(L, LIMIT_MT);
  lua_createtable(L, 9, 0); /* the anchors */
  for (found = 1; found <= 7; found++) { lua_pushvalue(L, found); lua_rawseti(L, -2, found); }
  s->body = lua_tolstring(L, 4, &s->bl);
  s->secret = lua_tolstring(L, 6, &s->sl);
  s->akid = lua_tolstring(L, 7, &s->akl);
  s->rq = headers_of(L, 5, &s->nreq); lua_rawseti(L, -2, 8);
  s->anchors = luaL_ref(L, LUA_REGISTRYINDEX);
  s->range = strcmp(mode, "range") == 0;
  s->put = strcmp(mode, "put") == 0;
  pb_writer_init(&s->w);
  tuple_buf_init(&s->k1); tuple_buf_init(&s->k2);
  if (kv_open(path, pl, 5000, &s->db, err, sizeof err) != KV_OK) { s->db = NULL; return luaL_error(L, "bench: %s", err); }
  s->t = kv_table_get(s->db, tname, 0, &found);
  s->meta = kv_table_get(s->db, "meta", 0, &found);
  if (s->t == NULL || s->meta == NULL) return luaL_error(L, "bench: no table %s", tname);
  s->o.npk = 1; s->o.pk_name[0].s = "id"; s->o.pk_name[0].n = 2; s->o.pk_type[0] = RS_PK_INTEGER;
  s->o.lo = INT64_MIN; s->o.hi = INT64_MAX; s->o.maxv = 1; s->o.plain = 1;
  snprintf(s->head, sizeof s->head, "/%s\nPOST\n\n", s->put ? "PutRow" : s->range ? "GetRange" : "GetRow");
  snprintf(s->tail, sizeof s->tail, "/%s", s->put ? "PutRow" : s->range ? "GetRange" : "GetRow");
  lua_settop(L, 8);
  return 1;
}

/* lim:run(n) -> us of CPU per request over n requests */
static int l_limit_run(lua_State *L) {
  limit *s = (limit *)luaL_checkudata(L, 1, LIMIT_MT);
  int64_t n = otsk_checkint64(L, 2, "bench", "#2 (n)"), it;
  kv_db *db = s->db;
  kv_table *t = s->t, *meta = s->meta;
  rs_opts o = s->o;
  pb_writer w = s->w;
  tuple_buf k1 = s->k1, k2 = s->k2;
  unsigned char *out = s->out;
  size_t outcap = s->outcap, bl = s->bl, sl = s->sl, nreq = s->nreq, ridlen = 0;
  const char *body = s->body, *secret = s->secret, *head = s->head, *tail = s->tail;
  sign_header *rq = s->rq;
  sign_keys keys;
  sign_answer_t a;
  char rid[48];
  int range = s->range, put = s->put, failed = 0, single;
  unsigned dv;
  char md5[25], sig[29];
  struct timespec t0, t1;
  if (db == NULL) return luaL_error(L, "bench: closed");
  keys.secret = secret; keys.slen = sl; keys.akid = s->akid; keys.aklen = s->akl; keys.inst = ""; keys.ilen = 0;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
  size_t plen = 0;
  for (it = 0; it < n && !failed; it++) {
    const void *v;
    size_t vl;
    int64_t size = 0, total = 0;
    const char *why;
    Ots__CapacityUnit cu = OTS__CAPACITY_UNIT__INIT;
    Ots__ConsumedCapacity cc = OTS__CONSUMED_CAPACITY__INIT;
    /* the request: body MD5, signature, protobuf, key */
    if (!sign_md5_b64(body, bl, md5) || !sign_headers_b64(secret, sl, head, strlen(head), rq, nreq, "", 0, sig)) { failed = 1; break; }
    cu.has_read = 1; cu.read = 1; cu.has_write = 1; cu.write = 0;
    cc.capacity_unit = &cu;
    pb_writer_reset(&w);
    /* a GetRow reads its row in one statement once the definitions were
     * checked at this data version, as serve does (db:get_row_answer) */
    single = !put && !range && s->verified;
    if (!single) {
      if (kv_begin(db, put) != KV_OK || kv_schema_version(db) < 0) { failed = 2; break; }
      if (kv_get(meta, "\0gen", 4, &v, &vl) == KV_ERR) { failed = 3; break; }
      kv_get_done(meta);
    }
    if (put) {
      /* PutRow: the row decoded into the stored key and row, one write
       * transaction (schema cookie, generation row, the row replaced) */
      Ots__PutRowRequest *m = ots__put_row_request__unpack(NULL, bl, (const uint8_t *)body);
      Ots__PutRowResponse resp = OTS__PUT_ROW_RESPONSE__INIT;
      rs_put_limits lim;
      unsigned char *val = NULL;
      size_t vlen = 0;
      int any_ts = 0;
      int64_t oldlen = 0;
      struct timespec now;
      clock_gettime(CLOCK_REALTIME, &now);
      lim.max_cols = 1024; lim.max_cell = 2097152; lim.max_pk_cell = 1024; lim.max_row = 4194304;
      lim.now = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000; lim.dev = 86400000;
      cu.read = 0; cu.write = 1;
      if (m == NULL) { failed = 4; break; }
      k1.len = 0;
      if (rs_put_row(m->row.data, m->row.len, &o, &lim, &k1, &val, &vlen, &size, &any_ts, &why) != RS_PUT_OK) {
        ots__put_row_request__free_unpacked(m, NULL); failed = 4; break;
      }
      ots__put_row_request__free_unpacked(m, NULL);
      if (kv_swap(t, k1.p, k1.len, val, vlen, &oldlen) != KV_OK) { free(val); failed = 5; break; }
      free(val);
      resp.consumed = &cc;
      plen = ots__put_row_response__get_packed_size(&resp);
      if (plen > outcap) { free(out); outcap = plen * 2; out = malloc(outcap); }
      ots__put_row_response__pack(&resp, out);
    } else if (!range) {
      Ots__GetRowRequest *m = ots__get_row_request__unpack(NULL, bl, (const uint8_t *)body);
      Ots__GetRowResponse resp = OTS__GET_ROW_RESPONSE__INIT;
      int ok = m != NULL && key_of(&m->primary_key, &k1);
      if (m != NULL) ots__get_row_request__free_unpacked(m, NULL);
      if (!ok) { failed = 4; break; }
      if (kv_get(t, k1.p, k1.len, &v, &vl) == KV_OK) {
        pb_write_header(&w);
        if (rs_row(&w, &o, k1.p, k1.len, v, vl, &size, &why) < 0) failed = 5;
        kv_get_done(t);
      }
      if (single && !(kv_data_version(db, &dv) && dv == s->version)) { s->verified = 0; it--; continue; }
      if (!single && kv_data_version(db, &s->version)) s->verified = 1;
      resp.consumed = &cc;
      resp.row.data = w.p; resp.row.len = w.len;
      plen = ots__get_row_response__get_packed_size(&resp);
      if (plen > outcap) { free(out); outcap = plen * 2; out = malloc(outcap); }
      ots__get_row_response__pack(&resp, out);
    } else {
      Ots__GetRangeRequest *m = ots__get_range_request__unpack(NULL, bl, (const uint8_t *)body);
      Ots__GetRangeResponse resp = OTS__GET_RANGE_RESPONSE__INIT;
      kv_cursor c;
      const void *k;
      size_t kl, nrows = 0;
      int rc;
      if (m == NULL || !key_of(&m->inclusive_start_primary_key, &k1) || !key_of(&m->exclusive_end_primary_key, &k2)) { failed = 4; break; }
      ots__get_range_request__free_unpacked(m, NULL);
      memset(&c, 0, sizeof c);
      if (kv_scan(t, &c, k1.p, k1.len, k2.p, k2.len, 0, 5001) != KV_OK) { failed = 6; break; }
      pb_write_header(&w);
      while ((rc = kv_next(&c, &k, &kl, &v, &vl)) == KV_ROW) {
        if (nrows == 100) { /* next_start_primary_key: the key alone */
          pb_writer kw;
          pb_writer_init(&kw);
          pb_write_header(&kw);
          rs_row(&kw, &o, k, kl, "", 0, &size, &why);
          resp.has_next_start_primary_key = 1;
          resp.next_start_primary_key.data = kw.p; resp.next_start_primary_key.len = kw.len;
          pb_writer_free(&kw);
          resp.has_next_start_primary_key = 0;
          break;
        }
        if (rs_row(&w, &o, k, kl, v, vl, &size, &why) < 0) { failed = 5; break; }
        total += size;
        nrows++;
      }
      kv_cursor_close(&c);
      resp.consumed = &cc;
      resp.rows.data = w.p; resp.rows.len = w.len;
      plen = ots__get_range_response__get_packed_size(&resp);
      if (plen > outcap) { free(out); outcap = plen * 2; out = malloc(outcap); }
      ots__get_range_response__pack(&resp, out);
    }
    if (!single && kv_commit(db) != KV_OK) { failed = 7; break; }
    /* the answer's headers: its MD5, the date now, a request id of its
     * own, the signature over them (sign_answer, as serve's) */
    {
      struct timespec now;
      clock_gettime(CLOCK_REALTIME, &now);
      s->n = (s->n + 1) & 0xffffffffUL;
      ridlen = (size_t)snprintf(rid, sizeof rid, "0005af6b-5f18-e605-2bc1-7201%08lx", s->n);
      if (!sign_answer(&keys, tail + 1, strlen(tail + 1), (const char *)out, plen,
                       (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000, rid, ridlen, &a)) { failed = 8; break; }
    }
    (void)total;
  }
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
  if (kv_in_txn(db)) kv_rollback(db); /* a failed step left it open */
  s->w = w; s->k1 = k1; s->k2 = k2; s->out = out; s->outcap = outcap;
  if (!failed && n > 0) { s->plen = plen; s->a = a; memcpy(s->rid, rid, ridlen + 1); }
  if (failed) return luaL_error(L, "bench: serve_limit failed at step %d", failed);
  lua_pushnumber(L, ((double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3) / (double)n);
  return 1;
}

/* lim:answer() -> body, x-ots-contentmd5, x-ots-date, authorization,
 * x-ots-requestid of the last request run (what a server hands to nginx,
 * as serve's core.wire.answer gives them) */
static int l_limit_answer(lua_State *L) {
  limit *s = (limit *)luaL_checkudata(L, 1, LIMIT_MT);
  luaL_Buffer b;
  if (s->out == NULL || s->plen == 0) return luaL_error(L, "bench: no answer yet");
  lua_pushlstring(L, (const char *)s->out, s->plen);
  lua_pushlstring(L, s->a.md5, 24);
  lua_pushlstring(L, s->a.date, 24);
  luaL_buffinit(L, &b);
  luaL_addlstring(&b, "OTS ", 4);
  luaL_addlstring(&b, s->akid, s->akl);
  luaL_addchar(&b, ':');
  luaL_addlstring(&b, s->a.sig, 28);
  luaL_pushresult(&b);
  lua_pushstring(L, s->rid);
  return 5;
}

/* serve_limit(path, table, mode, body, req_headers, secret, access_key_id,
 * n) -> us per request: what `otskit serve` does for one GetRow ("get"),
 * GetRange ("range", 100 rows of a table with an INTEGER key) or PutRow
 * ("put": the row into its stored key and row, one write transaction, the
 * row replaced) between
 * reading the body and sending the answer, in C alone: the body's MD5 and
 * the request signature checked, the protobuf request and its PlainBuffer
 * key decoded, one read transaction (schema cookie, generation row, the
 * row or the range read straight into PlainBuffer; a GetRow, as serve
 * reads it, one statement once the definitions were checked at the
 * file's data version), the protobuf answer and its headers (MD5, the date, a request id of
 * its own, the signature: sign_answer, as serve makes them). */
static int l_serve_limit(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 8);
  lua_settop(L, 7);
  l_serve_limit_open(L); /* 8: lim */
  lua_pushcfunction(L, l_limit_run);
  lua_pushvalue(L, 8);
  lua_pushinteger(L, n);
  lua_call(L, 2, 1);
  limit_close(L, (limit *)lua_touserdata(L, 8));
  return 1;
}

BENCH_EXPORT int luaopen_otskit_bench(lua_State *L) {
  static const luaL_Reg merge_methods[] = {{"run", l_merge_run}, {NULL, NULL}};
  static const luaL_Reg merge_meta[] = {{"__gc", b_gc}, {NULL, NULL}};
  static const luaL_Reg limit_methods[] = {{"run", l_limit_run}, {"answer", l_limit_answer}, {NULL, NULL}};
  static const luaL_Reg limit_meta[] = {{"__gc", limit_gc}, {NULL, NULL}};
  static const luaL_Reg funcs[] = {
    {"prefix_loop", l_prefix_loop}, {"prefix_check", l_prefix_check}, {"fnv", l_fnv},
    {"merge_keys", l_merge_keys}, {"direct", l_direct},
    {"plainbuffer_count", l_plainbuffer_count}, {"serve_limit", l_serve_limit},
    {"serve_limit_open", l_serve_limit_open}, {NULL, NULL}
  };
  otsk_newclass(L, MERGE_MT, merge_methods, merge_meta);
  otsk_newclass(L, LIMIT_MT, limit_methods, limit_meta);
  lua_newtable(L);
  otsk_setfuncs(L, funcs);
  return 1;
}
