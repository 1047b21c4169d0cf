/* vec.h -- float32 vectors of the search index's VECTOR fields and the
 * exact k-nearest-neighbour search over them. A vector is stored as a
 * BLOB of n little-endian IEEE-754 float32 values (4n bytes). Scores are
 * the service's, computed in double over the float32 values:
 *   EUCLIDEAN    1 / (1 + sum((q[i] - v[i])^2))
 *   COSINE       (1 + dot(q, v) / sqrt(|q|^2 |v|^2)) / 2, 0 when either is 0
 *   DOT_PRODUCT  (1 + dot(q, v)) / 2
 * vec_register adds the SQL aggregate
 *   vec_topk(k, metric, q, v, doc) -> '{"k<doc>":score,...}'
 * to a connection: the k best (score descending, doc ascending) of the
 * rows' (v, doc) against the query blob q (metric 0, 1, 2 as below), kept
 * in a heap of k entries; rows whose v is not a blob of q's length are
 * skipped; '{}' when none. No Lua here. */
#ifndef OTSKIT_VEC_H
#define OTSKIT_VEC_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

enum { VEC_EUCLIDEAN = 0, VEC_COSINE = 1, VEC_DOT_PRODUCT = 2 };
enum { VEC_MAX_K = 100000 };

/* Packs n doubles as float32 into out (4n bytes). 0, or -1 when a value
 * is NaN or beyond +-FLT_MAX. */
int vec_pack(const double *x, size_t n, unsigned char *out);

/* The i-th float32 of a packed vector. */
float vec_get(const unsigned char *blob, size_t i);

/* The score of packed vector v (n values) against query q (n floats)
 * whose squared norm is qn, by metric. */
double vec_score(int metric, const float *q, double qn, const unsigned char *v, size_t n);

/* Registers vec_topk on db. SQLITE_OK or an SQLite error code. */
int vec_register(sqlite3 *db);

#endif
