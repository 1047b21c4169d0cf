/* varint.h -- LEB128 varints, as protobuf and the store's row encoding
 * (row.h) write them: 7 bits a byte, low bits first, at most 10 bytes. */
#ifndef OTSKIT_VARINT_H
#define OTSKIT_VARINT_H

#include <stddef.h>
#include <stdint.h>

enum { VARINT_MAX = 10 };

/* The bytes varint_put writes for v (1..10). */
size_t varint_size(uint64_t v);

/* v into out (room for varint_size(v) bytes); returns how many. */
size_t varint_put(unsigned char *out, uint64_t v);

/* The varint at buf[*pos] (before len) into *v and *pos past it: 0; -1
 * when truncated, over 64 bits or overlong (a value has one encoding:
 * no trailing zero byte), *pos and *v then unchanged. */
int varint_get(const unsigned char *buf, size_t len, size_t *pos, uint64_t *v);

#endif
