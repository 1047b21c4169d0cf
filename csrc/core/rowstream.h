/* rowstream.h -- stored rows straight into PlainBuffer rows: a row of the
 * embedded store (its key, an order-preserving tuple of tuple.h, and its
 * value, the cells of row.h) written as the PlainBuffer row a response
 * carries (plainbuffer.h), with no intermediate objects.
 *
 * The row written is byte for byte the one the store's read shape
 * encodes to: the primary key cells in schema order (INTEGER as an int64,
 * STRING as a string, BINARY as a blob), then, when any cell is kept, the
 * attribute section with every kept cell in stored order (name, value,
 * its timestamp; 0 for a cell stored without one), then the row checksum.
 * A cell is kept when its name is wanted, its timestamp is in [lo, hi)
 * and it is among the first max_versions kept versions of its name
 * (newest first, as stored). No Lua here. */
#ifndef OTSKIT_ROWSTREAM_H
#define OTSKIT_ROWSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "plainbuffer.h"
#include "tuple.h"

enum { RS_PK_INTEGER = 1, RS_PK_STRING = 2, RS_PK_BINARY = 3 };
enum { RS_MAX_PK = 4 };

/* a name (not copied) */
typedef struct { const char *s; size_t n; } rs_name;

typedef struct {
  size_t npk;                    /* 1..RS_MAX_PK */
  rs_name pk_name[RS_MAX_PK];
  int pk_type[RS_MAX_PK];        /* RS_PK_* */
  const rs_name *want;           /* sorted by rs_name_cmp; NULL: every column */
  size_t nwant;
  int64_t lo, hi, maxv;          /* timestamps kept: [lo, hi); versions per name */
  int plain;                     /* a row without any stored cell is returned */
} rs_opts;

/* What rs_row did. */
enum { RS_ROW = 1, RS_SKIP = 0, RS_BADKEY = -1, RS_BADROW = -2 };

/* 1 when s[0..n) is a name the service takes: 1..255 bytes of
 * [A-Za-z0-9_], not starting with a digit. */
int rs_valid_name(const char *s, size_t n);

/* Byte order of names (shorter first on a common prefix). */
int rs_name_cmp(const rs_name *a, const rs_name *b);

/* Appends the stored row (key, val) to w as one PlainBuffer row (no
 * header): RS_ROW; RS_SKIP when no cell is kept and the row is not
 * returned (it has cells, or the read is not plain), w unchanged;
 * RS_BADKEY / RS_BADROW with *err (static text) when the key is not a
 * tuple of the schema's types or the value is not cells, w unchanged.
 * *size: the row's Tablestore size (key names and values, kept cells'
 * names and values; 8 for numbers, 1 for booleans), also for RS_SKIP.
 * On out of memory w->oom is set. */
int rs_row(pb_writer *w, const rs_opts *o, const void *key, size_t klen, const void *val, size_t vlen,
           int64_t *size, const char **err);

/* ---- a PutRow's PlainBuffer row as a stored row ---- */

/* The limits a PutRow's row is checked against, and its clock. */
typedef struct {
  size_t max_cols;      /* attribute cells per row */
  size_t max_cell;      /* bytes of a STRING / BINARY attribute value */
  size_t max_pk_cell;   /* bytes of a STRING / BINARY key value */
  int64_t max_row;      /* the row's Tablestore size */
  int64_t now;          /* ms: the timestamp of cells sent without one */
  int64_t dev;          /* ms: a sent timestamp lies within now +- dev */
} rs_put_limits;

/* What rs_put_row did. */
enum { RS_PUT_OK = 1, RS_PUT_OTHER = 0, RS_PUT_OOM = -1 };

/* The PlainBuffer buffer buf[0..n) of a PutRow request (a header and
 * exactly one row) as the store keeps it: the key tuple (tuple.h) of its
 * primary key cells, which must be o's columns in o's order and types
 * (INTEGER; STRING as a UTF-8 string; BINARY as a blob or a string), into
 * key (appended), and its attribute cells as the stored value (row.h,
 * every cell with its timestamp: the sent one or lim->now, sorted) in
 * *val (malloc'ed, *vlen bytes; the caller frees it). *size: the row's
 * Tablestore size; *any_ts: a cell was sent with its own timestamp.
 * RS_PUT_OK; RS_PUT_OTHER (with *why, static text) for anything else the
 * request may be -- bytes that are not exactly one valid row, a key that
 * does not match, AUTO_INCREMENT / INF values, an update op or the delete
 * marker, a bad name or value, a duplicate cell, a limit passed, a
 * timestamp out of range: the caller's general path decides and answers
 * those; RS_PUT_OOM. Only o's npk, pk_name and pk_type are used. */
int rs_put_row(const void *buf, size_t n, const rs_opts *o, const rs_put_limits *lim,
               tuple_buf *key, unsigned char **val, size_t *vlen, int64_t *size, int *any_ts,
               const char **why);

/* The PlainBuffer buffer buf[0..n) of a read's primary key (a header and
 * exactly one row of key cells alone) as the store's key tuple, appended
 * to key: o's columns in o's order and exact types (INTEGER, STRING as
 * UTF-8 text, BINARY as a blob), values of at most max_pk_cell bytes.
 * RS_PUT_OK; RS_PUT_OTHER with *why (static text) for anything else;
 * RS_PUT_OOM. Only o's npk, pk_name and pk_type are used. */
int rs_get_key(const void *buf, size_t n, const rs_opts *o, size_t max_pk_cell, tuple_buf *key, const char **why);

#endif
