/* plainbuffer_test.c -- the PlainBuffer codec in plain C: CRC-8 check
 * value, the SDK's bytes for a put row, round trips of every value type,
 * checksum and bounds failures, trailing zero bytes. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "plainbuffer.h"

static size_t unhex(const char *h, unsigned char *out) {
  size_t n = 0;
  while (h[0] && h[1]) {
    unsigned v;
    sscanf(h, "%2x", &v);
    out[n++] = (unsigned char)v;
    h += 2;
  }
  return n;
}

static pb_cell cell(const char *name, pb_value v) {
  pb_cell c;
  memset(&c, 0, sizeof c);
  c.name = name; c.name_len = strlen(name);
  c.v = v;
  return c;
}

static pb_value str(const char *s, int vt) {
  pb_value v;
  memset(&v, 0, sizeof v);
  v.vt = vt; v.s = s; v.n = strlen(s);
  return v;
}

int main(void) {
  unsigned char want[512], *bad;
  size_t n, i;
  pb_writer w;
  pb_reader r;
  pb_row row;
  pb_value vi, vd, vb;
  pb_cell c;

  CHECK(pb_crc8(0, "123456789", 9) == 0xF4); /* CRC-8/SMBUS check value */
  { /* the sliced CRC equals a bitwise reference at every length, offset and start value */
    unsigned char buf[64];
    unsigned seed = 12345, start, len, off;
    for (i = 0; i < sizeof buf; i++) { seed = seed * 1103515245u + 12345u; buf[i] = (unsigned char)(seed >> 16); }
    for (start = 0; start < 256; start += 17)
      for (off = 0; off < 8; off++)
        for (len = 0; len + off <= sizeof buf; len++) {
          unsigned char ref = (unsigned char)start;
          unsigned b, k;
          for (b = 0; b < len; b++) {
            ref ^= buf[off + b];
            for (k = 0; k < 8; k++) ref = (unsigned char)(ref & 0x80 ? (ref << 1) ^ 0x07 : ref << 1);
          }
          CHECK(pb_crc8((unsigned char)start, buf + off, len) == ref);
        }
  }

  /* put [pk1='a'] s='v'@ts=1700000000000, the Node SDK's bytes */
  n = unhex("7500000001030403000000706b3105060000000301000000610a1902030401000000730506000000030100000076070068e5cf8b0100000a5a0916", want);
  pb_writer_init(&w);
  pb_write_header(&w);
  pb_row_begin(&w);
  c = cell("pk1", str("a", PB_VT_STRING));
  pb_write_cell(&w, &c);
  pb_row_data(&w);
  c = cell("s", str("v", PB_VT_STRING));
  c.has_ts = 1; c.ts = 1700000000000LL;
  pb_write_cell(&w, &c);
  pb_row_end(&w, 0);
  CHECK(!w.oom && w.len == n && memcmp(w.p, want, n) == 0);

  /* every value type round trips */
  memset(&vi, 0, sizeof vi); vi.vt = PB_VT_INTEGER; vi.i = -9223372036854775807LL - 1;
  memset(&vd, 0, sizeof vd); vd.vt = PB_VT_DOUBLE; vd.d = -0.125;
  memset(&vb, 0, sizeof vb); vb.vt = PB_VT_BOOLEAN; vb.i = 1;
  pb_writer_reset(&w);
  pb_write_header(&w);
  pb_row_begin(&w);
  c = cell("k", vi); pb_write_cell(&w, &c);
  c = cell("b", str("\x00\x01", PB_VT_BLOB)); c.v.n = 2; pb_write_cell(&w, &c);
  pb_row_data(&w);
  c = cell("d", vd); pb_write_cell(&w, &c);
  c = cell("o", vb); pb_write_cell(&w, &c);
  c = cell("x", vb); c.v.vt = PB_VT_NONE; c.op = PB_OP_DELETE_ALL; pb_write_cell(&w, &c);
  pb_row_end(&w, 0);
  memset(&row, 0, sizeof row);
  CHECK(pb_reader_init(&r, w.p, w.len));
  CHECK(pb_read_row(&r, &row) == 1);
  CHECK(row.npk == 2 && row.ncells == 5);
  CHECK(row.cells[0].v.vt == PB_VT_INTEGER && row.cells[0].v.i == vi.i);
  CHECK(row.cells[1].v.vt == PB_VT_BLOB && row.cells[1].v.n == 2 && memcmp(row.cells[1].v.s, "\x00\x01", 2) == 0);
  CHECK(row.cells[2].v.vt == PB_VT_DOUBLE && row.cells[2].v.d == -0.125);
  CHECK(row.cells[3].v.vt == PB_VT_BOOLEAN && row.cells[3].v.i == 1);
  CHECK(row.cells[4].v.vt == PB_VT_NONE && row.cells[4].op == PB_OP_DELETE_ALL);
  CHECK(pb_read_row(&r, &row) == 0);

  /* trailing zeros are padding; anything else after the last row is not */
  bad = malloc(w.len + 3);
  memcpy(bad, w.p, w.len);
  memset(bad + w.len, 0, 3);
  CHECK(pb_reader_init(&r, bad, w.len + 3) && pb_read_row(&r, &row) == 1 && pb_read_row(&r, &row) == 0);
  bad[w.len + 2] = 7;
  CHECK(pb_reader_init(&r, bad, w.len + 3) && pb_read_row(&r, &row) == 1 && pb_read_row(&r, &row) == -1);

  /* every single-byte change fails, with a reason */
  for (i = 0; i < w.len; i++) {
    int rc;
    memcpy(bad, w.p, w.len);
    bad[i] ^= 0x40;
    if (!pb_reader_init(&r, bad, w.len)) { CHECK(r.err != NULL); continue; }
    while ((rc = pb_read_row(&r, &row)) == 1) {}
    CHECK(rc == -1 && r.err != NULL);
  }
  /* every truncation past the header fails */
  for (i = 5; i < w.len; i++) {
    int rc;
    CHECK(pb_reader_init(&r, w.p, i));
    while ((rc = pb_read_row(&r, &row)) == 1) {}
    CHECK(rc == -1);
  }
  /* a length past the end */
  memcpy(bad, w.p, w.len);
  bad[7] = 0xff; /* the first cell name's length */
  CHECK(pb_reader_init(&r, bad, w.len) && pb_read_row(&r, &row) == -1);
  CHECK(strstr(r.err, "past the end") != NULL);

  /* pb_scan_rows: counts rows, the length before the padding, fails as
   * pb_read_row does */
  {
    size_t rows = 9, end = 9, one = w.len;
    unsigned char *two = malloc(2 * w.len + 3);
    CHECK(pb_scan_rows(&r, "", 0, &rows, &end) && rows == 0 && end == 0);
    CHECK(pb_scan_rows(&r, w.p, 4, &rows, &end) && rows == 0 && end == 4); /* a header alone */
    memcpy(two, w.p, one);
    memcpy(two + one, w.p + 4, one - 4); /* the row again, without the header */
    memset(two + 2 * one - 4, 0, 3);
    CHECK(pb_scan_rows(&r, two, 2 * one - 4 + 3, &rows, &end) && rows == 2 && end == 2 * one - 4);
    two[2 * one - 4 + 2] = 7;
    CHECK(!pb_scan_rows(&r, two, 2 * one - 4 + 3, &rows, &end) && r.err != NULL && rows == 2);
    CHECK(!pb_scan_rows(&r, "abc", 3, &rows, &end) && r.err != NULL && r.p == r.start);
    free(two);
  }

  { /* pb_key_cmp: INTEGER as int64, STRING / BINARY by bytes then length; other pairs PB_KEY_OTHER */
    pb_cell a[3], b[3];
    pb_value i1, i2;
    pb_row ra, rb;
    pb_order o;
    memset(&i1, 0, sizeof i1); i1.vt = PB_VT_INTEGER; i1.i = INT64_MAX;
    i2 = i1; i2.i = INT64_MAX - 1;
    a[0] = cell("k", str("ab", PB_VT_STRING)); b[0] = cell("k", str("ab", PB_VT_STRING));
    a[1] = cell("n", i1); b[1] = cell("n", i2);
    CHECK(pb_key_cmp(a, 2, b, 2) == 1 && pb_key_cmp(b, 2, a, 2) == -1 && pb_key_cmp(a, 2, a, 2) == 0);
    CHECK(pb_key_cmp(a, 1, b, 2) == PB_KEY_OTHER); /* another length reached */
    CHECK(pb_key_cmp(a, 0, b, 0) == PB_KEY_OTHER);
    b[0] = cell("k", str("abc", PB_VT_STRING));
    CHECK(pb_key_cmp(a, 1, b, 2) == -1); /* decided before the lengths differ */
    b[0] = cell("k", str("a\xff", PB_VT_STRING));
    CHECK(pb_key_cmp(a, 2, b, 2) == -1); /* bytes unsigned */
    b[0] = cell("k", str("ab", PB_VT_BLOB));
    CHECK(pb_key_cmp(a, 2, b, 2) == PB_KEY_OTHER); /* STRING vs BINARY */
    b[0] = cell("j", str("ab", PB_VT_STRING));
    CHECK(pb_key_cmp(a, 2, b, 2) == PB_KEY_OTHER); /* another name */
    b[0] = cell("k", str("ab", PB_VT_STRING));
    b[1].v.vt = PB_VT_DOUBLE;
    CHECK(pb_key_cmp(a, 2, b, 2) == PB_KEY_OTHER);
    /* pb_order over a < b, then b < a */
    b[1] = cell("n", i2);
    memset(&ra, 0, sizeof ra); memset(&rb, 0, sizeof rb);
    ra.cells = a; ra.npk = ra.ncells = 2;
    rb.cells = b; rb.npk = rb.ncells = 2;
    pb_order_init(&o);
    CHECK(o.flags == (PB_ORDER_ASC | PB_ORDER_DESC));
    pb_order_add(&o, &rb);
    CHECK(o.flags == (PB_ORDER_ASC | PB_ORDER_DESC));
    pb_order_add(&o, &ra);
    CHECK(o.flags == PB_ORDER_ASC);
    pb_order_add(&o, &ra); /* equal keys: neither */
    CHECK(o.flags == 0);
    pb_order_init(&o);
    pb_order_add(&o, &ra);
    pb_order_add(&o, &rb);
    CHECK(o.flags == PB_ORDER_DESC);
  }

  free(bad);
  pb_row_free(&row);
  pb_writer_free(&w);
  return check_done();
}
