/* manifest_fuzz.c -- libFuzzer harness for manifest and chunk parsing:
 * the first 64 bytes are a manifest, the rest chunks with 2-byte length
 * prefixes; everything must fail cleanly or join to the digest. Also a
 * round trip: the input split into chunks joins back equal. */
#include <stdlib.h>
#include <string.h>

#include "chunk.h"

#define CAP (1u << 20)

static void untrusted(const unsigned char *data, size_t size) {
  manifest m;
  const void *ptrs[64];
  size_t lens[64], n = 0, off = MANIFEST_SIZE, which;
  unsigned char *out;
  if (manifest_decode(data, size < MANIFEST_SIZE ? size : MANIFEST_SIZE, &m) != CHUNK_OK) return;
  if (m.length > CAP) return;
  while (off + 2 <= size && n < 64) {
    size_t l = (size_t)data[off] | (size_t)data[off + 1] << 8;
    off += 2;
    if (l > size - off) l = size - off;
    ptrs[n] = data + off;
    lens[n] = l;
    {
      uint32_t idx;
      const unsigned char *d;
      size_t dl;
      if (chunk_decode(&m, data + off, l, &idx, &d, &dl) == CHUNK_OK &&
          (idx >= m.count || dl != chunk_len(&m, idx)))
        abort();
    }
    n++;
    off += l;
  }
  out = malloc((size_t)m.length + 1);
  (void)chunk_join(&m, ptrs, lens, n, out, &which);
  free(out);
}

static void roundtrip(const unsigned char *data, size_t size) {
  manifest m, m2;
  unsigned char mb[MANIFEST_SIZE], *chunks[256], *out;
  const void *ptrs[256];
  size_t lens[256], which;
  uint32_t i;
  if (size < 1) return;
  memset(&m, 0, sizeof m);
  m.chunk_size = 1 + data[0] % 64;
  m.length = size - 1;
  m.count = chunk_count(m.length, m.chunk_size);
  if (m.count > 256) return;
  memcpy(m.gen, "fuzz-generation!", CHUNK_GEN_SIZE);
  chunk_digest(data + 1, (size_t)m.length, m.digest);
  manifest_encode(&m, mb);
  if (manifest_decode(mb, MANIFEST_SIZE, &m2) != CHUNK_OK) abort();
  for (i = 0; i < m.count; i++) {
    uint32_t l = chunk_len(&m, i);
    uint32_t j = m.count - 1 - i; /* reversed order */
    chunks[j] = malloc(CHUNK_HEADER_SIZE + l);
    chunk_header(&m, i, data + 1 + (size_t)i * m.chunk_size, l, chunks[j]);
    memcpy(chunks[j] + CHUNK_HEADER_SIZE, data + 1 + (size_t)i * m.chunk_size, l);
    ptrs[j] = chunks[j];
    lens[j] = CHUNK_HEADER_SIZE + l;
  }
  out = malloc((size_t)m.length + 1);
  if (chunk_join(&m2, ptrs, lens, m.count, out, &which) != CHUNK_OK) abort();
  if (memcmp(out, data + 1, (size_t)m.length) != 0) abort();
  free(out);
  for (i = 0; i < m.count; i++) free(chunks[i]);
}

/* The input as one chunk of a fixed valid manifest. */
static void one_chunk(const unsigned char *data, size_t size) {
  manifest m;
  uint32_t idx;
  const unsigned char *d;
  size_t dl;
  memset(&m, 0, sizeof m);
  memcpy(m.gen, "fuzz-generation!", CHUNK_GEN_SIZE);
  m.length = 100;
  m.chunk_size = 16;
  m.count = chunk_count(m.length, m.chunk_size);
  if (chunk_decode(&m, data, size, &idx, &d, &dl) == CHUNK_OK &&
      (idx >= m.count || dl != chunk_len(&m, idx) || d != data + CHUNK_HEADER_SIZE))
    abort();
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  untrusted(data, size);
  one_chunk(data, size);
  roundtrip(data, size);
  return 0;
}
