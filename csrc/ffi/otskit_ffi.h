/* otskit_ffi.h -- the one C ABI of core.so for LuaJIT's FFI: keys, hashes
 * the merge and PlainBuffer rows. core.so is built with -fvisibility=hidden; only
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

#define OTSKIT_FFI_ABI 5

/* The output of the splice encoder (splice.h's splice_out). */
typedef splice_out otskit_splice_out;
/* A compiled splice (splice.h), as kept by the key.splice userdata. */
typedef struct splice otskit_splice;
/* An opaque growable tuple buffer. */
typedef struct otskit_tuple otskit_tuple;

/* BEGIN CDEF -- lua/otskit/ffi.lua mirrors the declarations up to END */
OTSKIT_API int otskit_ffi_abi(void);
OTSKIT_API size_t otskit_splice_out_size(void);

/* Seconds since the epoch, sub-millisecond: the wall clock the store
 * stamps cells with (otskit.core's row.now reads the same one). */
OTSKIT_API double otskit_now(void);

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
/* PlainBuffer rows for lua/otskit/wire/rows_ffi.lua (LuaJIT builds a
 * response's rows in JIT-compiled Lua from these cells rather than
 * through the Lua C API). A reader d reads a buffer the caller keeps
 * alive and unchanged; every pointer below points into that buffer. */
typedef struct otskit_pb_dec otskit_pb_dec;
/* One cell, numbers as LuaJIT reads them without boxing: */
typedef struct otskit_pb_cell {
  const char *name;
  size_t name_len;
  const char *s;        /* STRING / BINARY bytes */
  size_t n;
  double num;           /* INTEGER (when big is 0), DOUBLE, BOOLEAN (0 / 1) */
  double ts;            /* the timestamp when has_ts is 1 */
  int64_t i;            /* INTEGER, exactly */
  int64_t ts64;         /* the timestamp, exactly */
  int32_t vt;           /* plainbuffer.h's PB_VT_* (-1: no value) */
  int32_t op;           /* PB_OP_* (0: none) */
  int32_t has_ts;       /* 0 none, 1 within 2^53 (ts), 2 beyond (ts64 only) */
  int32_t big;          /* an INTEGER beyond 2^53 (i only) */
  int32_t slot;         /* the name's slot in otskit_pb_names, or -1 */
  int32_t fresh;        /* the slot holds another name (or none): read name */
  int32_t newest;       /* an attribute cell that is its name's newest version */
  int32_t pad;
} otskit_pb_cell;
/* Names by their position in a row (slots 0-15 key cells, 16-31 attribute
 * cells), pointers into the buffer; all zero at first. The reader only
 * reads them; the caller records a name it read from a fresh cell. */
typedef struct otskit_pb_names { const char *s[32]; size_t n[32]; } otskit_pb_names;
/* A row read: its key cells, then its attribute cells (valid until the
 * next call on the reader); attr_at: the offset of its attribute cells in
 * the buffer (the row's end when it has none), for otskit_pb_cells. */
typedef struct otskit_pb_row {
  const otskit_pb_cell *cells;
  int32_t npk, ncells, deleted, pad;
  size_t attr_at;
} otskit_pb_row;
/* A reader (NULL when out of memory), freed by otskit_pb_free. */
OTSKIT_API otskit_pb_dec *otskit_pb_new(void);
OTSKIT_API void otskit_pb_free(otskit_pb_dec *d);
/* Starts reading buf[0..n) (empty: no rows): 1, or 0 when it has no header. */
OTSKIT_API int otskit_pb_open(otskit_pb_dec *d, const char *buf, size_t n);
/* The next row into *out, checksums checked: 1 a row, 0 the end, -1 corrupt
 * or out of memory (the Lua C API decoder says which). */
OTSKIT_API int otskit_pb_next(otskit_pb_dec *d, const otskit_pb_names *nm, otskit_pb_row *out);
/* The attribute cells at buf + off (a row's attr_at, read before by
 * otskit_pb_next: checksums not checked again) into *out (npk 0): 1, or -1. */
OTSKIT_API int otskit_pb_cells(otskit_pb_dec *d, const char *buf, size_t n, size_t off,
                               const otskit_pb_names *nm, otskit_pb_row *out);
/* 1 when the STRING / BINARY value of c is the n bytes at s, else 0. */
OTSKIT_API int otskit_pb_is(const otskit_pb_cell *c, const char *s, size_t n);
/* The order of the rows otskit_pb_next read since otskit_pb_open
 * (plainbuffer.h's pb_order flags: 1 each key after the one before, 2
 * before it, 3 both: fewer than two rows, 0 neither). */
OTSKIT_API int otskit_pb_order(const otskit_pb_dec *d);
/* END CDEF */

#endif
