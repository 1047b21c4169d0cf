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
