/* key_test.c -- spliced keys in C: the seed's example, order, edges of the
 * int64 range, charsets, the separator check, decoding bad keys. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "splice.h"

static int enc3(const splice *sp, int64_t a, const char *b, int64_t c,
                splice_out *o) {
  size_t bad;
  o->len = 0;
  if (splice_put_int(sp, 0, a, o) != SPLICE_OK) return -1;
  if (splice_put_string(sp, 1, b, strlen(b), o, &bad) != SPLICE_OK) return -1;
  if (splice_put_int(sp, 2, c, o) != SPLICE_OK) return -1;
  return 0;
}

static int cmpout(const splice_out *a, const splice_out *b) {
  size_t n = a->len < b->len ? a->len : b->len;
  int c = memcmp(a->buf, b->buf, n);
  if (c) return c < 0 ? -1 : 1;
  return a->len == b->len ? 0 : (a->len < b->len ? -1 : 1);
}

static void seed_example(void) {
  splice_field f[3];
  splice sp = {',', 3, f};
  splice_out o[4];
  splice_part parts[3];
  const char *why = NULL;
  unsigned char bad;
  memset(f, 0, sizeof f);
  f[0].kind = SPLICE_INT; f[0].width = 6;
  f[1].kind = SPLICE_STRING;
  CHECK(splice_set_charset(&f[1], "alnum", 5) == 0);
  f[2].kind = SPLICE_INT; f[2].width = 6;
  CHECK(splice_check(&sp, &bad) == -1);
  CHECK(enc3(&sp, 16, "a100", 66661, &o[0]) == 0);
  CHECK(enc3(&sp, 54, "a100", 6777, &o[1]) == 0);
  CHECK(enc3(&sp, 54, "a1001", 6777, &o[2]) == 0);
  CHECK(enc3(&sp, 167, "a101", 283408, &o[3]) == 0);
  CHECK(o[0].len == 18 && memcmp(o[0].buf, "000016,a100,066661", 18) == 0);
  CHECK(cmpout(&o[0], &o[1]) < 0 && cmpout(&o[1], &o[2]) < 0 && cmpout(&o[2], &o[3]) < 0);
  CHECK(splice_decode(&sp, o[2].buf, o[2].len, parts, &why) == 0);
  CHECK(parts[0].v == 54 && parts[1].n == 5 && memcmp(parts[1].p, "a1001", 5) == 0 &&
        parts[2].v == 6777);
  /* ':' is above '0'..'9': refused, naming field 1 (the string) */
  sp.sep = ':';
  CHECK(splice_check(&sp, &bad) == 1 && bad == '0');
  sp.sep = '5';                       /* a digit with int fields */
  CHECK(splice_check(&sp, &bad) == 0);
}

static void int_edges(void) {
  splice_field f[1];
  splice sp = {',', 1, f};
  splice_out o;
  splice_part p[1];
  const char *why;
  memset(f, 0, sizeof f);
  f[0].kind = SPLICE_INT; f[0].width = 19; f[0].min = INT64_MIN;
  o.len = 0;
  CHECK(splice_put_int(&sp, 0, INT64_MIN, &o) == SPLICE_OK);
  CHECK(o.len == 19 && memcmp(o.buf, "0000000000000000000", 19) == 0);
  o.len = 0;
  CHECK(splice_put_int(&sp, 0, -1, &o) == SPLICE_OK);
  CHECK(memcmp(o.buf, "9223372036854775807", 19) == 0);
  CHECK(splice_decode(&sp, o.buf, o.len, p, &why) == 0 && p[0].v == -1);
  o.len = 0;
  CHECK(splice_put_int(&sp, 0, INT64_MAX, &o) == SPLICE_ERR_WIDTH);   /* 2^64-1: 20 digits */
  CHECK(splice_decode(&sp, "9999999999999999999", 19, p, &why) == 0 &&
        p[0].v == (int64_t)(9999999999999999999ULL - 9223372036854775808ULL));
  f[0].min = 0;
  CHECK(splice_decode(&sp, "9223372036854775807", 19, p, &why) == 0 && p[0].v == INT64_MAX);
  CHECK(splice_decode(&sp, "9223372036854775808", 19, p, &why) == -1);
  CHECK(splice_decode(&sp, "922337203685477580", 18, p, &why) == -1);
  o.len = 0;
  CHECK(splice_put_int(&sp, 0, -1, &o) == SPLICE_ERR_WIDTH);           /* below min */
  f[0].width = 3; f[0].min = -50;
  o.len = 0;
  CHECK(splice_put_int(&sp, 0, 949, &o) == SPLICE_OK && memcmp(o.buf, "999", 3) == 0);
  o.len = 0;
  CHECK(splice_put_int(&sp, 0, 950, &o) == SPLICE_ERR_WIDTH);
}

static void strings(void) {
  splice_field f[2];
  splice sp = {'-', 2, f};
  splice_out o;
  splice_part p[2];
  size_t bad = 0;
  const char *why;
  unsigned char b;
  char big[SPLICE_KEY_MAX + 1];
  memset(f, 0, sizeof f);
  f[0].kind = SPLICE_STRING;
  f[1].kind = SPLICE_STRING;
  CHECK(splice_set_charset(&f[0], "hex", 3) == 0);
  CHECK(splice_set_charset(&f[1], "xy.", 3) == 0);
  CHECK(splice_set_charset(&f[1], "", 0) == -1);
  CHECK(splice_set_charset(&f[1], "xy/", 3) == 0);
  CHECK(splice_check(&sp, &b) == -1);          /* '-' < '/' < '0' */
  CHECK(splice_set_charset(&f[1], "xy-", 3) == 0);
  CHECK(splice_check(&sp, &b) == 1 && b == '-');
  CHECK(splice_set_charset(&f[1], "xy", 2) == 0);
  o.len = 0;
  CHECK(splice_put_string(&sp, 0, "0aF", 3, &o, &bad) == SPLICE_ERR_CHARSET && bad == 2);
  CHECK(splice_put_string(&sp, 0, "0af", 3, &o, &bad) == SPLICE_OK);
  CHECK(splice_put_string(&sp, 1, "", 0, &o, &bad) == SPLICE_OK);
  CHECK(o.len == 4 && memcmp(o.buf, "0af-", 4) == 0);
  CHECK(splice_decode(&sp, o.buf, o.len, p, &why) == 0 && p[0].n == 3 && p[1].n == 0);
  CHECK(splice_decode(&sp, "0af", 3, p, &why) == -1);
  CHECK(splice_decode(&sp, "0af-x-y", 7, p, &why) == -1);
  CHECK(splice_decode(&sp, "0ag-x", 5, p, &why) == -1);
  memset(big, 'x', sizeof big);
  o.len = 0;
  CHECK(splice_put_string(&sp, 0, "a", 1, &o, &bad) == SPLICE_OK);
  CHECK(splice_put_string(&sp, 1, big, SPLICE_KEY_MAX - 2, &o, &bad) == SPLICE_OK);
  CHECK(o.len == SPLICE_KEY_MAX);
  o.len = 0;
  CHECK(splice_put_string(&sp, 0, "a", 1, &o, &bad) == SPLICE_OK);
  CHECK(splice_put_string(&sp, 1, big, SPLICE_KEY_MAX - 1, &o, &bad) == SPLICE_ERR_TOOLONG);
  CHECK(splice_put_string(&sp, 1, big, sizeof big, &o, &bad) == SPLICE_ERR_TOOLONG);
}

/* Random (int, string) tuples: memcmp order equals tuple order. */
static void order_property(void) {
  splice_field f[3];
  splice sp = {',', 3, f};
  unsigned seed = 99;
  int trial, wrong = 0;
  memset(f, 0, sizeof f);
  f[0].kind = SPLICE_INT; f[0].width = 4; f[0].min = -500;
  f[1].kind = SPLICE_STRING;
  splice_set_charset(&f[1], "ab", 2);
  f[2].kind = SPLICE_INT; f[2].width = 2;
  for (trial = 0; trial < 20000; trial++) {
    int64_t a[2], c[2];
    char s[2][4];
    splice_out o[2];
    int k, want, sc;
    for (k = 0; k < 2; k++) {
      int len, j;
      seed = seed * 1103515245u + 12345u;
      a[k] = -500 + (int64_t)((seed >> 8) % 7);
      len = (int)((seed >> 4) % 4);
      for (j = 0; j < len; j++) s[k][j] = (seed >> (12 + j)) & 1 ? 'b' : 'a';
      s[k][len] = 0;
      c[k] = (int64_t)((seed >> 20) % 100);
      enc3(&sp, a[k], s[k], c[k], &o[k]);
    }
    sc = strcmp(s[0], s[1]);
    want = a[0] != a[1] ? (a[0] < a[1] ? -1 : 1)
         : sc != 0 ? (sc < 0 ? -1 : 1)
         : c[0] != c[1] ? (c[0] < c[1] ? -1 : 1) : 0;
    wrong += cmpout(&o[0], &o[1]) != want;
  }
  CHECK(wrong == 0);
}

int main(void) {
  seed_example();
  int_edges();
  strings();
  order_property();
  return check_done();
}
