/* sign.c -- HMAC-SHA1 / MD5 / base64 for Tablestore signatures. */
#include "sign.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

/* The digests, fetched once per process: on OpenSSL 3 the one-shot
 * HMAC() and EVP_Digest() with EVP_md5() look the algorithm up in the
 * providers on every call, which cost more than hashing a request (about
 * 1 us of an HMAC-SHA1's 1.5 us). */
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
static EVP_MD *md_md5, *md_sha1;
static int md_freed_at_exit;
/* Given back when the process exits or core.so is unloaded (glibc runs a
 * library's atexit functions at its dlclose), so leak checkers see none. */
static void free_mds(void) {
  EVP_MD_free(md_md5);
  EVP_MD_free(md_sha1);
  md_md5 = md_sha1 = NULL;
}
static const EVP_MD *get_md(int sha1) {
  EVP_MD **m = sha1 ? &md_sha1 : &md_md5;
  if (*m == NULL) {
    *m = EVP_MD_fetch(NULL, sha1 ? "SHA1" : "MD5", NULL);
    /* registered after the fetch, which initialised OpenSSL and registered
     * its own cleanup: ours runs first */
    if (*m != NULL && !md_freed_at_exit) md_freed_at_exit = atexit(free_mds) == 0;
  }
  return *m;
}
#else
static const EVP_MD *get_md(int sha1) { return sha1 ? EVP_sha1() : EVP_md5(); }
#endif

/* digest of the parts a (an) and b (bn) into out (its size: outlen) */
static int digest2(const EVP_MD *md, const void *a, size_t an, const void *b, size_t bn, unsigned char *out,
                   unsigned int *outlen) {
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  int ok = c != NULL && EVP_DigestInit_ex(c, md, NULL) && (an == 0 || EVP_DigestUpdate(c, a, an))
    && (bn == 0 || EVP_DigestUpdate(c, b, bn)) && EVP_DigestFinal_ex(c, out, outlen);
  EVP_MD_CTX_free(c);
  return ok;
}

/* HMAC-SHA1 (RFC 2104) over the fetched SHA1 */
int sign_hmac_sha1_b64(const void *key, size_t klen, const void *msg, size_t n, char out[29]) {
  const EVP_MD *md = get_md(1);
  unsigned char k[64], pad[64], inner[EVP_MAX_MD_SIZE], mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0, i;
  if (md == NULL) return 0;
  memset(k, 0, sizeof k);
  if (klen > 64) {
    if (!digest2(md, key, klen, NULL, 0, k, &len) || len != 20) return 0;
  } else if (klen) {
    memcpy(k, key, klen);
  }
  for (i = 0; i < 64; i++) pad[i] = (unsigned char)(k[i] ^ 0x36);
  if (!digest2(md, pad, 64, msg, n, inner, &len) || len != 20) return 0;
  for (i = 0; i < 64; i++) pad[i] = (unsigned char)(k[i] ^ 0x5c);
  if (!digest2(md, pad, 64, inner, 20, mac, &len) || len != 20) return 0;
  return EVP_EncodeBlock((unsigned char *)out, mac, 20) == 28;
}

int sign_md5_b64(const void *p, size_t n, char out[25]) {
  const EVP_MD *md = get_md(0);
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int dlen = 0;
  if (md == NULL || !digest2(md, p, n, NULL, 0, d, &dlen) || dlen != 16) return 0;
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

/* ------------------------------------------------ a request's raw header */

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static int is_alnum(unsigned char c) { return is_digit(c) || (lower(c) >= 'a' && lower(c) <= 'z'); }

int sign_raw_api(const char *raw, size_t n, const char **api, size_t *alen) {
  size_t i = 6, a;
  if (n < 6 || memcmp(raw, "POST /", 6) != 0) return 0;
  a = i;
  while (i < n && is_alnum((unsigned char)raw[i])) i++;
  if (i == a || n - i < 11) return 0;
  if (memcmp(raw + i, " HTTP/1.1\r\n", 11) != 0 && memcmp(raw + i, " HTTP/1.0\r\n", 11) != 0) return 0;
  *api = raw + a;
  *alen = i - a;
  return 1;
}

/* days since 1970-01-01 of a civil date (proleptic Gregorian) */
static long long days_from_civil(long long y, long long m, long long d) {
  long long era, yoe, doy, doe;
  if (m <= 2) y--;
  era = (y >= 0 ? y : y - 399) / 400;
  yoe = y - era * 400;
  doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
  doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static int num(const char *s, size_t n) {
  int v = 0;
  size_t i;
  for (i = 0; i < n; i++) v = v * 10 + (s[i] - '0');
  return v;
}

int sign_parse_date(const char *s, size_t n, long long *ms) {
  static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  static const char shape[] = "dddd-dd-ddTdd:dd:dd";
  int y, mo, d, h, mi, se, frac = 0;
  size_t i, f;
  if (n < 20 || s[n - 1] != 'Z') return 0;
  for (i = 0; i < 19; i++) {
    if (shape[i] == 'd' ? !is_digit((unsigned char)s[i]) : s[i] != shape[i]) return 0;
  }
  /* then "" or "." and one or more digits, then the Z */
  if (n > 20) {
    if (s[19] != '.' || n == 21) return 0;
    for (i = 20; i < n - 1; i++)
      if (!is_digit((unsigned char)s[i])) return 0;
    for (f = 0; f < 3; f++) frac = frac * 10 + (20 + f < n - 1 ? s[20 + f] - '0' : 0);
  }
  y = num(s, 4); mo = num(s + 5, 2); d = num(s + 8, 2);
  h = num(s + 11, 2); mi = num(s + 14, 2); se = num(s + 17, 2);
  if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || se > 60) return 0;
  if (mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))) return 0;
  *ms = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60000 + (long long)se * 1000 + frac;
  return 1;
}

int sign_format_date(long long ms, char out[25]) {
  long long s, z, era, doe, yoe, doy, mp, y, m, d, sod;
  static const char dig[] = "0123456789";
  if (ms < 0 || ms >= 253402300800000LL) return 0; /* years 1970-9999 */
  s = ms / 1000;
  z = s / 86400;
  sod = s % 86400;
  z += 719468;
  era = z / 146097;
  doe = z - era * 146097;
  yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = yoe + era * 400;
  doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  if (m <= 2) y++;
  out[0] = dig[y / 1000]; out[1] = dig[y / 100 % 10]; out[2] = dig[y / 10 % 10]; out[3] = dig[y % 10];
  out[4] = '-'; out[5] = dig[m / 10]; out[6] = dig[m % 10];
  out[7] = '-'; out[8] = dig[d / 10]; out[9] = dig[d % 10];
  out[10] = 'T'; out[11] = dig[sod / 36000]; out[12] = dig[sod / 3600 % 10];
  out[13] = ':'; out[14] = dig[sod % 3600 / 600]; out[15] = dig[sod % 3600 / 60 % 10];
  out[16] = ':'; out[17] = dig[sod % 60 / 10]; out[18] = dig[sod % 10];
  out[19] = '.'; out[20] = dig[ms % 1000 / 100]; out[21] = dig[ms % 100 / 10]; out[22] = dig[ms % 10];
  out[23] = 'Z'; out[24] = 0;
  return 1;
}

#define RAW_MAX_HEADERS 60

/* the required headers, in auth's order */
static const char *const required[6] = {"x-ots-date", "x-ots-apiversion", "x-ots-accesskeyid",
                                        "x-ots-instancename", "x-ots-contentmd5", "x-ots-signature"};

int sign_raw_verify(const char *raw, size_t n, const char *body, size_t blen, const sign_keys *k, double now_ms) {
  sign_header h[RAW_MAX_HEADERS];
  const char *api, *req[6] = {0};
  size_t alen, reqlen[6] = {0}, nh = 0, j, p;
  char head[80], md5[25], sig[29];
  long long date;
  double skew;
  if (!sign_raw_api(raw, n, &api, &alen) || alen > 64) return 0;
  p = (size_t)((const char *)memchr(raw, '\n', n) - raw) + 1; /* past the request line (sign_raw_api saw it) */
  for (;;) {
    size_t ns = p, ne, vs, ve;
    if (n - p >= 2 && raw[p] == '\r' && raw[p + 1] == '\n') { p += 2; break; } /* the empty line */
    while (p < n && (is_alnum((unsigned char)raw[p]) || raw[p] == '-')) p++;
    if (p == ns || p >= n || raw[p] != ':') return 0;
    ne = p++;
    while (p < n && raw[p] == ' ') p++;
    vs = p;
    while (p < n && (unsigned char)raw[p] >= 0x20 && (unsigned char)raw[p] < 0x7f) p++;
    ve = p;
    if (n - p < 2 || raw[p] != '\r' || raw[p + 1] != '\n') return 0;
    p += 2;
    /* a value ending in a space or a colon: nginx's value may be shorter
     * (it strips trailing spaces, and the lua module writes back the NUL
     * nginx put after a value as ':'): not taken */
    if (ve > vs && (raw[ve - 1] == ' ' || raw[ve - 1] == ':')) return 0;
    if (nh == RAW_MAX_HEADERS) return 0;
    h[nh].name = raw + ns; h[nh].nlen = ne - ns; h[nh].val = raw + vs; h[nh].vlen = ve - vs;
    if (h[nh].nlen >= 6 && name_is(h[nh].name, 6, "x-ots-", 6)) {
      for (j = 0; j < nh; j++) { /* an x-ots-* header sent twice: not taken */
        size_t m;
        if (h[j].nlen != h[nh].nlen) continue;
        for (m = 0; m < h[j].nlen && lower((unsigned char)h[j].name[m]) == lower((unsigned char)h[nh].name[m]); m++) {}
        if (m == h[j].nlen) return 0;
      }
      for (j = 0; j < 6; j++)
        if (name_is(h[nh].name, h[nh].nlen, required[j], strlen(required[j]))) { req[j] = h[nh].val; reqlen[j] = h[nh].vlen; }
    }
    nh++;
  }
  if (p != n) return 0;
  for (j = 0; j < 6; j++)
    if (req[j] == NULL) return 0;
  if (reqlen[1] != 10 || memcmp(req[1], "2015-12-31", 10) != 0) return 0;
  if (!sign_parse_date(req[0], reqlen[0], &date)) return 0;
  if (!sign_equal(req[2], reqlen[2], k->akid, k->aklen)) return 0;
  if (reqlen[3] != k->ilen || memcmp(req[3], k->inst, k->ilen) != 0) return 0;
  skew = (double)date - now_ms;
  if (skew > 900000.0 || skew < -900000.0 || skew != skew) return 0;
  if (!sign_md5_b64(body, blen, md5) || !sign_equal(md5, 24, req[4], reqlen[4])) return 0;
  head[0] = '/';
  memcpy(head + 1, api, alen);
  memcpy(head + 1 + alen, "\nPOST\n\n", 7);
  if (!sign_headers_b64(k->secret, k->slen, head, alen + 8, h, nh, "", 0, sig)) return 0;
  return sign_equal(sig, 28, req[5], reqlen[5]);
}

int sign_answer(const sign_keys *k, const char *api, size_t alen, const char *body, size_t blen, long long ms,
                const char *rid, size_t ridlen, sign_answer_t *out) {
  sign_header h[4];
  char tail[80];
  if (alen > 64 || ridlen > 64 || !sign_format_date(ms, out->date)) return 0;
  if (!sign_md5_b64(body, blen, out->md5)) return 0;
  h[0].name = "x-ots-contentmd5"; h[0].nlen = 16; h[0].val = out->md5; h[0].vlen = 24;
  h[1].name = "x-ots-requestid"; h[1].nlen = 15; h[1].val = rid; h[1].vlen = ridlen;
  h[2].name = "x-ots-date"; h[2].nlen = 10; h[2].val = out->date; h[2].vlen = 24;
  h[3].name = "x-ots-contenttype"; h[3].nlen = 17; h[3].val = "protocol buffer"; h[3].vlen = 15;
  tail[0] = '/';
  if (alen) memcpy(tail + 1, api, alen);
  return sign_headers_b64(k->secret, k->slen, "", 0, h, 4, tail, alen + 1, out->sig);
}
