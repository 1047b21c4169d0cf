/* splice.c -- spliced keys (see splice.h). */
#include <string.h>

#include "splice.h"

static void allow_range(splice_field *f, int lo, int hi) {
  int c;
  for (c = lo; c <= hi; c++) f->allow[c >> 3] |= (unsigned char)(1u << (c & 7));
}

int splice_set_charset(splice_field *f, const char *s, size_t n) {
  size_t i;
  memset(f->allow, 0, sizeof f->allow);
  if (n == 5 && memcmp(s, "alnum", 5) == 0) {
    allow_range(f, '0', '9'); allow_range(f, 'A', 'Z'); allow_range(f, 'a', 'z');
  } else if (n == 6 && memcmp(s, "digits", 6) == 0) {
    allow_range(f, '0', '9');
  } else if (n == 3 && memcmp(s, "hex", 3) == 0) {
    allow_range(f, '0', '9'); allow_range(f, 'a', 'f');
  } else if (n == 5 && memcmp(s, "lower", 5) == 0) {
    allow_range(f, 'a', 'z');
  } else if (n == 5 && memcmp(s, "upper", 5) == 0) {
    allow_range(f, 'A', 'Z');
  } else {
    if (n == 0) return -1;
    for (i = 0; i < n; i++) allow_range(f, (unsigned char)s[i], (unsigned char)s[i]);
  }
  return 0;
}

int splice_allows(const splice_field *f, unsigned char c) {
  return (f->allow[c >> 3] >> (c & 7)) & 1;
}

int splice_check(const splice *sp, unsigned char *bad) {
  int i, c;
  for (i = 0; i < sp->nfields; i++) {
    const splice_field *f = &sp->fields[i];
    if (f->kind == SPLICE_INT) {
      if (sp->sep >= '0' && sp->sep <= '9') { *bad = sp->sep; return i; }
      continue;
    }
    for (c = 0; c <= sp->sep; c++) {
      if (splice_allows(f, (unsigned char)c)) { *bad = (unsigned char)c; return i; }
    }
  }
  return -1;
}

static const uint64_t pow10_[20] = {
  1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
  100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL,
  1000000000000ULL, 10000000000000ULL, 100000000000000ULL,
  1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL,
  1000000000000000000ULL, 10000000000000000000ULL,
};

static const char digits2[] =
  "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
  "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
  "8081828384858687888990919293949596979899";

/* Room for the separator (i > 0) and need more bytes? Writes the sep. */
static splice_err open_field(const splice *sp, int i, size_t need, splice_out *o) {
  size_t sepn = i > 0 ? 1 : 0;
  if (need > SPLICE_KEY_MAX || o->len + sepn + need > SPLICE_KEY_MAX)
    return SPLICE_ERR_TOOLONG;
  if (sepn) o->buf[o->len++] = (char)sp->sep;
  return SPLICE_OK;
}

splice_err splice_put_int(const splice *sp, int i, int64_t v, splice_out *o) {
  const splice_field *f = &sp->fields[i];
  uint64_t d;
  int k;
  splice_err e;
  if (v < f->min) return SPLICE_ERR_WIDTH;
  d = (uint64_t)v - (uint64_t)f->min;   /* exact: 0 <= v - min < 2^64 */
  if (f->width < SPLICE_WIDTH_MAX + 1 && d > pow10_[f->width] - 1)
    return SPLICE_ERR_WIDTH;
  e = open_field(sp, i, (size_t)f->width, o);
  if (e != SPLICE_OK) return e;
  /* two digits per division: keys are built one per call, often */
  for (k = f->width - 1; k >= 1; k -= 2) {
    int two = (int)(d % 100);
    d /= 100;
    o->buf[o->len + (size_t)k] = digits2[2 * two + 1];
    o->buf[o->len + (size_t)k - 1] = digits2[2 * two];
  }
  if (k == 0) o->buf[o->len] = (char)('0' + (int)(d % 10));
  o->len += (size_t)f->width;
  return SPLICE_OK;
}

splice_err splice_put_string(const splice *sp, int i, const void *s, size_t n,
                             splice_out *o, size_t *bad) {
  const splice_field *f = &sp->fields[i];
  const unsigned char *p = (const unsigned char *)s;
  size_t k;
  splice_err e;
  for (k = 0; k < n; k++) {
    if (!splice_allows(f, p[k])) { *bad = k; return SPLICE_ERR_CHARSET; }
  }
  e = open_field(sp, i, n, o);
  if (e != SPLICE_OK) return e;
  if (n) memcpy(o->buf + o->len, s, n);
  o->len += n;
  return SPLICE_OK;
}

int splice_decode(const splice *sp, const char *s, size_t n,
                  splice_part *parts, const char **why) {
  size_t pos = 0;
  int i;
  for (i = 0; i < sp->nfields; i++) {
    const splice_field *f = &sp->fields[i];
    size_t end = pos, k;
    while (end < n && (unsigned char)s[end] != sp->sep) end++;
    if (i < sp->nfields - 1 && end >= n) { *why = "too few fields"; return -1; }
    if (i == sp->nfields - 1 && end < n) { *why = "too many fields"; return -1; }
    parts[i].p = s + pos;
    parts[i].n = end - pos;
    parts[i].v = 0;
    if (f->kind == SPLICE_INT) {
      uint64_t d = 0;
      if (end - pos != (size_t)f->width) { *why = "int field of the wrong width"; return -1; }
      for (k = pos; k < end; k++) {
        if (s[k] < '0' || s[k] > '9') { *why = "int field with a non-digit"; return -1; }
        d = d * 10 + (uint64_t)(s[k] - '0');  /* width <= 19: no overflow */
      }
      if (d > (uint64_t)INT64_MAX - (uint64_t)f->min) {
        *why = "int field outside int64"; return -1;
      }
      parts[i].v = (int64_t)((uint64_t)f->min + d);
    } else {
      for (k = pos; k < end; k++) {
        if (!splice_allows(f, (unsigned char)s[k])) {
          *why = "byte outside the field's charset"; return -1;
        }
      }
    }
    pos = end + 1;
  }
  return 0;
}
