/* getrow.c -- see getrow.h. Protobuf wire format: a key is a varint
 * (field number << 3 | wire type); type 0 a varint, 2 a varint length
 * then bytes. */
#include <string.h>

#include "getrow.h"

/* a varint at *p (before end) into *v: 1, or 0 when truncated or over 10 bytes */
static int varint(const unsigned char **p, const unsigned char *end, uint64_t *v) {
  uint64_t x = 0;
  unsigned shift = 0;
  while (*p < end && shift < 70) {
    unsigned char b = *(*p)++;
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) { *v = x; return 1; }
    shift += 7;
  }
  return 0;
}

int gr_parse(const void *body, size_t n, gr_request *r, const char **why) {
  const unsigned char *p = (const unsigned char *)body, *end = p + n;
  int has_table = 0, has_key = 0;
  memset(r, 0, sizeof *r);
  while (p < end) {
    uint64_t k, v;
    if (!varint(&p, end, &k)) { *why = "malformed"; return 0; }
    switch (k) {
    case (1 << 3) | 2: case (2 << 3) | 2: case (3 << 3) | 2: {
      gr_bytes b;
      if (!varint(&p, end, &v) || v > (uint64_t)(end - p)) { *why = "malformed"; return 0; }
      b.s = (const char *)p; b.n = (size_t)v;
      p += v;
      if (k == ((1 << 3) | 2)) { r->table = b; has_table = 1; }
      else if (k == ((2 << 3) | 2)) { r->key = b; has_key = 1; }
      else if (r->ncolumns == GR_MAX_COLUMNS) { *why = "too many columns"; return 0; }
      else r->columns[r->ncolumns++] = b;
      break;
    }
    case (5 << 3) | 0: /* int32: the low 32 bits, signed */
      if (!varint(&p, end, &v)) { *why = "malformed"; return 0; }
      r->max_versions = (int32_t)(uint32_t)v;
      if (r->max_versions < 1) { *why = "max_versions"; return 0; }
      break;
    case (6 << 3) | 0: /* cache_blocks: a hint the store has no use for */
      if (!varint(&p, end, &v)) { *why = "malformed"; return 0; }
      break;
    default: *why = "a field not taken"; return 0;
    }
  }
  if (!has_table || !has_key) { *why = "a required field missing"; return 0; }
  return 1;
}

static void put_varint(pb_writer *w, uint64_t v) {
  unsigned char b[10];
  size_t i = 0;
  do {
    b[i] = (unsigned char)(v & 0x7f);
    v >>= 7;
    if (v) b[i] |= 0x80;
    i++;
  } while (v);
  pb_write_raw(w, b, i);
}

static size_t varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) { v >>= 7; n++; }
  return n;
}

void gr_answer(pb_writer *w, int64_t read_cu, const void *row, size_t rowlen) {
  /* int32 fields: a negative value is ten bytes, as protobuf writes it */
  uint64_t cu = (uint64_t)(int64_t)(int32_t)read_cu;
  size_t unit = 1 + varint_len(cu) + 2; /* read, then write = 0 */
  size_t consumed = 1 + varint_len(unit) + unit;
  put_varint(w, (1 << 3) | 2); put_varint(w, consumed);
  put_varint(w, (1 << 3) | 2); put_varint(w, unit);
  put_varint(w, (1 << 3) | 0); put_varint(w, cu);
  put_varint(w, (2 << 3) | 0); put_varint(w, 0);
  put_varint(w, (2 << 3) | 2); put_varint(w, rowlen);
  pb_write_raw(w, row, rowlen);
}
