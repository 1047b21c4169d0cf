/* hash_test.c -- known answers and the hardware/table crc32c agreement. */
#include <string.h>

#include "check.h"
#include "hash.h"

static int hex_is(hash_algo a, const char *in, const char *want) {
  unsigned char d[HASH_MAX_DIGEST];
  char hex[2 * HASH_MAX_DIGEST + 1];
  size_t n = hash_digest_len(a);
  if (!hash_digest(a, in, strlen(in), d)) return 0;
  hash_hex(d, n, hex);
  hex[2 * n] = '\0';
  return strcmp(hex, want) == 0;
}

int main(void) {
  char pre[2 * HASH_MAX_DIGEST];
  unsigned i;
  CHECK(hex_is(HASH_MD5, "abc", "900150983cd24fb0d6963f7d28e17f72"));
  CHECK(hex_is(HASH_XXH3, "abc", "78af5f94892f3950"));
  CHECK(hex_is(HASH_CRC32C, "123456789", "e3069283"));
  /* FIPS 180-4 examples (SHA-1): "abc", the two-block message, "" */
  CHECK(hash_digest_len(HASH_SHA1) == 20);
  CHECK(hex_is(HASH_SHA1, "abc", "a9993e364706816aba3e25717850c26c9cd0d89d"));
  CHECK(hex_is(HASH_SHA1, "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
               "84983e441c3bd26ebaae4aa1f95129e5e54670f1"));
  CHECK(hex_is(HASH_SHA1, "", "da39a3ee5e6b4b0d3255bfef95601890afd80709"));
  CHECK(hash_hex_prefix(HASH_SHA1, "abc", 3, 40, pre) && memcmp(pre, "a9993e364706816aba3e25717850c26c9cd0d89d", 40) == 0);
  CHECK(hash_crc32c(0, "123456789", 9) == 0xe3069283u);
  /* incremental crc32c equals one-shot at every split point */
  for (i = 0; i <= 9; i++) {
    uint32_t c = hash_crc32c(0, "123456789", i);
    CHECK(hash_crc32c(c, "123456789" + i, 9 - i) == 0xe3069283u);
  }
  hash_hex_prefix(HASH_MD5, "abc", 3, 5, pre);
  CHECK(memcmp(pre, "90015", 5) == 0);
  hash_hex_prefix(HASH_CRC32C, "123456789", 9, 3, pre);
  CHECK(memcmp(pre, "e30", 3) == 0);
  return check_done();
}
