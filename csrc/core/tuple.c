/* tuple.c -- the order-preserving binary tuple codec (see tuple.h). */
#include <stdlib.h>
#include <string.h>

#include "tuple.h"

#define CODE_NIL 0x00
#define CODE_BYTES 0x01
#define CODE_TEXT 0x02
#define CODE_INT_ZERO 0x14
#define CODE_DOUBLE 0x21
#define CODE_FALSE 0x26
#define CODE_TRUE 0x27

void tuple_buf_init(tuple_buf *b) { b->p = NULL; b->len = b->cap = 0; }

void tuple_buf_free(tuple_buf *b) { free(b->p); tuple_buf_init(b); }

/* Makes room for extra more bytes. */
static int reserve(tuple_buf *b, size_t extra) {
  size_t need, cap;
  unsigned char *p;
  if (extra > (size_t)-1 - b->len) return -1;
  need = b->len + extra;
  if (need <= b->cap) return 0;
  cap = b->cap ? b->cap : 64;
  while (cap < need) cap = cap > (size_t)-1 / 2 ? need : cap * 2;
  p = realloc(b->p, cap);
  if (p == NULL) return -1;
  b->p = p;
  b->cap = cap;
  return 0;
}

int tuple_put_nil(tuple_buf *b) {
  if (reserve(b, 1)) return -1;
  b->p[b->len++] = CODE_NIL;
  return 0;
}

static int put_string(tuple_buf *b, int code, const unsigned char *s, size_t n) {
  size_t zeros = 0, i;
  unsigned char *o;
  for (i = 0; i < n; i++) zeros += s[i] == 0;
  if (n > (size_t)-1 / 2 - 2 || reserve(b, n + zeros + 2)) return -1;
  o = b->p + b->len;
  *o++ = (unsigned char)code;
  if (zeros == 0) {
    if (n) memcpy(o, s, n);
    o += n;
  } else {
    for (i = 0; i < n; i++) {
      *o++ = s[i];
      if (s[i] == 0) *o++ = 0xFF;
    }
  }
  *o++ = 0x00;
  b->len = (size_t)(o - b->p);
  return 0;
}

int tuple_put_bytes(tuple_buf *b, const void *s, size_t n) {
  return put_string(b, CODE_BYTES, (const unsigned char *)s, n);
}

int tuple_put_text(tuple_buf *b, const void *s, size_t n) {
  return put_string(b, CODE_TEXT, (const unsigned char *)s, n);
}

/* Bytes needed for the magnitude m > 0 (1..8). */
static int mag_len(uint64_t m) {
  int n = 1;
  while (n < 8 && (m >> (8 * n)) != 0) n++;
  return n;
}

int tuple_put_int(tuple_buf *b, int64_t v) {
  uint64_t m, raw;
  int n, i;
  unsigned char *o;
  if (reserve(b, 9)) return -1;
  o = b->p + b->len;
  if (v == 0) {
    o[0] = CODE_INT_ZERO;
    b->len += 1;
    return 0;
  }
  if (v > 0) {
    m = (uint64_t)v;
    n = mag_len(m);
    o[0] = (unsigned char)(CODE_INT_ZERO + n);
    raw = m;
  } else {
    m = (uint64_t)0 - (uint64_t)v;      /* |v|, exact for INT64_MIN too */
    n = mag_len(m);
    o[0] = (unsigned char)(CODE_INT_ZERO - n);
    raw = ~m;                           /* low n bytes: one's complement */
  }
  for (i = n; i >= 1; i--) { o[i] = (unsigned char)(raw & 0xFF); raw >>= 8; }
  b->len += (size_t)n + 1;
  return 0;
}

int tuple_put_double(tuple_buf *b, double v) {
  uint64_t u;
  int i;
  unsigned char *o;
  if (reserve(b, 9)) return -1;
  memcpy(&u, &v, 8);
  u = (u >> 63) ? ~u : (u ^ ((uint64_t)1 << 63));
  o = b->p + b->len;
  o[0] = CODE_DOUBLE;
  for (i = 8; i >= 1; i--) { o[i] = (unsigned char)(u & 0xFF); u >>= 8; }
  b->len += 9;
  return 0;
}

int tuple_put_bool(tuple_buf *b, int v) {
  if (reserve(b, 1)) return -1;
  b->p[b->len++] = v ? CODE_TRUE : CODE_FALSE;
  return 0;
}

int tuple_put_nil_desc(tuple_buf *b) {
  if (reserve(b, 2)) return -1;
  b->p[b->len++] = 0x00;
  b->p[b->len++] = 0x01;
  return 0;
}

int tuple_finish_desc(tuple_buf *b, size_t start) {
  size_t i;
  if (start > b->len || reserve(b, 2)) return -1;
  b->p[b->len++] = 0x00;
  b->p[b->len++] = 0x00;
  for (i = start; i < b->len; i++) b->p[i] = (unsigned char)~b->p[i];
  return 0;
}

/* ---- decoding ---- */

void tuple_reader_init(tuple_reader *r, const void *s, size_t n, int desc) {
  r->s = (const unsigned char *)s;
  r->n = n;
  r->pos = 0;
  r->desc = desc != 0;
  r->err = NULL;
}

/* The byte at i as the ascending encoding has it (caller checks i < n). */
static unsigned char at(const tuple_reader *r, size_t i) {
  return r->desc ? (unsigned char)~r->s[i] : r->s[i];
}

static int fail(tuple_reader *r, const char *why) {
  r->err = why;
  return -1;
}

static int read_string(tuple_reader *r, tuple_item *it) {
  size_t i = r->pos, len = 0;
  for (;;) {
    if (i >= r->n) return fail(r, "unterminated string");
    if (at(r, i) == 0x00) {
      if (i + 1 < r->n && at(r, i + 1) == 0xFF) { i += 2; len++; continue; }
      break;
    }
    i++;
    len++;
  }
  it->raw = r->s + r->pos;
  it->rawlen = i - r->pos;
  it->len = len;
  it->inverted = r->desc;
  r->pos = i + 1;                     /* past the terminator */
  return 1;
}

static int read_int(tuple_reader *r, tuple_item *it, int code) {
  int n = code > CODE_INT_ZERO ? code - CODE_INT_ZERO : CODE_INT_ZERO - code;
  uint64_t raw = 0;
  int k;
  if (n == 0) { it->i = 0; return 1; }
  if (r->n - r->pos < (size_t)n) return fail(r, "truncated integer");
  for (k = 0; k < n; k++) raw = (raw << 8) | at(r, r->pos + (size_t)k);
  if (code > CODE_INT_ZERO) {
    if (at(r, r->pos) == 0x00) return fail(r, "integer not minimally encoded");
    if (raw > (uint64_t)INT64_MAX) return fail(r, "integer outside int64");
    it->i = (int64_t)raw;
  } else {
    uint64_t mask = n == 8 ? ~(uint64_t)0 : (((uint64_t)1 << (8 * n)) - 1);
    uint64_t m = mask - raw;          /* |v| */
    if (at(r, r->pos) == 0xFF) return fail(r, "integer not minimally encoded");
    if (m > (uint64_t)1 << 63) return fail(r, "integer outside int64");
    it->i = m == (uint64_t)1 << 63 ? INT64_MIN : -(int64_t)m;
  }
  r->pos += (size_t)n;
  return 1;
}

int tuple_read(tuple_reader *r, tuple_item *it) {
  int code;
  memset(it, 0, sizeof *it);
  if (r->pos >= r->n) {
    if (r->desc) return fail(r, "missing end mark");
    return 0;
  }
  code = at(r, r->pos++);
  if (code == CODE_NIL) {
    if (!r->desc) { it->type = TUPLE_NIL; return 1; }
    /* descending: 0x00 0x01 is nil, 0x00 0x00 the end mark (last) */
    if (r->pos >= r->n) return fail(r, "truncated nil or end mark");
    code = at(r, r->pos++);
    if (code == 0x01) { it->type = TUPLE_NIL; return 1; }
    if (code == 0x00 && r->pos == r->n) return 0;
    return fail(r, code == 0x00 ? "bytes after the end mark" : "bad nil or end mark");
  }
  if (code == CODE_BYTES || code == CODE_TEXT) {
    it->type = code == CODE_BYTES ? TUPLE_BYTES : TUPLE_TEXT;
    return read_string(r, it);
  }
  if (code >= CODE_INT_ZERO - 8 && code <= CODE_INT_ZERO + 8) {
    it->type = TUPLE_INT;
    return read_int(r, it, code);
  }
  if (code == CODE_DOUBLE) {
    uint64_t u = 0;
    int k;
    if (r->n - r->pos < 8) return fail(r, "truncated double");
    for (k = 0; k < 8; k++) u = (u << 8) | at(r, r->pos + (size_t)k);
    u = (u >> 63) ? (u ^ ((uint64_t)1 << 63)) : ~u;
    memcpy(&it->d, &u, 8);
    it->type = TUPLE_DOUBLE;
    r->pos += 8;
    return 1;
  }
  if (code == CODE_FALSE || code == CODE_TRUE) {
    it->type = TUPLE_BOOL;
    it->b = code == CODE_TRUE;
    return 1;
  }
  if (code == 0x0B || code == 0x1D) return fail(r, "integer wider than int64 (unsupported)");
  if (code == 0x05 || code == 0x20 || code == 0x30 || code == 0x33 || code == 0x40)
    return fail(r, "FoundationDB type not supported here (nested, float, UUID, versionstamp)");
  return fail(r, "unknown type code");
}

void tuple_item_copy(const tuple_item *it, unsigned char *out) {
  size_t i = 0;
  unsigned char x = it->inverted ? 0xFF : 0x00;
  if (x == 0 && it->len == it->rawlen) {   /* no escaped zeros */
    if (it->len) memcpy(out, it->raw, it->len);
    return;
  }
  while (i < it->rawlen) {
    unsigned char c = it->raw[i] ^ x;
    *out++ = c;
    i += c == 0x00 ? 2 : 1;           /* 0x00 0xFF is an escaped zero */
  }
}
