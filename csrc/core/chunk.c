/* chunk.c -- manifests and chunks: encoding, untrusted parsing, joining.
 * See chunk.h for the formats. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include "bytes.h"
#include "chunk.h"
#include "frame.h" /* otsk_xxh3_*: dispatched XXH3 */

static const char mmagic[4] = {'O', 'T', 'K', 'M'};
static const char cmagic[4] = {'O', 'T', 'K', 'C'};

const char *chunk_errcode(chunk_err e) {
  switch (e) {
  case CHUNK_OK: return "OK";
  case CHUNK_EMANIFEST: return "CorruptManifest";
  case CHUNK_EMTRUNC: return "TruncatedManifest";
  case CHUNK_EVERSION: return "UnknownVersion";
  case CHUNK_ECORRUPT: return "CorruptChunk";
  case CHUNK_ETRUNCATED: return "TruncatedChunk";
  case CHUNK_ESTALE: return "StaleGeneration";
  case CHUNK_EMISSING: return "MissingChunk";
  case CHUNK_EDUPLICATE: return "DuplicateChunk";
  case CHUNK_EDIGEST: return "DigestMismatch";
  }
  return "CorruptChunk";
}

int chunk_new_generation(unsigned char gen[CHUNK_GEN_SIZE]) {
  size_t got = 0;
  while (got < CHUNK_GEN_SIZE) {
    ssize_t r = getrandom(gen + got, CHUNK_GEN_SIZE - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    got += (size_t)r;
  }
  return 0;
}

/* Large buffers come straight from mmap with transparent huge pages asked
 * for: a 50 MB join otherwise spends more time in page faults than in
 * copying. */
#define BIG ((size_t)4 << 20)

void *chunk_buf_alloc(size_t n) {
  void *p;
  if (n < BIG) return malloc(n ? n : 1);
  p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
  (void)madvise(p, n, MADV_HUGEPAGE);
#endif
  return p;
}

void chunk_buf_free(void *p, size_t n) {
  if (!p) return;
  if (n < BIG) free(p);
  else munmap(p, n);
}

uint32_t chunk_count(uint64_t length, uint32_t chunk_size) {
  uint64_t c = length / chunk_size + (length % chunk_size != 0);
  return c > 0xffffffffu ? 0xffffffffu : (uint32_t)c;
}

uint32_t chunk_len(const manifest *m, uint32_t index) {
  uint64_t start = (uint64_t)index * m->chunk_size;
  uint64_t rest = m->length > start ? m->length - start : 0;
  return rest < m->chunk_size ? (uint32_t)rest : m->chunk_size;
}

void chunk_digest_final(XXH3_state_t *st, unsigned char out[16]) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits_digest(st));
  memcpy(out, c.digest, 16);
}

void chunk_digest(const void *p, size_t n, unsigned char out[16]) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, otsk_xxh3_128(p, n));
  memcpy(out, c.digest, 16);
}

void manifest_encode(const manifest *m, unsigned char out[MANIFEST_SIZE]) {
  memcpy(out, mmagic, 4);
  out[4] = CHUNK_VERSION;
  out[5] = (unsigned char)m->layout;
  out[6] = out[7] = 0;
  memcpy(out + 8, m->gen, CHUNK_GEN_SIZE);
  put_le64(out + 24, m->length);
  put_le32(out + 32, m->chunk_size);
  put_le32(out + 36, m->count);
  memcpy(out + 40, m->digest, 16);
  put_le64(out + 56, (uint64_t)XXH3_64bits(out, 56));
}

chunk_err manifest_decode(const void *mp, size_t n, manifest *m) {
  const unsigned char *p = mp;
  if (n < MANIFEST_SIZE)
    return memcmp(p, mmagic, n < 4 ? n : 4) == 0 ? CHUNK_EMTRUNC : CHUNK_EMANIFEST;
  if (n > MANIFEST_SIZE || memcmp(p, mmagic, 4) != 0) return CHUNK_EMANIFEST;
  if (get_le64(p + 56) != (uint64_t)XXH3_64bits(p, 56)) return CHUNK_EMANIFEST;
  if (p[4] != CHUNK_VERSION || p[6] != 0 || p[7] != 0) return CHUNK_EVERSION;
  if (p[5] > LAYOUT_ROWS) return CHUNK_EVERSION;
  m->layout = (chunk_layout)p[5];
  memcpy(m->gen, p + 8, CHUNK_GEN_SIZE);
  m->length = get_le64(p + 24);
  m->chunk_size = get_le32(p + 32);
  m->count = get_le32(p + 36);
  memcpy(m->digest, p + 40, 16);
  if (m->chunk_size == 0 || m->chunk_size > CHUNK_MAX_SIZE) return CHUNK_EMANIFEST;
  if (m->length / m->chunk_size >= 0xffffffffu) return CHUNK_EMANIFEST;
  if (m->count != chunk_count(m->length, m->chunk_size)) return CHUNK_EMANIFEST;
  return CHUNK_OK;
}

static uint64_t chunk_check(const unsigned char *h, const void *data, size_t len) {
  return (uint64_t)otsk_xxh3_64_seed(data, len, (XXH64_hash_t)XXH3_64bits(h, 32));
}

void chunk_header(const manifest *m, uint32_t index, const void *data,
                  uint32_t len, unsigned char out[CHUNK_HEADER_SIZE]) {
  memcpy(out, cmagic, 4);
  out[4] = CHUNK_VERSION;
  out[5] = out[6] = out[7] = 0;
  memcpy(out + 8, m->gen, CHUNK_GEN_SIZE);
  put_le32(out + 24, index);
  put_le32(out + 28, len);
  put_le64(out + 32, chunk_check(out, data, len));
}

/* Blocks of this size are hashed (and copied) while in L1/L2: one pass
 * over memory instead of one per hash plus one for the copy. */
#define BLOCK ((size_t)64 << 10)

/* Copies data[0..len) to dst (unless dst == data) while updating the
 * seeded 64-bit state cst and, if not NULL, the 128-bit state digest. */
static void copy_hash(unsigned char *dst, const unsigned char *data, size_t len,
                      XXH3_state_t *cst, XXH3_state_t *digest) {
  size_t off, k;
  for (off = 0; off < len; off += k) {
    k = len - off < BLOCK ? len - off : BLOCK;
    if (dst != data) memcpy(dst + off, data + off, k);
    otsk_xxh3_64_update(cst, dst + off, k);
    if (digest) otsk_xxh3_128_update(digest, dst + off, k);
  }
}

/* The seeded state of a chunk check for header h (bytes 0..31). */
static int check_reset(XXH3_state_t *cst, const unsigned char *h) {
  return XXH3_64bits_reset_withSeed(cst, (XXH64_hash_t)XXH3_64bits(h, 32)) == XXH_OK;
}

void chunk_build(const manifest *m, uint32_t index, const void *data, uint32_t len,
                 unsigned char *out, XXH3_state_t *cst, XXH3_state_t *digest) {
  memcpy(out, cmagic, 4);
  out[4] = CHUNK_VERSION;
  out[5] = out[6] = out[7] = 0;
  memcpy(out + 8, m->gen, CHUNK_GEN_SIZE);
  put_le32(out + 24, index);
  put_le32(out + 28, len);
  (void)check_reset(cst, out); /* cannot fail for a state and a seed */
  copy_hash(out + CHUNK_HEADER_SIZE, data, len, cst, digest);
  put_le64(out + 32, (uint64_t)XXH3_64bits_digest(cst));
}

chunk_err chunk_decode(const manifest *m, const void *cp, size_t n,
                       uint32_t *index, const unsigned char **data, size_t *len) {
  const unsigned char *p = cp;
  uint32_t dlen, want;
  if (n < CHUNK_HEADER_SIZE)
    return memcmp(p, cmagic, n < 4 ? n : 4) == 0 ? CHUNK_ETRUNCATED : CHUNK_ECORRUPT;
  if (memcmp(p, cmagic, 4) != 0) return CHUNK_ECORRUPT;
  dlen = get_le32(p + 28);
  /* lengths before the check: a cut chunk is "truncated", not "corrupt" */
  if (n - CHUNK_HEADER_SIZE < dlen) return CHUNK_ETRUNCATED;
  if (n - CHUNK_HEADER_SIZE > dlen) return CHUNK_ECORRUPT;
  if (get_le64(p + 32) != chunk_check(p, p + CHUNK_HEADER_SIZE, dlen)) return CHUNK_ECORRUPT;
  if (p[4] != CHUNK_VERSION || p[5] || p[6] || p[7]) return CHUNK_EVERSION;
  if (memcmp(p + 8, m->gen, CHUNK_GEN_SIZE) != 0) return CHUNK_ESTALE;
  *index = get_le32(p + 24);
  if (*index >= m->count) return CHUNK_ECORRUPT;
  want = chunk_len(m, *index);
  if (dlen < want) return CHUNK_ETRUNCATED;
  if (dlen > want) return CHUNK_ECORRUPT;
  *data = p + CHUNK_HEADER_SIZE;
  *len = dlen;
  return CHUNK_OK;
}

/* Whether chunk p[0..n) can take the fused path of chunk_join: its length
 * agrees with its header and the header's index and length are those the
 * manifest expects, so its data can be copied to its place before it is
 * checked. Anything else goes through chunk_decode for its exact error. */
static int fused_ok(const manifest *m, const unsigned char *p, size_t n, uint32_t *index) {
  uint32_t dlen;
  if (n < CHUNK_HEADER_SIZE || memcmp(p, cmagic, 4) != 0) return 0;
  dlen = get_le32(p + 28);
  if (n - CHUNK_HEADER_SIZE != dlen) return 0;
  *index = get_le32(p + 24);
  return *index < m->count && dlen == chunk_len(m, *index);
}

chunk_err chunk_join(const manifest *m, const void *const *chunks,
                     const size_t *lens, size_t nchunks, unsigned char *out,
                     size_t *which) {
  unsigned char *seen, digest[16];
  size_t i;
  uint32_t k;
  chunk_err e = CHUNK_OK;
  /* chunks given in index order are digested while still in cache */
  XXH3_state_t *st = XXH3_createState(), *cst = XXH3_createState();
  int ordered = st != NULL && XXH3_128bits_reset(st) == XXH_OK;
  seen = calloc((size_t)m->count / 8 + 1, 1);
  if (!seen) { XXH3_freeState(st); XXH3_freeState(cst); return CHUNK_EMISSING; } /* cannot happen for a checked length */
  for (i = 0; i < nchunks && e == CHUNK_OK; i++) {
    const unsigned char *data, *p = chunks[i];
    size_t len;
    uint32_t idx;
    if (cst && fused_ok(m, p, lens[i], &idx)) {
      /* one pass: copy, check and digest each block while it is in cache;
       * then the same tests, in the same order, as chunk_decode */
      unsigned char *dst = out + (uint64_t)idx * m->chunk_size;
      len = lens[i] - CHUNK_HEADER_SIZE;
      if (ordered && idx != i) ordered = 0;
      (void)check_reset(cst, p);
      copy_hash(dst, p + CHUNK_HEADER_SIZE, len, cst, ordered ? st : NULL);
      if (get_le64(p + 32) != (uint64_t)XXH3_64bits_digest(cst)) e = CHUNK_ECORRUPT;
      else if (p[4] != CHUNK_VERSION || p[5] || p[6] || p[7]) e = CHUNK_EVERSION;
      else if (memcmp(p + 8, m->gen, CHUNK_GEN_SIZE) != 0) e = CHUNK_ESTALE;
      if (e != CHUNK_OK) { *which = i; break; }
    } else {
      e = chunk_decode(m, p, lens[i], &idx, &data, &len);
      if (e != CHUNK_OK) { *which = i; break; }
      memcpy(out + (uint64_t)idx * m->chunk_size, data, len);
      if (ordered && idx == i) otsk_xxh3_128_update(st, data, len);
      else ordered = 0;
    }
    if (seen[idx / 8] & (1u << (idx % 8))) { e = CHUNK_EDUPLICATE; *which = i; break; }
    seen[idx / 8] |= (unsigned char)(1u << (idx % 8));
  }
  for (k = 0; e == CHUNK_OK && k < m->count; k++)
    if (!(seen[k / 8] & (1u << (k % 8)))) { e = CHUNK_EMISSING; *which = k; }
  free(seen);
  if (e == CHUNK_OK) {
    if (ordered) chunk_digest_final(st, digest);
    else chunk_digest(out, (size_t)m->length, digest);
    if (memcmp(digest, m->digest, 16) != 0) e = CHUNK_EDIGEST;
  }
  XXH3_freeState(st);
  XXH3_freeState(cst);
  return e;
}
