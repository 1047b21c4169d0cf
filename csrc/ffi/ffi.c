/* ffi.c -- the exported C ABI of core.so (otskit_ffi.h): thin wrappers
 * over the plain C parts, shaped for LuaJIT's FFI (no structs by value, no
 * int64 results, which LuaJIT would box). The logic is in the plain parts
 * (num.c, hash.c, splice.c, tuple.c, merge.c), which the Lua C API
 * bindings call too, so both paths compute the same answers. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hash.h"
#include "merge.h"
#include "num.h"
#include "otskit_ffi.h"
#include "plainbuffer.h"
#include "tuple.h"

struct otskit_tuple { tuple_buf b; };

#define TUPLE_KEEP 65536   /* larger buffers are released by reset */

int otskit_ffi_abi(void) { return OTSKIT_FFI_ABI; }

size_t otskit_splice_out_size(void) { return sizeof(otskit_splice_out); }

double otskit_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int otskit_parse_int64(const char *s, size_t n, int64_t *out) { return num_parse_int64(s, n, out); }

int otskit_int64_text(int64_t v, char *out) { return num_int64_text(v, out); }

void otskit_prefix_encode(int algo, int ndigits, const char *p, size_t n, char *out) {
  hash_prefix_key((hash_algo)algo, ndigits, p, n, out);
}

int32_t otskit_bucket_mod(int64_t v, int32_t nb) { return num_bucket_mod(v, nb); }

int32_t otskit_bucket_hash(int algo, const char *p, size_t n, int32_t nb) {
  return num_bucket_hash((hash_algo)algo, p, n, nb);
}

int otskit_splice_put_int(const otskit_splice *sp, int i, int64_t v, otskit_splice_out *o) {
  return (int)splice_put_int(sp, i, v, o);
}

int otskit_splice_put_string(const otskit_splice *sp, int i, const char *s, size_t n,
                             otskit_splice_out *o, size_t *bad) {
  return (int)splice_put_string(sp, i, s, n, o, bad);
}

otskit_tuple *otskit_tuple_new(void) {
  otskit_tuple *t = (otskit_tuple *)malloc(sizeof *t);
  if (t) tuple_buf_init(&t->b);
  return t;
}

void otskit_tuple_free(otskit_tuple *t) {
  if (t == NULL) return;
  tuple_buf_free(&t->b);
  free(t);
}

void otskit_tuple_reset(otskit_tuple *t) {
  if (t->b.cap > TUPLE_KEEP) tuple_buf_free(&t->b);
  t->b.len = 0;
}

int otskit_tuple_put_nil(otskit_tuple *t, int desc) {
  return desc ? tuple_put_nil_desc(&t->b) : tuple_put_nil(&t->b);
}

int otskit_tuple_put_bytes(otskit_tuple *t, const char *s, size_t n) {
  return tuple_put_bytes(&t->b, s, n);
}

int otskit_tuple_put_text(otskit_tuple *t, const char *s, size_t n) {
  return tuple_put_text(&t->b, s, n);
}

int otskit_tuple_put_int(otskit_tuple *t, int64_t v) { return tuple_put_int(&t->b, v); }

/* the NaN rule of ltuple.c: LuaJIT keeps no NaN sign or payload */
int otskit_tuple_put_double(otskit_tuple *t, double v) {
  if (v != v) {
    uint64_t u = (uint64_t)0x7FF8 << 48;
    memcpy(&v, &u, 8);
  }
  return tuple_put_double(&t->b, v);
}

int otskit_tuple_put_bool(otskit_tuple *t, int v) { return tuple_put_bool(&t->b, v); }

const char *otskit_tuple_finish(otskit_tuple *t, int desc, size_t *len) {
  if (desc && tuple_finish_desc(&t->b, 0)) return NULL;
  *len = t->b.len;
  return t->b.len ? (const char *)t->b.p : "";
}

/* The ABI's merge constants are merge.h's (a negative array size fails the build). */
#define SAME(a, b) typedef char same_##a[(int)(a) == (int)(b) ? 1 : -1]
SAME(OTSKIT_MERGE_MORE, MERGE_MORE);
SAME(OTSKIT_MERGE_NEED, MERGE_NEED);
SAME(OTSKIT_MERGE_END, MERGE_END);
SAME(OTSKIT_MERGE_ENOMEM, MERGE_ENOMEM);
SAME(OTSKIT_MERGE_OK, MERGE_OK);
SAME(OTSKIT_MERGE_EOOM, MERGE_EOOM);
SAME(OTSKIT_MERGE_ESRC, MERGE_ESRC);
SAME(OTSKIT_MERGE_ESTATE, MERGE_ESTATE);
SAME(OTSKIT_MERGE_EORDER, MERGE_EORDER);
SAME(OTSKIT_SOURCE_PENDING, MERGE_S_PENDING);
SAME(OTSKIT_SOURCE_ROWS, MERGE_S_ROWS);
SAME(OTSKIT_SOURCE_DONE, MERGE_S_DONE);
typedef char same_item_size[sizeof(otskit_merge_item) == sizeof(merge_item) ? 1 : -1];

#define M(m) ((merge *)(void *)(m))

int otskit_merge_begin(otskit_merge *m, int src, size_t nrows) {
  return merge_begin(M(m), src, nrows);
}

int otskit_merge_add_n(otskit_merge *m, int src, const char **keys, const size_t *lens,
                       size_t n, size_t *added) {
  return merge_add_n(M(m), src, keys, lens, n, added);
}

void otskit_merge_end(otskit_merge *m, int src, int done) { merge_end(M(m), src, done); }

void otskit_merge_abort(otskit_merge *m, int src) { merge_abort(M(m), src); }

int otskit_merge_pull(otskit_merge *m, otskit_merge_item *out, size_t max, size_t *n) {
  return (int)merge_pull(M(m), (merge_item *)(void *)out, max, n);
}

int otskit_merge_need(const otskit_merge *m) { return merge_need((const merge *)(const void *)m); }

int otskit_merge_state(const otskit_merge *m, int src) {
  return merge_state((const merge *)(const void *)m, src);
}

uint64_t otskit_merge_bound(const otskit_merge *m) {
  return merge_bound((const merge *)(const void *)m);
}

void otskit_merge_prefetch(const char **keys, size_t n) { merge_prefetch(keys, n); }

/* ------------------------------------------------------------ PlainBuffer rows */

struct otskit_pb_dec {
  pb_reader r;
  pb_row row;
  otskit_pb_cell *cells;
  size_t cap;
  pb_order order; /* of the rows read since otskit_pb_open */
};

#define TWO53 9007199254740992LL

otskit_pb_dec *otskit_pb_new(void) { return (otskit_pb_dec *)calloc(1, sizeof(otskit_pb_dec)); }

void otskit_pb_free(otskit_pb_dec *d) {
  if (d == NULL) return;
  pb_row_free(&d->row);
  free(d->cells);
  free(d);
}

int otskit_pb_open(otskit_pb_dec *d, const char *buf, size_t n) {
  pb_order_init(&d->order);
  return pb_reader_init(&d->r, buf, n);
}

int otskit_pb_order(const otskit_pb_dec *d) { return d->order.flags; }

/* d->row as otskit_pb_cells into d->cells and *out: 1, or -1 out of memory */
static int pb_fill(otskit_pb_dec *d, const otskit_pb_names *nm, otskit_pb_row *out) {
  const pb_row *row = &d->row;
  const pb_cell *prev = NULL;
  size_t i;
  if (row->ncells > d->cap) {
    size_t cap = d->cap ? d->cap : 16;
    otskit_pb_cell *c;
    while (cap < row->ncells) cap *= 2;
    c = (otskit_pb_cell *)realloc(d->cells, cap * sizeof *c);
    if (c == NULL) return -1;
    d->cells = c;
    d->cap = cap;
  }
  for (i = 0; i < row->ncells; i++) {
    const pb_cell *c = &row->cells[i];
    otskit_pb_cell *o = &d->cells[i];
    int attr = i >= row->npk;
    size_t pos = attr ? i - row->npk : i;
    memset(o, 0, sizeof *o);
    o->name = c->name;
    o->name_len = c->name_len;
    o->vt = c->v.vt;
    o->op = c->op;
    o->i = c->v.i;
    switch (c->v.vt) {
    case PB_VT_INTEGER:
      if (c->v.i > TWO53 || c->v.i < -TWO53) o->big = 1;
      else o->num = (double)c->v.i;
      break;
    case PB_VT_DOUBLE: o->num = c->v.d; break;
    case PB_VT_BOOLEAN: o->num = c->v.i ? 1 : 0; break;
    case PB_VT_STRING: case PB_VT_BLOB: o->s = c->v.s; o->n = c->v.n; break;
    default: break;
    }
    if (c->has_ts) {
      o->ts64 = c->ts;
      if (c->ts > TWO53 || c->ts < -TWO53) o->has_ts = 2;
      else { o->has_ts = 1; o->ts = (double)c->ts; }
    }
    if (pos < 16) {
      int slot = (attr ? 16 : 0) + (int)pos;
      o->slot = slot;
      o->fresh = !(nm->s[slot] && nm->n[slot] == c->name_len && memcmp(nm->s[slot], c->name, c->name_len) == 0);
    } else {
      o->slot = -1;
      o->fresh = 1;
    }
    /* the first cell of a name (not an update op) is its newest version */
    if (attr && !c->op && (!prev || prev->name_len != c->name_len || memcmp(prev->name, c->name, c->name_len) != 0)) {
      o->newest = 1;
      prev = c;
    }
  }
  out->cells = d->cells;
  out->npk = (int32_t)row->npk;
  out->ncells = (int32_t)row->ncells;
  out->deleted = row->deleted ? 1 : 0;
  return 1;
}

int otskit_pb_next(otskit_pb_dec *d, const otskit_pb_names *nm, otskit_pb_row *out) {
  int rc = pb_read_row(&d->r, &d->row);
  const pb_row *pr = &d->row;
  if (rc != 1) return rc;
  pb_order_add(&d->order, pr);
  /* the attribute cells start 6 bytes before the first one's name */
  out->attr_at = pr->ncells > pr->npk ? (size_t)((const unsigned char *)pr->cells[pr->npk].name - 6 - d->r.start)
                                      : (size_t)(d->r.p - d->r.start);
  return pb_fill(d, nm, out);
}

int otskit_pb_cells(otskit_pb_dec *d, const char *buf, size_t n, size_t off, const otskit_pb_names *nm,
                    otskit_pb_row *out) {
  if (off > n) return -1;
  d->r.start = (const unsigned char *)buf;
  d->r.p = d->r.start + off;
  d->r.end = d->r.start + n;
  d->r.err = NULL;
  d->r.err_at = 0;
  d->r.trusted = 1; /* checked by otskit_pb_next */
  if (pb_read_cells(&d->r, &d->row) != 1) return -1;
  out->attr_at = off;
  return pb_fill(d, nm, out);
}

int otskit_pb_is(const otskit_pb_cell *c, const char *s, size_t n) {
  return (c->vt == PB_VT_STRING || c->vt == PB_VT_BLOB) && c->n == n && (n == 0 || memcmp(c->s, s, n) == 0);
}
