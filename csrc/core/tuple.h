/* tuple.h -- the order-preserving binary tuple codec, compatible with the
 * FoundationDB tuple layer for the types Tablestore keys need. Plain C: no
 * Lua. Comparing two encodings with memcmp (shorter first on a common
 * prefix) gives the order of the tuples:
 *
 *   element      code        bytes after the code
 *   nil          0x00        -
 *   byte string  0x01        the bytes, 0x00 written 0x00 0xFF; then 0x00
 *   text string  0x02        as byte string (UTF-8 by convention)
 *   integer      0x0C..0x1C  0x14 is 0; 0x14+n: n big-endian bytes of v>0;
 *                            0x14-n: n bytes of ~|v| for v<0 (full int64)
 *   double       0x21        8 big-endian bytes of the IEEE bits, all bits
 *                            flipped if the sign is set, else the sign bit
 *   false, true  0x26, 0x27  -
 *
 * So types order nil < bytes < text < integers < doubles < false < true,
 * and doubles order by their bits as FDB does: -NaN < -inf < ... < -0.0 <
 * +0.0 < ... < +inf < +NaN (a NaN's sign bit decides its end).
 *
 * The descending variant (tuple_put_nil_desc + tuple_finish_desc) gives
 * encodings whose byte order is exactly the reverse tuple order: elements
 * as above except nil (0x00 0x01), then an end mark 0x00 0x00, then every
 * byte inverted. The end mark makes the encoding prefix-free, which the
 * inversion needs. */
#ifndef OTSKIT_TUPLE_H
#define OTSKIT_TUPLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct tuple_buf { unsigned char *p; size_t len, cap; } tuple_buf;

/* A growable output buffer (malloc'ed); init leaves it empty, free
 * releases it and leaves it empty and reusable. */
void tuple_buf_init(tuple_buf *b);
void tuple_buf_free(tuple_buf *b);

/* Append one element to b. Each returns 0, or -1 when out of memory (b is
 * then unchanged). */
int tuple_put_nil(tuple_buf *b);
int tuple_put_bytes(tuple_buf *b, const void *s, size_t n);
int tuple_put_text(tuple_buf *b, const void *s, size_t n);
int tuple_put_int(tuple_buf *b, int64_t v);
int tuple_put_double(tuple_buf *b, double v);
int tuple_put_bool(tuple_buf *b, int v);

/* Descending variant: write elements with the functions above but nil with
 * tuple_put_nil_desc, then tuple_finish_desc(b, start) with start = b->len
 * before the first element. 0, or -1 when out of memory. */
int tuple_put_nil_desc(tuple_buf *b);
int tuple_finish_desc(tuple_buf *b, size_t start);

/* ---- decoding: never reads outside s[0..n), whatever the bytes ---- */

typedef enum {
  TUPLE_NIL, TUPLE_BYTES, TUPLE_TEXT, TUPLE_INT, TUPLE_DOUBLE, TUPLE_BOOL
} tuple_type;

/* One decoded element. For BYTES and TEXT, raw/rawlen is the still-escaped
 * body inside the input and len the unescaped length: tuple_item_copy
 * writes the unescaped bytes. */
typedef struct tuple_item {
  tuple_type type;
  int64_t i;          /* TUPLE_INT */
  double d;           /* TUPLE_DOUBLE */
  int b;              /* TUPLE_BOOL: 0 or 1 */
  const unsigned char *raw;
  size_t rawlen, len;
  int inverted;       /* raw bytes are inverted (descending input) */
} tuple_item;

typedef struct tuple_reader {
  const unsigned char *s;
  size_t n, pos;
  int desc;           /* reading the descending variant */
  const char *err;    /* why tuple_read returned -1 (static string) */
} tuple_reader;

/* Starts reading the encoding s[0..n); desc != 0 for the descending one. */
void tuple_reader_init(tuple_reader *r, const void *s, size_t n, int desc);

/* Reads the next element into *it: returns 1, 0 at the well-formed end of
 * the tuple, or -1 with r->err set for malformed input: an unknown type
 * code, a truncated element, an unterminated string, an integer that is
 * not minimally encoded or outside int64, a missing or misplaced end mark
 * (descending). Only canonical encodings decode, so re-encoding a decoded
 * tuple gives back the same bytes. */
int tuple_read(tuple_reader *r, tuple_item *it);

/* Writes the it->len unescaped bytes of a BYTES or TEXT item to out. */
void tuple_item_copy(const tuple_item *it, unsigned char *out);

#endif
