/* fbsql.c -- see fbsql.h. The writer lays the buffer out front to back:
 * each table after its vtable (a positive soffset) and before what it
 * points to (uoffsets are always forward), little-endian, every scalar
 * vector's elements aligned to their size and every table to 8. */
#include <stdlib.h>
#include <string.h>

#include "fbsql.h"

typedef struct {
  unsigned char *p;
  size_t len, cap;
  int err;
} wb;

static size_t wb_alloc(wb *w, size_t n) {
  size_t at = w->len;
  if (w->err) return 0;
  if (n > 0x7fffffffu - w->len) { w->err = 1; return 0; }
  if (w->len + n > w->cap) {
    size_t cap = w->cap ? w->cap : 256;
    unsigned char *q;
    while (cap < w->len + n) cap *= 2;
    q = (unsigned char *)realloc(w->p, cap);
    if (q == NULL) { w->err = 1; return 0; }
    w->p = q, w->cap = cap;
  }
  memset(w->p + w->len, 0, n);
  w->len += n;
  return at;
}

static void wb_align(wb *w, size_t a) {
  if (w->len % a) wb_alloc(w, a - w->len % a);
}

static void put16(wb *w, size_t at, unsigned v) {
  if (w->err) return;
  w->p[at] = (unsigned char)v, w->p[at + 1] = (unsigned char)(v >> 8);
}

static void put32(wb *w, size_t at, uint32_t v) {
  int i;
  if (w->err) return;
  for (i = 0; i < 4; i++) w->p[at + (size_t)i] = (unsigned char)(v >> (8 * i));
}

static void put64(wb *w, size_t at, uint64_t v) {
  int i;
  if (w->err) return;
  for (i = 0; i < 8; i++) w->p[at + (size_t)i] = (unsigned char)(v >> (8 * i));
}

/* the uoffset at `at` points to target (always forward) */
static void link(wb *w, size_t at, size_t target) { put32(w, at, (uint32_t)(target - at)); }

/* a vtable of n field offsets (0: absent) for a table of tblsize bytes */
static size_t vtable(wb *w, const unsigned *offs, size_t n, unsigned tblsize) {
  size_t at, i;
  wb_align(w, 2);
  at = wb_alloc(w, 4 + 2 * n);
  put16(w, at, (unsigned)(4 + 2 * n));
  put16(w, at + 2, tblsize);
  for (i = 0; i < n; i++) put16(w, at + 4 + 2 * i, offs[i]);
  return at;
}

/* a table of size bytes using vtable vt -> its position */
static size_t table(wb *w, size_t vt, unsigned size) {
  size_t at;
  wb_align(w, 8);
  at = wb_alloc(w, size);
  put32(w, at, (uint32_t)(at - vt));
  return at;
}

/* a vector's length field, placed so its elements align to elem bytes */
static size_t vector(wb *w, size_t n, size_t elem) {
  size_t a = elem > 4 ? elem : 4, at;
  while ((w->len + 4) % a) wb_alloc(w, 1);
  if (w->err) return 0;
  if (n > (0x7fffffffu - w->len) / (elem ? elem : 1)) { w->err = 1; return 0; }
  at = wb_alloc(w, 4 + n * elem);
  put32(w, at, (uint32_t)n);
  return at;
}

static size_t string(wb *w, const char *s, size_t n) {
  size_t at = vector(w, n + 1, 1); /* the bytes and a NUL */
  if (w->err) return 0;
  put32(w, at, (uint32_t)n);
  if (n) memcpy(w->p + at + 4, s, n);
  return at;
}

static int value_field(int type) {
  switch (type) {
  case FBSQL_LONG: return 1;
  case FBSQL_BOOLEAN: return 2;
  case FBSQL_DOUBLE: return 3;
  case FBSQL_STRING: return 4;
  case FBSQL_BINARY: return 5;
  default: return -1;
  }
}

static void write_values(wb *w, const fbsql_col *c, size_t nrows, size_t slot) {
  size_t v, r;
  switch (c->type) {
  case FBSQL_LONG:
    v = vector(w, nrows, 8);
    for (r = 0; r < nrows; r++) put64(w, v + 4 + 8 * r, (uint64_t)c->longs[r]);
    break;
  case FBSQL_DOUBLE:
    v = vector(w, nrows, 8);
    for (r = 0; r < nrows; r++) {
      uint64_t u;
      memcpy(&u, &c->doubles[r], 8);
      put64(w, v + 4 + 8 * r, u);
    }
    break;
  case FBSQL_BOOLEAN:
    v = vector(w, nrows, 1);
    for (r = 0; r < nrows && !w->err; r++) w->p[v + 4 + r] = c->bools[r] ? 1 : 0;
    break;
  case FBSQL_STRING:
    v = vector(w, nrows, 4);
    for (r = 0; r < nrows; r++) {
      size_t s = string(w, c->nulls[r] ? "" : c->strs[r], c->nulls[r] ? 0 : c->lens[r]);
      if (!w->err) link(w, v + 4 + 4 * r, s);
    }
    break;
  default: { /* BINARY: BytesValue tables sharing one vtable */
    unsigned off = 4;
    size_t vt;
    v = vector(w, nrows, 4);
    vt = vtable(w, &off, 1, 8);
    for (r = 0; r < nrows; r++) {
      size_t t = table(w, vt, 8), b;
      size_t n = c->nulls[r] ? 0 : c->lens[r];
      if (!w->err) link(w, v + 4 + 4 * r, t);
      b = vector(w, n, 1);
      if (!w->err && n) memcpy(w->p + b + 4, c->strs[r], n);
      if (!w->err) link(w, t + 4, b);
    }
  }
  }
  if (!w->err) link(w, slot, v);
}

int fbsql_write(const fbsql_col *cols, size_t ncols, size_t nrows, unsigned char **out, size_t *outlen) {
  wb w = {NULL, 0, 0, 0};
  size_t vt, root, cv, i, r;
  unsigned root_offs[2] = {4, 8};
  for (i = 0; i < ncols; i++)
    if (value_field(cols[i].type) < 0) return -1;
  wb_alloc(&w, 4);                       /* the root uoffset */
  vt = vtable(&w, root_offs, 2, 16);
  root = table(&w, vt, 16);
  link(&w, 0, root);
  put64(&w, root + 8, (uint64_t)nrows);
  cv = vector(&w, ncols, 4);
  if (!w.err) link(&w, root + 4, cv);
  for (i = 0; i < ncols && !w.err; i++) {
    const fbsql_col *c = &cols[i];
    unsigned col_offs[3] = {4, 12, 8}; /* name, type, value */
    unsigned val_offs[7] = {0, 0, 0, 0, 0, 0, 0};
    size_t ct, name, vvt, vtb, nulls;
    int k = value_field(c->type);
    vvt = vtable(&w, col_offs, 3, 13);
    ct = table(&w, vvt, 16);
    if (w.err) break;
    link(&w, cv + 4 + 4 * i, ct);
    w.p[ct + 12] = (unsigned char)c->type;
    name = string(&w, c->name, c->name_len);
    if (!w.err) link(&w, ct + 4, name);
    val_offs[0] = 4, val_offs[k] = 8;
    vvt = vtable(&w, val_offs, (size_t)k + 1, 12);
    vtb = table(&w, vvt, 12);
    if (!w.err) link(&w, ct + 8, vtb);
    nulls = vector(&w, nrows, 1);
    for (r = 0; r < nrows && !w.err; r++) w.p[nulls + 4 + r] = c->nulls[r] ? 1 : 0;
    if (!w.err) link(&w, vtb + 4, nulls);
    write_values(&w, c, nrows, vtb + 8);
  }
  if (w.err) { free(w.p); return -1; }
  *out = w.p;
  *outlen = w.len;
  return 0;
}

/* ---- reading ---- */

static uint32_t rd32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

typedef struct { size_t at, vt, vtsize, size; } tbl;

static int fail(const char **why, const char *msg) {
  *why = msg;
  return -1;
}

/* the uoffset at `at` -> its target, or 0 (out of the buffer) */
static size_t deref(const unsigned char *b, size_t len, size_t at) {
  uint32_t u;
  if (at > len || len - at < 4) return 0;
  u = rd32(b + at);
  if (u == 0 || u >= len - at) return 0;
  return at + u;
}

static int get_table(const unsigned char *b, size_t len, size_t at, tbl *t, const char **why) {
  int32_t so;
  int64_t vt;
  if (at == 0 || at > len || len - at < 4) return fail(why, "a table is out of the buffer");
  so = (int32_t)rd32(b + at);
  vt = (int64_t)at - (int64_t)so;
  if (vt < 0 || (uint64_t)vt + 4 > len) return fail(why, "a vtable is out of the buffer");
  t->at = at, t->vt = (size_t)vt;
  t->vtsize = (size_t)(b[t->vt] | b[t->vt + 1] << 8);
  t->size = (size_t)(b[t->vt + 2] | b[t->vt + 3] << 8);
  if (t->vtsize < 4 || t->vtsize % 2 || t->vt + t->vtsize > len) return fail(why, "a vtable is malformed");
  if (t->size < 4 || t->at + t->size > len) return fail(why, "a table is longer than the buffer");
  return 0;
}

/* field idx of t -> its position, 0 when absent, -1 when it does not fit */
static long field(const unsigned char *b, const tbl *t, int idx, size_t width) {
  size_t o = 4 + 2 * (size_t)idx, off;
  if (o + 2 > t->vtsize) return 0;
  off = (size_t)(b[t->vt + o] | b[t->vt + o + 1] << 8);
  if (off == 0) return 0;
  if (off < 4 || off + width > t->size) return -1;
  return (long)(t->at + off);
}

/* a vector at the uoffset in field idx -> element start and count */
static int get_vector(const unsigned char *b, size_t len, const tbl *t, int idx, size_t elem, size_t *at,
                      size_t *n, const char **why) {
  long f = field(b, t, idx, 4);
  size_t v;
  uint32_t cnt;
  *at = 0, *n = 0;
  if (f < 0) return fail(why, "a field is out of its table");
  if (f == 0) return 0;
  v = deref(b, len, (size_t)f);
  if (v == 0 || len - v < 4) return fail(why, "a vector is out of the buffer");
  cnt = rd32(b + v);
  if ((uint64_t)cnt * elem > len - v - 4) return fail(why, "a vector is longer than the buffer");
  *at = v + 4, *n = cnt;
  return 0;
}

/* a string or byte vector whose uoffset is at `slot` */
static int get_bytes(const unsigned char *b, size_t len, size_t slot, const char **s, size_t *n,
                     const char **why) {
  size_t v = deref(b, len, slot);
  uint32_t cnt;
  if (v == 0 || len - v < 4) return fail(why, "a string is out of the buffer");
  cnt = rd32(b + v);
  if (cnt > len - v - 4) return fail(why, "a string is longer than the buffer");
  *s = (const char *)b + v + 4, *n = cnt;
  return 0;
}

int fbsql_open(fbsql_reader *r, const void *buf, size_t len, const char **why) {
  const unsigned char *b = (const unsigned char *)buf;
  tbl t;
  long f;
  size_t n;
  memset(r, 0, sizeof *r);
  r->buf = b, r->len = len;
  if (len < 8) return fail(why, "too short for a result set");
  if (get_table(b, len, deref(b, len, 0), &t, why)) return -1;
  if (get_vector(b, len, &t, 0, 4, &r->cols_at, &n, why)) return -1;
  r->ncols = n;
  f = field(b, &t, 1, 8);
  if (f < 0) return fail(why, "row_count is out of its table");
  r->nrows = f ? (int64_t)rd64(b + f) : 0;
  if (r->nrows < 0) return fail(why, "a negative row_count");
  return 0;
}

int fbsql_column_at(const fbsql_reader *r, size_t i, fbsql_column *c, const char **why) {
  const unsigned char *b = r->buf;
  tbl t, v;
  long f;
  size_t vslot;
  memset(c, 0, sizeof *c);
  if (i >= r->ncols) return fail(why, "no such column");
  if (get_table(b, r->len, deref(b, r->len, r->cols_at + 4 * i), &t, why)) return -1;
  f = field(b, &t, 0, 4);
  if (f < 0) return fail(why, "column_name is out of its table");
  c->name = "";
  if (f && get_bytes(b, r->len, (size_t)f, &c->name, &c->name_len, why)) return -1;
  f = field(b, &t, 1, 1);
  if (f < 0) return fail(why, "column_type is out of its table");
  c->type = f ? (int)(signed char)b[f] : FBSQL_NONE;
  if (c->type < FBSQL_NONE || c->type > FBSQL_STRING_RLE) return fail(why, "an unknown column_type");
  f = field(b, &t, 2, 4);
  if (f < 0) return fail(why, "column_value is out of its table");
  if (f == 0) return 0; /* no values: every row reads as NULL */
  vslot = deref(b, r->len, (size_t)f);
  if (get_table(b, r->len, vslot, &v, why)) return -1;
  if (get_vector(b, r->len, &v, 0, 1, &c->nulls, &c->nnulls, why)) return -1;
  switch (c->type) {
  case FBSQL_LONG: return get_vector(b, r->len, &v, 1, 8, &c->vals, &c->nvals, why);
  case FBSQL_BOOLEAN: return get_vector(b, r->len, &v, 2, 1, &c->vals, &c->nvals, why);
  case FBSQL_DOUBLE: return get_vector(b, r->len, &v, 3, 8, &c->vals, &c->nvals, why);
  case FBSQL_STRING: return get_vector(b, r->len, &v, 4, 4, &c->vals, &c->nvals, why);
  case FBSQL_BINARY: return get_vector(b, r->len, &v, 5, 4, &c->vals, &c->nvals, why);
  case FBSQL_STRING_RLE: {
    tbl rle;
    f = field(b, &v, 6, 4);
    if (f < 0) return fail(why, "rle_string_values is out of its table");
    if (f == 0) return 0;
    if (get_table(b, r->len, deref(b, r->len, (size_t)f), &rle, why)) return -1;
    if (get_vector(b, r->len, &rle, 0, 4, &c->vals, &c->nvals, why)) return -1;
    return get_vector(b, r->len, &rle, 1, 4, &c->rle_map, &c->nrle_map, why);
  }
  default: return 0;
  }
}

int fbsql_cell(const fbsql_reader *r, const fbsql_column *c, size_t row, int64_t *l, double *d, int *bo,
               const char **s, size_t *n, const char **why) {
  const unsigned char *b = r->buf;
  size_t idx = row;
  if ((int64_t)row >= r->nrows) return fail(why, "no such row");
  if (row < c->nnulls && b[c->nulls + row]) return 1;
  if (c->type == FBSQL_NONE || c->vals == 0) return 1;
  if (c->type == FBSQL_STRING_RLE) {
    int32_t k;
    if (row >= c->nrle_map) return fail(why, "index_mapping has fewer entries than rows");
    k = (int32_t)rd32(b + c->rle_map + 4 * row);
    if (k < 0) return fail(why, "a negative index_mapping entry");
    idx = (size_t)k;
  }
  if (idx >= c->nvals) return fail(why, "a values vector has fewer entries than rows");
  switch (c->type) {
  case FBSQL_LONG: *l = (int64_t)rd64(b + c->vals + 8 * idx); return 0;
  case FBSQL_DOUBLE: {
    uint64_t u = rd64(b + c->vals + 8 * idx);
    memcpy(d, &u, 8);
    return 0;
  }
  case FBSQL_BOOLEAN: *bo = b[c->vals + idx] != 0; return 0;
  case FBSQL_BINARY: {
    tbl t;
    long f;
    if (get_table(b, r->len, deref(b, r->len, c->vals + 4 * idx), &t, why)) return -1;
    f = field(b, &t, 0, 4);
    if (f < 0) return fail(why, "a BytesValue field is out of its table");
    if (f == 0) { *s = "", *n = 0; return 0; }
    return get_bytes(b, r->len, (size_t)f, s, n, why) ? -1 : 0;
  }
  default: return get_bytes(b, r->len, c->vals + 4 * idx, s, n, why) ? -1 : 0;
  }
}
