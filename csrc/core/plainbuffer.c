/* plainbuffer.c -- PlainBuffer encode/decode with CRC-8 checks (see
 * plainbuffer.h for the layout). */
#include "plainbuffer.h"

#include <stdlib.h>
#include <string.h>

#include "bytes.h"

#define TAG_ROW_PK 0x01
#define TAG_ROW_DATA 0x02
#define TAG_CELL 0x03
#define TAG_CELL_NAME 0x04
#define TAG_CELL_VALUE 0x05
#define TAG_CELL_TYPE 0x06
#define TAG_CELL_TIMESTAMP 0x07
#define TAG_DELETE_ROW_MARKER 0x08
#define TAG_ROW_CHECKSUM 0x09
#define TAG_CELL_CHECKSUM 0x0A
#define TAG_EXTENSION 0x0B
#define HEADER 0x75u

/* CRC-8, polynomial 0x07 (x^8 + x^2 + x + 1), MSB first */
static const unsigned char crc_table[256] = {
0x00, 0x07, 0x0e, 0x09, 0x1c, 0x1b, 0x12, 0x15, 0x38, 0x3f, 0x36, 0x31,
0x24, 0x23, 0x2a, 0x2d, 0x70, 0x77, 0x7e, 0x79, 0x6c, 0x6b, 0x62, 0x65,
0x48, 0x4f, 0x46, 0x41, 0x54, 0x53, 0x5a, 0x5d, 0xe0, 0xe7, 0xee, 0xe9,
0xfc, 0xfb, 0xf2, 0xf5, 0xd8, 0xdf, 0xd6, 0xd1, 0xc4, 0xc3, 0xca, 0xcd,
0x90, 0x97, 0x9e, 0x99, 0x8c, 0x8b, 0x82, 0x85, 0xa8, 0xaf, 0xa6, 0xa1,
0xb4, 0xb3, 0xba, 0xbd, 0xc7, 0xc0, 0xc9, 0xce, 0xdb, 0xdc, 0xd5, 0xd2,
0xff, 0xf8, 0xf1, 0xf6, 0xe3, 0xe4, 0xed, 0xea, 0xb7, 0xb0, 0xb9, 0xbe,
0xab, 0xac, 0xa5, 0xa2, 0x8f, 0x88, 0x81, 0x86, 0x93, 0x94, 0x9d, 0x9a,
0x27, 0x20, 0x29, 0x2e, 0x3b, 0x3c, 0x35, 0x32, 0x1f, 0x18, 0x11, 0x16,
0x03, 0x04, 0x0d, 0x0a, 0x57, 0x50, 0x59, 0x5e, 0x4b, 0x4c, 0x45, 0x42,
0x6f, 0x68, 0x61, 0x66, 0x73, 0x74, 0x7d, 0x7a, 0x89, 0x8e, 0x87, 0x80,
0x95, 0x92, 0x9b, 0x9c, 0xb1, 0xb6, 0xbf, 0xb8, 0xad, 0xaa, 0xa3, 0xa4,
0xf9, 0xfe, 0xf7, 0xf0, 0xe5, 0xe2, 0xeb, 0xec, 0xc1, 0xc6, 0xcf, 0xc8,
0xdd, 0xda, 0xd3, 0xd4, 0x69, 0x6e, 0x67, 0x60, 0x75, 0x72, 0x7b, 0x7c,
0x51, 0x56, 0x5f, 0x58, 0x4d, 0x4a, 0x43, 0x44, 0x19, 0x1e, 0x17, 0x10,
0x05, 0x02, 0x0b, 0x0c, 0x21, 0x26, 0x2f, 0x28, 0x3d, 0x3a, 0x33, 0x34,
0x4e, 0x49, 0x40, 0x47, 0x52, 0x55, 0x5c, 0x5b, 0x76, 0x71, 0x78, 0x7f,
0x6a, 0x6d, 0x64, 0x63, 0x3e, 0x39, 0x30, 0x37, 0x22, 0x25, 0x2c, 0x2b,
0x06, 0x01, 0x08, 0x0f, 0x1a, 0x1d, 0x14, 0x13, 0xae, 0xa9, 0xa0, 0xa7,
0xb2, 0xb5, 0xbc, 0xbb, 0x96, 0x91, 0x98, 0x9f, 0x8a, 0x8d, 0x84, 0x83,
0xde, 0xd9, 0xd0, 0xd7, 0xc2, 0xc5, 0xcc, 0xcb, 0xe6, 0xe1, 0xe8, 0xef,
0xfa, 0xfd, 0xf4, 0xf3
};

/* Slicing by 8: crc_slice[k][x] is the CRC of byte x followed by k zero
 * bytes (from 0), so 8 bytes fold in with 8 independent lookups and no
 * per-byte dependency chain (the CRC is linear). Built on first use from
 * crc_table; a race writes equal values. */
static unsigned char crc_slice[8][256];
static int crc_slice_ready;

static void crc_slice_init(void) {
  int k, x;
  for (x = 0; x < 256; x++) crc_slice[0][x] = crc_table[x];
  for (k = 1; k < 8; k++)
    for (x = 0; x < 256; x++) crc_slice[k][x] = crc_table[crc_slice[k - 1][x]];
  crc_slice_ready = 1;
}

/* 8 bytes as the little-endian v, after crc (crc_slice built) */
static inline unsigned char crc_le64(unsigned char crc, uint64_t v) {
  return (unsigned char)(crc_slice[7][(unsigned char)(v ^ crc)] ^ crc_slice[6][(unsigned char)(v >> 8)] ^
                         crc_slice[5][(unsigned char)(v >> 16)] ^ crc_slice[4][(unsigned char)(v >> 24)] ^
                         crc_slice[3][(unsigned char)(v >> 32)] ^ crc_slice[2][(unsigned char)(v >> 40)] ^
                         crc_slice[1][(unsigned char)(v >> 48)] ^ crc_slice[0][(unsigned char)(v >> 56)]);
}

/* 4 bytes as the little-endian v, after crc (crc_slice built) */
static inline unsigned char crc_le32(unsigned char crc, uint32_t v) {
  return (unsigned char)(crc_slice[3][(unsigned char)(v ^ crc)] ^ crc_slice[2][(unsigned char)(v >> 8)] ^
                         crc_slice[1][(unsigned char)(v >> 16)] ^ crc_slice[0][(unsigned char)(v >> 24)]);
}

/* the CRC of b[0..n) after crc: 8 bytes a step, then 4, then bytes */
static inline unsigned char crc_run(unsigned char crc, const unsigned char *b, size_t n) {
  if (!crc_slice_ready) crc_slice_init();
  for (; n >= 8; n -= 8, b += 8) crc = crc_le64(crc, get_le64(b));
  if (n >= 4) { crc = crc_le32(crc, get_le32(b)); b += 4; n -= 4; }
  while (n--) crc = crc_table[crc ^ *b++];
  return crc;
}

unsigned char pb_crc8(unsigned char crc, const void *p, size_t n) { return crc_run(crc, p, n); }

static unsigned char crc_byte(unsigned char crc, unsigned char b) { return crc_table[crc ^ b]; }

static unsigned char crc_u32(unsigned char crc, uint32_t v) {
  if (!crc_slice_ready) crc_slice_init();
  return crc_le32(crc, v);
}

static unsigned char crc_u64(unsigned char crc, uint64_t v) {
  if (!crc_slice_ready) crc_slice_init();
  return crc_le64(crc, v);
}

static uint64_t dbits(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}

/* the checksum of a value: type byte, then [le32 length] payload */
static unsigned char crc_value(unsigned char crc, const pb_value *v) {
  crc = crc_byte(crc, (unsigned char)v->vt);
  switch (v->vt) {
  case PB_VT_INTEGER: return crc_u64(crc, (uint64_t)v->i);
  case PB_VT_DOUBLE: return crc_u64(crc, dbits(v->d));
  case PB_VT_BOOLEAN: return crc_byte(crc, v->i ? 1 : 0);
  case PB_VT_STRING:
  case PB_VT_BLOB: return pb_crc8(crc_u32(crc, (uint32_t)v->n), v->s, v->n);
  default: return crc;
  }
}

static unsigned char cell_crc(const pb_cell *c) {
  unsigned char crc = pb_crc8(0, c->name, c->name_len);
  if (c->v.vt != PB_VT_NONE) crc = crc_value(crc, &c->v);
  if (c->has_ts) crc = crc_u64(crc, (uint64_t)c->ts);
  if (c->op != PB_OP_NONE) crc = crc_byte(crc, (unsigned char)c->op);
  return crc;
}

/* ---------------------------------------------------------------- writer */

void pb_writer_init(pb_writer *w) { memset(w, 0, sizeof *w); }
void pb_writer_reset(pb_writer *w) { w->len = 0; w->oom = 0; w->row_crc = 0; }
void pb_writer_free(pb_writer *w) { free(w->p); pb_writer_init(w); }

/* room for n more bytes, or NULL (w->oom set) */
static unsigned char *room(pb_writer *w, size_t n) {
  if (w->oom) return NULL;
  if (n > w->cap - w->len) {
    size_t cap = w->cap ? w->cap : 256;
    unsigned char *p;
    while (cap - w->len < n) {
      if (cap > (size_t)-1 / 2) { w->oom = 1; return NULL; }
      cap *= 2;
    }
    p = realloc(w->p, cap);
    if (!p) { w->oom = 1; return NULL; }
    w->p = p; w->cap = cap;
  }
  return w->p + w->len;
}

static void put_byte(pb_writer *w, unsigned char b) {
  unsigned char *p = room(w, 1);
  if (p) { *p = b; w->len++; }
}

void pb_write_raw(pb_writer *w, const void *b, size_t n) {
  unsigned char *p = room(w, n);
  if (p && n) { memcpy(p, b, n); w->len += n; }
}

void pb_write_header(pb_writer *w) {
  unsigned char *p = room(w, 4);
  if (p) { put_le32(p, HEADER); w->len += 4; }
}

void pb_row_begin(pb_writer *w) { w->row_crc = 0; put_byte(w, TAG_ROW_PK); }
void pb_row_data(pb_writer *w) { put_byte(w, TAG_ROW_DATA); }

/* value payload size after the type byte */
static size_t payload_len(const pb_value *v) {
  switch (v->vt) {
  case PB_VT_INTEGER: case PB_VT_DOUBLE: return 8;
  case PB_VT_BOOLEAN: return 1;
  case PB_VT_STRING: case PB_VT_BLOB: return 4 + v->n;
  default: return 0;
  }
}

static unsigned char *put_payload(unsigned char *p, const pb_value *v) {
  switch (v->vt) {
  case PB_VT_INTEGER: put_le64(p, (uint64_t)v->i); return p + 8;
  case PB_VT_DOUBLE: put_le64(p, dbits(v->d)); return p + 8;
  case PB_VT_BOOLEAN: *p = v->i ? 1 : 0; return p + 1;
  case PB_VT_STRING: case PB_VT_BLOB:
    put_le32(p, (uint32_t)v->n);
    if (v->n) memcpy(p + 4, v->s, v->n);
    return p + 4 + v->n;
  default: return p;
  }
}

void pb_write_cell(pb_writer *w, const pb_cell *c) {
  size_t pl = c->v.vt == PB_VT_NONE ? 0 : payload_len(&c->v);
  size_t need = 1 + 5 + c->name_len + (c->v.vt == PB_VT_NONE ? 0 : 6 + pl) +
                (c->op ? 2 : 0) + (c->has_ts ? 9 : 0) + 2;
  unsigned char *p = room(w, need), *q, crc;
  if (!p) return;
  q = p;
  *q++ = TAG_CELL;
  *q++ = TAG_CELL_NAME;
  put_le32(q, (uint32_t)c->name_len); q += 4;
  if (c->name_len) memcpy(q, c->name, c->name_len);
  q += c->name_len;
  if (c->v.vt != PB_VT_NONE) {
    *q++ = TAG_CELL_VALUE;
    put_le32(q, (uint32_t)(1 + pl)); q += 4;
    *q++ = (unsigned char)c->v.vt;
    q = put_payload(q, &c->v);
  }
  if (c->op) { *q++ = TAG_CELL_TYPE; *q++ = (unsigned char)c->op; }
  if (c->has_ts) { *q++ = TAG_CELL_TIMESTAMP; put_le64(q, (uint64_t)c->ts); q += 8; }
  crc = cell_crc(c);
  *q++ = TAG_CELL_CHECKSUM;
  *q++ = crc;
  w->len += (size_t)(q - p);
  w->row_crc = crc_byte(w->row_crc, crc);
}

void pb_row_end(pb_writer *w, int delete_marker) {
  if (delete_marker) put_byte(w, TAG_DELETE_ROW_MARKER);
  put_byte(w, TAG_ROW_CHECKSUM);
  put_byte(w, crc_byte(w->row_crc, delete_marker ? 1 : 0));
}

void pb_write_value(pb_writer *w, const pb_value *v) {
  unsigned char *p = room(w, 1 + payload_len(v));
  if (!p) return;
  *p = (unsigned char)v->vt;
  w->len += (size_t)(put_payload(p + 1, v) - p);
}

/* ---------------------------------------------------------------- reader */

static int fail(pb_reader *r, const char *why) {
  r->err = why;
  r->err_at = (size_t)(r->p - r->start);
  return -1;
}

int pb_reader_init(pb_reader *r, const void *buf, size_t n) {
  r->start = r->p = buf;
  r->end = r->p + n;
  r->err = NULL; r->err_at = 0;
  r->trusted = 0;
  if (n == 0) return 1;
  if (n < 4 || get_le32(r->p) != HEADER) { fail(r, "not a PlainBuffer (bad header)"); return 0; }
  r->p += 4;
  return 1;
}

/* reads a value of L bytes (type byte + payload) at p */
static const char *read_value(const unsigned char *p, size_t L, pb_value *v) {
  if (L < 1) return "empty cell value";
  v->vt = p[0];
  p++; L--;
  switch (v->vt) {
  case PB_VT_INTEGER:
    if (L != 8) return "bad INTEGER value length";
    v->i = (int64_t)get_le64(p);
    return NULL;
  case PB_VT_DOUBLE: {
    uint64_t u;
    if (L != 8) return "bad DOUBLE value length";
    u = get_le64(p);
    memcpy(&v->d, &u, 8);
    return NULL;
  }
  case PB_VT_BOOLEAN:
    if (L != 1) return "bad BOOLEAN value length";
    if (p[0] > 1) return "BOOLEAN value is not 0 or 1";
    v->i = p[0];
    return NULL;
  case PB_VT_STRING: case PB_VT_BLOB:
    if (L < 4) return "bad STRING/BINARY value length";
    v->n = get_le32(p);
    if (v->n != L - 4) return "STRING/BINARY length disagrees with the cell value length";
    v->s = (const char *)p + 4;
    return NULL;
  case PB_VT_INF_MIN: case PB_VT_INF_MAX: case PB_VT_AUTO_INCREMENT:
    if (L != 0) return "INF_MIN/INF_MAX/AUTO_INCREMENT value with a payload";
    return NULL;
  default:
    return "unknown value type";
  }
}

int pb_read_value(const void *p, size_t n, pb_value *v, const char **err) {
  *err = read_value(p, n, v);
  return *err == NULL;
}

#define LEFT(r) ((size_t)((r)->end - (r)->p))

/* one cell at r->p (TAG_CELL already checked); crc of its checksum byte.
 * The checksum covers name, type + payload, timestamp and op, which are
 * the wire bytes of the name, of the value (a BOOLEAN's byte is checked
 * to be 0 or 1, a string's length to match), of the timestamp, and the
 * op byte: it is computed over those bytes (what cell_crc computes from
 * the values). */
static int read_cell(pb_reader *r, pb_cell *c, unsigned char *crc_out) {
  size_t n, vlen = 0;
  const char *why;
  const unsigned char *val = NULL, *ts = NULL;
  r->p++; /* TAG_CELL */
  if (LEFT(r) < 5 || r->p[0] != TAG_CELL_NAME) return fail(r, "cell without a name");
  n = get_le32(r->p + 1);
  r->p += 5;
  if (n > LEFT(r)) return fail(r, "cell name length past the end");
  c->name = (const char *)r->p; c->name_len = n;
  r->p += n;
  c->v.vt = PB_VT_NONE; c->op = PB_OP_NONE; c->has_ts = 0;
  if (LEFT(r) >= 1 && r->p[0] == TAG_CELL_VALUE) {
    if (LEFT(r) < 5) return fail(r, "truncated cell value");
    n = get_le32(r->p + 1);
    r->p += 5;
    if (n > LEFT(r)) return fail(r, "cell value length past the end");
    if ((why = read_value(r->p, n, &c->v)) != NULL) return fail(r, why);
    val = r->p; vlen = n;
    r->p += n;
  }
  if (LEFT(r) >= 1 && r->p[0] == TAG_CELL_TYPE) {
    if (LEFT(r) < 2) return fail(r, "truncated cell op");
    c->op = r->p[1];
    if (c->op != PB_OP_DELETE_ALL && c->op != PB_OP_DELETE_ONE && c->op != PB_OP_INCREMENT)
      return fail(r, "unknown cell op");
    r->p += 2;
  }
  if (LEFT(r) >= 1 && r->p[0] == TAG_CELL_TIMESTAMP) {
    if (LEFT(r) < 9) return fail(r, "truncated cell timestamp");
    c->has_ts = 1;
    ts = r->p + 1;
    c->ts = (int64_t)get_le64(ts);
    r->p += 9;
  }
  if (LEFT(r) < 2 || r->p[0] != TAG_CELL_CHECKSUM) return fail(r, "cell without a checksum");
  if (!r->trusted) {
    unsigned char crc = crc_run(0, (const unsigned char *)c->name, c->name_len);
    if (val) crc = crc_run(crc, val, vlen);
    if (ts) crc = crc_run(crc, ts, 8);
    if (c->op != PB_OP_NONE) crc = crc_byte(crc, (unsigned char)c->op);
    if (r->p[1] != crc) return fail(r, "cell checksum mismatch");
  }
  if (c->v.vt == PB_VT_NONE && c->op == PB_OP_NONE) return fail(r, "cell without a value");
  *crc_out = r->p[1];
  r->p += 2;
  return 0;
}

static pb_cell *next_cell(pb_row *row) {
  if (row->ncells == row->cap) {
    size_t cap = row->cap ? row->cap * 2 : 16;
    pb_cell *c = realloc(row->cells, cap * sizeof *c);
    if (!c) return NULL;
    row->cells = c; row->cap = cap;
  }
  return &row->cells[row->ncells++];
}

static int only_zeros(const unsigned char *p, const unsigned char *end) {
  while (p < end) if (*p++) return 0;
  return 1;
}

int pb_read_row(pb_reader *r, pb_row *row) {
  unsigned char crc = 0, cc;
  pb_cell *c;
  row->npk = row->ncells = 0;
  row->deleted = 0;
  if (r->p == r->end || r->p[0] == 0) {
    if (!only_zeros(r->p, r->end)) return fail(r, "trailing bytes after the last row");
    r->p = r->end;
    return 0;
  }
  if (r->p[0] != TAG_ROW_PK) return fail(r, "expected a row (unknown tag)");
  r->p++;
  while (r->p < r->end && r->p[0] == TAG_CELL) {
    if (!(c = next_cell(row))) return fail(r, "out of memory");
    if (read_cell(r, c, &cc) < 0) return -1;
    if (c->v.vt == PB_VT_NONE || c->op != PB_OP_NONE) return fail(r, "primary key cell without a value");
    if (!r->trusted) crc = crc_byte(crc, cc);
  }
  row->npk = row->ncells;
  if (row->npk == 0) return fail(r, "row without primary key cells");
  if (r->p < r->end && r->p[0] == TAG_ROW_DATA) {
    r->p++;
    while (r->p < r->end && r->p[0] == TAG_CELL) {
      if (!(c = next_cell(row))) return fail(r, "out of memory");
      if (read_cell(r, c, &cc) < 0) return -1;
      if (!r->trusted) crc = crc_byte(crc, cc);
    }
  }
  if (r->p < r->end && r->p[0] == TAG_DELETE_ROW_MARKER) { row->deleted = 1; r->p++; }
  if (r->p < r->end && r->p[0] == TAG_EXTENSION) { /* stream record info: skipped, not checksummed */
    size_t n;
    if (LEFT(r) < 5) return fail(r, "truncated row extension");
    n = get_le32(r->p + 1);
    r->p += 5;
    if (n > LEFT(r)) return fail(r, "row extension length past the end");
    r->p += n;
  }
  if (LEFT(r) < 2 || r->p[0] != TAG_ROW_CHECKSUM) return fail(r, "row without a checksum (unknown tag or truncated)");
  if (!r->trusted && r->p[1] != crc_byte(crc, row->deleted ? 1 : 0)) return fail(r, "row checksum mismatch");
  r->p += 2;
  return 1;
}

int pb_read_cells(pb_reader *r, pb_row *row) {
  unsigned char cc;
  pb_cell *c;
  row->npk = row->ncells = 0;
  row->deleted = 0;
  while (r->p < r->end && r->p[0] == TAG_CELL) {
    if (!(c = next_cell(row))) return fail(r, "out of memory");
    if (read_cell(r, c, &cc) < 0) return -1;
  }
  return 1;
}

void pb_row_free(pb_row *row) {
  free(row->cells);
  row->cells = NULL;
  row->cap = row->ncells = row->npk = 0;
}

int pb_scan_rows(pb_reader *r, const void *buf, size_t n, size_t *rows, size_t *end) {
  pb_row row;
  int rc;
  *rows = *end = 0;
  if (!pb_reader_init(r, buf, n)) return 0;
  if (n == 0) return 1;
  memset(&row, 0, sizeof row);
  *end = (size_t)(r->p - r->start); /* the header */
  while ((rc = pb_read_row(r, &row)) == 1) {
    (*rows)++;
    *end = (size_t)(r->p - r->start);
  }
  pb_row_free(&row);
  return rc == 0;
}

/* ---- the order of the rows read */

int pb_key_cmp(const pb_cell *a, size_t na, const pb_cell *b, size_t nb) {
  size_t i, n = na > nb ? na : nb;
  if (n == 0) return PB_KEY_OTHER;
  for (i = 0; i < n; i++) {
    const pb_cell *x, *y;
    int r;
    if (i >= na || i >= nb) return PB_KEY_OTHER;
    x = &a[i]; y = &b[i];
    if (x->name_len != y->name_len || (x->name_len && memcmp(x->name, y->name, x->name_len) != 0))
      return PB_KEY_OTHER;
    if (x->v.vt != y->v.vt) return PB_KEY_OTHER;
    switch (x->v.vt) {
    case PB_VT_INTEGER: r = x->v.i < y->v.i ? -1 : (x->v.i > y->v.i ? 1 : 0); break;
    case PB_VT_STRING: case PB_VT_BLOB:
      r = bytes_cmp(x->v.s, x->v.n, y->v.s, y->v.n);
      r = r < 0 ? -1 : r > 0;
      break;
    default: return PB_KEY_OTHER;
    }
    if (r != 0) return r;
  }
  return 0;
}

void pb_order_init(pb_order *o) {
  o->nprev = 0;
  o->rows = 0;
  o->flags = PB_ORDER_ASC | PB_ORDER_DESC;
}

void pb_order_add(pb_order *o, const pb_row *row) {
  if (o->flags && o->rows > 0) {
    int r = o->nprev <= PB_ORDER_MAXPK ? pb_key_cmp(row->cells, row->npk, o->prev, o->nprev) : PB_KEY_OTHER;
    if (r != 1) o->flags &= ~PB_ORDER_ASC;
    if (r != -1) o->flags &= ~PB_ORDER_DESC;
  }
  o->rows++;
  if (!o->flags) return;
  if (row->npk > PB_ORDER_MAXPK) { o->flags = 0; return; }
  if (row->npk) memcpy(o->prev, row->cells, row->npk * sizeof *row->cells);
  o->nprev = row->npk;
}
