/* plainbuffer_fuzz.c -- libFuzzer over the PlainBuffer decoder (request
 * and response rows are untrusted input): never read out of bounds; every
 * row that decodes re-encodes to exactly its bytes (checksums included),
 * and a buffer that decodes is those rows followed only by zero bytes.
 * The FFI reader (otskit_pb_*, what LuaJIT builds rows from) reads the
 * same rows and cells, and re-reads each row's attribute cells alike. */
#include <stdlib.h>
#include <string.h>

#include "otskit_ffi.h"
#include "plainbuffer.h"

static int same_cell(const otskit_pb_cell *o, const pb_cell *c) {
  if (o->name != c->name || o->name_len != c->name_len || o->vt != c->v.vt || o->op != c->op) return 0;
  if ((o->has_ts != 0) != (c->has_ts != 0) || (c->has_ts && o->ts64 != c->ts)) return 0;
  if ((c->v.vt == PB_VT_STRING || c->v.vt == PB_VT_BLOB) && (o->s != c->v.s || o->n != c->v.n)) return 0;
  if (c->v.vt == PB_VT_INTEGER && (o->i != c->v.i || (!o->big && o->num != (double)c->v.i))) return 0;
  if (c->v.vt == PB_VT_DOUBLE && memcmp(&o->num, &c->v.d, sizeof o->num) != 0) return 0;
  return 1;
}

/* the FFI reader over data: the rows and cells pb_read_row reads; when
 * the whole buffer reads (as decode_rows needs before a row's cells are
 * read lazily), each row's attribute cells again from its attr_at */
static void ffi_rows(const uint8_t *data, size_t size) {
  otskit_pb_dec *d = otskit_pb_new(), *d2 = otskit_pb_new();
  otskit_pb_names nm;
  otskit_pb_row out, out2;
  pb_reader r;
  pb_row row;
  int rc = 0, rc2, k;
  size_t i;
  if (!d || !d2) abort();
  memset(&nm, 0, sizeof nm);
  memset(&row, 0, sizeof row);
  if (pb_reader_init(&r, data, size) != otskit_pb_open(d, (const char *)data, size)) abort();
  if (!pb_reader_init(&r, data, size)) goto done;
  for (;;) {
    rc = pb_read_row(&r, &row);
    rc2 = otskit_pb_next(d, &nm, &out);
    if (rc != rc2) abort();
    if (rc != 1) break;
    if ((size_t)out.npk != row.npk || (size_t)out.ncells != row.ncells || out.deleted != row.deleted) abort();
    for (i = 0; i < row.ncells; i++) if (!same_cell(&out.cells[i], &row.cells[i])) abort();
    /* record the names as the Lua side does (every slot of this row) */
    for (i = 0; i < row.ncells; i++) {
      k = out.cells[i].slot;
      if (k >= 0) { nm.s[k] = out.cells[i].name; nm.n[k] = out.cells[i].name_len; }
    }
  }
  if (rc != 0 || !otskit_pb_open(d, (const char *)data, size)) goto done;
  while (otskit_pb_next(d, &nm, &out) == 1) {
    if (otskit_pb_cells(d2, (const char *)data, size, out.attr_at, &nm, &out2) != 1) abort();
    if (out2.ncells != out.ncells - out.npk || out2.npk != 0) abort();
    for (i = 0; i < (size_t)out2.ncells; i++) {
      const otskit_pb_cell *a = &out2.cells[i], *b = &out.cells[(size_t)out.npk + i];
      if (a->name != b->name || a->vt != b->vt || a->newest != b->newest || a->ts64 != b->ts64 || a->s != b->s) abort();
    }
  }
done:
  pb_row_free(&row);
  otskit_pb_free(d);
  otskit_pb_free(d2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pb_reader r;
  pb_row row;
  pb_writer w;
  int rc;
  size_t i, at;
  memset(&row, 0, sizeof row);
  pb_writer_init(&w);
  if (!pb_reader_init(&r, data, size)) return 0;
  at = size ? 4 : 0;
  while ((rc = pb_read_row(&r, &row)) == 1) {
    size_t end = (size_t)(r.p - data);
    pb_writer_reset(&w);
    pb_row_begin(&w);
    for (i = 0; i < row.ncells; i++) {
      if (i == row.npk && (i < row.ncells)) pb_row_data(&w);
      pb_write_cell(&w, &row.cells[i]);
    }
    pb_row_end(&w, row.deleted);
    if (w.oom) abort();
    /* a decoded row re-encodes to its bytes, unless it had an (ignored,
     * unchecksummed) extension or an empty attribute section */
    if (w.len == end - at && memcmp(w.p, data + at, w.len) != 0) abort();
    at = end;
  }
  if (rc == 0) {
    for (i = at; i < size; i++) if (data[i] != 0) abort();
  }
  pb_row_free(&row);
  pb_writer_free(&w);
  ffi_rows(data, size);
  return 0;
}
