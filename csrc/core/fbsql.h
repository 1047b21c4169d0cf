/* fbsql.h -- the SQLQuery result set as FlatBuffers (payload version 2,
 * FLAT_BUFFERS), schema sql.fbs of the Tablestore SDKs:
 *
 *   enum DataType:byte { NONE, LONG, BOOLEAN, DOUBLE, STRING, BINARY, STRING_RLE }
 *   table BytesValue { value:[byte]; }
 *   table RLEStringValues { array:[string]; index_mapping:[int32]; }
 *   table ColumnValues { is_nullvalues:[bool]; long_values:[long];
 *     bool_values:[bool]; double_values:[double]; string_values:[string];
 *     binary_values:[BytesValue]; rle_string_values:RLEStringValues; }
 *   table SQLResponseColumn { column_name:string; column_type:DataType;
 *     column_value:ColumnValues; }
 *   table SQLResponseColumns { columns:[SQLResponseColumn]; row_count:int64; }
 *   root_type SQLResponseColumns;
 *
 * Column-major: row r of a column is index r of its type's vector and of
 * is_nullvalues (true: NULL; the value vector still has an entry). The
 * writer emits LONG, BOOLEAN, DOUBLE, STRING and BINARY columns; the
 * reader also takes STRING_RLE (array[index_mapping[r]]). The reader
 * checks every offset, length and alignment-free read against the buffer:
 * any byte string is safe to read. No Lua here. */
#ifndef OTSKIT_FBSQL_H
#define OTSKIT_FBSQL_H

#include <stddef.h>
#include <stdint.h>

enum { FBSQL_NONE = 0, FBSQL_LONG = 1, FBSQL_BOOLEAN = 2, FBSQL_DOUBLE = 3, FBSQL_STRING = 4,
       FBSQL_BINARY = 5, FBSQL_STRING_RLE = 6 };

/* One column to write: nulls[r] != 0 for a NULL row; the value array of
 * the type (longs, bools, doubles, or strs/lens for STRING and BINARY)
 * has nrows entries (any value where nulls[r]). */
typedef struct {
  const char *name;
  size_t name_len;
  int type;
  const unsigned char *nulls;
  const int64_t *longs;
  const unsigned char *bools;
  const double *doubles;
  const char *const *strs;
  const size_t *lens;
} fbsql_col;

/* Writes the result set; *out is malloc'ed (free it), *outlen its size.
 * 0, or -1 (out of memory, a size over 2 GiB, an unknown type). */
int fbsql_write(const fbsql_col *cols, size_t ncols, size_t nrows, unsigned char **out, size_t *outlen);

/* A result set being read: fbsql_open checks the whole buffer, then the
 * accessors read it (they trust what open checked). */
typedef struct {
  const unsigned char *buf;
  size_t len;
  size_t ncols;
  int64_t nrows;
  size_t cols_at;   /* the columns vector's first element */
} fbsql_reader;

typedef struct {
  const char *name;
  size_t name_len;
  int type;
  size_t nulls, vals;       /* vector element starts (0: absent) */
  size_t nnulls, nvals;
  size_t rle_map, nrle_map; /* STRING_RLE: index_mapping */
} fbsql_column;

/* 0 with r set, or -1 with *why (static text) for bytes that are not a
 * well-formed result set of this schema. */
int fbsql_open(fbsql_reader *r, const void *buf, size_t len, const char **why);

/* Column i (< r->ncols): 0, or -1 with *why. */
int fbsql_column_at(const fbsql_reader *r, size_t i, fbsql_column *c, const char **why);

/* Row row of column c: 1 if NULL; otherwise 0 with the value in the out
 * argument of its type (for STRING, STRING_RLE and BINARY s and n point into
 * the buffer); -1 with *why when the column has no such row. */
int fbsql_cell(const fbsql_reader *r, const fbsql_column *c, size_t row, int64_t *l, double *d, int *b,
               const char **s, size_t *n, const char **why);

#endif
