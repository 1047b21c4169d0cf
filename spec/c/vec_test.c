/* vec_test.c -- vec.c: float32 packing, the three metrics against a
 * direct computation, and vec_topk against a full sort over random
 * vectors (ties included) in an in-memory SQLite database. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "vec.h"

typedef struct hit { long long id; double s; } hit;

static int best_first(const void *a, const void *b) {
  const hit *x = (const hit *)a, *y = (const hit *)b;
  if (x->s != y->s) return x->s > y->s ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

static double direct(int metric, const float *q, const float *v, size_t n) {
  double dot = 0, qn = 0, vn = 0, dd = 0;
  size_t i;
  for (i = 0; i < n; i++) {
    dot += (double)q[i] * v[i];
    qn += (double)q[i] * q[i];
    vn += (double)v[i] * v[i];
    dd += ((double)q[i] - v[i]) * ((double)q[i] - v[i]);
  }
  if (metric == VEC_EUCLIDEAN) return 1 / (1 + dd);
  if (metric == VEC_DOT_PRODUCT) return (1 + dot) / 2;
  return (qn == 0 || vn == 0) ? 0 : (1 + dot / sqrt(qn * vn)) / 2;
}

int main(void) {
  int round;
  double big[2] = {1, 3.5e38}, nan[1];
  unsigned char buf[16];
  nan[0] = 0.0 / 0.0;
  CHECK(vec_pack(big, 2, buf) == -1);
  CHECK(vec_pack(nan, 1, buf) == -1);
  srand(7);
  for (round = 0; round < 40; round++) {
    sqlite3 *db;
    sqlite3_stmt *ins, *sel;
    size_t dim = 1 + (size_t)(rand() % 16), n = (size_t)(rand() % 300), i, j, k = 1 + (size_t)(rand() % 20);
    int metric = round % 3, grid = round % 2;
    double qd[16], vd[16];
    float q[16], v[16];
    unsigned char qb[64], vb[64];
    hit *all = malloc((n + 1) * sizeof *all);
    const char *out;
    CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
    CHECK(vec_register(db) == SQLITE_OK);
    sqlite3_exec(db, "CREATE TABLE t (doc INTEGER, v BLOB)", NULL, NULL, NULL);
    sqlite3_prepare_v2(db, "INSERT INTO t VALUES (?1, ?2)", -1, &ins, NULL);
    for (j = 0; j < dim; j++) qd[j] = grid ? (rand() % 5) - 2 : (double)rand() / RAND_MAX - 0.5;
    CHECK(vec_pack(qd, dim, qb) == 0);
    for (j = 0; j < dim; j++) q[j] = vec_get(qb, j);
    for (i = 0; i < n; i++) {
      for (j = 0; j < dim; j++) vd[j] = grid ? (rand() % 5) - 2 : (double)rand() / RAND_MAX - 0.5;
      CHECK(vec_pack(vd, dim, vb) == 0);
      for (j = 0; j < dim; j++) { v[j] = vec_get(vb, j); CHECK(v[j] == (float)vd[j]); }
      all[i].id = (long long)(n - i); /* ids not in insertion order */
      all[i].s = direct(metric, q, v, dim);
      CHECK(vec_score(metric, q, 0, vb, dim) == vec_score(metric, q, 0, vb, dim));
      sqlite3_bind_int64(ins, 1, all[i].id);
      sqlite3_bind_blob(ins, 2, vb, (int)(4 * dim), SQLITE_TRANSIENT);
      sqlite3_step(ins);
      sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    qsort(all, n, sizeof *all, best_first);
    CHECK(sqlite3_prepare_v2(db, "SELECT vec_topk(?1, ?2, ?3, v, doc) FROM t", -1, &sel, NULL) == SQLITE_OK);
    sqlite3_bind_int64(sel, 1, (sqlite3_int64)k);
    sqlite3_bind_int(sel, 2, metric);
    sqlite3_bind_blob(sel, 3, qb, (int)(4 * dim), SQLITE_TRANSIENT);
    CHECK(sqlite3_step(sel) == SQLITE_ROW);
    out = (const char *)sqlite3_column_text(sel, 0);
    /* walk '{"k<id>":score,...}' in best-first order */
    CHECK(out[0] == '{');
    out++;
    for (i = 0; i < n && i < k; i++) {
      char *end;
      long long id;
      double s;
      CHECK(out[0] == '"' && out[1] == 'k');
      id = strtoll(out + 2, &end, 10);
      CHECK(end[0] == '"' && end[1] == ':');
      s = strtod(end + 2, &end);
      CHECK(id == all[i].id);
      CHECK(fabs(s - all[i].s) <= 1e-15 * fabs(all[i].s) + 1e-300);
      out = end + (*end == ',');
    }
    CHECK(*out == '}');
    sqlite3_finalize(sel);
    sqlite3_close(db);
    free(all);
  }
  return check_done();
}
