/* row.c -- the store's encoding of attribute columns (see row.h). */
#include <string.h>

#include "bytes.h"
#include "row.h"
#include "varint.h"

size_t row_cell_size(const row_cell *c) {
  size_t n = varint_size(c->name_len) + c->name_len + 1 + (c->has_ts ? 8 : 0);
  switch (c->type) {
  case ROW_INTEGER: case ROW_DOUBLE: return n + 8;
  case ROW_STRING: case ROW_BINARY: return n + varint_size(c->s_len) + c->s_len;
  default: return n;
  }
}

size_t row_put_cell(unsigned char *out, const row_cell *c) {
  size_t n = varint_put(out, c->name_len);
  uint64_t bits;
  memcpy(out + n, c->name, c->name_len);
  n += c->name_len;
  out[n++] = (unsigned char)(c->type | (c->has_ts ? ROW_TS : 0));
  if (c->has_ts) {
    put_be64(out + n, (uint64_t)c->ts);
    n += 8;
  }
  switch (c->type) {
  case ROW_INTEGER:
    put_be64(out + n, (uint64_t)c->i);
    return n + 8;
  case ROW_DOUBLE:
    memcpy(&bits, &c->d, 8);
    put_be64(out + n, bits);
    return n + 8;
  case ROW_STRING: case ROW_BINARY:
    n += varint_put(out + n, c->s_len);
    if (c->s_len) memcpy(out + n, c->s, c->s_len);
    return n + c->s_len;
  default:
    return n;
  }
}

int row_next(const unsigned char *buf, size_t len, size_t *pos, row_cell *c) {
  size_t p = *pos;
  uint64_t nl, sl, bits;
  if (p >= len) return 0;
  if (varint_get(buf, len, &p, &nl) < 0 || nl > len - p) return -1;
  c->name = (const char *)buf + p;
  c->name_len = (size_t)nl;
  p += (size_t)nl;
  if (p >= len) return -1;
  c->type = buf[p++];
  c->has_ts = (c->type & ROW_TS) != 0;
  c->type &= ~ROW_TS;
  c->ts = 0;
  if (c->has_ts) {
    if (len - p < 8) return -1;
    c->ts = (int64_t)get_be64(buf + p);
    p += 8;
  }
  switch (c->type) {
  case ROW_INTEGER: case ROW_DOUBLE:
    if (len - p < 8) return -1;
    bits = get_be64(buf + p);
    if (c->type == ROW_INTEGER) c->i = (int64_t)bits;
    else memcpy(&c->d, &bits, 8);
    p += 8;
    break;
  case ROW_STRING: case ROW_BINARY:
    if (varint_get(buf, len, &p, &sl) < 0 || sl > len - p) return -1;
    c->s = (const char *)buf + p;
    c->s_len = (size_t)sl;
    p += (size_t)sl;
    break;
  case ROW_TRUE: case ROW_FALSE:
    break;
  default:
    return -1;
  }
  *pos = p;
  return 1;
}

int row_name_cmp(const char *a, size_t al, const char *b, size_t bl) {
  int r = memcmp(a, b, al < bl ? al : bl);
  if (r) return r;
  return al < bl ? -1 : (al > bl ? 1 : 0);
}

/* insertion sort: rows hold few cells, and it is stable */
void row_sort(row_cell *cells, size_t n) {
  size_t i, j;
  for (i = 1; i < n; i++) {
    row_cell c = cells[i];
    for (j = i; j > 0; j--) {
      const row_cell *p = &cells[j - 1];
      int r = row_name_cmp(p->name, p->name_len, c.name, c.name_len);
      if (r < 0 || (r == 0 && p->ts >= c.ts)) break;
      cells[j] = cells[j - 1];
    }
    cells[j] = c;
  }
}

int row_utf8_valid(const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    size_t k;
    uint32_t cp, min;
    if (c < 0x80) { i++; continue; }
    if (c >= 0xc2 && c <= 0xdf) { k = 1; cp = c & 0x1f; min = 0x80; }
    else if (c >= 0xe0 && c <= 0xef) { k = 2; cp = c & 0x0f; min = 0x800; }
    else if (c >= 0xf0 && c <= 0xf4) { k = 3; cp = c & 0x07; min = 0x10000; }
    else return 0;
    if (n - i <= k) return 0;
    for (size_t j = 1; j <= k; j++) {
      unsigned d = s[i + j];
      if ((d & 0xc0) != 0x80) return 0;
      cp = (cp << 6) | (d & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    i += k + 1;
  }
  return 1;
}
