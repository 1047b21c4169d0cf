/* frame_test.c -- frames: round trips for every codec and size class,
 * auto never grows, every bit flip and truncation is caught, a forged
 * length is refused before any allocation, dictionaries are required. */
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "check.h"
#include "frame.h"

static unsigned long long rng = 88172645463325252ull;
static unsigned next(void) {
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return (unsigned)(rng >> 32);
}

/* JSON-like text, or random bytes (incompressible) */
static void fill(unsigned char *p, size_t n, int random) {
  static const char *words[] = {"{\"id\":", "\"name\":\"", "alice", "\",", "42",
                                "\"tags\":[", "]}", "true", "bob", ","};
  size_t i = 0;
  while (i < n) {
    if (random) { p[i++] = (unsigned char)next(); continue; }
    {
      const char *w = words[next() % 10];
      while (*w && i < n) p[i++] = (unsigned char)*w++;
    }
  }
}

/* Packs and unpacks; returns the frame length or 0 on any mismatch. */
static size_t roundtrip(frame_ctx *c, frame_opts *o, const unsigned char *src, size_t n) {
  size_t cap = frame_bound(o->codec, n), len = 0;
  unsigned char *f = malloc(cap), *out = malloc(n + 1);
  frame_info in;
  size_t ok = 0;
  if (frame_pack(c, o, src, n, f, cap, &len) == FRAME_OK &&
      frame_parse(f, len, &in) == FRAME_OK && in.length == n &&
      frame_decode(c, &in, f, o->dict, out) == FRAME_OK && memcmp(out, src, n) == 0)
    ok = len;
  free(f);
  free(out);
  return ok;
}

/* 1 if decoding frame f[0..n) fails (it must), 0 if it succeeds. */
static int rejected(frame_ctx *c, const unsigned char *f, size_t n, const frame_dict *d) {
  frame_info in;
  unsigned char *out;
  frame_err e = frame_parse(f, n, &in);
  if (e != FRAME_OK) return 1;
  if (in.length > (1u << 20)) return 1; /* the caller's max_size */
  out = malloc(in.length + 1);
  e = frame_decode(c, &in, f, d, out);
  free(out);
  return e != FRAME_OK;
}

/* Recomputes the header check after a test edited the header. */
static void reseal(unsigned char *f) {
  uint64_t h = XXH3_64bits(f, 32);
  f[32] = (unsigned char)h; f[33] = (unsigned char)(h >> 8);
  f[34] = (unsigned char)(h >> 16); f[35] = (unsigned char)(h >> 24);
}

int main(void) {
  frame_ctx *c = frame_ctx_new();
  static const size_t sizes[] = {0, 1, 5, 31, 32, 33, 100, 1000, 4096, 65536, 300000};
  unsigned char *src = malloc(300000), frame[512];
  size_t i, k, len, bit;
  int codec, random, all = 1;
  frame_opts o;
  frame_info in;
  CHECK(c != NULL);

  /* round trips: every codec, sizes, compressible and random data, auto on/off */
  for (codec = 0; codec < FRAME_NCODECS; codec++)
    for (random = 0; random < 2; random++)
      for (i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        int a;
        fill(src, sizes[i], random);
        for (a = 0; a < 2; a++) {
          memset(&o, 0, sizeof o);
          o.codec = (frame_codec)codec;
          o.level = codec == FRAME_ZLIB ? 6 : codec == FRAME_ZSTD ? 3 : 1;
          o.auto_raw = a;
          o.sum = (frame_sum)(i % 2);
          len = roundtrip(c, &o, src, sizes[i]);
          if (!len) all = 0;
          if (a && len > sizes[i] + FRAME_HEADER_SIZE) all = 0;
        }
      }
  CHECK(all);

  /* a small frame: every single-bit flip and every truncation is refused */
  fill(src, 200, 0);
  for (codec = 0; codec < FRAME_NCODECS; codec++) {
    int flips_ok = 1, cuts_ok = 1;
    memset(&o, 0, sizeof o);
    o.codec = (frame_codec)codec;
    o.level = codec == FRAME_ZLIB ? 6 : codec == FRAME_ZSTD ? 3 : 1;
    CHECK(frame_pack(c, &o, src, 200, frame, sizeof frame, &len) == FRAME_OK);
    CHECK(!rejected(c, frame, len, NULL));
    for (bit = 0; bit < len * 8; bit++) {
      frame[bit / 8] ^= (unsigned char)(1u << (bit % 8));
      if (!rejected(c, frame, len, NULL)) flips_ok = 0;
      frame[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    }
    for (k = 0; k < len; k++) {
      frame_err e = frame_parse(frame, k, &in);
      if (e == FRAME_OK) cuts_ok = 0;
      if (k >= 4 && e != FRAME_ETRUNCATED) cuts_ok = 0;
    }
    CHECK(flips_ok);
    CHECK(cuts_ok);
  }

  /* a valid header claiming 4 GB: parsed, and refused by size before any
   * allocation (the caller compares info.length with max_size) */
  memset(&o, 0, sizeof o);
  o.codec = FRAME_RAW;
  CHECK(frame_pack(c, &o, "abc", 3, frame, sizeof frame, &len) == FRAME_OK);
  frame[12] = frame[13] = frame[14] = frame[15] = 0xff;
  frame[16] = frame[17] = frame[18] = frame[19] = 0xff;
  reseal(frame);
  CHECK(frame_parse(frame, len, &in) == FRAME_ETRUNCATED); /* payload absent */
  CHECK(frame_parse(frame, FRAME_HEADER_SIZE, &in) == FRAME_ETRUNCATED);
  /* the same claim with a consistent payload length of 0 (lz4) */
  frame[5] = FRAME_LZ4;
  frame[16] = frame[17] = frame[18] = frame[19] = 0;
  {
    uint64_t e = XXH3_64bits("", 0);
    frame[28] = (unsigned char)e; frame[29] = (unsigned char)(e >> 8);
    frame[30] = (unsigned char)(e >> 16); frame[31] = (unsigned char)(e >> 24);
  }
  reseal(frame);
  CHECK(frame_parse(frame, FRAME_HEADER_SIZE, &in) == FRAME_OK && in.length == 0xffffffffu);
  /* unknown codec behind a valid header check */
  CHECK(frame_pack(c, &o, "abc", 3, frame, sizeof frame, &len) == FRAME_OK);
  frame[5] = 9;
  reseal(frame);
  CHECK(frame_parse(frame, len, &in) == FRAME_ECODEC);
  CHECK(strcmp(frame_errcode(FRAME_ECODEC), "UnknownCodec") == 0);

  /* raw frames are verified in place (frame_check_raw), with both
   * checksums; a forged payload behind consistent header and payload checks
   * is caught by the checksum of the original alone */
  for (k = 0; k < 2; k++) {
    unsigned char out[64];
    uint64_t h;
    memset(&o, 0, sizeof o);
    o.codec = FRAME_RAW;
    o.sum = (frame_sum)k;
    CHECK(frame_pack(c, &o, "forty-two bytes of a perfectly raw value..", 42, frame,
                     sizeof frame, &len) == FRAME_OK);
    CHECK(frame_parse(frame, len, &in) == FRAME_OK && frame_check_raw(&in, frame) == FRAME_OK);
    CHECK(frame_decode(c, &in, frame, NULL, out) == FRAME_OK && memcmp(out, frame + FRAME_HEADER_SIZE, 42) == 0);
    frame[FRAME_HEADER_SIZE + 7] ^= 4;
    h = XXH3_64bits(frame + FRAME_HEADER_SIZE, 42);
    frame[28] = (unsigned char)h; frame[29] = (unsigned char)(h >> 8);
    frame[30] = (unsigned char)(h >> 16); frame[31] = (unsigned char)(h >> 24);
    reseal(frame);
    CHECK(frame_parse(frame, len, &in) == FRAME_OK);
    CHECK(frame_check_raw(&in, frame) == FRAME_ECORRUPT);
    CHECK(frame_decode(c, &in, frame, NULL, out) == FRAME_ECORRUPT);
  }
  o.codec = FRAME_LZ4;
  o.level = 1;
  fill(src, 300, 0);
  CHECK(frame_pack(c, &o, src, 300, frame, sizeof frame, &len) == FRAME_OK);
  CHECK(frame_parse(frame, len, &in) == FRAME_OK && frame_check_raw(&in, frame) == FRAME_ECODEC);

  /* dictionaries: id carried, required to decode, wrong one refused */
  {
    static char samples[2000 * 64];
    size_t ssz[2000], off = 0, dl;
    unsigned char dbuf[8192];
    const char *why = NULL;
    frame_dict *d, *other;
    for (i = 0; i < 2000; i++) {
      int w = snprintf(samples + off, 64, "{\"id\":%u,\"user\":\"u%u\",\"ok\":true}",
                       (unsigned)i, next() % 1000);
      ssz[i] = (size_t)w;
      off += (size_t)w;
    }
    dl = frame_dict_train(dbuf, sizeof dbuf, samples, ssz, 2000, &why);
    CHECK(dl > 0);
    d = frame_dict_new(dbuf, dl);
    other = frame_dict_new("some raw content dictionary", 27);
    CHECK(d && other && frame_dict_id(d) != 0 && frame_dict_id(other) != 0);
    memset(&o, 0, sizeof o);
    o.codec = FRAME_ZSTD;
    o.level = 3;
    o.dict = d;
    CHECK(roundtrip(c, &o, (const unsigned char *)samples, ssz[0]) > 0);
    CHECK(frame_pack(c, &o, samples, ssz[0], frame, sizeof frame, &len) == FRAME_OK);
    CHECK(frame_parse(frame, len, &in) == FRAME_OK && in.dict_id == frame_dict_id(d));
    CHECK(frame_decode(c, &in, frame, NULL, src) == FRAME_EDICT);
    CHECK(frame_decode(c, &in, frame, other, src) == FRAME_EDICT);
    o.level = 19; /* a second prepared level */
    CHECK(roundtrip(c, &o, (const unsigned char *)samples + ssz[0], ssz[1]) > 0);
    frame_dict_free(d);
    frame_dict_free(other);
  }

  frame_ctx_free(c);
  free(src);
  return check_done();
}
