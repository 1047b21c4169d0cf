/* row_fuzz.c -- libFuzzer over the row decoder (a db file is untrusted
 * input): never read out of bounds; whatever decodes (timestamps
 * included) re-encodes to the same bytes; row_sort of the decoded cells
 * is ordered; the UTF-8 check reads only its input. */
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
  {
    row_cell cells[64];
    size_t n = 0, i;
    pos = 0;
    while (n < 64 && row_next(data, size, &pos, &cells[n]) == 1) n++;
    row_sort(cells, n);
    for (i = 1; i < n; i++) {
      int r = row_name_cmp(cells[i - 1].name, cells[i - 1].name_len, cells[i].name, cells[i].name_len);
      if (r > 0 || (r == 0 && cells[i - 1].ts < cells[i].ts)) abort();
    }
  }
  (void)row_utf8_valid((const char *)data, size);
  free(out);
  return 0;
}
