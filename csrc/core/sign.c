/* sign.c -- HMAC-SHA1 / MD5 / base64 for Tablestore signatures. */
#include "sign.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

int sign_hmac_sha1_b64(const void *key, size_t klen, const void *msg, size_t n, char out[29]) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mlen = 0;
  if (klen > 0x7fffffff) return 0;
  if (!HMAC(EVP_sha1(), key, (int)klen, msg, n, mac, &mlen) || mlen != 20) return 0;
  return EVP_EncodeBlock((unsigned char *)out, mac, 20) == 28;
}

int sign_md5_b64(const void *p, size_t n, char out[25]) {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int dlen = 0;
  if (!EVP_Digest(p, n, d, &dlen, EVP_md5(), NULL) || dlen != 16) return 0;
  return EVP_EncodeBlock((unsigned char *)out, d, 16) == 24;
}

int sign_equal(const void *a, size_t alen, const void *b, size_t blen) {
  const unsigned char *x = a, *y = b;
  unsigned char diff = alen != blen;
  size_t i, n = alen < blen ? alen : blen;
  for (i = 0; i < n; i++) diff |= x[i] ^ y[i];
  return diff == 0;
}

static int is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
static unsigned char lower(unsigned char c) { return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c; }

typedef struct { const char *p; size_t n; } line;

static int line_cmp(const void *a, const void *b) {
  const line *x = a, *y = b;
  size_t n = x->n < y->n ? x->n : y->n;
  int r = memcmp(x->p, y->p, n);
  return r ? r : (x->n < y->n ? -1 : x->n > y->n);
}

/* 1 when name (nlen bytes) lower-cased is what (a lower-case literal) */
static int name_is(const char *name, size_t nlen, const char *what, size_t wlen) {
  size_t i;
  if (nlen != wlen) return 0;
  for (i = 0; i < nlen; i++)
    if (lower((unsigned char)name[i]) != (unsigned char)what[i]) return 0;
  return 1;
}

int sign_headers_b64(const void *key, size_t klen, const char *head, size_t hlen,
                     const sign_header *h, size_t n, const char *tail, size_t tlen, char out[29]) {
  size_t i, k = 0, total = hlen + tlen, off;
  char *text, *q, *start;
  line *lines;
  int ok;
  for (i = 0; i < n; i++) total += h[i].nlen + h[i].vlen + 2;
  lines = malloc((n ? n : 1) * sizeof *lines);
  text = malloc(2 * total + 1); /* the lines, then the text signed */
  if (lines == NULL || text == NULL) { free(lines); free(text); return 0; }
  q = text;
  for (i = 0; i < n; i++) {
    const unsigned char *v = (const unsigned char *)h[i].val;
    size_t a = 0, b = h[i].vlen, j;
    if (h[i].nlen < 6 || !name_is(h[i].name, 6, "x-ots-", 6)) continue;
    if (name_is(h[i].name, h[i].nlen, "x-ots-signature", 15)) continue;
    while (a < b && is_space(v[a])) a++;
    while (b > a && is_space(v[b - 1])) b--;
    lines[k].p = q;
    for (j = 0; j < h[i].nlen; j++) *q++ = (char)lower((unsigned char)h[i].name[j]);
    *q++ = ':';
    if (b > a) memcpy(q, v + a, b - a);
    q += b - a;
    *q++ = '\n';
    lines[k].n = (size_t)(q - lines[k].p);
    k++;
  }
  qsort(lines, k, sizeof *lines, line_cmp);
  start = q; /* the text signed follows the lines */
  off = 0;
  if (hlen) memcpy(start, head, hlen);
  off += hlen;
  for (i = 0; i < k; i++) { memcpy(start + off, lines[i].p, lines[i].n); off += lines[i].n; }
  if (tlen) memcpy(start + off, tail, tlen);
  off += tlen;
  ok = sign_hmac_sha1_b64(key, klen, start, off, out);
  free(lines);
  free(text);
  return ok;
}
