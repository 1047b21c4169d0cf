/* varint.c -- see varint.h. */
#include "varint.h"

size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) { v >>= 7; n++; }
  return n;
}

size_t varint_put(unsigned char *out, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) { out[n++] = (unsigned char)(v | 0x80); v >>= 7; }
  out[n++] = (unsigned char)v;
  return n;
}

int varint_get(const unsigned char *buf, size_t len, size_t *pos, uint64_t *v) {
  uint64_t r = 0;
  unsigned shift = 0;
  size_t p = *pos;
  for (;;) {
    unsigned char b;
    if (p >= len || shift > 63) return -1;
    b = buf[p++];
    if (shift == 63 && (b & 0x7e)) return -1; /* more than 64 bits */
    r |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      if (b == 0 && shift > 0) return -1; /* overlong: one encoding per value */
      break;
    }
    shift += 7;
  }
  *pos = p;
  *v = r;
  return 0;
}
