/* http_headers_fuzz.c -- a response header block is the peer's bytes:
 * otsk_http_header_next must stay inside the block, always advance, and
 * give non-empty names without ':', CR or LF and values without CR/LF or outer
 * blanks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *buf = malloc(size ? size : 1);
  if (buf == NULL) return 0;
  memcpy(buf, data, size);
  const char *p = buf, *end = buf + size, *name, *value;
  size_t nlen, vlen, fields = 0;
  while (otsk_http_header_next(&p, end, &name, &nlen, &value, &vlen)) {
    if (p < buf || p > end) abort();
    if (nlen == 0 || name < buf || name + nlen > end) abort();
    if (memchr(name, ':', nlen) || memchr(name, '\n', nlen) || memchr(name, '\r', nlen)) abort();
    if (value < buf || value + vlen > end) abort();
    if (memchr(value, '\n', vlen) || memchr(value, '\r', vlen)) abort();
    if (vlen && (value[0] == ' ' || value[0] == '\t' || value[vlen - 1] == ' ' || value[vlen - 1] == '\t')) abort();
    if (++fields > size) abort();  /* each field consumes at least one byte */
  }
  if (p != end) abort();
  free(buf);
  return 0;
}
