/* plainbuffer.h -- Tablestore's PlainBuffer row format (API 2015-12-31),
 * in plain C (no Lua).
 *
 *   buffer = le32(0x75) row+
 *   row    = 0x01 pk_cell+ [0x02 attr_cell*] [0x08] [0x0B ext] 0x09 u8(row_crc)
 *   cell   = 0x03 0x04 le32(n) name [0x05 le32(L) u8(type) payload]
 *            [0x06 u8(op)] [0x07 le64(ts)] 0x0A u8(cell_crc)
 *
 * Checksums are CRC-8 (polynomial 0x07, initial 0, no reflection). A
 * cell's covers its name, type + payload, timestamp, then op -- in that
 * order, though the op precedes the timestamp on the wire. A row's covers
 * its cells' checksums, then 1 if it carries the delete marker else 0. */
#ifndef OTSKIT_PLAINBUFFER_H
#define OTSKIT_PLAINBUFFER_H

#include <stddef.h>
#include <stdint.h>

enum {
  PB_VT_INTEGER = 0, PB_VT_DOUBLE = 1, PB_VT_BOOLEAN = 2, PB_VT_STRING = 3,
  PB_VT_BLOB = 7, PB_VT_INF_MIN = 9, PB_VT_INF_MAX = 10, PB_VT_AUTO_INCREMENT = 11,
  PB_VT_NONE = -1 /* a cell without a value (DELETE, DELETE_ALL) */
};
enum { PB_OP_NONE = 0, PB_OP_DELETE_ALL = 1, PB_OP_DELETE_ONE = 3, PB_OP_INCREMENT = 4 };

typedef struct {
  int vt;                 /* PB_VT_* */
  int64_t i;              /* INTEGER; BOOLEAN as 0/1 */
  double d;               /* DOUBLE */
  const char *s;          /* STRING/BLOB bytes (not copied) */
  size_t n;
} pb_value;

typedef struct {
  const char *name;       /* not copied */
  size_t name_len;
  pb_value v;
  int op;                 /* PB_OP_* */
  int has_ts;
  int64_t ts;             /* ms since the epoch */
} pb_cell;

unsigned char pb_crc8(unsigned char crc, const void *p, size_t n);

/* ---- encoding: a growable buffer ---- */
typedef struct {
  unsigned char *p;
  size_t len, cap;
  int oom;                /* an allocation failed: the content is incomplete */
  unsigned char row_crc;  /* of the row being written */
} pb_writer;

void pb_writer_init(pb_writer *w);
void pb_writer_reset(pb_writer *w);  /* len = 0, keeps the memory */
void pb_writer_free(pb_writer *w);
void pb_write_header(pb_writer *w);
void pb_write_raw(pb_writer *w, const void *p, size_t n); /* n bytes as they are */
void pb_row_begin(pb_writer *w);     /* 0x01: primary key cells follow */
void pb_row_data(pb_writer *w);      /* 0x02: attribute cells follow */
void pb_write_cell(pb_writer *w, const pb_cell *c);
void pb_row_end(pb_writer *w, int delete_marker);
/* The value alone, as filters carry it: type byte + payload. */
void pb_write_value(pb_writer *w, const pb_value *v);

/* ---- decoding ---- */
typedef struct {
  pb_cell *cells;         /* primary key cells first, then attribute cells */
  size_t npk, ncells, cap;
  int deleted;            /* the delete marker was present */
} pb_row;

typedef struct {
  const unsigned char *p, *end;
  const char *err;        /* why decoding failed (static text) */
  size_t err_at;          /* byte offset of the failure */
  const unsigned char *start;
  int trusted;            /* bytes checked before: checksums not recomputed */
} pb_reader;

/* 1 when buf holds a header (or is empty: no rows); 0 with r->err. */
int pb_reader_init(pb_reader *r, const void *buf, size_t n);
/* The next row into *row (cells point into the buffer): 1 a row, 0 the
 * end (only zero bytes remained), -1 an error (r->err, r->err_at). */
int pb_read_row(pb_reader *r, pb_row *row);
void pb_row_free(pb_row *row);
/* The cells at r->p (e.g. the attribute cells of a row read before,
 * which start 6 bytes before row->cells[row->npk].name) into *row as
 * attribute cells (npk 0), up to the first byte that is no cell: 1, or
 * -1 (r->err, r->err_at). Cell checksums are checked unless r->trusted;
 * the row's checksum is not. */
int pb_read_cells(pb_reader *r, pb_row *row);
/* Reads every row of buf[0..n): *rows counts them, *end is the length up
 * to the last row's checksum (what follows is zero padding; 0 for an
 * empty buf). 1, or 0 with r->err, r->err_at when buf is not rows. */
int pb_scan_rows(pb_reader *r, const void *buf, size_t n, size_t *rows, size_t *end);
/* A filter value (type byte + payload) that must fill [p, p+n). */
int pb_read_value(const void *p, size_t n, pb_value *v, const char **err);

/* ---- the order of the rows read ----
 * The primary keys of two rows as otskit.client.verify.compare orders the
 * decoded keys, for the keys it compares the same way here: column by
 * column, the same names, both INTEGER (as int64) or both STRING or both
 * BINARY (by bytes, then length). -1, 0 or 1; PB_KEY_OTHER for any other
 * pair (another type, another name, another length reached, no column):
 * the caller then knows nothing. */
#define PB_KEY_OTHER 2
int pb_key_cmp(const pb_cell *a, size_t na, const pb_cell *b, size_t nb);
/* pb_order: fed every row read in turn (pb_order_add), it says whether
 * each row's key is after (PB_ORDER_ASC) or before (PB_ORDER_DESC) the
 * one before it by pb_key_cmp; both bits with fewer than two rows. */
#define PB_ORDER_MAXPK 8
enum { PB_ORDER_ASC = 1, PB_ORDER_DESC = 2 };
typedef struct {
  pb_cell prev[PB_ORDER_MAXPK]; /* the last row's key cells (pointing into its buffer) */
  size_t nprev;
  int rows, flags;
} pb_order;
void pb_order_init(pb_order *o);
void pb_order_add(pb_order *o, const pb_row *row);

#endif
