/* kvsql.c -- cached SQL statements and geo functions on a kv connection. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kvsql.h"
#include "vec.h"
#include "bucket.h"
#include "docval.h"

typedef struct entry {
  char *text;
  size_t len;
  sqlite3_stmt *st;
  unsigned long used;
} entry;

typedef struct kvsql {
  entry e[KVSQL_CACHE];
  int n;
  unsigned long clock;
  int64_t deadline;      /* kvsql_deadline: monotonic ms */
  int armed, fired;
} kvsql;

static void ext_free(void *p) {
  kvsql *x = (kvsql *)p;
  int i;
  if (x == NULL) return;
  for (i = 0; i < x->n; i++) { sqlite3_finalize(x->e[i].st); free(x->e[i].text); }
  free(x);
}

#define EARTH_R 6371008.8
#define DEG (3.14159265358979323846 / 180.0)

double kvsql_geo_dist(double lat1, double lon1, double lat2, double lon2) {
  double dlat = (lat2 - lat1) * DEG, dlon = (lon2 - lon1) * DEG;
  double a = sin(dlat / 2) * sin(dlat / 2) + cos(lat1 * DEG) * cos(lat2 * DEG) * sin(dlon / 2) * sin(dlon / 2);
  if (a > 1) a = 1;
  return 2 * EARTH_R * asin(sqrt(a));
}

int kvsql_in_poly(double lat, double lon, const double *lats, const double *lons, size_t n) {
  size_t i, j;
  int in = 0;
  for (i = 0, j = n - 1; i < n; j = i++) {
    double yi = lats[i], xi = lons[i], yj = lats[j], xj = lons[j];
    /* on an edge: inside */
    double cross = (xj - xi) * (lat - yi) - (yj - yi) * (lon - xi);
    if (fabs(cross) < 1e-12 && lon >= fmin(xi, xj) && lon <= fmax(xi, xj) && lat >= fmin(yi, yj) &&
        lat <= fmax(yi, yj))
      return 1;
    if (((yi > lat) != (yj > lat)) && (lon < (xj - xi) * (lat - yi) / (yj - yi) + xi)) in = !in;
  }
  return in;
}

static void f_geo_dist(sqlite3_context *c, int argc, sqlite3_value **v) {
  int i;
  (void)argc;
  for (i = 0; i < 4; i++)
    if (sqlite3_value_type(v[i]) == SQLITE_NULL) { sqlite3_result_null(c); return; }
  sqlite3_result_double(c, kvsql_geo_dist(sqlite3_value_double(v[0]), sqlite3_value_double(v[1]),
                                          sqlite3_value_double(v[2]), sqlite3_value_double(v[3])));
}

typedef struct poly { size_t n; double *lat, *lon; } poly;

static void poly_free(void *p) {
  poly *q = (poly *)p;
  free(q->lat);
  free(q->lon);
  free(q);
}

/* "lat,lon;lat,lon;..." -> a polygon, or NULL */
static poly *poly_parse(const char *s) {
  poly *q = calloc(1, sizeof *q);
  size_t cap = 0;
  if (q == NULL) return NULL;
  while (s && *s) {
    char *end;
    double la = strtod(s, &end), lo;
    if (end == s || *end != ',') break;
    s = end + 1;
    lo = strtod(s, &end);
    if (end == s) break;
    if (q->n == cap) {
      size_t nc = cap ? cap * 2 : 8;
      double *a = realloc(q->lat, nc * sizeof *a), *b;
      if (a == NULL) break;
      q->lat = a;
      b = realloc(q->lon, nc * sizeof *b);
      if (b == NULL) break;
      q->lon = b;
      cap = nc;
    }
    q->lat[q->n] = la;
    q->lon[q->n] = lo;
    q->n++;
    s = *end == ';' ? end + 1 : NULL;
  }
  return q;
}

static void f_in_poly(sqlite3_context *c, int argc, sqlite3_value **v) {
  poly *q;
  (void)argc;
  if (sqlite3_value_type(v[0]) == SQLITE_NULL || sqlite3_value_type(v[1]) == SQLITE_NULL) {
    sqlite3_result_null(c);
    return;
  }
  q = (poly *)sqlite3_get_auxdata(c, 2);
  if (q == NULL) {
    q = poly_parse((const char *)sqlite3_value_text(v[2]));
    if (q == NULL) { sqlite3_result_error_nomem(c); return; }
    sqlite3_set_auxdata(c, 2, q, poly_free);
    q = (poly *)sqlite3_get_auxdata(c, 2);
    if (q == NULL) { sqlite3_result_error_nomem(c); return; }
  }
  sqlite3_result_int(c, q->n >= 3 && kvsql_in_poly(sqlite3_value_double(v[0]), sqlite3_value_double(v[1]),
                                                 q->lat, q->lon, q->n));
}

static kvsql *state(kv_db *db) {
  kvsql *x = (kvsql *)kv_get_ext(db);
  sqlite3 *sql = (sqlite3 *)kv_sqlite(db);
  if (x) return x;
  x = calloc(1, sizeof *x);
  if (x == NULL) return NULL;
  if (sqlite3_create_function(sql, "geo_dist", 4, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, f_geo_dist,
                              NULL, NULL) != SQLITE_OK ||
      sqlite3_create_function(sql, "geo_in_poly", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, f_in_poly,
                              NULL, NULL) != SQLITE_OK ||
      vec_register(sql) != SQLITE_OK || bucket_register(sql) != SQLITE_OK || dv_register(sql) != SQLITE_OK) {
    free(x);
    return NULL;
  }
  kv_set_ext(db, x, ext_free);
  return x;
}

sqlite3_stmt *kvsql_prepare(kv_db *db, const char *text, size_t len) {
  kvsql *x = state(db);
  int i, victim = 0;
  entry *e;
  sqlite3_stmt *st;
  if (x == NULL) return NULL;
  x->clock++;
  for (i = 0; i < x->n; i++) {
    e = &x->e[i];
    if (e->len == len && memcmp(e->text, text, len) == 0) {
      e->used = x->clock;
      sqlite3_reset(e->st);
      sqlite3_clear_bindings(e->st);
      return e->st;
    }
  }
  if (sqlite3_prepare_v2((sqlite3 *)kv_sqlite(db), text, (int)len, &st, NULL) != SQLITE_OK) return NULL;
  if (st == NULL) return NULL; /* empty text */
  if (x->n < KVSQL_CACHE) {
    victim = x->n++;
  } else {
    for (i = 1; i < x->n; i++)
      if (x->e[i].used < x->e[victim].used) victim = i;
    sqlite3_finalize(x->e[victim].st);
    free(x->e[victim].text);
  }
  e = &x->e[victim];
  e->text = malloc(len ? len : 1);
  if (e->text == NULL) {
    sqlite3_finalize(st);
    x->e[victim] = x->e[--x->n];
    return NULL;
  }
  memcpy(e->text, text, len);
  e->len = len;
  e->st = st;
  e->used = x->clock;
  return st;
}

int kvsql_exec(kv_db *db, const char *text) {
  if (state(db) == NULL) return SQLITE_NOMEM;
  return sqlite3_exec((sqlite3 *)kv_sqlite(db), text, NULL, NULL, NULL);
}

static int64_t mono_ms(void) {
  struct timespec b;
  clock_gettime(CLOCK_MONOTONIC, &b);
  return (int64_t)b.tv_sec * 1000 + b.tv_nsec / 1000000;
}

/* the argument is the connection's state (alive as long as it is) */
static int on_progress(void *p) {
  kvsql *x = (kvsql *)p;
  if (mono_ms() > x->deadline) {
    x->fired = 1;
    return 1;
  }
  return 0;
}

int kvsql_deadline(kv_db *db, int64_t ms) {
  kvsql *x = state(db);
  if (x == NULL) return SQLITE_NOMEM;
  x->fired = 0;
  x->armed = ms >= 0;
  if (!x->armed) {
    sqlite3_progress_handler((sqlite3 *)kv_sqlite(db), 0, NULL, NULL);
    return SQLITE_OK;
  }
  x->deadline = mono_ms() + (ms > INT64_MAX / 2 ? INT64_MAX / 2 : ms);
  sqlite3_progress_handler((sqlite3 *)kv_sqlite(db), 1000, on_progress, x);
  return SQLITE_OK;
}

int kvsql_deadline_end(kv_db *db) {
  kvsql *x = (kvsql *)kv_get_ext(db);
  int r;
  if (x == NULL || !x->armed) return 0;
  sqlite3_progress_handler((sqlite3 *)kv_sqlite(db), 0, NULL, NULL);
  r = x->fired ? KVSQL_INTERRUPTED : mono_ms() > x->deadline ? KVSQL_PASSED : 0;
  x->armed = x->fired = 0;
  return r;
}

const char *kvsql_errmsg(kv_db *db) { return sqlite3_errmsg((sqlite3 *)kv_sqlite(db)); }
