/* ffi.c -- the exported C ABI of core.so (otskit_ffi.h): thin wrappers
 * over the plain C parts, shaped for LuaJIT's FFI (no structs by value, no
 * int64 results, which LuaJIT would box). The logic is in the plain parts
 * (num.c, hash.c, splice.c, tuple.c, merge.c), which the Lua C API
 * bindings call too, so both paths compute the same answers. */
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "merge.h"
#include "num.h"
#include "otskit_ffi.h"
#include "tuple.h"

struct otskit_tuple { tuple_buf b; };

#define TUPLE_KEEP 65536   /* larger buffers are released by reset */

int otskit_ffi_abi(void) { return OTSKIT_FFI_ABI; }

size_t otskit_splice_out_size(void) { return sizeof(otskit_splice_out); }

int otskit_parse_int64(const char *s, size_t n, int64_t *out) { return num_parse_int64(s, n, out); }

int otskit_int64_text(int64_t v, char *out) { return num_int64_text(v, out); }

void otskit_prefix_encode(int algo, int ndigits, const char *p, size_t n, char *out) {
  hash_prefix_key((hash_algo)algo, ndigits, p, n, out);
}

int32_t otskit_bucket_mod(int64_t v, int32_t nb) { return num_bucket_mod(v, nb); }

int32_t otskit_bucket_hash(int algo, const char *p, size_t n, int32_t nb) {
  return num_bucket_hash((hash_algo)algo, p, n, nb);
}

int otskit_splice_put_int(const otskit_splice *sp, int i, int64_t v, otskit_splice_out *o) {
  return (int)splice_put_int(sp, i, v, o);
}

int otskit_splice_put_string(const otskit_splice *sp, int i, const char *s, size_t n,
                             otskit_splice_out *o, size_t *bad) {
  return (int)splice_put_string(sp, i, s, n, o, bad);
}

otskit_tuple *otskit_tuple_new(void) {
  otskit_tuple *t = (otskit_tuple *)malloc(sizeof *t);
  if (t) tuple_buf_init(&t->b);
  return t;
}

void otskit_tuple_free(otskit_tuple *t) {
  if (t == NULL) return;
  tuple_buf_free(&t->b);
  free(t);
}

void otskit_tuple_reset(otskit_tuple *t) {
  if (t->b.cap > TUPLE_KEEP) tuple_buf_free(&t->b);
  t->b.len = 0;
}

int otskit_tuple_put_nil(otskit_tuple *t, int desc) {
  return desc ? tuple_put_nil_desc(&t->b) : tuple_put_nil(&t->b);
}

int otskit_tuple_put_bytes(otskit_tuple *t, const char *s, size_t n) {
  return tuple_put_bytes(&t->b, s, n);
}

int otskit_tuple_put_text(otskit_tuple *t, const char *s, size_t n) {
  return tuple_put_text(&t->b, s, n);
}

int otskit_tuple_put_int(otskit_tuple *t, int64_t v) { return tuple_put_int(&t->b, v); }

/* the NaN rule of ltuple.c: LuaJIT keeps no NaN sign or payload */
int otskit_tuple_put_double(otskit_tuple *t, double v) {
  if (v != v) {
    uint64_t u = (uint64_t)0x7FF8 << 48;
    memcpy(&v, &u, 8);
  }
  return tuple_put_double(&t->b, v);
}

int otskit_tuple_put_bool(otskit_tuple *t, int v) { return tuple_put_bool(&t->b, v); }

const char *otskit_tuple_finish(otskit_tuple *t, int desc, size_t *len) {
  if (desc && tuple_finish_desc(&t->b, 0)) return NULL;
  *len = t->b.len;
  return t->b.len ? (const char *)t->b.p : "";
}

/* The ABI's merge constants are merge.h's (a negative array size fails the build). */
#define SAME(a, b) typedef char same_##a[(int)(a) == (int)(b) ? 1 : -1]
SAME(OTSKIT_MERGE_MORE, MERGE_MORE);
SAME(OTSKIT_MERGE_NEED, MERGE_NEED);
SAME(OTSKIT_MERGE_END, MERGE_END);
SAME(OTSKIT_MERGE_ENOMEM, MERGE_ENOMEM);
SAME(OTSKIT_MERGE_OK, MERGE_OK);
SAME(OTSKIT_MERGE_EOOM, MERGE_EOOM);
SAME(OTSKIT_MERGE_ESRC, MERGE_ESRC);
SAME(OTSKIT_MERGE_ESTATE, MERGE_ESTATE);
SAME(OTSKIT_MERGE_EORDER, MERGE_EORDER);
SAME(OTSKIT_SOURCE_PENDING, MERGE_S_PENDING);
SAME(OTSKIT_SOURCE_ROWS, MERGE_S_ROWS);
SAME(OTSKIT_SOURCE_DONE, MERGE_S_DONE);
typedef char same_item_size[sizeof(otskit_merge_item) == sizeof(merge_item) ? 1 : -1];

#define M(m) ((merge *)(void *)(m))

int otskit_merge_begin(otskit_merge *m, int src, size_t nrows) {
  return merge_begin(M(m), src, nrows);
}

int otskit_merge_add_n(otskit_merge *m, int src, const char **keys, const size_t *lens,
                       size_t n, size_t *added) {
  return merge_add_n(M(m), src, keys, lens, n, added);
}

void otskit_merge_end(otskit_merge *m, int src, int done) { merge_end(M(m), src, done); }

void otskit_merge_abort(otskit_merge *m, int src) { merge_abort(M(m), src); }

int otskit_merge_pull(otskit_merge *m, otskit_merge_item *out, size_t max, size_t *n) {
  return (int)merge_pull(M(m), (merge_item *)(void *)out, max, n);
}

int otskit_merge_need(const otskit_merge *m) { return merge_need((const merge *)(const void *)m); }

int otskit_merge_state(const otskit_merge *m, int src) {
  return merge_state((const merge *)(const void *)m, src);
}

uint64_t otskit_merge_bound(const otskit_merge *m) {
  return merge_bound((const merge *)(const void *)m);
}

void otskit_merge_prefetch(const char **keys, size_t n) { merge_prefetch(keys, n); }
