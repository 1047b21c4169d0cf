/* prefix_fuzz.c -- libFuzzer harness for the hash-prefix check behind
 * hp:decode (csrc/lua/lprefix.c): for any algorithm, prefix length and
 * key bytes, the hex prefix is len lowercase hex digits, a key carrying it
 * decodes back to its rest, and any other prefix of that length is
 * refused. */
#include <stdlib.h>
#include <string.h>

#include "hash.h"

static int is_hex(const char *p, int n) {
  int i;
  for (i = 0; i < n; i++)
    if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f'))) return 0;
  return 1;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  static const int maxlen[] = {32, 16, 8};
  hash_algo algo;
  int len;
  char want[32], got[32];
  const char *s;
  size_t n;
  if (size < 1) return 0;
  algo = (hash_algo)(data[0] % 3);
  len = 1 + (data[0] >> 2) % maxlen[algo];
  s = (const char *)data + 1;
  n = size - 1;
  /* decode of the input itself: the check hp:decode makes */
  if (n >= (size_t)len) {
    hash_hex_prefix(algo, s + len, n - (size_t)len, len, want);
    if (!is_hex(want, len)) abort();
    if (memcmp(want, s, (size_t)len) == 0) {
      /* accepted: then encoding the rest gives the input back */
      hash_hex_prefix(algo, s + len, n - (size_t)len, len, got);
      if (memcmp(got, s, (size_t)len) != 0) abort();
    }
  }
  /* encode the input as a key, then decode it */
  {
    char *k = malloc((size_t)len + n + 1);
    hash_hex_prefix(algo, s, n, len, k);
    memcpy(k + len, s, n);
    hash_hex_prefix(algo, k + len, n, len, want);
    if (memcmp(want, k, (size_t)len) != 0) abort();
    /* one changed digit is refused */
    k[0] = k[0] == '0' ? '1' : '0';
    if (memcmp(want, k, (size_t)len) == 0) abort();
    free(k);
  }
  return 0;
}
