/* row_test.c -- the row codec: random cells (with and without
 * timestamps) round-trip; truncations, overlong varints and unknown types
 * are rejected, never over-read; row_sort orders by name then newest
 * first; row_utf8_valid agrees with a reference decoder. */
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
      c->has_ts = (int)rnd(2);
      c->ts = c->has_ts ? (int64_t)rnd(1u << 31) * 1000 - 5 : 0;
      CHECK(row_put_cell(buf + len, c) == row_cell_size(c));
      len += row_cell_size(c);
    }
    pos = 0;
    ok = 1;
    for (i = 0; i < n; i++) {
      if (row_next(buf, len, &pos, &out) != 1) { ok = 0; break; }
      if (out.has_ts != in[i].has_ts || out.ts != in[i].ts) ok = 0;
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
  /* row_sort: names ascending, timestamps descending within a name, a
   * permutation of the input */
  for (trial = 0; trial < 500; trial++) {
    row_cell cs[20];
    long sum = 0, sum2 = 0;
    n = (int)rnd(20);
    for (i = 0; i < n; i++) {
      memset(&cs[i], 0, sizeof cs[i]);
      cs[i].name = text + rnd(3);
      cs[i].name_len = rnd(3);
      cs[i].ts = (int64_t)rnd(5);
      sum += (long)(cs[i].name - text) * 100 + (long)cs[i].name_len * 10 + (long)cs[i].ts;
    }
    row_sort(cs, (size_t)n);
    ok = 1;
    for (i = 0; i < n; i++) {
      sum2 += (long)(cs[i].name - text) * 100 + (long)cs[i].name_len * 10 + (long)cs[i].ts;
      if (i > 0) {
        int r = row_name_cmp(cs[i - 1].name, cs[i - 1].name_len, cs[i].name, cs[i].name_len);
        if (r > 0 || (r == 0 && cs[i - 1].ts < cs[i].ts)) ok = 0;
      }
    }
    CHECK(ok && sum == sum2);
  }
  /* UTF-8: every 1..4 byte sequence over an interesting byte alphabet,
   * against a reference that decodes code points the long way */
  {
    const unsigned char al[] = {0x00, 0x41, 0x7f, 0x80, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xed,
                                0xef, 0xf0, 0xf4, 0xf5, 0xff, 0xa0, 0x9f, 0x8f, 0x90};
    const int na = (int)sizeof al;
    int a, b, c2, d, len2, bad = 0;
    for (len2 = 1; len2 <= 4; len2++)
      for (a = 0; a < na; a++) for (b = 0; b < na; b++) for (c2 = 0; c2 < na; c2++) for (d = 0; d < na; d++) {
        unsigned char s[4] = {al[a], al[b], al[c2], al[d]};
        /* reference: greedy decode, each sequence checked for its exact shape */
        int refok = 1, k = 0;
        while (k < len2 && refok) {
          unsigned x = s[k], need, cp, min, j;
          if (x < 0x80) { k++; continue; }
          if ((x & 0xe0) == 0xc0) { need = 1; cp = x & 0x1f; min = 0x80; }
          else if ((x & 0xf0) == 0xe0) { need = 2; cp = x & 0x0f; min = 0x800; }
          else if ((x & 0xf8) == 0xf0) { need = 3; cp = x & 0x07; min = 0x10000; }
          else { refok = 0; break; }
          if (k + (int)need >= len2) { refok = 0; break; }
          for (j = 1; j <= need; j++) {
            if ((s[k + (int)j] & 0xc0) != 0x80) refok = 0;
            cp = (cp << 6) | (s[k + (int)j] & 0x3f);
          }
          if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) refok = 0;
          k += (int)need + 1;
        }
        if (row_utf8_valid((const char *)s, (size_t)len2) != refok) bad++;
        if (len2 < 4 && d > 0) break;
        if (len2 < 3 && c2 > 0) break;
      }
    CHECK(bad == 0);
    CHECK(row_utf8_valid("h\xc3\xa9", 3) == 1 && row_utf8_valid("\xed\xa0\x80", 3) == 0);
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
