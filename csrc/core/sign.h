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

/* The x-ots-date text of ms since the epoch, "2024-01-02T03:04:05.678Z"
 * (UTC), into out (25 bytes incl. NUL); 0 outside the years 1970-9999. */
int sign_format_date(long long ms, char out[25]);
/* x-ots-date "YYYY-MM-DDTHH:MM:SS[.f+]Z" -> ms since the epoch (the
 * fraction's first three digits; a leap second 60 taken); 1, or 0 when
 * it is not such a date. */
int sign_parse_date(const char *s, size_t n, long long *ms);

/* The credentials a server checks requests with and signs answers with. */
typedef struct {
  const char *secret; size_t slen;
  const char *akid; size_t aklen;
  const char *inst; size_t ilen;
} sign_keys;

/* The API of the request line "POST /<letters and digits> HTTP/1.x\r\n"
 * that raw starts with (a pointer into raw); 1, or 0 for any other line. */
int sign_raw_api(const char *raw, size_t n, const char **api, size_t *alen);

/* 1 when the request whose request line and header lines are raw (as
 * nginx's lua module gives them: ngx.req.raw_header()) and whose body is
 * body carries every header a request needs, once, and they check out
 * against k and now_ms: API version 2015-12-31, an x-ots-date within 15
 * minutes of now_ms, the access key id, the instance, the body's MD5 and
 * the V2 signature. 0 when any check fails, and for any header text it
 * does not read exactly as nginx does (a header name other than letters,
 * digits and '-', a byte outside printable ASCII, a value ending in a
 * space or ':', an x-ots-* header twice, over 60 headers, a line not
 * ended by CRLF): the caller's general path then decides and answers. */
int sign_raw_verify(const char *raw, size_t n, const char *body, size_t blen, const sign_keys *k, double now_ms);

/* An answer's x-ots-* header values: its body's MD5, its x-ots-date and
 * the signature over them, the request id and "/" api. */
typedef struct { char md5[25]; char date[25]; char sig[29]; } sign_answer_t;
/* 1, or 0 (ms outside sign_format_date's years, api or rid over 64 bytes,
 * MD5 or HMAC failed). */
int sign_answer(const sign_keys *k, const char *api, size_t alen, const char *body, size_t blen, long long ms,
                const char *rid, size_t ridlen, sign_answer_t *out);

#endif
