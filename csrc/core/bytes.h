/* bytes.h -- fixed-width integers in byte buffers, independent of the
 * host's byte order, and the byte order of keys. Plain C: no Lua. */
#ifndef OTSKIT_BYTES_H
#define OTSKIT_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline void put_le32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24);
}
static inline uint32_t get_le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline void put_le64(unsigned char *p, uint64_t v) {
  put_le32(p, (uint32_t)v); put_le32(p + 4, (uint32_t)(v >> 32));
}
static inline uint64_t get_le64(const unsigned char *p) {
  return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}
static inline void put_be64(unsigned char *p, uint64_t v) {
  int i;
  for (i = 7; i >= 0; i--) { p[i] = (unsigned char)v; v >>= 8; }
}
static inline uint64_t get_be64(const unsigned char *p) {
  uint64_t v = 0;
  int i;
  for (i = 0; i < 8; i++) v = v << 8 | p[i];
  return v;
}

/* The order of keys everywhere in otskit (Tablestore's, SQLite's for
 * blobs): memcmp, then the shorter of two equal prefixes first. <0, 0, >0.
 * The one byte compare: kv, merge and key.compare use it. */
static inline int bytes_cmp(const void *a, size_t an, const void *b, size_t bn) {
  size_t n = an < bn ? an : bn;
  int c = n ? memcmp(a, b, n) : 0;
  if (c) return c;
  return an < bn ? -1 : an > bn;
}

#endif
