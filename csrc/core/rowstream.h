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

#endif
