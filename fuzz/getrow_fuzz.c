/* getrow_fuzz.c -- libFuzzer over a GetRow request's untrusted bytes:
 * gr_parse (getrow.h) reads the protobuf, rs_get_key (rowstream.h) the
 * PlainBuffer key. Never reads out of bounds or leaks; what gr_parse takes
 * points inside the input, has a table and a key, at most GR_MAX_COLUMNS
 * columns and max_versions 0 (not sent) or >= 1; a key rs_get_key takes is
 * a tuple of exactly the schema's columns; an answer gr_answer writes
 * around the key's bytes ends with them. */
#include <stdlib.h>
#include <string.h>

#include "getrow.h"
#include "rowstream.h"
#include "tuple.h"

static int inside(const gr_bytes *b, const uint8_t *data, size_t size) {
  return (const uint8_t *)b->s >= data && b->n <= size && (const uint8_t *)b->s + b->n <= data + size;
}

static void key_of(const void *p, size_t n, const rs_opts *o) {
  tuple_buf key;
  const char *why = NULL;
  int rc;
  tuple_buf_init(&key);
  rc = rs_get_key(p, n, o, 16, &key, &why);
  if (rc == RS_PUT_OK) {
    tuple_reader r;
    tuple_item it;
    size_t i;
    tuple_reader_init(&r, key.p, key.len, 0);
    for (i = 0; i < o->npk; i++) if (tuple_read(&r, &it) != 1) abort();
    if (tuple_read(&r, &it) != 0) abort();
  } else if (rc != RS_PUT_OTHER || why == NULL) {
    abort();
  }
  tuple_buf_free(&key);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gr_request r;
  const char *why = NULL;
  rs_opts o;
  pb_writer w;
  size_t i;
  memset(&o, 0, sizeof o);
  o.npk = 2; o.pk_name[0].s = "k"; o.pk_name[0].n = 1; o.pk_type[0] = RS_PK_STRING;
  o.pk_name[1].s = "id"; o.pk_name[1].n = 2; o.pk_type[1] = RS_PK_INTEGER;
  /* the input as a PlainBuffer key too */
  key_of(data, size, &o);
  if (!gr_parse(data, size, &r, &why)) {
    if (why == NULL) abort();
    return 0;
  }
  if (!inside(&r.table, data, size) || !inside(&r.key, data, size)) abort();
  if (r.ncolumns > GR_MAX_COLUMNS || r.max_versions < 0) abort();
  for (i = 0; i < r.ncolumns; i++) if (!inside(&r.columns[i], data, size)) abort();
  key_of(r.key.s, r.key.n, &o);
  pb_writer_init(&w);
  gr_answer(&w, (int64_t)size, r.key.s, r.key.n);
  if (!w.oom && (w.len < r.key.n || memcmp(w.p + w.len - r.key.n, r.key.s, r.key.n) != 0)) abort();
  pb_writer_free(&w);
  return 0;
}
