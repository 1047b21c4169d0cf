/* bucket.c -- histogram bucket numbers in SQL (see bucket.h). */
#include <math.h>
#include <stddef.h>

#include "bucket.h"

int64_t bucket_floor_div(double a, double b, int *ok) {
  double q = floor(a / b);
  *ok = 1;
  if (q != q) { *ok = 0; return 0; }
  if (q >= 9223372036854775807.0) return INT64_MAX;
  if (q <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)q;
}

int64_t bucket_floor_div_off(int64_t a, int64_t b, int64_t off, int *ok) {
  /* a = qa*b + ra, off = qo*b + ro (0 <= ra, ro < b): (a - off) / b is
   * qa - qo + (ra - ro) / b, the last term in (-1, 1) */
  int64_t qa, ra, qo, ro, q;
  *ok = 0;
  if (b <= 0) return 0; /* (before any division: b = 0, INT64_MIN / -1) */
  qa = a / b, ra = a % b, qo = off / b, ro = off % b;
  if (ra < 0) { ra += b; qa--; }
  if (ro < 0) { ro += b; qo--; }
  if ((qo > 0 && qa < INT64_MIN + qo) || (qo < 0 && qa > INT64_MAX + qo)) return 0;
  q = qa - qo;
  if (ra < ro) {
    if (q == INT64_MIN) return 0;
    q--;
  }
  *ok = 1;
  return q;
}

int64_t bucket_ym_index(const char *s, int len, int *ok) {
  int i = 0, neg = 0, m;
  int64_t y = 0;
  *ok = 0;
  if (s == NULL || len < 3) return 0;
  if (s[0] == '-' || s[0] == '+') { neg = s[0] == '-'; i = 1; }
  if (len - i < 3) return 0;
  for (; i < len - 2; i++) {
    if (s[i] < '0' || s[i] > '9' || y > 100000000) return 0;
    y = y * 10 + (s[i] - '0');
  }
  if (s[len - 2] < '0' || s[len - 2] > '9' || s[len - 1] < '0' || s[len - 1] > '9') return 0;
  m = (s[len - 2] - '0') * 10 + (s[len - 1] - '0');
  if (m < 1 || m > 12) return 0;
  *ok = 1;
  return (neg ? -y : y) * 12 + m - 1;
}

static void f_floor_div(sqlite3_context *c, int argc, sqlite3_value **v) {
  int ok;
  double b;
  int64_t q;
  (void)argc;
  if (sqlite3_value_type(v[0]) == SQLITE_NULL || sqlite3_value_type(v[1]) == SQLITE_NULL) {
    sqlite3_result_null(c);
    return;
  }
  b = sqlite3_value_double(v[1]);
  if (b == 0) { sqlite3_result_null(c); return; }
  q = bucket_floor_div(sqlite3_value_double(v[0]), b, &ok);
  if (ok) sqlite3_result_int64(c, q);
  else sqlite3_result_null(c);
}

static void f_floor_div_off(sqlite3_context *c, int argc, sqlite3_value **v) {
  int ok, i;
  int64_t q;
  double b;
  (void)argc;
  for (i = 0; i < 3; i++)
    if (sqlite3_value_type(v[i]) == SQLITE_NULL) { sqlite3_result_null(c); return; }
  if (sqlite3_value_type(v[0]) == SQLITE_INTEGER && sqlite3_value_type(v[1]) == SQLITE_INTEGER &&
      sqlite3_value_type(v[2]) == SQLITE_INTEGER && sqlite3_value_int64(v[1]) > 0) {
    q = bucket_floor_div_off(sqlite3_value_int64(v[0]), sqlite3_value_int64(v[1]), sqlite3_value_int64(v[2]), &ok);
  } else {
    b = sqlite3_value_double(v[1]);
    if (b == 0) { sqlite3_result_null(c); return; }
    q = bucket_floor_div(sqlite3_value_double(v[0]) - sqlite3_value_double(v[2]), b, &ok);
  }
  if (ok) sqlite3_result_int64(c, q);
  else sqlite3_result_null(c);
}

static void f_ym_index(sqlite3_context *c, int argc, sqlite3_value **v) {
  int ok;
  int64_t r;
  (void)argc;
  if (sqlite3_value_type(v[0]) == SQLITE_NULL) { sqlite3_result_null(c); return; }
  r = bucket_ym_index((const char *)sqlite3_value_text(v[0]), sqlite3_value_bytes(v[0]), &ok);
  if (ok) sqlite3_result_int64(c, r);
  else sqlite3_result_null(c);
}

int bucket_geohash(double lat, double lon, int precision, char *out) {
  static const char b32[] = "0123456789bcdefghjkmnpqrstuvwxyz";
  double lat0 = -90.0, lat1 = 90.0, lon0 = -180.0, lon1 = 180.0, mid;
  int n = 0, bit = 0, ch = 0, even = 1;
  if (precision < 1 || precision > 12 || lat != lat || lon != lon) return 0;
  while (n < precision) {
    if (even) {
      mid = (lon0 + lon1) / 2;
      if (lon >= mid) { ch = ch * 2 + 1; lon0 = mid; } else { ch = ch * 2; lon1 = mid; }
    } else {
      mid = (lat0 + lat1) / 2;
      if (lat >= mid) { ch = ch * 2 + 1; lat0 = mid; } else { ch = ch * 2; lat1 = mid; }
    }
    even = !even;
    if (++bit == 5) { out[n++] = b32[ch]; bit = 0; ch = 0; }
  }
  out[n] = 0;
  return n;
}

static void f_geohash(sqlite3_context *c, int argc, sqlite3_value **v) {
  char buf[16];
  int n;
  (void)argc;
  if (sqlite3_value_type(v[0]) == SQLITE_NULL || sqlite3_value_type(v[1]) == SQLITE_NULL ||
      sqlite3_value_type(v[2]) == SQLITE_NULL) {
    sqlite3_result_null(c);
    return;
  }
  n = bucket_geohash(sqlite3_value_double(v[0]), sqlite3_value_double(v[1]), sqlite3_value_int(v[2]), buf);
  if (n > 0) sqlite3_result_text(c, buf, n, SQLITE_TRANSIENT);
  else sqlite3_result_null(c);
}

int bucket_register(sqlite3 *db) {
  int rc = sqlite3_create_function(db, "floor_div", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, f_floor_div, NULL, NULL);
  if (rc != SQLITE_OK) return rc;
  rc = sqlite3_create_function(db, "floor_div", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, f_floor_div_off, NULL, NULL);
  if (rc != SQLITE_OK) return rc;
  rc = sqlite3_create_function(db, "geohash", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, f_geohash, NULL, NULL);
  if (rc != SQLITE_OK) return rc;
  return sqlite3_create_function(db, "ym_index", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, f_ym_index, NULL, NULL);
}
