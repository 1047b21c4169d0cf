/* row_test.c -- the row codec: random cells round-trip; truncations,
 * overlong varints and unknown types are rejected, never over-read. */
#include <string.h>

#include "check.h"
#include "row.h"

static unsigned long rng = 0x2545F4914F6CDD1DUL;
static unsigned rnd(unsigned n) {
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return (unsigned)(rng % n);
}

int main(void) {
  static unsigned char buf[1 << 16];
  static char text[400];
  row_cell in[20], out;
  int trial, i, n, ok;
  size_t len, pos;
  const int types[] = {ROW_STRING, ROW_BINARY, ROW_INTEGER, ROW_DOUBLE, ROW_TRUE, ROW_FALSE};
  for (i = 0; i < (int)sizeof text; i++) text[i] = (char)(i * 7);
  for (trial = 0; trial < 2000; trial++) {
    n = (int)rnd(20);
    len = 0;
    for (i = 0; i < n; i++) {
      row_cell *c = &in[i];
      memset(c, 0, sizeof *c);
      c->name = text + rnd(100);
      c->name_len = rnd(200);
      c->type = types[rnd(6)];
      c->i = (int64_t)((uint64_t)rnd(1u << 31) << 33 ^ rnd(1u << 31)) * (rnd(2) ? -1 : 1);
      c->d = (double)c->i / 3.0;
      c->s = text + rnd(50);
      c->s_len = rnd(300);
      CHECK(row_put_cell(buf + len, c) == row_cell_size(c));
      len += row_cell_size(c);
    }
    pos = 0;
    ok = 1;
    for (i = 0; i < n; i++) {
      if (row_next(buf, len, &pos, &out) != 1) { ok = 0; break; }
      if (out.type != in[i].type || out.name_len != in[i].name_len ||
          memcmp(out.name, in[i].name, out.name_len) != 0) ok = 0;
      if (out.type == ROW_INTEGER && out.i != in[i].i) ok = 0;
      if (out.type == ROW_DOUBLE && memcmp(&out.d, &in[i].d, 8) != 0) ok = 0;
      if ((out.type == ROW_STRING || out.type == ROW_BINARY) &&
          (out.s_len != in[i].s_len || memcmp(out.s, in[i].s, out.s_len) != 0)) ok = 0;
    }
    CHECK(ok && row_next(buf, len, &pos, &out) == 0 && pos == len);
    /* every strict truncation that cuts a cell is corrupt, not a short read */
    if (n > 0) {
      size_t cut = rnd((unsigned)len);
      int rc;
      pos = 0;
      while ((rc = row_next(buf, cut, &pos, &out)) == 1) {}
      CHECK(rc == -1 || pos == cut);
    }
  }
  /* hand-made corruptions */
  {
    size_t p = 0;
    const unsigned char overlong[] = {0x81, 0x00, 'a', 'i', 0, 0, 0, 0, 0, 0, 0, 1};
    const unsigned char badtype[] = {1, 'a', 'z'};
    const unsigned char hugelen[] = {1, 'a', 's', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    const unsigned char toolong[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    const unsigned char ok1[] = {1, 'a', 't'};
    CHECK(row_next(overlong, sizeof overlong, &p, &out) == -1);
    p = 0; CHECK(row_next(badtype, sizeof badtype, &p, &out) == -1);
    p = 0; CHECK(row_next(hugelen, sizeof hugelen, &p, &out) == -1);
    p = 0; CHECK(row_next(toolong, sizeof toolong, &p, &out) == -1);
    p = 0; CHECK(row_next(ok1, sizeof ok1, &p, &out) == 1 && out.type == ROW_TRUE && p == 3);
    p = 0; CHECK(row_next(ok1, 0, &p, &out) == 0);
  }
  return check_done();
}
