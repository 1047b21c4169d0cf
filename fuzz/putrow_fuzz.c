/* putrow_fuzz.c -- libFuzzer over rs_put_row (rowstream.h): a PutRow's
 * PlainBuffer row is untrusted input. Never reads out of bounds or leaks;
 * a row it takes gives a key that is a tuple of exactly the schema's
 * columns and a value that decodes (row.h) into cells sorted by name,
 * newest first, every one with a timestamp within the limits. */
#include <stdlib.h>
#include <string.h>

#include "row.h"
#include "rowstream.h"
#include "tuple.h"

static void check(const uint8_t *data, size_t size, const rs_opts *o) {
  rs_put_limits lim;
  tuple_buf key;
  unsigned char *val = NULL;
  size_t vlen = 0, pos = 0, n = 0;
  int64_t rsize = 0;
  int any_ts = 0, rc;
  const char *why = NULL;
  lim.max_cols = 8; lim.max_cell = 64; lim.max_pk_cell = 16; lim.max_row = 256;
  lim.now = 1700000000000; lim.dev = 86400000;
  tuple_buf_init(&key);
  rc = rs_put_row(data, size, o, &lim, &key, &val, &vlen, &rsize, &any_ts, &why);
  if (rc == RS_PUT_OK) {
    tuple_reader r;
    tuple_item it;
    row_cell c, prev;
    size_t i;
    if (rsize > lim.max_row) abort();
    tuple_reader_init(&r, key.p, key.len, 0);
    for (i = 0; i < o->npk; i++) if (tuple_read(&r, &it) != 1) abort();
    if (tuple_read(&r, &it) != 0) abort();
    memset(&prev, 0, sizeof prev);
    while ((rc = row_next(val, vlen, &pos, &c)) == 1) {
      if (!c.has_ts || c.ts < lim.now - lim.dev || c.ts > lim.now + lim.dev) abort();
      if (n > 0) {
        int k = row_name_cmp(prev.name, prev.name_len, c.name, c.name_len);
        if (k > 0 || (k == 0 && prev.ts < c.ts)) abort();
      }
      prev = c;
      n++;
    }
    if (rc != 0 || n > lim.max_cols) abort();
  } else if (rc != RS_PUT_OTHER || why == NULL) {
    abort();
  }
  free(val);
  tuple_buf_free(&key);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rs_opts o;
  memset(&o, 0, sizeof o);
  o.npk = 1; o.pk_name[0].s = "id"; o.pk_name[0].n = 2; o.pk_type[0] = RS_PK_INTEGER;
  check(data, size, &o);
  o.npk = 2; o.pk_name[0].s = "k"; o.pk_name[0].n = 1; o.pk_type[0] = RS_PK_STRING;
  o.pk_name[1].s = "b"; o.pk_name[1].n = 1; o.pk_type[1] = RS_PK_BINARY;
  check(data, size, &o);
  return 0;
}
