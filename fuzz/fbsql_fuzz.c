/* fbsql_fuzz.c -- the SQL result-set reader on arbitrary bytes never reads
 * out of the buffer (ASan) and answers every cell or an error; and a result
 * set built from the input (columns of each type, NULLs, strings) written
 * by fbsql_write reads back exactly. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fbsql.h"

static void read_all(const uint8_t *data, size_t size) {
  fbsql_reader r;
  const char *why;
  size_t i, row;
  if (fbsql_open(&r, data, size, &why) != 0) return;
  for (i = 0; i < r.ncols && i < 64; i++) {
    fbsql_column c;
    if (fbsql_column_at(&r, i, &c, &why) != 0) continue;
    for (row = 0; (int64_t)row < r.nrows && row < 256; row++) {
      int64_t l;
      double d;
      int b;
      const char *s;
      size_t n;
      int rc = fbsql_cell(&r, &c, row, &l, &d, &b, &s, &n, &why);
      if (rc == 0 && (c.type == FBSQL_STRING || c.type == FBSQL_BINARY || c.type == FBSQL_STRING_RLE)) {
        if ((const uint8_t *)s < data || (const uint8_t *)s + n > data + size) abort();
      }
    }
  }
}

static void round_trip(const uint8_t *data, size_t size) {
  enum { MAXC = 6, MAXR = 16 };
  fbsql_col cols[MAXC];
  unsigned char nulls[MAXC][MAXR], bools[MAXC][MAXR];
  int64_t longs[MAXC][MAXR];
  double doubles[MAXC][MAXR];
  const char *strs[MAXC][MAXR];
  size_t lens[MAXC][MAXR];
  size_t nc, nr, i, r, p = 2;
  unsigned char *out;
  size_t outlen;
  fbsql_reader rd;
  const char *why;
  if (size < 2) return;
  nc = data[0] % (MAXC + 1), nr = data[1] % (MAXR + 1);
  memset(cols, 0, sizeof cols);
  for (i = 0; i < nc; i++) {
    fbsql_col *c = &cols[i];
    c->name = (const char *)data;
    c->name_len = i < size ? i : 0;
    c->type = 1 + (int)((p < size ? data[p++] : 0) % 5);
    c->nulls = nulls[i], c->longs = longs[i], c->bools = bools[i], c->doubles = doubles[i];
    c->strs = strs[i], c->lens = lens[i];
    for (r = 0; r < nr; r++) {
      uint8_t b = p < size ? data[p++] : 0;
      nulls[i][r] = (b & 1) != 0;
      bools[i][r] = (b >> 1) & 1;
      longs[i][r] = (int64_t)b * 0x0101010101010101LL - 1000;
      doubles[i][r] = (double)b / 7.0;
      strs[i][r] = (const char *)data + (b % size);
      lens[i][r] = (size_t)(b % 5) <= size - (b % size) ? (size_t)(b % 5) : 0;
    }
  }
  if (fbsql_write(cols, nc, nr, &out, &outlen) != 0) abort();
  if (fbsql_open(&rd, out, outlen, &why) != 0 || rd.ncols != nc || rd.nrows != (int64_t)nr) abort();
  for (i = 0; i < nc; i++) {
    fbsql_column c;
    if (fbsql_column_at(&rd, i, &c, &why) != 0 || c.type != cols[i].type || c.name_len != cols[i].name_len) abort();
    if (c.name_len && memcmp(c.name, cols[i].name, c.name_len) != 0) abort();
    for (r = 0; r < nr; r++) {
      int64_t l = 0;
      double d = 0;
      int b = 0;
      const char *s = NULL;
      size_t n = 0;
      int rc = fbsql_cell(&rd, &c, r, &l, &d, &b, &s, &n, &why);
      if (rc != (nulls[i][r] ? 1 : 0)) abort();
      if (rc == 1) continue;
      switch (c.type) {
      case FBSQL_LONG: if (l != longs[i][r]) abort(); break;
      case FBSQL_DOUBLE: if (d != doubles[i][r]) abort(); break;
      case FBSQL_BOOLEAN: if (b != bools[i][r]) abort(); break;
      default: if (n != lens[i][r] || (n && memcmp(s, strs[i][r], n) != 0)) abort();
      }
    }
  }
  free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  read_all(data, size);
  round_trip(data, size);
  return 0;
}
