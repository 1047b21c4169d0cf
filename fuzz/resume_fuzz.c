/* resume_fuzz.c -- the resume-token decoder on arbitrary text, with and without
 * a secret: never a crash or an out-of-bounds read; whatever decodes
 * re-encodes to the very same text (one cursor, one text). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "resume.h"

static const unsigned char secret[] = "fuzzing secret, 16+ bytes";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static resume_token c;
  static char text[RESUME_MAX_TEXT];
  const char *why = NULL;
  const unsigned char *key = NULL;
  size_t slen = 0, n;
  /* first byte picks signed or not; the rest is the cursor text */
  if (size < 1) return 0;
  if (data[0] & 1) {
    key = secret;
    slen = sizeof secret - 1;
  }
  data++;
  size--;
  if (resume_decode((const char *)data, size, key, slen, &c, &why) != 0) {
    if (why == NULL) abort();
    return 0;
  }
  if (c.k < 1 || c.k > 1024 || c.src >= c.k || c.nparts < 1 || c.nparts > RESUME_MAX_PARTS) abort();
  n = resume_encode(&c, key, slen, text, &why);
  if (n != size || memcmp(text, data, n) != 0) abort();
  return 0;
}
