/* chunk_test.c -- manifests and chunks: encode/decode, joins in any order,
 * and each failure named: missing, duplicate, stale, corrupt, truncated. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "chunk.h"

#define LEN 10000
#define CS 1024

static unsigned char *make_chunk(const manifest *m, uint32_t i, const unsigned char *v, size_t *n) {
  uint32_t len = chunk_len(m, i);
  unsigned char *c = malloc(CHUNK_HEADER_SIZE + len);
  chunk_header(m, i, v + (size_t)i * m->chunk_size, len, c);
  memcpy(c + CHUNK_HEADER_SIZE, v + (size_t)i * m->chunk_size, len);
  *n = CHUNK_HEADER_SIZE + len;
  return c;
}

static void build_test(void);

int main(void) {
  static unsigned char v[LEN], out[LEN];
  unsigned char mb[MANIFEST_SIZE];
  manifest m, m2, old;
  unsigned char *ch[10], *stale;
  const void *ptrs[11];
  size_t lens[11], which, i, bit, staln;
  int flips_ok = 1;

  for (i = 0; i < LEN; i++) v[i] = (unsigned char)(i * 7 + i / 13);
  memset(&m, 0, sizeof m);
  CHECK(chunk_new_generation(m.gen) == 0);
  m.length = LEN;
  m.chunk_size = CS;
  m.count = chunk_count(LEN, CS);
  m.layout = LAYOUT_ROWS;
  chunk_digest(v, LEN, m.digest);
  CHECK(m.count == 10 && chunk_len(&m, 9) == LEN - 9 * CS);
  manifest_encode(&m, mb);
  CHECK(manifest_decode(mb, MANIFEST_SIZE, &m2) == CHUNK_OK);
  CHECK(memcmp(&m2.gen, &m.gen, CHUNK_GEN_SIZE) == 0 && m2.count == 10 && m2.length == LEN);
  CHECK(manifest_decode(mb, 63, &m2) == CHUNK_EMTRUNC);
  CHECK(manifest_decode(mb, 3, &m2) == CHUNK_EMTRUNC);
  for (bit = 0; bit < MANIFEST_SIZE * 8; bit++) {
    mb[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    if (manifest_decode(mb, MANIFEST_SIZE, &m2) == CHUNK_OK) flips_ok = 0;
    mb[bit / 8] ^= (unsigned char)(1u << (bit % 8));
  }
  CHECK(flips_ok);

  build_test();
  for (i = 0; i < 10; i++) ch[i] = make_chunk(&m, (uint32_t)i, v, &lens[i]);
  /* reversed order joins */
  for (i = 0; i < 10; i++) { ptrs[i] = ch[9 - i]; lens[i] = CHUNK_HEADER_SIZE + chunk_len(&m, (uint32_t)(9 - i)); }
  memset(out, 0, LEN);
  CHECK(chunk_join(&m, ptrs, lens, 10, out, &which) == CHUNK_OK && memcmp(out, v, LEN) == 0);
  /* missing */
  CHECK(chunk_join(&m, ptrs, lens, 9, out, &which) == CHUNK_EMISSING && which == 0);
  /* duplicate */
  ptrs[10] = ch[3]; lens[10] = CHUNK_HEADER_SIZE + CS;
  CHECK(chunk_join(&m, ptrs, lens, 11, out, &which) == CHUNK_EDUPLICATE && which == 10);
  /* truncated and corrupt chunk */
  lens[10] = CHUNK_HEADER_SIZE + CS - 1;
  CHECK(chunk_join(&m, ptrs, lens, 11, out, &which) == CHUNK_ETRUNCATED);
  ch[3][CHUNK_HEADER_SIZE + 5] ^= 1;
  CHECK(chunk_join(&m, ptrs, lens, 10, out, &which) == CHUNK_ECORRUPT && which == 6);
  ch[3][CHUNK_HEADER_SIZE + 5] ^= 1;
  /* a chunk of an older write with the same index */
  old = m;
  old.gen[0] ^= 0x80;
  stale = make_chunk(&old, 4, v, &staln);
  ptrs[5] = stale;
  CHECK(chunk_join(&m, ptrs, lens, 10, out, &which) == CHUNK_ESTALE && which == 5);
  ptrs[5] = ch[4];
  /* a consistent manifest with another digest: every chunk fine, whole not */
  m2 = m;
  m2.digest[0] ^= 1;
  CHECK(chunk_join(&m2, ptrs, lens, 10, out, &which) == CHUNK_EDIGEST);
  /* a manifest lying about its count is refused as inconsistent */
  m2 = m;
  m2.count = 9;
  manifest_encode(&m2, mb);
  CHECK(manifest_decode(mb, MANIFEST_SIZE, &m2) == CHUNK_EMANIFEST);
  /* lying about length and count together: chunk 8 is then "too long" */
  m2 = m;
  m2.length = 8 * CS + 1;
  m2.count = 9;
  CHECK(chunk_join(&m2, ptrs + 1, lens + 1, 9, out, &which) != CHUNK_OK);
  CHECK(strcmp(chunk_errcode(CHUNK_ESTALE), "StaleGeneration") == 0);

  /* chunk_join's one-pass path reports a flipped bit anywhere in a chunk
   * exactly as chunk_decode does, naming the same chunk */
  for (i = 0; i < 10; i++) { ptrs[i] = ch[i]; lens[i] = CHUNK_HEADER_SIZE + chunk_len(&m, (uint32_t)i); }
  flips_ok = 1;
  for (bit = 0; bit < lens[2] * 8; bit++) {
    uint32_t idx;
    const unsigned char *d;
    size_t dl;
    chunk_err want;
    ch[2][bit / 8] ^= (unsigned char)(1u << (bit % 8));
    want = chunk_decode(&m, ch[2], lens[2], &idx, &d, &dl);
    if (want == CHUNK_OK) flips_ok = 0; /* a flip must never decode */
    else if (chunk_join(&m, ptrs, lens, 10, out, &which) != want || which != 2) flips_ok = 0;
    ch[2][bit / 8] ^= (unsigned char)(1u << (bit % 8));
  }
  CHECK(flips_ok);
  CHECK(chunk_join(&m, ptrs, lens, 10, out, &which) == CHUNK_OK && memcmp(out, v, LEN) == 0);

  for (i = 0; i < 10; i++) free(ch[i]);
  free(stale);
  return check_done();
}

/* chunk_build: the bytes of chunk_header plus a copy, over lengths around
 * its 64 KB blocks, copied or in place, and the digest it feeds equals
 * chunk_digest of the whole. */
static void build_test(void) {
  static const uint32_t lens[] = {0, 1, 65535, 65536, 65537, 200001};
  size_t k, total = 0, j;
  unsigned char *v, *a, *b, d1[16], d2[16];
  manifest m;
  XXH3_state_t *cst = XXH3_createState(), *dig = XXH3_createState();
  int same = 1;
  for (k = 0; k < sizeof lens / sizeof lens[0]; k++) total += lens[k];
  v = malloc(total);
  a = malloc(CHUNK_HEADER_SIZE + 200001);
  b = malloc(CHUNK_HEADER_SIZE + 200001);
  CHECK(v && a && b && cst && dig && XXH3_128bits_reset(dig) == XXH_OK);
  for (j = 0; j < total; j++) v[j] = (unsigned char)(j * 131 + j / 977);
  memset(&m, 0, sizeof m);
  CHECK(chunk_new_generation(m.gen) == 0);
  m.chunk_size = 200001;
  for (k = 0, j = 0; k < sizeof lens / sizeof lens[0]; j += lens[k], k++) {
    chunk_header(&m, (uint32_t)k, v + j, lens[k], a);
    memcpy(a + CHUNK_HEADER_SIZE, v + j, lens[k]);
    chunk_build(&m, (uint32_t)k, v + j, lens[k], b, cst, dig);
    if (memcmp(a, b, CHUNK_HEADER_SIZE + lens[k]) != 0) same = 0;
    memset(b, 0, CHUNK_HEADER_SIZE);
    chunk_build(&m, (uint32_t)k, b + CHUNK_HEADER_SIZE, lens[k], b, cst, NULL); /* in place */
    if (memcmp(a, b, CHUNK_HEADER_SIZE + lens[k]) != 0) same = 0;
  }
  CHECK(same);
  chunk_digest_final(dig, d1);
  chunk_digest(v, total, d2);
  CHECK(memcmp(d1, d2, 16) == 0);
  XXH3_freeState(cst);
  XXH3_freeState(dig);
  free(v); free(a); free(b);
}
