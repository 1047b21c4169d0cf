/* row_fuzz.c -- libFuzzer over the row decoder (a db file is untrusted
 * input): never read out of bounds; whatever decodes re-encodes to the
 * same bytes. */
#include <stdlib.h>
#include <string.h>

#include "row.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t pos = 0, off = 0;
  row_cell c;
  int rc;
  unsigned char *out = malloc(size + 1);
  if (out == NULL) abort();
  while ((rc = row_next(data, size, &pos, &c)) == 1) {
    size_t n = row_cell_size(&c);
    if (off + n > size) abort();
    if (row_put_cell(out + off, &c) != n) abort();
    off += n;
    if (off != pos) abort();
  }
  if (rc == 0 && (off != size || (size && memcmp(out, data, size) != 0))) abort();
  free(out);
  return 0;
}
