/* getrow.h -- the protobuf of a plain GetRow (API 2015-12-31), by hand:
 * the request's fields read in place (no allocation) and the answer
 * written, for the server's one-call GetRow (no Lua). A request with any
 * field beyond table_name, primary_key, columns_to_get, max_versions and
 * cache_blocks is not taken: the caller's general path answers it. */
#ifndef OTSKIT_GETROW_H
#define OTSKIT_GETROW_H

#include <stddef.h>
#include <stdint.h>

#include "plainbuffer.h"

enum { GR_MAX_COLUMNS = 128 }; /* columns_to_get read here (the service's limit); more: not taken */

typedef struct { const char *s; size_t n; } gr_bytes;

typedef struct {
  gr_bytes table, key;                 /* (point into the body) */
  gr_bytes columns[GR_MAX_COLUMNS];
  size_t ncolumns;
  int64_t max_versions;                /* 0: not sent */
} gr_request;

/* body[0..n) as a GetRowRequest into *r: 1; 0 with *why (static text)
 * when it is not one taken here (malformed, an overlong varint too; a
 * required field missing; a field not listed above; max_versions < 1;
 * too many columns). */
int gr_parse(const void *body, size_t n, gr_request *r, const char **why);

/* Appends GetRowResponse{consumed {capacity_unit {read, write = 0}},
 * row} to w (w->oom on out of memory). */
void gr_answer(pb_writer *w, int64_t read_cu, const void *row, size_t rowlen);

#endif
