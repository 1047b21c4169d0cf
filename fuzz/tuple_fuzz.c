/* tuple_fuzz.c -- libFuzzer over the tuple decoder (both variants): never
 * read out of bounds; whatever decodes re-encodes to the same bytes. */
#include <stdlib.h>
#include <string.h>

#include "tuple.h"

static void check(const uint8_t *data, size_t size, int desc) {
  tuple_reader r;
  tuple_item it;
  tuple_buf b;
  int rc;
  tuple_reader_init(&r, data, size, desc);
  tuple_buf_init(&b);
  while ((rc = tuple_read(&r, &it)) == 1) {
    unsigned char *tmp = NULL;
    switch (it.type) {
      case TUPLE_NIL: rc = desc ? tuple_put_nil_desc(&b) : tuple_put_nil(&b); break;
      case TUPLE_BYTES:
      case TUPLE_TEXT:
        tmp = malloc(it.len + 1);
        if (!tmp) abort();
        tuple_item_copy(&it, tmp);
        rc = it.type == TUPLE_BYTES ? tuple_put_bytes(&b, tmp, it.len)
                                    : tuple_put_text(&b, tmp, it.len);
        free(tmp);
        break;
      case TUPLE_INT: rc = tuple_put_int(&b, it.i); break;
      case TUPLE_DOUBLE: rc = tuple_put_double(&b, it.d); break;
      case TUPLE_BOOL: rc = tuple_put_bool(&b, it.b); break;
    }
    if (rc != 0) abort();
  }
  if (rc == 0) {
    if (desc && tuple_finish_desc(&b, 0)) abort();
    if (b.len != size || (size && memcmp(b.p, data, size) != 0)) abort();
  } else if (r.err == NULL) {
    abort();
  }
  tuple_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check(data, size, 0);
  check(data, size, 1);
  return 0;
}
