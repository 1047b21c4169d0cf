/* docval.c -- doc values: see docval.h. */
#include "docval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TWO53 9007199254740992.0
#define TWO62 4611686018427387904.0
#define TWO63 9223372036854775808.0

void dv_col_free(dv_col *c) {
  free(c->has), free(c->i), free(c->d), free(c->o), free(c->dict), free(c->off);
  c->has = NULL, c->i = NULL, c->d = NULL, c->o = NULL, c->dict = NULL, c->off = NULL;
  c->n = 0, c->nd = 0, c->bytes = 0;
}

/* SQLite's BINARY collation: bytes, then length */
static int bincmp(const char *a, size_t an, const char *b, size_t bn) {
  int r = memcmp(a, b, an < bn ? an : bn);
  if (r) return r;
  return an < bn ? -1 : an > bn;
}

static int ord_add(dv_col *c, const char *s, size_t len, size_t *cap, size_t *used, int64_t *capd) {
  if (c->nd + 2 > *capd) {
    int64_t nc = *capd ? *capd * 2 : 1024;
    size_t *no = (size_t *)realloc(c->off, (size_t)nc * sizeof *no);
    if (no == NULL) return DV_NOMEM;
    c->off = no, *capd = nc;
  }
  if (*used + len + 1 > *cap) {
    size_t nc = *cap ? *cap * 2 : 65536;
    char *nd;
    while (nc < *used + len + 1) nc *= 2;
    nd = (char *)realloc(c->dict, nc);
    if (nd == NULL) return DV_NOMEM;
    c->dict = nd, *cap = nc;
  }
  if (len) memcpy(c->dict + *used, s, len);
  c->off[c->nd] = *used;
  *used += len;
  c->nd++;
  c->off[c->nd] = *used;
  return DV_OK;
}

int dv_col_load(dv_col *c, int kind, int64_t n, sqlite3_stmt *st) {
  int rc = DV_OK, step;
  size_t cap = 0, used = 0;
  int64_t capd = 0;
  memset(c, 0, sizeof *c);
  c->kind = kind;
  if (n < 0 || (uint64_t)n > SIZE_MAX / 16 || n > INT32_MAX * (int64_t)64) { sqlite3_reset(st); return DV_UNFIT; }
  c->has = (unsigned char *)calloc((size_t)(n / 8 + 1), 1);
  if (kind == DV_I64) c->i = (int64_t *)calloc((size_t)n + 1, sizeof *c->i);
  else if (kind == DV_F64) c->d = (double *)calloc((size_t)n + 1, sizeof *c->d);
  else c->o = (int32_t *)calloc((size_t)n + 1, sizeof *c->o);
  if (c->has == NULL || (c->i == NULL && c->d == NULL && c->o == NULL)) rc = DV_NOMEM;
  while (rc == DV_OK && (step = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t id = sqlite3_column_int64(st, 0);
    int t = sqlite3_column_type(st, 1);
    if (sqlite3_column_type(st, 0) != SQLITE_INTEGER || id < 0 || id >= n || (c->has[id >> 3] & (1u << (id & 7)))) {
      rc = DV_UNFIT; /* not a document id of the range, or twice */
      break;
    }
    if (kind == DV_I64) {
      if (t != SQLITE_INTEGER) { rc = DV_UNFIT; break; }
      c->i[id] = sqlite3_column_int64(st, 1);
    } else if (kind == DV_F64) {
      if (t == SQLITE_FLOAT) {
        double x = sqlite3_column_double(st, 1);
        if (x != x) { rc = DV_UNFIT; break; }
        c->d[id] = x;
      } else if (t == SQLITE_INTEGER) {
        /* (an integral double the binding stored as an INTEGER): a
         * double only when it is that integer exactly */
        int64_t x = sqlite3_column_int64(st, 1);
        double dx = (double)x;
        if (!(dx >= -TWO63 && dx < TWO63) || (int64_t)dx != x) { rc = DV_UNFIT; break; }
        c->d[id] = dx;
      } else { rc = DV_UNFIT; break; }
    } else {
      const char *s;
      size_t len;
      if (t != SQLITE_TEXT) { rc = DV_UNFIT; break; }
      s = (const char *)sqlite3_column_text(st, 1);
      len = (size_t)sqlite3_column_bytes(st, 1);
      if (s == NULL) { rc = DV_NOMEM; break; }
      if (c->nd > 0) {
        int r = bincmp(c->dict + c->off[c->nd - 1], c->off[c->nd] - c->off[c->nd - 1], s, len);
        if (r > 0) { rc = DV_UNFIT; break; } /* not in BINARY order */
        if (r < 0) rc = ord_add(c, s, len, &cap, &used, &capd);
      } else rc = ord_add(c, s, len, &cap, &used, &capd);
      if (rc != DV_OK) break;
      if (c->nd > INT32_MAX) { rc = DV_UNFIT; break; }
      c->o[id] = (int32_t)(c->nd - 1);
    }
    c->has[id >> 3] |= (unsigned char)(1u << (id & 7));
  }
  if (rc == DV_OK && step != SQLITE_DONE) rc = step;
  sqlite3_reset(st);
  if (rc != DV_OK) {
    dv_col_free(c);
    return rc;
  }
  c->n = n;
  c->bytes = (size_t)(n / 8 + 1) + (size_t)(n + 1) * (kind == DV_ORD ? sizeof(int32_t) : 8) + cap +
             (size_t)capd * sizeof(size_t);
  return DV_OK;
}

/* the first ordinal whose value is >= s (after: > s) */
static int64_t ord_bound(const dv_col *c, const char *s, size_t len, int after) {
  int64_t lo = 0, hi = c->nd;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    int r = bincmp(c->dict + c->off[mid], c->off[mid + 1] - c->off[mid], s, len);
    if (r < 0 || (after && r == 0)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* an integer column's lower bound from v (incl: >=, else >): *out, or
 * *none when no integer meets it */
static int int_lo(const dv_val *v, int incl, int64_t *out, int *none) {
  if (v->type == SQLITE_INTEGER) {
    if (incl) *out = v->i;
    else if (v->i == INT64_MAX) *none = 1;
    else *out = v->i + 1;
    return DV_OK;
  }
  if (v->type == SQLITE_FLOAT) {
    if (!(fabs(v->d) < TWO62)) return DV_UNFIT;
    *out = incl ? (int64_t)ceil(v->d) : (int64_t)floor(v->d) + 1;
    return DV_OK;
  }
  return DV_UNFIT;
}

static int int_hi(const dv_val *v, int incl, int64_t *out, int *none) {
  if (v->type == SQLITE_INTEGER) {
    if (incl) *out = v->i;
    else if (v->i == INT64_MIN) *none = 1;
    else *out = v->i - 1;
    return DV_OK;
  }
  if (v->type == SQLITE_FLOAT) {
    if (!(fabs(v->d) < TWO62)) return DV_UNFIT;
    *out = incl ? (int64_t)floor(v->d) : (int64_t)ceil(v->d) - 1;
    return DV_OK;
  }
  return DV_UNFIT;
}

/* a REAL column's bound from v: a double it equals exactly */
static int dbl_of(const dv_val *v, double *out) {
  if (v->type == SQLITE_FLOAT) { *out = v->d; return DV_OK; }
  if (v->type == SQLITE_INTEGER && (double)v->i <= TWO53 && (double)v->i >= -TWO53) {
    *out = (double)v->i;
    return DV_OK;
  }
  return DV_UNFIT;
}

int dv_clause_exists(dv_clause *cl, const dv_col *col, int neg) {
  memset(cl, 0, sizeof *cl);
  cl->col = col, cl->neg = neg, cl->op = DV_EXISTS;
  return DV_OK;
}

int dv_clause_range(dv_clause *cl, const dv_col *col, int neg, const dv_val *lo, int lo_in, const dv_val *hi,
                    int hi_in) {
  int none = 0, rc = DV_OK;
  memset(cl, 0, sizeof *cl);
  cl->col = col, cl->neg = neg, cl->op = DV_RANGE;
  if ((lo && lo->type == SQLITE_NULL) || (hi && hi->type == SQLITE_NULL)) { /* v >= NULL: never true */
    cl->op = DV_NEVER;
    return DV_OK;
  }
  if (col->kind == DV_I64) {
    cl->lo = INT64_MIN, cl->hi = INT64_MAX;
    if (lo) rc = int_lo(lo, lo_in, &cl->lo, &none);
    if (rc == DV_OK && hi) rc = int_hi(hi, hi_in, &cl->hi, &none);
  } else if (col->kind == DV_ORD) {
    cl->lo = 0, cl->hi = col->nd - 1;
    if (lo) {
      if (lo->type != SQLITE_TEXT) return DV_UNFIT;
      cl->lo = ord_bound(col, lo->s, lo->len, !lo_in);
    }
    if (hi) {
      if (hi->type != SQLITE_TEXT) return DV_UNFIT;
      cl->hi = ord_bound(col, hi->s, hi->len, hi_in) - 1;
    }
  } else {
    if (lo) rc = dbl_of(lo, &cl->dlo), cl->has_lo = 1, cl->lo_in = lo_in;
    if (rc == DV_OK && hi) rc = dbl_of(hi, &cl->dhi), cl->has_hi = 1, cl->hi_in = hi_in;
  }
  if (rc != DV_OK) return rc;
  if (none) cl->op = DV_NEVER;
  return DV_OK;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int dv_clause_in(dv_clause *cl, const dv_col *col, int neg, const dv_val *vals, int n) {
  int k, m = 0;
  memset(cl, 0, sizeof *cl);
  cl->col = col, cl->neg = neg, cl->op = DV_IN;
  if (n <= 0) return DV_UNFIT;
  if (col->kind == DV_F64) cl->dset = (double *)malloc((size_t)n * sizeof *cl->dset);
  else cl->set = (int64_t *)malloc((size_t)n * sizeof *cl->set);
  if (cl->dset == NULL && cl->set == NULL) return DV_NOMEM;
  for (k = 0; k < n; k++) { /* v IN (a, b, ...): v = a OR v = b ...; a NULL element matches nothing */
    const dv_val *v = &vals[k];
    if (v->type == SQLITE_NULL) continue;
    if (col->kind == DV_I64) {
      if (v->type == SQLITE_INTEGER) cl->set[m++] = v->i;
      else if (v->type == SQLITE_FLOAT) {
        if (!(fabs(v->d) < TWO62)) { dv_clause_free(cl); return DV_UNFIT; }
        if (v->d == floor(v->d)) cl->set[m++] = (int64_t)v->d;
      } else { dv_clause_free(cl); return DV_UNFIT; }
    } else if (col->kind == DV_F64) {
      if (dbl_of(v, &cl->dset[m]) != DV_OK) { dv_clause_free(cl); return DV_UNFIT; }
      m++;
    } else {
      int64_t o;
      if (v->type != SQLITE_TEXT) { dv_clause_free(cl); return DV_UNFIT; }
      o = ord_bound(col, v->s, v->len, 0);
      if (o < col->nd && bincmp(col->dict + col->off[o], col->off[o + 1] - col->off[o], v->s, v->len) == 0)
        cl->set[m++] = o;
    }
  }
  cl->nset = m;
  if (m == 0) cl->op = DV_NEVER;
  else if (cl->set) qsort(cl->set, (size_t)m, sizeof *cl->set, cmp_i64);
  else qsort(cl->dset, (size_t)m, sizeof *cl->dset, cmp_dbl);
  return DV_OK;
}

void dv_clause_free(dv_clause *cl) {
  free(cl->set), free(cl->dset);
  cl->set = NULL, cl->dset = NULL, cl->nset = 0;
}

static int in_i64(const int64_t *s, int n, int64_t x) {
  int lo = 0, hi = n;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (s[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && s[lo] == x;
}

static int in_dbl(const double *s, int n, double x) {
  int lo = 0, hi = n;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (s[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && s[lo] == x;
}

int dv_test(const dv_filter *f, int64_t id) {
  int k;
  for (k = 0; k < f->n; k++) {
    const dv_clause *cl = &f->c[k];
    const dv_col *c = cl->col;
    int r = 0;
    if (id < 0 || id >= c->n) return -1;
    if (c->has[id >> 3] & (1u << (id & 7))) {
      switch (cl->op) {
      case DV_EXISTS: r = 1; break;
      case DV_NEVER: r = 0; break;
      case DV_RANGE:
        if (c->kind == DV_I64) r = c->i[id] >= cl->lo && c->i[id] <= cl->hi;
        else if (c->kind == DV_ORD) r = c->o[id] >= cl->lo && c->o[id] <= cl->hi;
        else {
          double x = c->d[id];
          r = (!cl->has_lo || (cl->lo_in ? x >= cl->dlo : x > cl->dlo)) &&
              (!cl->has_hi || (cl->hi_in ? x <= cl->dhi : x < cl->dhi));
        }
        break;
      case DV_IN:
        if (c->kind == DV_I64) r = in_i64(cl->set, cl->nset, c->i[id]);
        else if (c->kind == DV_ORD) r = in_i64(cl->set, cl->nset, c->o[id]);
        else r = in_dbl(cl->dset, cl->nset, c->d[id]);
        break;
      default: return -1;
      }
    }
    if (r == cl->neg) return 0;
  }
  return 1;
}

int64_t dv_count(const dv_clause *cl) {
  const dv_col *c = cl->col;
  int64_t id, n = 0;
  if (c->n == 0) return -1;
  if (cl->op == DV_NEVER) return cl->neg ? -1 : 0;
  if (cl->op == DV_RANGE && !cl->neg && c->kind == DV_I64) {
    for (id = 0; id < c->n; id++)
      n += ((c->has[id >> 3] >> (id & 7)) & 1) && c->i[id] >= cl->lo && c->i[id] <= cl->hi;
    return n;
  }
  if (cl->op == DV_RANGE && !cl->neg && c->kind == DV_F64) {
    for (id = 0; id < c->n; id++) {
      double x;
      if (!((c->has[id >> 3] >> (id & 7)) & 1)) continue;
      x = c->d[id];
      n += (!cl->has_lo || (cl->lo_in ? x >= cl->dlo : x > cl->dlo)) &&
           (!cl->has_hi || (cl->hi_in ? x <= cl->dhi : x < cl->dhi));
    }
    return n;
  }
  {
    dv_filter f;
    f.n = 1, f.c = (dv_clause *)cl;
    for (id = 0; id < c->n; id++) {
      int r = dv_test(&f, id);
      if (r < 0) return -1;
      n += r;
    }
  }
  return n;
}

static void f_dv(sqlite3_context *cx, int argc, sqlite3_value **argv) {
  const dv_filter *f = (const dv_filter *)sqlite3_value_pointer(argv[0], DV_PTR_TYPE);
  int r;
  (void)argc;
  if (f == NULL) {
    sqlite3_result_error(cx, "otskit_dv: no filter", -1);
    return;
  }
  if (sqlite3_value_type(argv[1]) != SQLITE_INTEGER) {
    sqlite3_result_error(cx, "otskit_dv: not a document id", -1);
    return;
  }
  r = dv_test(f, sqlite3_value_int64(argv[1]));
  if (r < 0) {
    sqlite3_result_error(cx, "otskit_dv: a document the doc values do not hold", -1);
    return;
  }
  sqlite3_result_int(cx, r);
}

int dv_register(sqlite3 *db) {
  return sqlite3_create_function(db, "otskit_dv", 2, SQLITE_UTF8 | SQLITE_DIRECTONLY, NULL, f_dv, NULL, NULL);
}

int dv_stamp(sqlite3 *db, unsigned *data_version, int64_t *changes) {
  unsigned v = 0;
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_DATA_VERSION, &v) != SQLITE_OK) return 0;
  *data_version = v;
  *changes = (int64_t)sqlite3_total_changes64(db);
  return 1;
}
