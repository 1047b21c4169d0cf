/* sbuild.h -- a search index's build in C: the rows of a kv table read,
 * decoded and written into the index's tables (otskit.store.search.docs
 * describes them) with prepared statements, one pass, no Lua. It takes
 * the common index only: top-level single-valued LONG, DOUBLE, BOOLEAN,
 * KEYWORD, TEXT (single_word analyzer) and GEO_POINT fields; the caller
 * (otskit.store.search) builds any other index in Lua, and gives every
 * field here exactly the meaning docs.lua gives it:
 *   a document per row that keeps a cell (or has none at all): its id,
 *   key, newest kept timestamp and value columns (doc statement);
 *   has (f, doc) for each TEXT and GEO_POINT value; a point in gpt and
 *   geo; the TEXT columns' tokens, hex-encoded, in one fts row.
 * The value tables num and kw are not written here: the caller copies
 * them from the document columns, sorted (docs.finish).
 * No Lua here. */
#ifndef OTSKIT_SBUILD_H
#define OTSKIT_SBUILD_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>
#include "kv.h"

enum { SB_LONG = 1, SB_DOUBLE, SB_BOOLEAN, SB_KEYWORD, SB_TEXT, SB_GEO };

typedef struct {
  const char *name;  /* the column's name (bytes) */
  size_t name_len;
  int id;            /* the field's id (f) */
  int kind;          /* SB_* */
  int col;           /* its value column: 1-based among the doc statement's columns after id, pk, ts; 0 none */
  int fts;           /* TEXT: its 1-based column of the fts statement after rowid */
  int lower, delimit; /* TEXT: single_word's parameters */
} sb_field;

typedef struct {
  sb_field *fields;  /* sorted by name (row_name_cmp) */
  int nfields;
  int nfts;          /* columns of the fts statement after rowid (0: none) */
  int64_t lo;        /* cells older than lo are dead (INT64_MIN: none) */
  int64_t maxv;      /* versions kept per column (>= 1) */
  int jit_binds;     /* bind an integral DOUBLE as INTEGER (as LuaJIT's binding does) */
  /* ?1 id, ?2 pk, ?3 ts, ?4.. the value columns */
  sqlite3_stmt *doc;
  sqlite3_stmt *has; /* ?1 f, ?2 doc */
  sqlite3_stmt *gpt; /* ?1 id, ?2 doc, ?3 f, ?4 lat, ?5 lon */
  sqlite3_stmt *geo; /* ?1 id, ?2 lat, ?3 lon */
  sqlite3_stmt *fts; /* ?1 rowid, ?2.. the columns */
  int64_t doc_id, gpt_id; /* the next ids (advanced) */
  int64_t rows;      /* documents written */
  int kv_class;      /* after a failure of the kv table's read: its KV_E* class, else -1 */
} sb_plan;

/* Builds over every row of table t of kv db kdb. SQLITE_OK, or an error
 * code with a message in err (errlen bytes); *corrupt is set when a stored
 * row is not one, p->kv_class when reading the table failed. */
int sb_build(kv_db *kdb, kv_table *t, sqlite3 *db, sb_plan *p, char *err, size_t errlen, int *corrupt);

/* The FTS5 column text of single_word's tokens of s[0..n): each token
 * hex-encoded, separated by single spaces, written to out (at most
 * sb_fts_size(n) bytes); returns its length. */
size_t sb_fts_text(const char *s, size_t n, int lower, int delimit, char *out);
size_t sb_fts_size(size_t n);

/* "lat,lon" as docs.geo reads it: 1 and the point, or 0. */
int sb_geo(const char *s, size_t n, double *lat, double *lon);

#endif
