/* otskit_ffi.h -- the one C ABI of core.so for LuaJIT's FFI: keys, hashes
 * and the merge. core.so is built with -fvisibility=hidden; only
 * luaopen_otskit_core and the otskit_* functions below are exported.
 * lua/otskit/ffi.lua declares exactly what stands between the CDEF markers
 * below (spec/key_ffi_spec.lua checks it, and that no other Lua file has a
 * cdef), so LuaJIT can JIT-compile these calls; calls through the
 * Lua C API never are. Plain C: no Lua. Bump OTSKIT_FFI_ABI on any change. */
#ifndef OTSKIT_FFI_H
#define OTSKIT_FFI_H

#include <stddef.h>
#include <stdint.h>

#include "splice.h"

#if defined(__GNUC__)
#define OTSKIT_API __attribute__((visibility("default")))
#else
#define OTSKIT_API
#endif

#define OTSKIT_FFI_ABI 2

/* The output of the splice encoder (splice.h's splice_out). */
typedef splice_out otskit_splice_out;
/* A compiled splice (splice.h), as kept by the key.splice userdata. */
typedef struct splice otskit_splice;
/* An opaque growable tuple buffer. */
typedef struct otskit_tuple otskit_tuple;

/* BEGIN CDEF -- lua/otskit/ffi.lua mirrors the declarations up to END */
OTSKIT_API int otskit_ffi_abi(void);
OTSKIT_API size_t otskit_splice_out_size(void);

/* 1 and *out = the int64 written as s[0..n) in decimal ("-12"), else 0. */
OTSKIT_API int otskit_parse_int64(const char *s, size_t n, int64_t *out);
/* The decimal text of v into out (24 bytes); returns its length. */
OTSKIT_API int otskit_int64_text(int64_t v, char *out);

/* Writes the first ndigits (1..2*digest length) lowercase hex digits of
 * the algo (0 md5, 1 xxh3, 2 crc32c) digest of p[0..n), then p, to out
 * (ndigits + n bytes). */
OTSKIT_API void otskit_prefix_encode(int algo, int ndigits, const char *p, size_t n,
                                       char *out);

/* Bucket of an int64 v among nb (>= 1): v mod nb, never negative. */
OTSKIT_API int32_t otskit_bucket_mod(int64_t v, int32_t nb);
/* Bucket of the bytes p[0..n): the first 8 digest bytes (4 for crc32c),
 * big-endian, mod nb (>= 1). */
OTSKIT_API int32_t otskit_bucket_hash(int algo, const char *p, size_t n, int32_t nb);

/* Field i of sp appended to o (o->len = 0 before field 0): a splice_err
 * (0 ok, 1 charset with *bad the offset, 2 width, 3 key too long). */
OTSKIT_API int otskit_splice_put_int(const otskit_splice *sp, int i, int64_t v,
                                     otskit_splice_out *o);
OTSKIT_API int otskit_splice_put_string(const otskit_splice *sp, int i, const char *s,
                                        size_t n, otskit_splice_out *o, size_t *bad);

/* Tuple buffers: put_* return 0, or -1 when out of memory. put_double
 * writes every NaN as the one quiet NaN; put_nil with desc != 0 writes the
 * nil of the descending variant. finish returns the bytes (*len of them,
 * valid until the next call on t; NULL when out of memory) after the end
 * of the descending variant when desc != 0; reset empties t for the next
 * tuple and releases a large buffer. */
OTSKIT_API otskit_tuple *otskit_tuple_new(void);
OTSKIT_API void otskit_tuple_free(otskit_tuple *t);
OTSKIT_API void otskit_tuple_reset(otskit_tuple *t);
OTSKIT_API int otskit_tuple_put_nil(otskit_tuple *t, int desc);
OTSKIT_API int otskit_tuple_put_bytes(otskit_tuple *t, const char *s, size_t n);
OTSKIT_API int otskit_tuple_put_text(otskit_tuple *t, const char *s, size_t n);
OTSKIT_API int otskit_tuple_put_int(otskit_tuple *t, int64_t v);
OTSKIT_API int otskit_tuple_put_double(otskit_tuple *t, double v);
OTSKIT_API int otskit_tuple_put_bool(otskit_tuple *t, int v);
OTSKIT_API const char *otskit_tuple_finish(otskit_tuple *t, int desc, size_t *len);

/* The merge of merge.h, for lua/otskit/merge.lua: m is the merge* of a
 * core.merge object (its _ptr()), which owns it. Items use int32_t, not
 * merge.h's uint32_t (same layout; both stay below 2^31): LuaJIT then
 * keeps them integers. Statuses of pull (merge.h's merge_status): */
enum { OTSKIT_MERGE_MORE = 0, OTSKIT_MERGE_NEED = 1, OTSKIT_MERGE_END = 2,
       OTSKIT_MERGE_ENOMEM = -1 };
/* Results of begin and add_n (0 or an error): */
enum { OTSKIT_MERGE_OK = 0, OTSKIT_MERGE_EOOM = -1, OTSKIT_MERGE_ESRC = -2,
       OTSKIT_MERGE_ESTATE = -3, OTSKIT_MERGE_EORDER = -4 };
/* Source states (otskit_merge_state; -1 for a source out of range): */
enum { OTSKIT_SOURCE_PENDING = 0, OTSKIT_SOURCE_ROWS = 1, OTSKIT_SOURCE_DONE = 2 };
typedef struct otskit_merge otskit_merge;
typedef struct otskit_merge_item { int32_t src, row; } otskit_merge_item;
OTSKIT_API int otskit_merge_begin(otskit_merge *m, int src, size_t nrows);
/* Adds keys[i] (lens[i] bytes), i < n, to src's batch; *added gets the
 * number added before an error. */
OTSKIT_API int otskit_merge_add_n(otskit_merge *m, int src, const char **keys,
                                  const size_t *lens, size_t n, size_t *added);
OTSKIT_API void otskit_merge_end(otskit_merge *m, int src, int done);
OTSKIT_API void otskit_merge_abort(otskit_merge *m, int src);
/* Up to max items into out (*n of them); returns an OTSKIT_MERGE_ status. */
OTSKIT_API int otskit_merge_pull(otskit_merge *m, otskit_merge_item *out, size_t max,
                                 size_t *n);
OTSKIT_API int otskit_merge_need(const otskit_merge *m);
OTSKIT_API int otskit_merge_state(const otskit_merge *m, int src);
OTSKIT_API uint64_t otskit_merge_bound(const otskit_merge *m);
OTSKIT_API void otskit_merge_prefetch(const char **keys, size_t n);
/* END CDEF */

#endif
