/* sign.h -- the primitives of Tablestore request/response signatures:
 * HMAC-SHA1, MD5, base64 (OpenSSL) and a constant-time compare. Plain C. */
#ifndef OTSKIT_SIGN_H
#define OTSKIT_SIGN_H

#include <stddef.h>

/* base64 of HMAC-SHA1(key, msg) into out (29 bytes incl. NUL); 1 or 0. */
int sign_hmac_sha1_b64(const void *key, size_t klen, const void *msg, size_t n, char out[29]);
/* base64 of MD5(p) into out (25 bytes incl. NUL); 1 or 0. */
int sign_md5_b64(const void *p, size_t n, char out[25]);
/* 1 when a and b are equal; the time depends only on the lengths. */
int sign_equal(const void *a, size_t alen, const void *b, size_t blen);

/* A header as given: name and value bytes (not copied). */
typedef struct { const char *name; size_t nlen; const char *val; size_t vlen; } sign_header;

/* The signature of the canonical header text: base64 of HMAC-SHA1(key,
 * head .. lines .. tail) into out, where lines are "name:value\n" for each
 * header whose name starts with "x-ots-" in any case, but x-ots-signature:
 * the name lower-cased (ASCII), the value without leading and trailing
 * ASCII white space (space, \t, \n, \v, \f, \r), sorted by bytes (a
 * common prefix: the shorter first). 1, or 0 (out of memory, HMAC failed). */
int sign_headers_b64(const void *key, size_t klen, const char *head, size_t hlen,
                     const sign_header *h, size_t n, const char *tail, size_t tlen, char out[29]);

#endif
