/* getrow.c -- see getrow.h. Protobuf wire format: a key is a varint
 * (field number << 3 | wire type); type 0 a varint, 2 a varint length
 * then bytes. */
#include <string.h>

#include "getrow.h"
#include "varint.h"

int gr_parse(const void *body, size_t n, gr_request *r, const char **why) {
  const unsigned char *b = (const unsigned char *)body;
  size_t p = 0;
  int has_table = 0, has_key = 0;
  memset(r, 0, sizeof *r);
  while (p < n) {
    uint64_t k, v;
    if (varint_get(b, n, &p, &k) < 0) { *why = "malformed"; return 0; }
    switch (k) {
    case (1 << 3) | 2: case (2 << 3) | 2: case (3 << 3) | 2: {
      gr_bytes f;
      if (varint_get(b, n, &p, &v) < 0 || v > (uint64_t)(n - p)) { *why = "malformed"; return 0; }
      f.s = (const char *)b + p; f.n = (size_t)v;
      p += (size_t)v;
      if (k == ((1 << 3) | 2)) { r->table = f; has_table = 1; }
      else if (k == ((2 << 3) | 2)) { r->key = f; has_key = 1; }
      else if (r->ncolumns == GR_MAX_COLUMNS) { *why = "too many columns"; return 0; }
      else r->columns[r->ncolumns++] = f;
      break;
    }
    case (5 << 3) | 0: /* int32: the low 32 bits, signed */
      if (varint_get(b, n, &p, &v) < 0) { *why = "malformed"; return 0; }
      r->max_versions = (int32_t)(uint32_t)v;
      if (r->max_versions < 1) { *why = "max_versions"; return 0; }
      break;
    case (6 << 3) | 0: /* cache_blocks: a hint the store has no use for */
      if (varint_get(b, n, &p, &v) < 0) { *why = "malformed"; return 0; }
      break;
    default: *why = "a field not taken"; return 0;
    }
  }
  if (!has_table || !has_key) { *why = "a required field missing"; return 0; }
  return 1;
}

static void put_varint(pb_writer *w, uint64_t v) {
  unsigned char b[VARINT_MAX];
  pb_write_raw(w, b, varint_put(b, v));
}

void gr_answer(pb_writer *w, int64_t read_cu, const void *row, size_t rowlen) {
  /* int32 fields: a negative value is ten bytes, as protobuf writes it */
  uint64_t cu = (uint64_t)(int64_t)(int32_t)read_cu;
  size_t unit = 1 + varint_size(cu) + 2; /* read, then write = 0 */
  size_t consumed = 1 + varint_size(unit) + unit;
  put_varint(w, (1 << 3) | 2); put_varint(w, consumed);
  put_varint(w, (1 << 3) | 2); put_varint(w, unit);
  put_varint(w, (1 << 3) | 0); put_varint(w, cu);
  put_varint(w, (2 << 3) | 0); put_varint(w, 0);
  put_varint(w, (2 << 3) | 2); put_varint(w, rowlen);
  pb_write_raw(w, row, rowlen);
}
