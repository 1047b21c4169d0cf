/* resume.c -- encoding, decoding and signing of merge resume tokens (the
 * `cursor` option of merge.read; not the kv scan cursor). */
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "resume.h"

#define MAC_LEN 32
static const char b64[] =
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
static const char ctx[] = "otskit-cursor"; /* domain separation, NUL included */

static int mac(const unsigned char *secret, size_t slen, const unsigned char *p,
               size_t n, unsigned char *out) {
  unsigned char buf[sizeof ctx + RESUME_MAX_RAW];
  unsigned int len = 0;
  memcpy(buf, ctx, sizeof ctx);
  memcpy(buf + sizeof ctx, p, n);
  return HMAC(EVP_sha256(), secret, (int)slen, buf, sizeof ctx + n, out, &len) != NULL &&
         len == MAC_LEN;
}

static size_t b64_encode(const unsigned char *p, size_t n, char *out) {
  size_t i, o = 0;
  for (i = 0; i + 2 < n; i += 3) {
    unsigned long v = ((unsigned long)p[i] << 16) | ((unsigned long)p[i + 1] << 8) | p[i + 2];
    out[o++] = b64[(v >> 18) & 63];
    out[o++] = b64[(v >> 12) & 63];
    out[o++] = b64[(v >> 6) & 63];
    out[o++] = b64[v & 63];
  }
  if (n - i == 1) {
    out[o++] = b64[p[i] >> 2];
    out[o++] = b64[(p[i] & 3) << 4];
  } else if (n - i == 2) {
    unsigned long v = ((unsigned long)p[i] << 8) | p[i + 1];
    out[o++] = b64[(v >> 10) & 63];
    out[o++] = b64[(v >> 4) & 63];
    out[o++] = b64[(v << 2) & 63];
  }
  return o;
}

static int b64_val(int c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

/* Canonical base64url only (unused trailing bits zero), so one cursor has
 * one text. Returns the byte count or -1. */
static long b64_decode(const char *s, size_t n, unsigned char *out, size_t cap) {
  size_t i, o = 0;
  unsigned long acc = 0;
  int bits = 0;
  if (n % 4 == 1) return -1;
  if (n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0) > cap) return -1;
  for (i = 0; i < n; i++) {
    int v = b64_val((unsigned char)s[i]);
    if (v < 0) return -1;
    acc = ((acc << 6) | (unsigned long)v) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (unsigned char)((acc >> bits) & 0xff);
    }
  }
  if (bits && (acc & ((1ul << bits) - 1))) return -1;
  return (long)o;
}

size_t resume_encode(const resume_token *c, const unsigned char *secret, size_t slen,
                     char *out, const char **why) {
  unsigned char p[RESUME_MAX_RAW];
  size_t n = 0;
  int i;
  if (c->k < 1 || c->k > 1024 || c->src >= c->k) { *why = "bad source"; return 0; }
  if (c->nparts < 1 || c->nparts > RESUME_MAX_PARTS) { *why = "bad key part count"; return 0; }
  p[n++] = RESUME_VERSION;
  p[n++] = (unsigned char)((c->flags & (RESUME_F_DESC | RESUME_F_DEDUP | RESUME_F_TYPED)) |
                           (secret ? RESUME_F_SIGNED : 0));
  p[n++] = (unsigned char)(c->k >> 8);
  p[n++] = (unsigned char)c->k;
  p[n++] = (unsigned char)(c->src >> 8);
  p[n++] = (unsigned char)c->src;
  p[n++] = (unsigned char)c->nparts;
  for (i = 0; i < c->nparts; i++) {
    const resume_part *q = &c->part[i];
    if (q->is_int) {
      uint64_t u = (uint64_t)q->i;
      int b;
      if (n + 9 > RESUME_MAX_RAW - MAC_LEN) { *why = "key too long for a cursor"; return 0; }
      p[n++] = 'i';
      for (b = 7; b >= 0; b--) p[n++] = (unsigned char)(u >> (8 * b));
    } else {
      if (q->n > RESUME_MAX_PART || n + 3 + q->n > RESUME_MAX_RAW - MAC_LEN) {
        *why = "key too long for a cursor";
        return 0;
      }
      p[n++] = 's';
      p[n++] = (unsigned char)(q->n >> 8);
      p[n++] = (unsigned char)q->n;
      if (q->n) memcpy(p + n, q->s, q->n);
      n += q->n;
    }
  }
  if (secret) {
    if (!mac(secret, slen, p, n, p + n)) { *why = "HMAC failed"; return 0; }
    n += MAC_LEN;
  }
  return b64_encode(p, n, out);
}

int resume_decode(const char *text, size_t n, const unsigned char *secret,
                  size_t slen, resume_token *c, const char **why) {
  unsigned char *p = c->raw;
  long got;
  size_t len, at = 7;
  unsigned flags;
  int i;
  if (n == 0) { *why = "empty cursor"; return -1; }
  if (n > RESUME_MAX_TEXT) { *why = "cursor too long"; return -1; }
  got = b64_decode(text, n, p, RESUME_MAX_RAW);
  if (got < 0) { *why = "cursor is not canonical base64url"; return -1; }
  len = (size_t)got;
  if (len < 7) { *why = "truncated cursor"; return -1; }
  if (p[0] != RESUME_VERSION) { *why = "unknown cursor version"; return -1; }
  flags = p[1];
  if (flags & ~(unsigned)(RESUME_F_DESC | RESUME_F_DEDUP | RESUME_F_TYPED | RESUME_F_SIGNED)) {
    *why = "bad cursor flags";
    return -1;
  }
  if (flags & RESUME_F_SIGNED) {
    unsigned char want[MAC_LEN];
    if (!secret) { *why = "cursor is signed but no secret was given"; return -1; }
    if (len < 7 + MAC_LEN) { *why = "truncated cursor"; return -1; }
    len -= MAC_LEN;
    if (!mac(secret, slen, p, len, want) || CRYPTO_memcmp(want, p + len, MAC_LEN) != 0) {
      *why = "cursor signature does not match";
      return -1;
    }
  } else if (secret) {
    *why = "cursor is not signed";
    return -1;
  }
  c->flags = flags & ~(unsigned)RESUME_F_SIGNED;
  c->k = ((unsigned)p[2] << 8) | p[3];
  c->src = ((unsigned)p[4] << 8) | p[5];
  c->nparts = p[6];
  if (c->k < 1 || c->k > 1024 || c->src >= c->k) { *why = "bad cursor source"; return -1; }
  if (c->nparts < 1 || c->nparts > RESUME_MAX_PARTS ||
      (!(flags & RESUME_F_TYPED) && c->nparts != 1)) {
    *why = "bad cursor key";
    return -1;
  }
  for (i = 0; i < c->nparts; i++) {
    resume_part *q = &c->part[i];
    if (at >= len) { *why = "truncated cursor"; return -1; }
    if (p[at] == 'i' && (flags & RESUME_F_TYPED)) {
      uint64_t u = 0;
      int b;
      if (len - at < 9) { *why = "truncated cursor"; return -1; }
      for (b = 1; b <= 8; b++) u = (u << 8) | p[at + b];
      q->is_int = 1;
      q->i = u > (uint64_t)INT64_MAX ? -(int64_t)(~u) - 1 : (int64_t)u;
      q->s = NULL;
      q->n = 0;
      at += 9;
    } else if (p[at] == 's') {
      if (len - at < 3) { *why = "truncated cursor"; return -1; }
      q->n = ((size_t)p[at + 1] << 8) | p[at + 2];
      at += 3;
      if (q->n > RESUME_MAX_PART) { *why = "bad cursor key"; return -1; }
      if (len - at < q->n) { *why = "truncated cursor"; return -1; }
      q->is_int = 0;
      q->i = 0;
      q->s = p + at;
      at += q->n;
    } else {
      *why = "bad cursor key";
      return -1;
    }
  }
  if (at != len) { *why = "trailing bytes in cursor"; return -1; }
  return 0;
}
