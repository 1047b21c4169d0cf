/* splice_fuzz.c -- libFuzzer over splice_decode: the first input byte
 * picks a splice layout, the rest is the key. Never read out of bounds;
 * whatever decodes re-encodes to the same bytes. */
#include <stdlib.h>
#include <string.h>

#include "splice.h"

static void layout(int which, splice *sp, splice_field *f) {
  memset(f, 0, 4 * sizeof *f);
  sp->fields = f;
  sp->sep = ',';
  switch (which % 4) {
    case 0:                           /* the seed's card purchases */
      sp->nfields = 3;
      f[0].kind = SPLICE_INT; f[0].width = 6;
      f[1].kind = SPLICE_STRING; splice_set_charset(&f[1], "alnum", 5);
      f[2].kind = SPLICE_INT; f[2].width = 6;
      break;
    case 1:                           /* the full int64 range */
      sp->nfields = 2;
      f[0].kind = SPLICE_INT; f[0].width = 19; f[0].min = INT64_MIN;
      f[1].kind = SPLICE_INT; f[1].width = 19; f[1].min = 0;
      break;
    case 2:                           /* strings only, odd separator */
      sp->nfields = 4;
      sp->sep = 0x01;
      f[0].kind = f[1].kind = f[2].kind = f[3].kind = SPLICE_STRING;
      splice_set_charset(&f[0], "hex", 3);
      splice_set_charset(&f[1], "\x02\xff", 2);
      splice_set_charset(&f[2], "lower", 5);
      splice_set_charset(&f[3], "digits", 6);
      break;
    default:                          /* one narrow field, negative min */
      sp->nfields = 1;
      f[0].kind = SPLICE_INT; f[0].width = 1; f[0].min = -5;
      break;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  splice sp;
  splice_field f[4];
  splice_part parts[4];
  splice_out o;
  const char *why = NULL;
  unsigned char bad;
  char *key;
  int i;
  if (size < 1) return 0;
  layout(data[0], &sp, f);
  if (splice_check(&sp, &bad) != -1) abort();
  /* a copy of exactly the key bytes, so ASan sees any overread */
  key = malloc(size - 1 ? size - 1 : 1);
  if (!key) abort();
  memcpy(key, data + 1, size - 1);
  if (splice_decode(&sp, key, size - 1, parts, &why) == 0) {
    o.len = 0;
    for (i = 0; i < sp.nfields; i++) {
      size_t b;
      splice_err e = f[i].kind == SPLICE_INT
                         ? splice_put_int(&sp, i, parts[i].v, &o)
                         : splice_put_string(&sp, i, parts[i].p, parts[i].n, &o, &b);
      if (e == SPLICE_ERR_TOOLONG) { free(key); return 0; }
      if (e != SPLICE_OK) abort();
    }
    if (o.len != size - 1 || memcmp(o.buf, key, o.len) != 0) abort();
  } else if (why == NULL) {
    abort();
  }
  free(key);
  return 0;
}
