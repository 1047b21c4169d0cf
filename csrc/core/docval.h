/* docval.h -- doc values: a search index's single-valued fields held in
 * memory as columns indexed by document id (what Lucene calls doc
 * values), and filters over them that a statement tests each document
 * against through the SQL function otskit_dv(filter, id) (registered on
 * every kv connection by kvsql.c; the filter is bound as a pointer of
 * type DV_PTR_TYPE, never an integer, so SQL text cannot forge one).
 *
 * A column is loaded from a statement yielding (id, value) rows, the
 * values of one field of the index's document table (NULL rows left
 * out). Its kind says how the values are held: DV_I64 (INTEGER values:
 * LONG, DATE, BOOLEAN), DV_F64 (REAL, or INTEGER values a double holds
 * exactly: DOUBLE) or DV_ORD (TEXT: KEYWORD; each value its ordinal in
 * the sorted distinct values, compared as SQLite's BINARY collation
 * does). A value of another storage class makes the load answer DV_UNFIT:
 * the caller keeps to SQL then.
 *
 * A clause is the SQL path's test of one document's value column, with
 * SQLite's comparison rules: a document without a value fails it (the
 * SQL's coalesce(..., 0)), neg inverts the result (NOT), a NULL bound (a
 * NaN bound as NULL) fails every document, an INTEGER and a REAL compare
 * as numbers. Anything this cannot decide exactly is DV_UNFIT. */
#ifndef OTSKIT_DOCVAL_H
#define OTSKIT_DOCVAL_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#define DV_PTR_TYPE "otskit_dvf"

/* (DV_NOMEM and DV_UNFIT are negative: a load also answers SQLite's own
 * codes, SQLITE_ERROR 1, SQLITE_INTERNAL 2...) */
enum { DV_OK = 0, DV_NOMEM = -1, DV_UNFIT = -2 };
enum { DV_I64 = 1, DV_F64 = 2, DV_ORD = 3 };

typedef struct dv_col {
  int kind;
  int64_t n;           /* document ids 0..n-1 (0: freed) */
  unsigned char *has;  /* bit id: the document has a value */
  int64_t *i;          /* DV_I64 values */
  double *d;           /* DV_F64 values */
  int32_t *o;          /* DV_ORD ordinals */
  char *dict;          /* DV_ORD: the distinct values, concatenated in order */
  size_t *off;         /* value k is dict[off[k] .. off[k+1]) */
  int64_t nd;          /* DV_ORD: the number of distinct values */
  size_t bytes;        /* memory held */
} dv_col;

/* A value as SQLite sees a bound parameter: type SQLITE_INTEGER (i),
 * SQLITE_FLOAT (d, never NaN), SQLITE_TEXT (s, len) or SQLITE_NULL. */
typedef struct dv_val {
  int type;
  int64_t i;
  double d;
  const char *s;
  size_t len;
} dv_val;

enum { DV_EXISTS = 1, DV_RANGE = 2, DV_IN = 3, DV_NEVER = 4 };

typedef struct dv_clause {
  const dv_col *col;
  int op, neg;
  int64_t lo, hi;            /* DV_I64, DV_ORD: inclusive bounds (lo > hi: none) */
  double dlo, dhi;           /* DV_F64 */
  int has_lo, has_hi, lo_in, hi_in;
  int64_t *set;              /* DV_IN: sorted ints (DV_I64) or ordinals */
  double *dset;              /* DV_IN on DV_F64: sorted doubles */
  int nset;
} dv_clause;

typedef struct dv_filter {
  int n;
  dv_clause *c;
} dv_filter;

/* Loads column c (zeroed) of kind for ids 0..n-1 from st's rows (id,
 * value; DV_ORD: in the values' order). Returns DV_OK, DV_NOMEM, DV_UNFIT
 * or a SQLite code (st is reset either way; c holds nothing unless OK). */
int dv_col_load(dv_col *c, int kind, int64_t n, sqlite3_stmt *st);
void dv_col_free(dv_col *c);

/* Clauses (cl zeroed first; free with dv_clause_free). lo/hi NULL: no
 * bound on that side. */
int dv_clause_exists(dv_clause *cl, const dv_col *col, int neg);
int dv_clause_range(dv_clause *cl, const dv_col *col, int neg, const dv_val *lo, int lo_in, const dv_val *hi,
                    int hi_in);
int dv_clause_in(dv_clause *cl, const dv_col *col, int neg, const dv_val *vals, int n);
void dv_clause_free(dv_clause *cl);

/* 1 when document id passes every clause of f, 0 when not, -1 when id is
 * outside a column (a freed column, or a document it does not know). */
int dv_test(const dv_filter *f, int64_t id);

/* The documents of cl's column (ids 0..n-1) that pass cl alone: a
 * range group-by's bucket counted over every document. -1 when the
 * column is freed. */
int64_t dv_count(const dv_clause *cl);

/* Registers otskit_dv(filter, id) on db. */
int dv_register(sqlite3 *db);

/* A stamp of db's main database content: its data version (changed by
 * every commit of any connection, this one's too) and this connection's
 * total changes (changed by its own writes, committed or not). 0 when
 * SQLite cannot tell the data version (then there is no stamp). */
int dv_stamp(sqlite3 *db, unsigned *data_version, int64_t *changes);

#endif
