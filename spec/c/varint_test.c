/* varint_test.c -- LEB128 varints in C: protobuf's vectors, round trips
 * over every length, and what is refused (truncated, overlong, over 64
 * bits). */
#include <string.h>

#include "check.h"
#include "varint.h"

static void vectors(void) {
  static const struct { uint64_t v; size_t n; unsigned char b[10]; } cases[] = {
    {0, 1, {0x00}}, {1, 1, {0x01}}, {127, 1, {0x7f}}, {128, 2, {0x80, 0x01}}, {300, 2, {0xac, 0x02}},
    {16383, 2, {0xff, 0x7f}}, {16384, 3, {0x80, 0x80, 0x01}},
    /* -1 as protobuf writes an int32 / int64: ten bytes */
    {UINT64_MAX, 10, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
  };
  size_t i;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    unsigned char out[VARINT_MAX];
    size_t pos = 0;
    uint64_t v = 0;
    CHECK(varint_size(cases[i].v) == cases[i].n);
    CHECK(varint_put(out, cases[i].v) == cases[i].n && memcmp(out, cases[i].b, cases[i].n) == 0);
    CHECK(varint_get(cases[i].b, cases[i].n, &pos, &v) == 0 && pos == cases[i].n && v == cases[i].v);
  }
}

static void round_trip(void) {
  uint64_t x = 0x9e3779b97f4a7c15u;
  int i, ok = 1;
  for (i = 0; i < 100000; i++) {
    unsigned char out[VARINT_MAX + 2] = {0};
    uint64_t v = x >> (x % 64), got = 0;
    size_t n = varint_put(out + 1, v), pos = 1;
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    if (n != varint_size(v) || varint_get(out, n + 2, &pos, &got) != 0 || got != v || pos != n + 1) ok = 0;
  }
  CHECK(ok);
}

static void refused(void) {
  static const unsigned char trunc[] = {0x80, 0x80}, overlong[] = {0x80, 0x00}, overlong2[] = {0xff, 0x80, 0x00},
    big[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02},
    eleven[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x81, 0x00};
  size_t pos = 0;
  uint64_t v = 7;
  CHECK(varint_get(trunc, 0, &pos, &v) == -1);
  CHECK(varint_get(trunc, sizeof trunc, &pos, &v) == -1);
  CHECK(varint_get(overlong, sizeof overlong, &pos, &v) == -1);
  CHECK(varint_get(overlong2, sizeof overlong2, &pos, &v) == -1);
  CHECK(varint_get(big, sizeof big, &pos, &v) == -1);
  CHECK(varint_get(eleven, sizeof eleven, &pos, &v) == -1);
  CHECK(pos == 0 && v == 7); /* left as they were */
}

int main(void) {
  vectors();
  round_trip();
  refused();
  return check_done();
}
