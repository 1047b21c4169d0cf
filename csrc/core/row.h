/* row.h -- the byte encoding of a row's attribute columns in the store.
 * A row is a sequence of cells:
 *   varint name length, name bytes, type byte [| ROW_TS, 8 bytes
 *   big-endian timestamp (ms)], payload
 * The store keeps a row's cells sorted by name bytes, newest timestamp
 * first within a name (row_sort), so a name's first cell is its latest
 * version. A cell without ROW_TS (rows written before timestamps) has
 * timestamp 0.
 * payload: INTEGER 8 bytes big-endian two's complement; DOUBLE 8 bytes
 * big-endian IEEE 754; BOOLEAN none (types ROW_TRUE / ROW_FALSE);
 * STRING / BINARY varint length, bytes. Varints are LEB128, at most 10
 * bytes, never overlong, so each row has one encoding. Decoding checks every length against the input: any byte
 * string is safe to decode. No Lua here. */
#ifndef OTSKIT_ROW_H
#define OTSKIT_ROW_H

#include <stddef.h>
#include <stdint.h>

enum { ROW_STRING = 's', ROW_BINARY = 'b', ROW_INTEGER = 'i', ROW_DOUBLE = 'd',
       ROW_TRUE = 't', ROW_FALSE = 'f' };
enum { ROW_TS = 0x80 }; /* type flag: a timestamp follows */

typedef struct {
  const char *name;
  size_t name_len;
  int type;              /* one of the ROW_* codes */
  int64_t i;             /* ROW_INTEGER */
  double d;              /* ROW_DOUBLE */
  const char *s;         /* ROW_STRING / ROW_BINARY */
  size_t s_len;
  int has_ts;            /* written with a timestamp */
  int64_t ts;            /* ms; 0 when !has_ts */
} row_cell;

/* Bytes row_put_cell writes for c. */
size_t row_cell_size(const row_cell *c);

/* Writes c at out (row_cell_size(c) bytes); returns the bytes written. */
size_t row_put_cell(unsigned char *out, const row_cell *c);

/* Reads the cell at *pos of buf[0..len): 1 with *c filled (pointers into
 * buf) and *pos advanced, 0 at the end, -1 if the bytes are corrupt. */
int row_next(const unsigned char *buf, size_t len, size_t *pos, row_cell *c);

/* Sorts cells by name bytes, then newest timestamp first (stable for
 * equal name and timestamp). */
void row_sort(row_cell *cells, size_t n);

/* Compares names: <0, 0, >0 in byte order (shorter first on a tie). */
int row_name_cmp(const char *a, size_t al, const char *b, size_t bl);

/* 1 if s[0..n) is well-formed UTF-8 (no overlongs, surrogates or code
 * points above U+10FFFF), else 0. */
int row_utf8_valid(const char *s, size_t n);

#endif
