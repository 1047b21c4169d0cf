/* vec.c -- float32 vectors and the exact top-k (see vec.h). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vec.h"

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

int vec_pack(const double *x, size_t n, unsigned char *out) {
  size_t i;
  for (i = 0; i < n; i++) {
    double d = x[i];
    uint32_t u;
    if (!(d == d) || d > FLT_MAX || d < -FLT_MAX) return -1;
    u = f2u((float)d);
    out[4 * i] = (unsigned char)(u & 0xff);
    out[4 * i + 1] = (unsigned char)((u >> 8) & 0xff);
    out[4 * i + 2] = (unsigned char)((u >> 16) & 0xff);
    out[4 * i + 3] = (unsigned char)(u >> 24);
  }
  return 0;
}

float vec_get(const unsigned char *b, size_t i) {
  const unsigned char *p = b + 4 * i;
  return u2f((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

double vec_score(int metric, const float *q, double qn, const unsigned char *v, size_t n) {
  size_t i;
  if (metric == VEC_EUCLIDEAN) {
    double s = 0;
    for (i = 0; i < n; i++) {
      double d = (double)q[i] - (double)vec_get(v, i);
      s = s + d * d;
    }
    return 1 / (1 + s);
  } else {
    double dot = 0, vn = 0;
    for (i = 0; i < n; i++) {
      double y = (double)vec_get(v, i);
      dot = dot + (double)q[i] * y;
      vn = vn + y * y;
    }
    if (metric == VEC_DOT_PRODUCT) return (1 + dot) / 2;
    if (vn == 0 || qn == 0) return 0;
    return (1 + dot / sqrt(qn * vn)) / 2;
  }
}

/* ---- the vec_topk aggregate ---- */

typedef struct hit { sqlite3_int64 id; double s; } hit;

typedef struct topk {
  int ready, metric;
  size_t k, n, dim;
  float *q;
  double qn;
  hit *h; /* a heap whose root is the worst hit kept */
} topk;

/* a is worse than b: a lower score, or the same score and a higher id */
static int worse(const hit *a, const hit *b) { return a->s < b->s || (a->s == b->s && a->id > b->id); }

static void sift_up(hit *h, size_t i) {
  while (i > 0) {
    size_t p = (i - 1) / 2;
    hit t;
    if (!worse(&h[i], &h[p])) break;
    t = h[i]; h[i] = h[p]; h[p] = t;
    i = p;
  }
}

static void sift_down(hit *h, size_t n, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    hit t;
    if (l < n && worse(&h[l], &h[m])) m = l;
    if (r < n && worse(&h[r], &h[m])) m = r;
    if (m == i) break;
    t = h[i]; h[i] = h[m]; h[m] = t;
    i = m;
  }
}

static int start(sqlite3_context *c, topk *t, sqlite3_value **v) {
  sqlite3_int64 k = sqlite3_value_int64(v[0]);
  int metric = sqlite3_value_int(v[1]);
  const unsigned char *q = (const unsigned char *)sqlite3_value_blob(v[2]);
  size_t qlen = (size_t)sqlite3_value_bytes(v[2]), i;
  if (k < 1 || k > VEC_MAX_K || metric < 0 || metric > 2 || sqlite3_value_type(v[2]) != SQLITE_BLOB || qlen == 0 ||
      qlen % 4 != 0) {
    sqlite3_result_error(c, "vec_topk: bad k, metric or query vector", -1);
    return -1;
  }
  t->k = (size_t)k;
  t->metric = metric;
  t->dim = qlen / 4;
  t->q = malloc(t->dim * sizeof *t->q);
  t->h = malloc(t->k * sizeof *t->h);
  if (t->q == NULL || t->h == NULL) {
    free(t->q); free(t->h); t->q = NULL; t->h = NULL;
    sqlite3_result_error_nomem(c);
    return -1;
  }
  t->qn = 0;
  for (i = 0; i < t->dim; i++) {
    t->q[i] = vec_get(q, i);
    t->qn = t->qn + (double)t->q[i] * (double)t->q[i];
  }
  t->ready = 1;
  return 0;
}

static void step(sqlite3_context *c, int argc, sqlite3_value **v) {
  topk *t = (topk *)sqlite3_aggregate_context(c, sizeof *t);
  hit x;
  (void)argc;
  if (t == NULL) { sqlite3_result_error_nomem(c); return; }
  if (!t->ready && start(c, t, v) != 0) return;
  if (sqlite3_value_type(v[3]) != SQLITE_BLOB || (size_t)sqlite3_value_bytes(v[3]) != 4 * t->dim) return;
  x.id = sqlite3_value_int64(v[4]);
  x.s = vec_score(t->metric, t->q, t->qn, (const unsigned char *)sqlite3_value_blob(v[3]), t->dim);
  if (x.s != x.s) return; /* no NaN: the values are finite floats, kept for safety */
  if (t->n < t->k) {
    t->h[t->n] = x;
    sift_up(t->h, t->n);
    t->n++;
  } else if (worse(&t->h[0], &x)) {
    t->h[0] = x;
    sift_down(t->h, t->n, 0);
  }
}

static int best_first(const void *a, const void *b) {
  const hit *x = (const hit *)a, *y = (const hit *)b;
  if (worse(y, x)) return -1;
  if (worse(x, y)) return 1;
  return 0;
}

static void final(sqlite3_context *c) {
  topk *t = (topk *)sqlite3_aggregate_context(c, 0);
  size_t i, cap, len = 0;
  char *out;
  if (t == NULL || t->n == 0) {
    sqlite3_result_text(c, "{}", 2, SQLITE_STATIC);
    if (t) { free(t->q); free(t->h); }
    return;
  }
  qsort(t->h, t->n, sizeof *t->h, best_first);
  cap = 2 + t->n * 48; /* "k" + 20 digits + ":" + 24 of a %.17g double + "," */
  out = sqlite3_malloc64(cap);
  if (out == NULL) { free(t->q); free(t->h); sqlite3_result_error_nomem(c); return; }
  out[len++] = '{';
  for (i = 0; i < t->n; i++) {
    int w = snprintf(out + len, cap - len, "%s\"k%lld\":%.17g", i ? "," : "", (long long)t->h[i].id, t->h[i].s);
    if (w < 0 || (size_t)w >= cap - len) { sqlite3_free(out); free(t->q); free(t->h);
      sqlite3_result_error(c, "vec_topk: result overflow", -1); return; }
    len += (size_t)w;
  }
  out[len++] = '}';
  free(t->q);
  free(t->h);
  sqlite3_result_text(c, out, (int)len, sqlite3_free);
}

int vec_register(sqlite3 *db) {
  return sqlite3_create_function(db, "vec_topk", 5, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, NULL, step, final);
}
