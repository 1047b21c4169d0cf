/* frame_fuzz.c -- libFuzzer harness for frame unpacking: arbitrary bytes
 * are parsed and decoded (with and without a dictionary) under a size cap
 * and must fail cleanly; the same bytes again with the magic, version,
 * lengths and both header-level checks made right, so the decompressors
 * themselves get the fuzzed payloads (only the checksum of the original,
 * tested after decompressing, stays wrong); and any bytes packed with any
 * codec must come back equal. */
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "bytes.h"
#include "frame.h"

#define CAP (1u << 20) /* the max_size a caller would pass */

static frame_ctx *ctx;
static frame_dict *dict;

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  frame_info in;
  unsigned char *out;
  if (!ctx) {
    static const char d[] = "{\"id\":1,\"name\":\"alice\",\"tags\":[\"a\",\"b\"],\"ok\":true}";
    ctx = frame_ctx_new();
    dict = frame_dict_new(d, sizeof d - 1);
  }
  /* 1: untrusted frame */
  if (frame_parse(data, size, &in) == FRAME_OK && in.length <= CAP) {
    const frame_dict *d = (in.dict_id == frame_dict_id(dict)) ? dict : NULL;
    out = malloc(in.length + 1);
    (void)frame_decode(ctx, &in, data, d, out);
    free(out);
  }
  /* 1b: the same payload behind a header whose checks are computed */
  if (size >= FRAME_HEADER_SIZE) {
    unsigned char *f = malloc(size);
    size_t plen = size - FRAME_HEADER_SIZE;
    memcpy(f, data, size);
    memcpy(f, "OTKF", 4);
    f[4] = 1;
    f[5] = (unsigned char)(f[5] % FRAME_NCODECS);
    f[6] = (unsigned char)(f[6] % 2);
    f[7] = 0;
    if (f[5] != FRAME_ZSTD) put_le32(f + 8, 0);
    else if (f[8] & 1) put_le32(f + 8, frame_dict_id(dict));
    put_le32(f + 12, get_le32(f + 12) % (CAP + 1));
    put_le32(f + 16, (uint32_t)plen);
    put_le32(f + 28, (uint32_t)XXH3_64bits(f + FRAME_HEADER_SIZE, plen));
    put_le32(f + 32, (uint32_t)XXH3_64bits(f, 32));
    if (frame_parse(f, size, &in) == FRAME_OK && in.length <= CAP) {
      const frame_dict *d = (in.dict_id == frame_dict_id(dict)) ? dict : NULL;
      out = malloc(in.length + 1);
      (void)frame_decode(ctx, &in, f, d, out);
      free(out);
    }
    free(f);
  }
  /* 2: round trip of the input as a value */
  if (size >= 1) {
    frame_opts o;
    size_t n = size - 1, cap, len;
    unsigned char *f;
    memset(&o, 0, sizeof o);
    o.codec = (frame_codec)(data[0] % FRAME_NCODECS);
    o.auto_raw = (data[0] >> 2) & 1;
    o.sum = (frame_sum)((data[0] >> 3) & 1);
    o.level = o.codec == FRAME_ZLIB ? 1 + data[0] % 9 : o.codec == FRAME_ZSTD ? 1 + (data[0] >> 4) % 5 : 1;
    if (o.codec == FRAME_ZSTD && (data[0] & 0x80)) o.dict = dict;
    cap = frame_bound(o.codec, n);
    f = malloc(cap);
    out = malloc(n + 1);
    if (frame_pack(ctx, &o, data + 1, n, f, cap, &len) != FRAME_OK) abort();
    if (o.auto_raw && len > n + FRAME_HEADER_SIZE) abort();
    if (frame_parse(f, len, &in) != FRAME_OK || in.length != n) abort();
    if (frame_decode(ctx, &in, f, o.dict, out) != FRAME_OK) abort();
    if (memcmp(out, data + 1, n) != 0) abort();
    free(f);
    free(out);
  }
  return 0;
}
