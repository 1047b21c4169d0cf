/* kvsql.h -- SQL statements on a kv db's own connection, so they run in
 * the kv transactions (the search index keeps its tables there). Prepared
 * statements are cached by text (at most KVSQL_CACHE, least recently used
 * evicted) and finalized when the db closes. The connection also gets
 * two SQL functions:
 *   geo_dist(lat1, lon1, lat2, lon2) -> metres on the sphere (haversine,
 *     radius 6371008.8 m);
 *   geo_in_poly(lat, lon, 'lat,lon;lat,lon;...') -> 1 when the point lies
 *     inside the polygon (even-odd rule, edges count as inside), else 0;
 * vec.h's aggregate vec_topk (the exact knn of VECTOR fields) and
 * bucket.h's floor_div and ym_index (histogram buckets).
 * No Lua here. */
#ifndef OTSKIT_KVSQL_H
#define OTSKIT_KVSQL_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>
#include "kv.h"

enum { KVSQL_CACHE = 256 };

/* The statement for text (len bytes), reset with its bindings cleared,
 * or NULL (the message: kvsql_errmsg). */
sqlite3_stmt *kvsql_prepare(kv_db *db, const char *text, size_t len);

/* Runs text (one or more statements, no results). SQLITE_OK or an error
 * code (message: kvsql_errmsg). */
int kvsql_exec(kv_db *db, const char *text);

/* A time limit on the connection's statements: kvsql_deadline arms one
 * ms milliseconds from now (ms < 0: none), an SQLite progress handler
 * that interrupts a statement running past it (the statement fails
 * SQLITE_INTERRUPT); kvsql_deadline_end disarms it and answers
 * KVSQL_INTERRUPTED when it interrupted a statement, KVSQL_PASSED when
 * none but the time is up, else 0. SQLITE_OK or SQLITE_NOMEM. */
enum { KVSQL_INTERRUPTED = 1, KVSQL_PASSED = 2 };
int kvsql_deadline(kv_db *db, int64_t ms);
int kvsql_deadline_end(kv_db *db);

/* The message of the last failure on db. */
const char *kvsql_errmsg(kv_db *db);

/* Great-circle distance in metres. */
double kvsql_geo_dist(double lat1, double lon1, double lat2, double lon2);

/* 1 if (lat, lon) is inside the polygon of n vertices (lats[i], lons[i]). */
int kvsql_in_poly(double lat, double lon, const double *lats, const double *lons, size_t n);

#endif
