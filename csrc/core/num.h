/* num.h -- int64 <-> decimal text and bucket numbers: the one copy both
 * the Lua C API bindings and the LuaJIT FFI ABI (csrc/ffi) call, so both
 * paths compute the same answers. Plain C: no Lua. */
#ifndef OTSKIT_NUM_H
#define OTSKIT_NUM_H

#include <stddef.h>
#include <stdint.h>

#include "hash.h"

/* 1 and *out = the int64 written as s[0..n) in decimal: an optional '-',
 * then digits, nothing else (no space, '+', hex or NUL); else 0. */
int num_parse_int64(const char *s, size_t n, int64_t *out);

/* The decimal text of v into out (24 bytes); returns its length. */
int num_int64_text(int64_t v, char *out);

/* Bucket of an int64 v among nb (>= 1): v mod nb, never negative. */
int32_t num_bucket_mod(int64_t v, int32_t nb);

/* Bucket of the bytes p[0..n): the first 8 digest bytes (4 for crc32c),
 * big-endian, mod nb (>= 1). */
int32_t num_bucket_hash(hash_algo algo, const void *p, size_t n, int32_t nb);

#endif
