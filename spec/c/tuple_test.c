/* tuple_test.c -- the tuple codec in C: FoundationDB vectors, order,
 * round trips, malformed input. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tuple.h"

static int hexeq(const tuple_buf *b, const char *hex) {
  size_t i;
  char h[3];
  if (strlen(hex) != 2 * b->len) return 0;
  for (i = 0; i < b->len; i++) {
    snprintf(h, sizeof h, "%02x", b->p[i]);
    if (memcmp(h, hex + 2 * i, 2) != 0) return 0;
  }
  return 1;
}

static int cmpbuf(const tuple_buf *a, const tuple_buf *b) {
  size_t n = a->len < b->len ? a->len : b->len;
  int c = n ? memcmp(a->p, b->p, n) : 0;
  if (c) return c < 0 ? -1 : 1;
  return a->len == b->len ? 0 : (a->len < b->len ? -1 : 1);
}

static void int_vectors(void) {
  static const struct { int64_t v; const char *hex; } cases[] = {
    {0, "14"}, {1, "1501"}, {-1, "13fe"}, {255, "15ff"}, {256, "160100"},
    {-255, "1300"}, {-256, "12feff"}, {65536, "17010000"},
    {INT64_MAX, "1c7fffffffffffffff"}, {INT64_MIN, "0c7fffffffffffffff"},
    {INT64_MIN + 1, "0c8000000000000000"},
  };
  size_t i;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tuple_buf b;
    tuple_reader r;
    tuple_item it;
    tuple_buf_init(&b);
    CHECK(tuple_put_int(&b, cases[i].v) == 0);
    CHECK(hexeq(&b, cases[i].hex));
    tuple_reader_init(&r, b.p, b.len, 0);
    CHECK(tuple_read(&r, &it) == 1 && it.type == TUPLE_INT && it.i == cases[i].v);
    CHECK(tuple_read(&r, &it) == 0);
    tuple_buf_free(&b);
  }
}

static void other_vectors(void) {
  tuple_buf b;
  tuple_buf_init(&b);
  CHECK(tuple_put_nil(&b) == 0 && tuple_put_bytes(&b, "foo\0bar", 7) == 0);
  CHECK(hexeq(&b, "0001666f6f00ff62617200"));
  b.len = 0;
  CHECK(tuple_put_text(&b, "hello", 5) == 0 && tuple_put_bool(&b, 0) == 0 &&
        tuple_put_bool(&b, 1) == 0);
  CHECK(hexeq(&b, "0268656c6c6f002627"));
  b.len = 0;
  CHECK(tuple_put_double(&b, 1.5) == 0 && tuple_put_double(&b, -1.5) == 0);
  CHECK(hexeq(&b, "21bff8000000000000214007ffffffffffff"));
  b.len = 0;
  CHECK(tuple_put_double(&b, -0.0) == 0 && tuple_put_double(&b, 0.0) == 0);
  CHECK(hexeq(&b, "217fffffffffffffff218000000000000000"));
  tuple_buf_free(&b);
  CHECK(b.p == NULL && b.len == 0);
  tuple_buf_free(&b);                 /* idempotent */
}

/* Every int in a sorted list encodes in the same order. */
static void int_order(void) {
  int64_t vs[400];
  int n = 0, i, k;
  for (k = 0; k < 63; k++) {
    int64_t p = (int64_t)1 << k;
    vs[n++] = p; vs[n++] = p - 1; vs[n++] = p + 1;
    vs[n++] = -p; vs[n++] = -p - 1; vs[n++] = -p + 1;
  }
  vs[n++] = INT64_MAX; vs[n++] = INT64_MIN; vs[n++] = INT64_MAX - 1;
  vs[n++] = INT64_MIN + 1;
  for (i = 0; i < n; i++) {
    for (k = 0; k < n; k++) {
      tuple_buf a, b;
      int want = vs[i] < vs[k] ? -1 : vs[i] > vs[k];
      tuple_buf_init(&a);
      tuple_buf_init(&b);
      tuple_put_int(&a, vs[i]);
      tuple_put_int(&b, vs[k]);
      if (cmpbuf(&a, &b) != want) CHECK(!"int order");
      tuple_buf_free(&a);
      tuple_buf_free(&b);
    }
  }
  CHECK(n > 300);
}

/* Doubles: a sorted list including -0.0, denormals and infinities. */
static void double_order(void) {
  double vs[] = {-INFINITY, -1.7976931348623157e308, -1.5, -1.0, -5e-324,
                 -0.0, 0.0, 5e-324, 1e-300, 1.0, 1.5, 1e300, INFINITY, NAN};
  size_t n = sizeof vs / sizeof vs[0], i;
  tuple_buf prev, cur;
  tuple_buf_init(&prev);
  tuple_buf_init(&cur);
  tuple_put_double(&prev, vs[0]);
  for (i = 1; i < n; i++) {
    cur.len = 0;
    tuple_put_double(&cur, vs[i]);
    CHECK(cmpbuf(&prev, &cur) < 0);
    prev.len = 0;
    tuple_put_double(&prev, vs[i]);
  }
  tuple_buf_free(&prev);
  tuple_buf_free(&cur);
}

static void descending(void) {
  tuple_buf a, b;
  tuple_reader r;
  tuple_item it;
  tuple_buf_init(&a);
  tuple_buf_init(&b);
  /* (1) < (1, nil) ascending, so desc(1) > desc(1, nil) */
  tuple_put_int(&a, 1);
  tuple_finish_desc(&a, 0);
  tuple_put_int(&b, 1);
  tuple_put_nil_desc(&b);
  tuple_finish_desc(&b, 0);
  CHECK(cmpbuf(&a, &b) > 0);
  tuple_reader_init(&r, b.p, b.len, 1);
  CHECK(tuple_read(&r, &it) == 1 && it.type == TUPLE_INT && it.i == 1);
  CHECK(tuple_read(&r, &it) == 1 && it.type == TUPLE_NIL);
  CHECK(tuple_read(&r, &it) == 0);
  /* strings with zeros come back unescaped and uninverted */
  a.len = 0;
  tuple_put_bytes(&a, "a\0\0b", 4);
  tuple_finish_desc(&a, 0);
  tuple_reader_init(&r, a.p, a.len, 1);
  CHECK(tuple_read(&r, &it) == 1 && it.type == TUPLE_BYTES && it.len == 4);
  {
    unsigned char out[4];
    tuple_item_copy(&it, out);
    CHECK(memcmp(out, "a\0\0b", 4) == 0);
  }
  CHECK(tuple_read(&r, &it) == 0);
  tuple_buf_free(&a);
  tuple_buf_free(&b);
}

static int decodes(const char *s, size_t n, int desc) {
  tuple_reader r;
  tuple_item it;
  int rc;
  tuple_reader_init(&r, s, n, desc);
  while ((rc = tuple_read(&r, &it)) == 1) {}
  return rc;
}

static void malformed(void) {
  CHECK(decodes("", 0, 0) == 0);
  CHECK(decodes("\x01" "abc", 4, 0) == -1);          /* unterminated */
  CHECK(decodes("\x01" "a\x00\xff", 4, 0) == -1);    /* escape, no end */
  CHECK(decodes("\x15", 1, 0) == -1);                /* truncated int */
  CHECK(decodes("\x15\x00", 2, 0) == -1);            /* not minimal */
  CHECK(decodes("\x13\xff", 2, 0) == -1);            /* not minimal */
  CHECK(decodes("\x1c\x80\0\0\0\0\0\0\0", 9, 0) == -1);  /* > INT64_MAX */
  CHECK(decodes("\x0c\x7f\xff\xff\xff\xff\xff\xff\xfe", 9, 0) == -1);
  CHECK(decodes("\x1d\x01", 2, 0) == -1);            /* big ints: no */
  CHECK(decodes("\x21\0\0\0", 4, 0) == -1);
  CHECK(decodes("\x05", 1, 0) == -1);                /* nested: no */
  CHECK(decodes("\xff\xff", 2, 1) == 0);             /* empty desc */
  CHECK(decodes("", 0, 1) == -1);                    /* no end mark */
  CHECK(decodes("\xff\xff\xff", 3, 1) == -1);        /* after end mark */
  CHECK(decodes("\xff\xf0", 2, 1) == -1);
}

/* Random tuples: decode(encode(t)) re-encodes to the same bytes. */
static void round_trip(void) {
  unsigned seed = 7;
  int trial;
  for (trial = 0; trial < 2000; trial++) {
    tuple_buf a, b;
    tuple_reader r;
    tuple_item it;
    int k, n, rc;
    seed = seed * 1103515245u + 12345u;
    n = (int)(seed >> 16) % 6;
    tuple_buf_init(&a);
    tuple_buf_init(&b);
    for (k = 0; k < n; k++) {
      unsigned char s[6];
      int64_t v;
      double d;
      int j;
      seed = seed * 1103515245u + 12345u;
      v = (int64_t)(((uint64_t)seed << 32) ^ ((uint64_t)seed * 2654435761u)) >> (seed % 64);
      for (j = 0; j < 6; j++) s[j] = (unsigned char)(seed >> (j * 4)) & 0x81;
      memcpy(&d, &v, 8);
      switch (seed % 7) {
        case 0: tuple_put_nil(&a); break;
        case 1: tuple_put_bytes(&a, s, seed % 6); break;
        case 2: tuple_put_text(&a, s, seed % 5); break;
        case 3: tuple_put_int(&a, v); break;
        case 4: tuple_put_int(&a, -v); break;
        case 5: tuple_put_double(&a, d); break;
        default: tuple_put_bool(&a, (int)(seed & 1)); break;
      }
    }
    tuple_reader_init(&r, a.p, a.len, 0);
    while ((rc = tuple_read(&r, &it)) == 1) {
      unsigned char tmp[8];
      switch (it.type) {
        case TUPLE_NIL: tuple_put_nil(&b); break;
        case TUPLE_BYTES: tuple_item_copy(&it, tmp); tuple_put_bytes(&b, tmp, it.len); break;
        case TUPLE_TEXT: tuple_item_copy(&it, tmp); tuple_put_text(&b, tmp, it.len); break;
        case TUPLE_INT: tuple_put_int(&b, it.i); break;
        case TUPLE_DOUBLE: tuple_put_double(&b, it.d); break;
        case TUPLE_BOOL: tuple_put_bool(&b, it.b); break;
      }
    }
    if (rc != 0 || cmpbuf(&a, &b) != 0) CHECK(!"round trip");
    tuple_buf_free(&a);
    tuple_buf_free(&b);
  }
  CHECK(1);
}

int main(void) {
  int_vectors();
  other_vectors();
  int_order();
  double_order();
  descending();
  malformed();
  round_trip();
  return check_done();
}
