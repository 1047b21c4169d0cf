/* kvsql_test.c -- cached statements on a kv connection (reuse, eviction
 * past KVSQL_CACHE, errors) and the geo functions against random points
 * (distance: symmetric, zero on itself, triangle inequality, a known
 * value; polygon: random points against an axis-aligned box), and the
 * statement time limit (kvsql_deadline). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "kvsql.h"

static unsigned long rng = 88172645463325252UL;
static double rndf(void) {
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return (double)(rng % 1000000) / 1000000.0;
}

static sqlite3_stmt *prep(kv_db *db, const char *t) { return kvsql_prepare(db, t, strlen(t)); }

int main(void) {
  kv_db *db;
  char err[256], text[128];
  sqlite3_stmt *st, *first;
  int i;
  CHECK(kv_open(":memory:", 8, 1000, &db, err, sizeof err) == KV_OK);
  CHECK(kvsql_exec(db, "CREATE TABLE x (a INTEGER, b TEXT); INSERT INTO x VALUES (1, 'one'), (2, 'two');") == SQLITE_OK);
  first = prep(db, "SELECT b FROM x WHERE a = ?1");
  CHECK(first != NULL);
  sqlite3_bind_int(first, 1, 2);
  CHECK(sqlite3_step(first) == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(first, 0), "two") == 0);
  /* the same text: the same statement, reset and unbound */
  st = prep(db, "SELECT b FROM x WHERE a = ?1");
  CHECK(st == first);
  CHECK(sqlite3_step(st) == SQLITE_DONE); /* ?1 is NULL now */
  /* more distinct statements than the cache holds: all work */
  for (i = 0; i < KVSQL_CACHE + 20; i++) {
    int n = snprintf(text, sizeof text, "SELECT %d + a FROM x WHERE a = 1", i);
    st = kvsql_prepare(db, text, (size_t)n);
    CHECK(st != NULL && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == i + 1);
    sqlite3_reset(st);
  }
  st = prep(db, "SELECT b FROM x WHERE a = ?1");
  CHECK(st != NULL);
  sqlite3_bind_int(st, 1, 1);
  CHECK(sqlite3_step(st) == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(st, 0), "one") == 0);
  sqlite3_reset(st);
  CHECK(prep(db, "SELECT nope FROM x") == NULL);
  CHECK(strstr(kvsql_errmsg(db), "nope") != NULL);
  CHECK(kvsql_exec(db, "NOT SQL") != SQLITE_OK);
  /* SQL functions */
  st = prep(db, "SELECT geo_dist(0, 0, 0, 1), geo_in_poly(0.5, 0.5, '0,0;0,1;1,1;1,0'), geo_in_poly(2, 0.5, '0,0;0,1;1,1;1,0'), geo_dist(NULL, 0, 0, 0)");
  CHECK(st != NULL && sqlite3_step(st) == SQLITE_ROW);
  CHECK(fabs(sqlite3_column_double(st, 0) - 111195.08) < 0.1);
  CHECK(sqlite3_column_int(st, 1) == 1 && sqlite3_column_int(st, 2) == 0);
  CHECK(sqlite3_column_type(st, 3) == SQLITE_NULL);
  sqlite3_reset(st);
  for (i = 0; i < 2000; i++) {
    double a1 = rndf() * 180 - 90, o1 = rndf() * 360 - 180, a2 = rndf() * 180 - 90, o2 = rndf() * 360 - 180;
    double a3 = rndf() * 180 - 90, o3 = rndf() * 360 - 180;
    double d12 = kvsql_geo_dist(a1, o1, a2, o2), d21 = kvsql_geo_dist(a2, o2, a1, o1);
    double d13 = kvsql_geo_dist(a1, o1, a3, o3), d32 = kvsql_geo_dist(a3, o3, a2, o2);
    double lats[4] = {-10, -10, 10, 10}, lons[4] = {-20, 20, 20, -20};
    double pa = rndf() * 40 - 20, po = rndf() * 60 - 30;
    CHECK(fabs(d12 - d21) < 1e-6 && kvsql_geo_dist(a1, o1, a1, o1) < 1e-6);
    CHECK(d12 <= d13 + d32 + 1e-3 && d12 <= 3.1416 * 6371008.8 + 1);
    CHECK(kvsql_in_poly(pa, po, lats, lons, 4) == (pa >= -10 && pa <= 10 && po >= -20 && po <= 20));
  }
  /* a deadline interrupts a statement running past it, is lifted by
   * kvsql_deadline_end, and one not reached reports nothing */
  CHECK(kvsql_deadline_end(db) == 0); /* none armed */
  st = prep(db, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000000) SELECT count(*) FROM c");
  CHECK(st != NULL);
  CHECK(kvsql_deadline(db, 0) == SQLITE_OK);
  CHECK(sqlite3_step(st) == SQLITE_INTERRUPT);
  sqlite3_reset(st);
  CHECK(kvsql_deadline_end(db) == KVSQL_INTERRUPTED);
  CHECK(kvsql_deadline_end(db) == 0);
  CHECK(kvsql_deadline(db, 600000) == SQLITE_OK);
  st = prep(db, "SELECT count(*) FROM x");
  CHECK(st != NULL && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 2);
  sqlite3_reset(st);
  CHECK(kvsql_deadline_end(db) == 0);
  CHECK(kvsql_deadline(db, -1) == SQLITE_OK && kvsql_deadline_end(db) == 0); /* none */
  { /* the time up, no statement interrupted */
    struct timespec ts = {0, 5000000};
    CHECK(kvsql_deadline(db, 1) == SQLITE_OK);
    nanosleep(&ts, NULL);
    CHECK(kvsql_deadline_end(db) == KVSQL_PASSED);
  }
  CHECK(kv_close_db(db) == KV_OK);
  return check_done();
}
