/* hash.c -- digests for key prefixes and buckets. */
/* The low-level MD5 calls are deprecated in OpenSSL 3 but still shipped;
 * they cost ~90 ns on a short key against ~165 ns through EVP, and key
 * prefixes are all short keys. SHA1 (digests of content, not key
 * prefixes) goes through the supported EVP interface. */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/evp.h>
#include <openssl/md5.h>
#include <xxhash.h>

#include "hash.h"

size_t hash_digest_len(hash_algo algo) {
  switch (algo) {
    case HASH_MD5: return 16;
    case HASH_XXH3: return 8;
    case HASH_CRC32C: return 4;
    case HASH_SHA1: return 20;
  }
  return 0;
}

static void put_be(uint64_t v, int nbytes, unsigned char *out) {
  int i;
  for (i = nbytes - 1; i >= 0; i--) { out[i] = (unsigned char)(v & 0xff); v >>= 8; }
}

int hash_digest(hash_algo algo, const void *p, size_t n, unsigned char *out) {
  switch (algo) {
    case HASH_MD5: {
      MD5_CTX c;
      MD5_Init(&c);
      MD5_Update(&c, p, n);
      MD5_Final(out, &c);
      break;
    }
    case HASH_XXH3: put_be(hash_xxh3(p, n), 8, out); break;
    case HASH_CRC32C: put_be(hash_crc32c(0, p, n), 4, out); break;
    case HASH_SHA1: {
      unsigned int len = 0;
      return EVP_Digest(p, n, out, &len, EVP_sha1(), NULL) == 1 && len == 20;
    }
  }
  return 1;
}

void hash_hex(const unsigned char *in, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  size_t i;
  for (i = 0; i < n; i++) {
    out[2 * i] = digits[in[i] >> 4];
    out[2 * i + 1] = digits[in[i] & 15];
  }
}

int hash_hex_prefix(hash_algo algo, const void *p, size_t n, int ndigits,
                    char *out) {
  unsigned char d[HASH_MAX_DIGEST];
  char hex[2 * HASH_MAX_DIGEST];
  int i;
  if (!hash_digest(algo, p, n, d)) return 0;
  hash_hex(d, (size_t)(ndigits + 1) / 2, hex);
  for (i = 0; i < ndigits; i++) out[i] = hex[i];
  return 1;
}

uint64_t hash_xxh3(const void *p, size_t n) { return XXH3_64bits(p, n); }

/* CRC-32C (Castagnoli, reflected 0x82F63B78): no Debian library ships it.
 * SSE4.2 has an instruction for it; elsewhere a byte table. */
static uint32_t crc_table[256];
static int crc_table_ready;

static void crc_init(void) {
  uint32_t i, j, c;
  for (i = 0; i < 256; i++) {
    c = i;
    for (j = 0; j < 8; j++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    crc_table[i] = c;
  }
  crc_table_ready = 1;
}

static uint32_t crc_sw(uint32_t crc, const unsigned char *s, size_t n) {
  if (!crc_table_ready) crc_init(); /* idempotent: a race writes equal values */
  while (n--) crc = crc_table[(crc ^ *s++) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <string.h>
__attribute__((target("sse4.2")))
static uint32_t crc_hw(uint32_t crc, const unsigned char *s, size_t n) {
  uint64_t c = crc;
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, s, 8);
    c = __builtin_ia32_crc32di(c, w);
    s += 8; n -= 8;
  }
  crc = (uint32_t)c;
  while (n--) crc = __builtin_ia32_crc32qi(crc, *s++);
  return crc;
}
static int has_sse42 = -1;
#endif

uint32_t hash_crc32c(uint32_t crc, const void *p, size_t n) {
  const unsigned char *s = (const unsigned char *)p;
  crc = ~crc;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (has_sse42 < 0) has_sse42 = __builtin_cpu_supports("sse4.2") ? 1 : 0;
  crc = has_sse42 ? crc_hw(crc, s, n) : crc_sw(crc, s, n);
#else
  crc = crc_sw(crc, s, n);
#endif
  return ~crc;
}

void hash_prefix_key(hash_algo algo, int ndigits, const void *p, size_t n, char *out) {
  (void)hash_hex_prefix(algo, p, n, ndigits, out); /* key prefixes: md5, xxh3, crc32c only */
  if (n) memcpy(out + ndigits, p, n);
}
