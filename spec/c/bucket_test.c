/* bucket_test.c -- bucket_floor_div_off (a LONG histogram's bucket number)
 * against floor((a - off) / b) computed by hand on small numbers, its
 * exact answers near the int64 bounds, and its refusal (ok = 0, no
 * division) of a divisor that is not positive. */
#include <stdint.h>

#include "bucket.h"
#include "check.h"

/* floor((a - off) / b) for small a, off and b > 0 */
static int64_t ref(int64_t a, int64_t b, int64_t off) {
  int64_t x = a - off, q = x / b;
  if (x % b != 0 && x < 0) q--;
  return q;
}

int main(void) {
  int ok;
  int64_t a, b, off, q;
  for (a = -30; a <= 30; a++)
    for (b = 1; b <= 7; b++)
      for (off = -9; off <= 9; off++) {
        q = bucket_floor_div_off(a, b, off, &ok);
        CHECK(ok && q == ref(a, b, off));
      }
  /* near the bounds: exact, or ok = 0 past int64 */
  q = bucket_floor_div_off(INT64_MAX, 1, 0, &ok);
  CHECK(ok && q == INT64_MAX);
  q = bucket_floor_div_off(INT64_MIN, 1, 0, &ok);
  CHECK(ok && q == INT64_MIN);
  q = bucket_floor_div_off(INT64_MAX, 10, 3, &ok);
  CHECK(ok && q == 922337203685477580LL);
  q = bucket_floor_div_off(INT64_MIN, 10, 0, &ok);
  CHECK(ok && q == -922337203685477581LL);
  bucket_floor_div_off(INT64_MIN, 1, 1, &ok);
  CHECK(!ok);
  bucket_floor_div_off(INT64_MAX, 1, -1, &ok);
  CHECK(!ok);
  /* a divisor that is not positive: ok = 0 (and no division by it) */
  ok = 1;
  bucket_floor_div_off(5, 0, 0, &ok);
  CHECK(!ok);
  ok = 1;
  bucket_floor_div_off(INT64_MIN, -1, 0, &ok);
  CHECK(!ok);
  ok = 1;
  bucket_floor_div_off(7, -3, 1, &ok);
  CHECK(!ok);
  return check_done();
}
