/* num.c -- int64 text and bucket numbers (num.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "num.h"

int num_parse_int64(const char *s, size_t n, int64_t *out) {
  char buf[32];
  char *end;
  long long v;
  if (n == 0 || n >= sizeof buf) return 0;
  memcpy(buf, s, n);
  buf[n] = '\0';
  if (memchr(buf, '\0', n) != NULL) return 0;
  if (!(buf[0] == '-' || (buf[0] >= '0' && buf[0] <= '9'))) return 0;
  errno = 0;
  v = strtoll(buf, &end, 10);
  if (errno != 0 || *end != '\0' || end == buf || (buf[0] == '-' && n == 1)) return 0;
  *out = (int64_t)v;
  return 1;
}

int num_int64_text(int64_t v, char *out) {
  return snprintf(out, 24, "%lld", (long long)v);
}

int32_t num_bucket_mod(int64_t v, int32_t nb) {
  int64_t r = v % nb;
  return (int32_t)(r < 0 ? r + nb : r);
}

int32_t num_bucket_hash(hash_algo algo, const void *p, size_t n, int32_t nb) {
  unsigned char d[HASH_MAX_DIGEST];
  size_t dl = hash_digest_len(algo), i;
  uint64_t x = 0;
  (void)hash_digest(algo, p, n, d); /* buckets: md5, xxh3, crc32c only (never fail) */
  for (i = 0; i < dl && i < 8; i++) x = (x << 8) | d[i];
  return (int32_t)(x % (uint64_t)nb);
}
