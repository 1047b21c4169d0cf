/* ffi_fuzz.c -- libFuzzer over the exported C ABI's parsing of untrusted
 * bytes: otskit_parse_int64 must accept exactly the canonical-enough
 * decimals a simple reference parser accepts (optional '-', digits, no
 * overflow, no NUL, under 32 bytes), with the same value, and print it
 * back to a string that parses to it again; prefix_encode and the bucket
 * functions take any bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "otskit_ffi.h"

/* 1 and *out when s[0..n) is [-]digits within int64, n < 32 */
static int reference(const uint8_t *s, size_t n, int64_t *out) {
  size_t i = 0;
  int neg = 0;
  uint64_t m = 0, lim;
  if (n == 0 || n >= 32) return 0;
  if (s[0] == '-') { neg = 1; i = 1; }
  if (i == n) return 0;
  lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return 0;
    if (m > (lim - (uint64_t)(s[i] - '0')) / 10) return 0;
    m = m * 10 + (uint64_t)(s[i] - '0');
  }
  *out = neg ? (int64_t)(0 - m) : (int64_t)m;
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int64_t a = 0, b = 0, c = 0;
  int ra = otskit_parse_int64((const char *)data, size, &a);
  int rb = reference(data, size, &b);
  char txt[24], *out;
  if (ra != rb || (ra && a != b)) abort();
  if (ra) {
    int len = otskit_int64_text(a, txt);
    if (!otskit_parse_int64(txt, (size_t)len, &c) || c != a) abort();
    if (otskit_bucket_mod(a, 7) < 0 || otskit_bucket_mod(a, 7) > 6) abort();
  }
  out = (char *)malloc(size + 32);
  if (out == NULL) return 0;
  if (size > 0) {
    int algo = data[0] % 3, nd = 1 + data[0] % 8;
    otskit_prefix_encode(algo, nd, (const char *)data, size, out);
    if (memcmp(out + nd, data, size) != 0) abort();
    if (otskit_bucket_hash(algo, (const char *)data, size, 1 + data[0]) > data[0]) abort();
  }
  free(out);
  return 0;
}
