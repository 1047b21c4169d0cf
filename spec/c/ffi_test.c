/* ffi_test.c -- the exported C ABI (ffi.c) against the parts it wraps. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hash.h"
#include "otskit_ffi.h"
#include "tuple.h"

static uint64_t rng = 88172645463325252ULL;
static uint64_t next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }

static void test_parse(void) {
  int64_t v = 0;
  CHECK(otskit_parse_int64("0", 1, &v) && v == 0);
  CHECK(otskit_parse_int64("-12", 3, &v) && v == -12);
  CHECK(otskit_parse_int64("9223372036854775807", 19, &v) && v == INT64_MAX);
  CHECK(otskit_parse_int64("-9223372036854775808", 20, &v) && v == INT64_MIN);
  CHECK(!otskit_parse_int64("9223372036854775808", 19, &v));
  CHECK(!otskit_parse_int64("", 0, &v));
  CHECK(!otskit_parse_int64("-", 1, &v));
  CHECK(!otskit_parse_int64(" 1", 2, &v));
  CHECK(!otskit_parse_int64("1 ", 2, &v));
  CHECK(!otskit_parse_int64("+1", 2, &v));
  CHECK(!otskit_parse_int64("0x10", 4, &v));
  CHECK(!otskit_parse_int64("12\0" "3", 4, &v));   /* an embedded NUL is not a number */
  CHECK(!otskit_parse_int64("1111111111111111111111111111111111", 34, &v));
}

static void test_text_and_buckets(void) {
  char buf[24];
  int i;
  CHECK(otskit_int64_text(INT64_MIN, buf) == 20 && memcmp(buf, "-9223372036854775808", 20) == 0);
  CHECK(otskit_int64_text(0, buf) == 1 && buf[0] == '0');
  CHECK(otskit_bucket_mod(-1, 16) == 15);
  CHECK(otskit_bucket_mod(INT64_MIN, 16) == 0);
  CHECK(otskit_bucket_mod(INT64_MAX, 2147483647) == (int32_t)(INT64_MAX % 2147483647));
  for (i = 0; i < 1000; i++) {
    int64_t v = (int64_t)next();
    int32_t n = (int32_t)(next() % 1000) + 1, b = otskit_bucket_mod(v, n);
    int64_t back;
    int len = otskit_int64_text(v, buf);
    CHECK(b >= 0 && b < n && (v - b) % n == 0);
    CHECK(otskit_parse_int64(buf, (size_t)len, &back) && back == v);
  }
}

static void test_prefix(void) {
  char key[64], out[128], hex[32];
  unsigned char d[16];
  int i, algo;
  for (i = 0; i < 300; i++) {
    size_t n = next() % sizeof key, j;
    int nd;
    algo = (int)(next() % 3);
    nd = 1 + (int)(next() % (2 * hash_digest_len((hash_algo)algo)));
    for (j = 0; j < n; j++) key[j] = (char)next();
    otskit_prefix_encode(algo, nd, key, n, out);
    hash_digest((hash_algo)algo, key, n, d);
    hash_hex(d, hash_digest_len((hash_algo)algo), hex);
    CHECK(memcmp(out, hex, (size_t)nd) == 0 && memcmp(out + nd, key, n) == 0);
    {
      int32_t nb = (int32_t)(next() % 100) + 1, b = otskit_bucket_hash(algo, key, n, nb);
      uint64_t x = 0;
      size_t k;
      for (k = 0; k < hash_digest_len((hash_algo)algo) && k < 8; k++) x = (x << 8) | d[k];
      CHECK(b == (int32_t)(x % (uint64_t)nb));
    }
  }
}

static void test_tuple(void) {
  otskit_tuple *t = otskit_tuple_new();
  tuple_buf ref;
  size_t len = 0;
  const char *p;
  double nan1, nan2;
  uint64_t u1 = 0xFFF8000000000001ULL, u2 = 0x7FF8000000000000ULL;
  int i;
  CHECK(t != NULL);
  tuple_buf_init(&ref);
  for (i = 0; i < 200; i++) {
    int desc = i & 1, k;
    otskit_tuple_reset(t);
    ref.len = 0;
    for (k = 0; k < 6; k++) {
      int64_t v = (int64_t)next();
      char s[8];
      memcpy(s, &v, sizeof s);
      switch (next() % 5) {
        case 0: CHECK(otskit_tuple_put_int(t, v) == 0); tuple_put_int(&ref, v); break;
        case 1: CHECK(otskit_tuple_put_bytes(t, s, (size_t)(v & 7)) == 0); tuple_put_bytes(&ref, s, (size_t)(v & 7)); break;
        case 2: CHECK(otskit_tuple_put_text(t, s, 3) == 0); tuple_put_text(&ref, s, 3); break;
        case 3: CHECK(otskit_tuple_put_bool(t, (int)(v & 1)) == 0); tuple_put_bool(&ref, (int)(v & 1)); break;
        default:
          CHECK(otskit_tuple_put_nil(t, desc) == 0);
          if (desc) tuple_put_nil_desc(&ref); else tuple_put_nil(&ref);
      }
    }
    p = otskit_tuple_finish(t, desc, &len);
    if (desc) tuple_finish_desc(&ref, 0);
    CHECK(p != NULL && len == ref.len && memcmp(p, ref.p, len) == 0);
  }
  /* every NaN is written as the one quiet NaN */
  memcpy(&nan1, &u1, 8);
  memcpy(&nan2, &u2, 8);
  otskit_tuple_reset(t);
  otskit_tuple_put_double(t, nan1);
  ref.len = 0;
  tuple_put_double(&ref, nan2);
  p = otskit_tuple_finish(t, 0, &len);
  CHECK(len == 9 && memcmp(p, ref.p, 9) == 0);
  /* a large buffer is released by reset */
  otskit_tuple_reset(t);
  {
    char *big = (char *)calloc(1, 100000);
    CHECK(big && otskit_tuple_put_bytes(t, big, 100000) == 0);
    free(big);
  }
  otskit_tuple_reset(t);
  p = otskit_tuple_finish(t, 0, &len);
  CHECK(len == 0 && p != NULL);
  tuple_buf_free(&ref);
  otskit_tuple_free(t);
  otskit_tuple_free(NULL);
}

static void test_splice(void) {
  splice_field f[2];
  splice sp;
  otskit_splice_out o1;
  splice_out o2;
  size_t bad = 0, bad2 = 0;
  memset(f, 0, sizeof f);
  f[0].kind = SPLICE_INT; f[0].width = 6; f[0].min = 0;
  f[1].kind = SPLICE_STRING;
  CHECK(splice_set_charset(&f[1], "alnum", 5) == 0);
  sp.sep = ','; sp.nfields = 2; sp.fields = f;
  CHECK(otskit_splice_out_size() == sizeof(splice_out));
  o1.len = 0; o2.len = 0;
  CHECK(otskit_splice_put_int(&sp, 0, 54, &o1) == (int)splice_put_int(&sp, 0, 54, &o2));
  CHECK(otskit_splice_put_string(&sp, 1, "a1001", 5, &o1, &bad) ==
        (int)splice_put_string(&sp, 1, "a1001", 5, &o2, &bad2));
  CHECK(o1.len == 12 && memcmp(o1.buf, "000054,a1001", 12) == 0);
  CHECK(otskit_splice_put_int(&sp, 0, 1234567, &o1) == SPLICE_ERR_WIDTH);
  CHECK(otskit_splice_put_string(&sp, 1, "a-b", 3, &o1, &bad) == SPLICE_ERR_CHARSET && bad == 1);
  CHECK(otskit_ffi_abi() == OTSKIT_FFI_ABI);
}

int main(void) {
  test_parse();
  test_text_and_buckets();
  test_prefix();
  test_tuple();
  test_splice();
  return check_done();
}
