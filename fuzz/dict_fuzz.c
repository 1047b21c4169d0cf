/* dict_fuzz.c -- libFuzzer harness for blob.dictionary: any bytes make a
 * dictionary (a zstd-format one or raw content) with a nonzero id and the
 * same bytes back; a value packed with it comes back equal; and untrusted
 * frames decoded with it fail cleanly. */
#include <stdlib.h>
#include <string.h>

#include "frame.h"

#define CAP (1u << 20)

static frame_ctx *ctx;

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  static const unsigned char value[] =
      "{\"id\":1,\"name\":\"alice\",\"tags\":[\"a\",\"b\"],\"ok\":true}"
      "{\"id\":2,\"name\":\"bob\",\"tags\":[\"c\"],\"ok\":false}";
  frame_dict *d;
  const void *b;
  size_t bn, cap, len;
  unsigned char *f, *out;
  frame_opts o;
  frame_info in;
  if (!ctx) ctx = frame_ctx_new();
  d = frame_dict_new(data, size);
  if (d == NULL) abort(); /* only out of memory may fail */
  b = frame_dict_bytes(d, &bn);
  if (bn != size || (size && memcmp(b, data, size) != 0)) abort();
  if (frame_dict_id(d) == 0) abort();
  memset(&o, 0, sizeof o);
  o.codec = FRAME_ZSTD;
  o.level = 3;
  o.dict = d;
  cap = frame_bound(o.codec, sizeof value);
  f = malloc(cap);
  out = malloc(sizeof value);
  /* a dictionary zstd refuses (a damaged zstd-format one) may fail the
   * pack, cleanly; what packs must come back */
  if (frame_pack(ctx, &o, value, sizeof value, f, cap, &len) == FRAME_OK) {
    if (frame_parse(f, len, &in) != FRAME_OK) abort();
    if (frame_decode(ctx, &in, f, d, out) != FRAME_OK) abort();
    if (memcmp(out, value, sizeof value) != 0) abort();
  }
  free(f);
  free(out);
  /* the input as an untrusted frame, with this dictionary */
  if (frame_parse(data, size, &in) == FRAME_OK && in.length <= CAP) {
    out = malloc(in.length + 1);
    (void)frame_decode(ctx, &in, data, in.dict_id == frame_dict_id(d) ? d : NULL, out);
    free(out);
  }
  frame_dict_free(d);
  return 0;
}
