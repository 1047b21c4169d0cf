/* rowstream.c -- stored rows straight into PlainBuffer rows (rowstream.h). */
#include <stdlib.h>
#include <string.h>

#include "row.h"
#include "rowstream.h"
#include "tuple.h"

int rs_name_cmp(const rs_name *a, const rs_name *b) {
  return row_name_cmp(a->s, a->n, b->s, b->n);
}

static int wanted(const rs_opts *o, const char *name, size_t n) {
  size_t lo = 0, hi = o->nwant;
  rs_name k;
  if (o->want == NULL) return 1;
  k.s = name; k.n = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = rs_name_cmp(&o->want[mid], &k);
    if (c == 0) return 1;
    if (c < 0) lo = mid + 1; else hi = mid;
  }
  return 0;
}

static void to_value(const row_cell *c, pb_value *v) {
  memset(v, 0, sizeof *v);
  switch (c->type) {
  case ROW_INTEGER: v->vt = PB_VT_INTEGER; v->i = c->i; break;
  case ROW_DOUBLE: v->vt = PB_VT_DOUBLE; v->d = c->d; break;
  case ROW_TRUE: case ROW_FALSE: v->vt = PB_VT_BOOLEAN; v->i = c->type == ROW_TRUE; break;
  case ROW_BINARY: v->vt = PB_VT_BLOB; v->s = c->s; v->n = c->s_len; break;
  default: v->vt = PB_VT_STRING; v->s = c->s; v->n = c->s_len; break;
  }
}

static int64_t value_size(const row_cell *c) {
  if (c->type == ROW_STRING || c->type == ROW_BINARY) return (int64_t)c->s_len;
  if (c->type == ROW_TRUE || c->type == ROW_FALSE) return 1;
  return 8;
}

/* The key cells of key into w (after pb_row_begin); *size grows by their
 * Tablestore size. 1, or 0 with *err when key is not a tuple of the
 * schema's types. An escaped string is unescaped into scratch (malloc'ed,
 * the caller frees *scratch). */
static int write_key(pb_writer *w, const rs_opts *o, const void *key, size_t klen, int64_t *size,
                     const char **err, unsigned char **scratch, size_t *scap) {
  tuple_reader r;
  tuple_item it;
  size_t i;
  int rc;
  tuple_reader_init(&r, key, klen, 0);
  for (i = 0; i < o->npk; i++) {
    pb_cell c;
    rc = tuple_read(&r, &it);
    if (rc != 1) { *err = rc < 0 ? r.err : "a stored key has too few columns"; return 0; }
    memset(&c, 0, sizeof c);
    c.name = o->pk_name[i].s;
    c.name_len = o->pk_name[i].n;
    if (o->pk_type[i] == RS_PK_INTEGER) {
      if (it.type != TUPLE_INT) { *err = "a stored key column is not an INTEGER"; return 0; }
      c.v.vt = PB_VT_INTEGER;
      c.v.i = it.i;
      *size += (int64_t)c.name_len + 8;
    } else {
      if (it.type != TUPLE_BYTES) { *err = "a stored key column is not a string"; return 0; }
      c.v.vt = o->pk_type[i] == RS_PK_BINARY ? PB_VT_BLOB : PB_VT_STRING;
      c.v.n = it.len;
      if (it.len == it.rawlen) {
        c.v.s = (const char *)it.raw;
      } else {
        if (*scap < it.len) {
          unsigned char *p = realloc(*scratch, it.len);
          if (p == NULL) { w->oom = 1; return 1; }
          *scratch = p;
          *scap = it.len;
        }
        tuple_item_copy(&it, *scratch);
        c.v.s = (const char *)*scratch;
      }
      *size += (int64_t)(c.name_len + it.len);
    }
    pb_write_cell(w, &c);
  }
  rc = tuple_read(&r, &it);
  if (rc != 0) { *err = rc < 0 ? r.err : "a stored key has too many columns"; return 0; }
  return 1;
}

int rs_row(pb_writer *w, const rs_opts *o, const void *key, size_t klen, const void *val, size_t vlen,
           int64_t *size, const char **err) {
  const unsigned char *buf = val;
  size_t mark = w->len, pos = 0, pnl = 0;
  const char *pn = NULL;
  int64_t nv = 0, kept = 0;
  int skip = 0, rc, data = 0, ok;
  unsigned char *scratch = NULL;
  size_t scap = 0;
  row_cell c;
  *size = 0;
  /* the cells first: a corrupt value or a row not returned writes nothing */
  while ((rc = row_next(buf, vlen, &pos, &c)) == 1) {
    int first = pn == NULL || pnl != c.name_len || memcmp(pn, c.name, pnl) != 0;
    if (first) { pn = c.name; pnl = c.name_len; nv = 0; skip = !wanted(o, c.name, c.name_len); }
    if (skip || c.ts < o->lo || c.ts >= o->hi || nv >= o->maxv) continue;
    nv++;
    kept++;
    *size += (int64_t)c.name_len + value_size(&c);
  }
  if (rc < 0) { *err = "a stored row is corrupt"; return RS_BADROW; }
  pb_row_begin(w);
  ok = write_key(w, o, key, klen, size, err, &scratch, &scap);
  free(scratch);
  if (!ok) { w->len = mark; return RS_BADKEY; }
  if (kept == 0 && (vlen > 0 || !o->plain)) { w->len = mark; return RS_SKIP; }
  /* second pass: write the kept cells (row_next already checked them) */
  pos = 0; pn = NULL; pnl = 0;
  while (row_next(buf, vlen, &pos, &c) == 1) {
    pb_cell pc;
    int first = pn == NULL || pnl != c.name_len || memcmp(pn, c.name, pnl) != 0;
    if (first) { pn = c.name; pnl = c.name_len; nv = 0; skip = !wanted(o, c.name, c.name_len); }
    if (skip || c.ts < o->lo || c.ts >= o->hi || nv >= o->maxv) continue;
    nv++;
    if (!data) { pb_row_data(w); data = 1; }
    memset(&pc, 0, sizeof pc);
    pc.name = c.name;
    pc.name_len = c.name_len;
    to_value(&c, &pc.v);
    pc.has_ts = 1;
    pc.ts = c.ts;
    pb_write_cell(w, &pc);
  }
  pb_row_end(w, 0);
  return RS_ROW;
}

/* ---- a PutRow's PlainBuffer row as a stored row ---- */

/* the service's rule for names: 1..255 bytes of [A-Za-z0-9_], not
 * starting with a digit (otskit.names) */
int rs_valid_name(const char *s, size_t n) {
  size_t i;
  if (n < 1 || n > 255) return 0;
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    int alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
    if (!alpha && (i == 0 || c < '0' || c > '9')) return 0;
  }
  return 1;
}

/* cells in (name, sent without a timestamp first, timestamp) order, to
 * find two with the same name and timestamp (or both without one) */
static int dup_cmp(const void *pa, const void *pb) {
  const pb_cell *a = *(const pb_cell *const *)pa, *b = *(const pb_cell *const *)pb;
  int c = row_name_cmp(a->name, a->name_len, b->name, b->name_len);
  if (c != 0) return c;
  if (a->has_ts != b->has_ts) return a->has_ts ? 1 : -1;
  if (!a->has_ts || a->ts == b->ts) return 0;
  return a->ts < b->ts ? -1 : 1;
}

/* The primary key cells of row (o's columns in o's order and types;
 * BINARY also from a STRING value when loose) appended to key; *size
 * grows by their Tablestore size. RS_PUT_OK, RS_PUT_OTHER with *why, or
 * RS_PUT_OOM. */
static int key_cells(const pb_row *row, const rs_opts *o, size_t max_pk_cell, int loose, tuple_buf *key,
                     int64_t *size, const char **why) {
  size_t i;
  if (row->npk != o->npk) { *why = "key size"; return RS_PUT_OTHER; }
  for (i = 0; i < row->npk; i++) {
    const pb_cell *c = &row->cells[i];
    int t = o->pk_type[i];
    *why = NULL;
    if (c->name_len != o->pk_name[i].n || memcmp(c->name, o->pk_name[i].s, c->name_len) != 0) *why = "key name";
    else if (c->op != PB_OP_NONE || c->has_ts) *why = "key cell op or timestamp";
    else if (t == RS_PK_INTEGER) {
      if (c->v.vt != PB_VT_INTEGER) *why = "key type";
      else if (tuple_put_int(key, c->v.i) != 0) return RS_PUT_OOM;
      else *size += (int64_t)c->name_len + 8;
    } else if (t == RS_PK_STRING ? c->v.vt != PB_VT_STRING
               : !(c->v.vt == PB_VT_BLOB || (loose && c->v.vt == PB_VT_STRING))) *why = "key type";
    else if (c->v.n > max_pk_cell) *why = "key value too long";
    else if (t == RS_PK_STRING && !row_utf8_valid(c->v.s, c->v.n)) *why = "key not UTF-8";
    else if (tuple_put_bytes(key, c->v.s, c->v.n) != 0) return RS_PUT_OOM;
    else *size += (int64_t)(c->name_len + c->v.n);
    if (*why != NULL) return RS_PUT_OTHER;
  }
  return RS_PUT_OK;
}

/* buf[0..n) as a PlainBuffer buffer of exactly one row, into *row (zeroed
 * by the caller, freed by it): NULL, or why not (static text) */
static const char *one_row(const void *buf, size_t n, pb_row *row) {
  pb_reader r;
  pb_row extra;
  const char *why = NULL;
  memset(&extra, 0, sizeof extra);
  if (!pb_reader_init(&r, buf, n)) why = "not PlainBuffer";
  else if (pb_read_row(&r, row) != 1) why = "no row";
  else if (pb_read_row(&r, &extra) != 0) why = "more than one row";
  pb_row_free(&extra);
  return why;
}

int rs_get_key(const void *buf, size_t n, const rs_opts *o, size_t max_pk_cell, tuple_buf *key, const char **why) {
  pb_row row;
  int64_t size = 0;
  int rc = RS_PUT_OTHER;
  memset(&row, 0, sizeof row);
  *why = one_row(buf, n, &row);
  if (*why == NULL && (row.deleted || row.ncells != row.npk)) *why = "not a key alone";
  if (*why == NULL) rc = key_cells(&row, o, max_pk_cell, 0, key, &size, why);
  pb_row_free(&row);
  return rc;
}

#define PUT_OTHER(w) do { *why = (w); rc = RS_PUT_OTHER; goto done; } while (0)

int rs_put_row(const void *buf, size_t n, const rs_opts *o, const rs_put_limits *lim,
               tuple_buf *key, unsigned char **val, size_t *vlen, int64_t *size, int *any_ts,
               const char **why) {
  pb_row row;
  row_cell small[16], *cells = small;
  const pb_cell *dsmall[16], **dup = dsmall;
  size_t i, j, na, total = 0, off = 0;
  int rc = RS_PUT_OK;
  unsigned char *out = NULL;
  memset(&row, 0, sizeof row);
  *val = NULL; *vlen = 0; *size = 0; *any_ts = 0; *why = NULL;
  *why = one_row(buf, n, &row);
  if (*why != NULL) { rc = RS_PUT_OTHER; goto done; }
  if (row.deleted) PUT_OTHER("the delete marker");
  rc = key_cells(&row, o, lim->max_pk_cell, 1, key, size, why);
  if (rc != RS_PUT_OK) goto done;
  na = row.ncells - row.npk;
  if (na > lim->max_cols) PUT_OTHER("too many cells");
  if (na > sizeof small / sizeof small[0]) {
    cells = (row_cell *)malloc(na * sizeof *cells);
    dup = (const pb_cell **)malloc(na * sizeof *dup);
    if (cells == NULL || dup == NULL) { rc = RS_PUT_OOM; goto done; }
  }
  for (i = 0; i < na; i++) {
    const pb_cell *c = &row.cells[row.npk + i];
    row_cell *rc_ = &cells[i];
    if (c->op != PB_OP_NONE) PUT_OTHER("an update op");
    if (!rs_valid_name(c->name, c->name_len)) PUT_OTHER("bad name");
    for (j = 0; j < o->npk; j++)
      if (c->name_len == o->pk_name[j].n && memcmp(c->name, o->pk_name[j].s, c->name_len) == 0) PUT_OTHER("a key name");
    memset(rc_, 0, sizeof *rc_);
    rc_->name = c->name;
    rc_->name_len = c->name_len;
    switch (c->v.vt) {
    case PB_VT_INTEGER: rc_->type = ROW_INTEGER; rc_->i = c->v.i; *size += 8; break;
    case PB_VT_DOUBLE:
      if (c->v.d != c->v.d || c->v.d > 1.7976931348623157e308 || c->v.d < -1.7976931348623157e308) PUT_OTHER("NaN or infinite");
      rc_->type = ROW_DOUBLE; rc_->d = c->v.d; *size += 8; break;
    case PB_VT_BOOLEAN: rc_->type = c->v.i ? ROW_TRUE : ROW_FALSE; *size += 1; break;
    case PB_VT_STRING: case PB_VT_BLOB:
      if (c->v.n > lim->max_cell) PUT_OTHER("value too long");
      if (c->v.vt == PB_VT_STRING && !row_utf8_valid(c->v.s, c->v.n)) PUT_OTHER("not UTF-8");
      rc_->type = c->v.vt == PB_VT_STRING ? ROW_STRING : ROW_BINARY;
      rc_->s = c->v.s; rc_->s_len = c->v.n; *size += (int64_t)c->v.n;
      break;
    default: PUT_OTHER("value type");
    }
    *size += (int64_t)c->name_len;
    rc_->has_ts = 1;
    if (c->has_ts) {
      if (c->ts < 0 || c->ts < lim->now - lim->dev || c->ts > lim->now + lim->dev) PUT_OTHER("timestamp");
      rc_->ts = c->ts;
      *any_ts = 1;
    } else {
      rc_->ts = lim->now;
    }
    dup[i] = c;
  }
  if (*size > lim->max_row) PUT_OTHER("row too large");
  qsort(dup, na, sizeof *dup, dup_cmp);
  for (i = 1; i < na; i++)
    if (dup_cmp(&dup[i - 1], &dup[i]) == 0) PUT_OTHER("a duplicate cell");
  row_sort(cells, na);
  for (i = 0; i < na; i++) total += row_cell_size(&cells[i]);
  out = (unsigned char *)malloc(total ? total : 1);
  if (out == NULL) { rc = RS_PUT_OOM; goto done; }
  for (i = 0; i < na; i++) off += row_put_cell(out + off, &cells[i]);
  *val = out;
  *vlen = off;
  out = NULL;
done:
  free(out);
  if (cells != small) free(cells);
  if (dup != dsmall) free((void *)dup);
  pb_row_free(&row);
  return rc;
}
