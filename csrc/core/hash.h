/* hash.h -- digests for key prefixes and buckets: md5 and sha1 (OpenSSL),
 * xxh3 (libxxhash), crc32c. Plain C: no Lua. All functions are re-entrant. */
#ifndef OTSKIT_HASH_H
#define OTSKIT_HASH_H

#include <stddef.h>
#include <stdint.h>

typedef enum { HASH_MD5 = 0, HASH_XXH3 = 1, HASH_CRC32C = 2, HASH_SHA1 = 3 } hash_algo;

/* The longest digest (sha1): a buffer this size holds any algo's. */
#define HASH_MAX_DIGEST 20

/* Digest length in bytes of algo: 16, 8, 4, 20. */
size_t hash_digest_len(hash_algo algo);

/* Writes the digest of p[0..n) to out (hash_digest_len(algo) bytes) and
 * returns 1. xxh3 and crc32c digests are written big-endian, so their hex
 * form equals the usual printed form of the number (xxhsum's canonical
 * form). sha1 goes through OpenSSL's EVP interface, which may fail (no
 * provider for it, out of memory): then 0, and out is undefined. md5,
 * xxh3 and crc32c never fail. */
int hash_digest(hash_algo algo, const void *p, size_t n, unsigned char *out);

/* Writes the first ndigits lowercase hex digits of the digest of p[0..n)
 * to out (no terminator) and returns 1; 0 when the digest failed (see
 * hash_digest). ndigits must be 1..2*hash_digest_len(algo). */
int hash_hex_prefix(hash_algo algo, const void *p, size_t n, int ndigits,
                    char *out);

/* The hash-prefixed key: hash_hex_prefix of p[0..n), then p itself, into
 * out (ndigits + n bytes). */
void hash_prefix_key(hash_algo algo, int ndigits, const void *p, size_t n, char *out);

uint64_t hash_xxh3(const void *p, size_t n);
uint32_t hash_crc32c(uint32_t crc, const void *p, size_t n);

/* Lowercase hex of n bytes into out (2n chars, no terminator). */
void hash_hex(const unsigned char *in, size_t n, char *out);

#endif
