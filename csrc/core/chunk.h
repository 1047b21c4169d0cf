/* chunk.h -- manifests and chunks of a value split over several cells or
 * rows. Plain C: no Lua. Parsing treats every byte as untrusted.
 *
 * Manifest (64 bytes, integers little-endian), the commit record:
 *   0  magic "OTKM" 4 | 4 version (1) 1 | 5 layout 1 | 6 reserved (0) 2
 *   8  generation 16 (random per write)
 *  24  total length 8 | 32 chunk size 4 | 36 chunk count 4
 *  40  digest 16: XXH3-128 of the whole value (high half first)
 *  56  check 8: XXH3-64 of bytes 0..55
 *
 * Chunk (40-byte header, then the data):
 *   0  magic "OTKC" 4 | 4 version (1) 1 | 5 reserved (0) 3
 *   8  generation 16 | 24 index 4 | 28 data length 4
 *  32  check 8: XXH3-64 of the data seeded with XXH3-64 of bytes 0..31 */
#ifndef OTSKIT_CHUNK_H
#define OTSKIT_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include <xxhash.h>

#define CHUNK_GEN_SIZE 16
#define MANIFEST_SIZE 64
#define CHUNK_HEADER_SIZE 40
#define CHUNK_VERSION 1
#define CHUNK_MAX_SIZE 0x7fffffffu /* largest chunk data length */

typedef enum { LAYOUT_COLUMNS = 0, LAYOUT_ROWS = 1 } chunk_layout;

typedef struct {
  unsigned char gen[CHUNK_GEN_SIZE];
  uint64_t length;
  uint32_t chunk_size;
  uint32_t count;
  chunk_layout layout;
  unsigned char digest[16];
} manifest;

typedef enum {
  CHUNK_OK = 0,
  CHUNK_EMANIFEST,   /* manifest: bad magic, check or inconsistent fields */
  CHUNK_EMTRUNC,     /* manifest shorter than 64 bytes */
  CHUNK_EVERSION,    /* a valid record of a version this build cannot read */
  CHUNK_ECORRUPT,    /* chunk: bad magic, check, index or length */
  CHUNK_ETRUNCATED,  /* chunk shorter than it should be */
  CHUNK_ESTALE,      /* chunk of another generation (another write) */
  CHUNK_EMISSING,
  CHUNK_EDUPLICATE,
  CHUNK_EDIGEST      /* every chunk fine, the whole does not match */
} chunk_err;

/* Stable code string of e: "CorruptManifest", "StaleGeneration", ... */
const char *chunk_errcode(chunk_err e);

/* Fills gen with fresh random bytes (getrandom); 0 on success. */
int chunk_new_generation(unsigned char gen[CHUNK_GEN_SIZE]);

/* A buffer of n bytes for a joined value, and its release (with the same
 * n); NULL when out of memory. */
void *chunk_buf_alloc(size_t n);
void chunk_buf_free(void *p, size_t n);

/* Chunk count for length bytes in chunks of chunk_size (>= 1). */
uint32_t chunk_count(uint64_t length, uint32_t chunk_size);
/* Data length of chunk index of m. */
uint32_t chunk_len(const manifest *m, uint32_t index);

void manifest_encode(const manifest *m, unsigned char out[MANIFEST_SIZE]);
/* Parses and checks a manifest: magic, check, version, and that length,
 * chunk size and count agree. */
chunk_err manifest_decode(const void *p, size_t n, manifest *m);

/* Writes the 40-byte header of chunk index (data[0..len)) of m to out. */
void chunk_header(const manifest *m, uint32_t index, const void *data,
                  uint32_t len, unsigned char out[CHUNK_HEADER_SIZE]);

/* Writes chunk index of m (header, then data[0..len) copied) to out
 * (CHUNK_HEADER_SIZE + len bytes; data may already be at out + header),
 * hashing each block while in cache: the chunk check with cst (a state
 * for the caller to lend) and, when digest is not NULL, the whole-value
 * digest. Makes the same bytes as chunk_header plus a copy. */
void chunk_build(const manifest *m, uint32_t index, const void *data, uint32_t len,
                 unsigned char *out, XXH3_state_t *cst, XXH3_state_t *digest);

/* Checks chunk p[0..n) against m: magic, version, check, generation,
 * index < count and the data length the manifest expects for that index.
 * Sets *index, *data and *len (pointing into p). */
chunk_err chunk_decode(const manifest *m, const void *p, size_t n,
                       uint32_t *index, const unsigned char **data, size_t *len);

/* Joins the nchunks chunks (any order) of m into out (m->length bytes):
 * every index present once, every chunk valid, and the digest matching.
 * On failure *which is the chunk (position in the input, or for
 * CHUNK_EMISSING the missing index) at fault. */
chunk_err chunk_join(const manifest *m, const void *const *chunks,
                     const size_t *lens, size_t nchunks, unsigned char *out,
                     size_t *which);

/* Streaming digest of a value: XXH3-128 in the manifest's byte order. */
void chunk_digest_final(XXH3_state_t *st, unsigned char out[16]);
void chunk_digest(const void *p, size_t n, unsigned char out[16]);

#endif
