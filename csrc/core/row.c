/* row.c -- the store's encoding of attribute columns (see row.h). */
#include <string.h>

#include "bytes.h"
#include "row.h"

static size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) { v >>= 7; n++; }
  return n;
}

static size_t put_varint(unsigned char *out, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) { out[n++] = (unsigned char)(v | 0x80); v >>= 7; }
  out[n++] = (unsigned char)v;
  return n;
}

static int get_varint(const unsigned char *buf, size_t len, size_t *pos, uint64_t *v) {
  uint64_t r = 0;
  unsigned shift = 0;
  size_t p = *pos;
  for (;;) {
    unsigned char b;
    if (p >= len || shift > 63) return -1;
    b = buf[p++];
    if (shift == 63 && (b & 0x7e)) return -1; /* more than 64 bits */
    r |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      if (b == 0 && shift > 0) return -1; /* overlong: one encoding per value */
      break;
    }
    shift += 7;
  }
  *pos = p;
  *v = r;
  return 0;
}

size_t row_cell_size(const row_cell *c) {
  size_t n = varint_size(c->name_len) + c->name_len + 1;
  switch (c->type) {
  case ROW_INTEGER: case ROW_DOUBLE: return n + 8;
  case ROW_STRING: case ROW_BINARY: return n + varint_size(c->s_len) + c->s_len;
  default: return n;
  }
}

size_t row_put_cell(unsigned char *out, const row_cell *c) {
  size_t n = put_varint(out, c->name_len);
  uint64_t bits;
  memcpy(out + n, c->name, c->name_len);
  n += c->name_len;
  out[n++] = (unsigned char)c->type;
  switch (c->type) {
  case ROW_INTEGER:
    put_be64(out + n, (uint64_t)c->i);
    return n + 8;
  case ROW_DOUBLE:
    memcpy(&bits, &c->d, 8);
    put_be64(out + n, bits);
    return n + 8;
  case ROW_STRING: case ROW_BINARY:
    n += put_varint(out + n, c->s_len);
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
  if (get_varint(buf, len, &p, &nl) < 0 || nl > len - p) return -1;
  c->name = (const char *)buf + p;
  c->name_len = (size_t)nl;
  p += (size_t)nl;
  if (p >= len) return -1;
  c->type = buf[p++];
  switch (c->type) {
  case ROW_INTEGER: case ROW_DOUBLE:
    if (len - p < 8) return -1;
    bits = get_be64(buf + p);
    if (c->type == ROW_INTEGER) c->i = (int64_t)bits;
    else memcpy(&c->d, &bits, 8);
    p += 8;
    break;
  case ROW_STRING: case ROW_BINARY:
    if (get_varint(buf, len, &p, &sl) < 0 || sl > len - p) return -1;
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
