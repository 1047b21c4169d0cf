/* backoff_test.c -- schedules, budgets and the PRNG, without Lua. */
#include <math.h>
#include <string.h>

#include "backoff.h"
#include "check.h"

static bo_schedule mk(bo_strategy st, double base, double cap, double mult,
                      int64_t max_attempts, double deadline, uint64_t seed) {
  bo_schedule s;
  const char *err = bo_schedule_init(&s, st, base, cap, mult, 0, max_attempts, deadline);
  CHECK(err == NULL);
  bo_rng_seed(&s.rng, seed);
  return s;
}

static void test_rng(void) {
  bo_rng a, b, c;
  int i, same = 1, differ = 0, inrange = 1;
  bo_rng_seed(&a, 42);
  bo_rng_seed(&b, 42);
  bo_rng_seed(&c, 43);
  for (i = 0; i < 1000; i++) {
    uint64_t x = bo_rng_next(&a), y = bo_rng_next(&b), z = bo_rng_next(&c);
    double d = bo_rng_double(&a);
    (void)bo_rng_double(&b);
    if (x != y) same = 0;
    if (x != z) differ = 1;
    if (!(d >= 0 && d < 1)) inrange = 0;
  }
  CHECK(same);
  CHECK(differ);
  CHECK(inrange);
  /* seed 0 is a valid seed, not an all-zero (stuck) state */
  bo_rng_seed(&a, 0);
  CHECK(bo_rng_next(&a) != bo_rng_next(&a));
  /* OS seeding: two instances draw different sequences */
  CHECK(bo_rng_seed_os(&a) == 1);
  CHECK(bo_rng_seed_os(&b) == 1);
  CHECK(memcmp(a.s, b.s, sizeof a.s) != 0);
}

static void test_bad_params(void) {
  bo_schedule s;
  memset(&s, 0, sizeof s);
  CHECK(bo_schedule_init(&s, BO_FULL, 0, 1, 2, 0, 0, 0) != NULL);
  CHECK(bo_schedule_init(&s, BO_FULL, -1, 1, 2, 0, 0, 0) != NULL);
  CHECK(bo_schedule_init(&s, BO_FULL, NAN, 1, 2, 0, 0, 0) != NULL);
  CHECK(bo_schedule_init(&s, BO_FULL, INFINITY, INFINITY, 2, 0, 0, 0) != NULL);
  CHECK(bo_schedule_init(&s, BO_FULL, 1, 0.5, 2, 0, 0, 0) != NULL);
  CHECK(bo_schedule_init(&s, BO_FULL, 1, NAN, 2, 0, 0, 0) != NULL);
  CHECK(bo_schedule_init(&s, BO_FULL, 1, 2, 0.5, 0, 0, 0) != NULL);
  CHECK(bo_schedule_init(&s, BO_FULL, 1, 2, NAN, 0, 0, 0) != NULL);
  CHECK(bo_schedule_init(&s, BO_FULL, 1, 2, INFINITY, 0, 0, 0) != NULL);
  CHECK(bo_schedule_init(&s, BO_FULL, 1, 2, 2, 0.5, 0, 0) != NULL);
  CHECK(bo_schedule_init(&s, BO_FULL, 1, 2, 2, NAN, 0, 0) != NULL);
  CHECK(bo_schedule_init(&s, BO_FULL, 1, 2, 2, 0, -1, 0) != NULL);
  CHECK(bo_schedule_init(&s, BO_FULL, 1, 2, 2, 0, 0, -1) != NULL);
  CHECK(bo_schedule_init(&s, BO_FULL, 1, 2, 2, 0, 0, NAN) != NULL);
  CHECK(bo_schedule_init(&s, (bo_strategy)9, 1, 2, 2, 0, 0, 0) != NULL);
  CHECK(bo_schedule_init(&s, BO_FULL, 1, 1, 1, 0, 0, INFINITY) == NULL);
  /* durations are at most a day (BO_MAX_SECONDS) */
  CHECK(bo_schedule_init(&s, BO_FULL, 86400, 86400, 2, 86400, 0, 86400) == NULL);
  CHECK(bo_schedule_init(&s, BO_FULL, 1e300, 1e300, 2, 0, 0, 0) != NULL);
  CHECK(bo_schedule_init(&s, BO_FULL, 86400.5, 86400.5, 2, 0, 0, 0) != NULL);
  CHECK(bo_schedule_init(&s, BO_FULL, 1, 86401, 2, 0, 0, 0) != NULL);
  CHECK(bo_schedule_init(&s, BO_FULL, 1, 2, 2, 1e300, 0, 0) != NULL);
  CHECK(bo_schedule_init(&s, BO_FULL, 1, 2, 2, 0, 0, 86401) != NULL);
  CHECK(bo_schedule_init(&s, BO_FULL, 1, 2, 2, 0, 0, 1e300) != NULL);
}

/* A million retries: every delay finite, in range, jitter alive at the cap. */
static void test_huge_attempts(void) {
  bo_strategy st;
  for (st = BO_FULL; st <= BO_CONSTANT; st++) {
    bo_schedule s = mk(st, 0.01, 2.0, st == BO_DECORRELATED ? 3 : 2, 0, 0, 7 + st);
    int ok = 1;
    double lo = HUGE_VAL, hi = -HUGE_VAL, d = 0;
    int64_t i;
    for (i = 0; i < 1000000; i++) {
      if (bo_schedule_next(&s, 0, 0, &d) != BO_OK || !(d >= 0 && d <= 2.0)) { ok = 0; break; }
      if (i >= 999000) { if (d < lo) lo = d; if (d > hi) hi = d; }
    }
    CHECK(ok);
    CHECK(s.attempt == 1000000);
    if (st == BO_FULL) CHECK(lo < 0.2 && hi > 1.8);
    if (st == BO_EQUAL) CHECK(lo >= 1.0 && lo < 1.1 && hi > 1.9);
    if (st == BO_DECORRELATED) CHECK(lo < 0.2 && hi > 1.8 && hi < 2.0);
    if (st == BO_EXPONENTIAL) CHECK(lo == 2.0 && hi == 2.0);
    if (st == BO_CONSTANT) CHECK(lo == 0.01 && hi == 0.01);
  }
  /* a multiplier so large that base * m^n is +inf at n = 1 */
  {
    bo_schedule s = mk(BO_EXPONENTIAL, 1, 5, 1e300, 0, 0, 1);
    double d;
    CHECK(bo_schedule_next(&s, 0, 0, &d) == BO_OK && d == 1);
    CHECK(bo_schedule_next(&s, 0, 0, &d) == BO_OK && d == 5);
    CHECK(bo_schedule_next(&s, 0, 0, &d) == BO_OK && d == 5);
  }
}

static void test_exponential_values(void) {
  bo_schedule s = mk(BO_EXPONENTIAL, 0.1, 1.0, 2, 0, 0, 1);
  const double want[] = {0.1, 0.2, 0.4, 0.8, 1.0, 1.0};
  double d;
  int i;
  for (i = 0; i < 6; i++) {
    CHECK(bo_schedule_next(&s, 0, 0, &d) == BO_OK);
    CHECK(fabs(d - want[i]) < 1e-12);
  }
  bo_schedule_reset(&s);
  CHECK(s.attempt == 0);
  CHECK(bo_schedule_next(&s, 0, 0, &d) == BO_OK && fabs(d - 0.1) < 1e-12);
  /* throttled: throttle_base replaces base; cap raised to it */
  CHECK(bo_schedule_init(&s, BO_EXPONENTIAL, 0.1, 1.0, 2, 3.0, 0, 0) == NULL);
  CHECK(bo_schedule_next(&s, 0, 1, &d) == BO_OK && d == 3.0);
  CHECK(bo_schedule_next(&s, 0, 0, &d) == BO_OK && fabs(d - 0.2) < 1e-12);
}

static void test_stops(void) {
  double d = -1;
  bo_schedule s = mk(BO_FULL, 0.1, 1, 2, 3, 0, 5);
  CHECK(bo_schedule_next(&s, 0, 0, &d) == BO_OK);
  CHECK(bo_schedule_next(&s, 0, 0, &d) == BO_OK);
  CHECK(bo_schedule_next(&s, 0, 0, &d) == BO_STOP_ATTEMPTS);
  CHECK(s.attempt == 2); /* a stop changes nothing */
  CHECK(bo_schedule_next(&s, 0, 0, &d) == BO_STOP_ATTEMPTS);
  /* max_attempts 1: no retry at all */
  s = mk(BO_FULL, 0.1, 1, 2, 1, 0, 5);
  CHECK(bo_schedule_next(&s, 0, 0, &d) == BO_STOP_ATTEMPTS);
  /* deadline: the last delay is cut to what remains, then it stops */
  s = mk(BO_CONSTANT, 0.5, 0.5, 1, 0, 2.0, 5);
  CHECK(bo_schedule_next(&s, 1.0, 0, &d) == BO_OK && d == 0.5);
  CHECK(bo_schedule_next(&s, 1.75, 0, &d) == BO_OK && fabs(d - 0.25) < 1e-12);
  CHECK(bo_schedule_next(&s, 2.0, 0, &d) == BO_STOP_DEADLINE);
  CHECK(bo_schedule_next(&s, 1e300, 0, &d) == BO_STOP_DEADLINE);
  CHECK(s.attempt == 2);
  /* NaN or negative elapsed count as 0 */
  CHECK(bo_schedule_next(&s, NAN, 0, &d) == BO_OK && d == 0.5);
  CHECK(bo_schedule_next(&s, -5, 0, &d) == BO_OK && d == 0.5);
}

static void test_bucket(void) {
  bo_budget b;
  int n = 0;
  CHECK(bo_budget_bucket(&b, -1, 5, 10, 1) != NULL);
  CHECK(bo_budget_bucket(&b, NAN, 5, 10, 1) != NULL);
  CHECK(bo_budget_bucket(&b, 500, -5, 10, 1) != NULL);
  CHECK(bo_budget_bucket(&b, 500, 5, INFINITY, 1) != NULL);
  CHECK(bo_budget_bucket(&b, 500, 5, 10, 1) == NULL);
  while (bo_budget_acquire(&b, BO_RETRY, 0)) n++;
  CHECK(n == 100);
  CHECK(bo_budget_acquire(&b, BO_REQUEST, 0) == 1);
  bo_budget_success(&b, BO_RETRY, 0); /* refunds 5: one more retry */
  CHECK(bo_budget_available(&b, 0) == 5);
  CHECK(bo_budget_acquire(&b, BO_TIMEOUT, 0) == 0);
  CHECK(bo_budget_acquire(&b, BO_RETRY, 0) == 1);
  bo_budget_success(&b, BO_TIMEOUT, 0);
  CHECK(bo_budget_available(&b, 0) == 10);
  CHECK(bo_budget_acquire(&b, BO_TIMEOUT, 0) == 1);
  CHECK(bo_budget_available(&b, 0) == 0);
  for (n = 0; n < 1000; n++) bo_budget_success(&b, BO_REQUEST, 0);
  CHECK(bo_budget_available(&b, 0) == 500); /* never above capacity */
  /* capacity 0 refuses every retry, even free ones */
  CHECK(bo_budget_bucket(&b, 0, 0, 0, 1) == NULL);
  CHECK(bo_budget_acquire(&b, BO_RETRY, 0) == 0);
  CHECK(bo_budget_acquire(&b, BO_REQUEST, 0) == 1);
}

static void test_ratio(void) {
  bo_budget b;
  int i, n = 0;
  CHECK(bo_budget_ratio(&b, -1, 1, 10) != NULL);
  CHECK(bo_budget_ratio(&b, 1001, 1, 10) != NULL);
  CHECK(bo_budget_ratio(&b, NAN, 1, 10) != NULL);
  CHECK(bo_budget_ratio(&b, 10, -1, 10) != NULL);
  CHECK(bo_budget_ratio(&b, 10, 1, 0) != NULL);
  CHECK(bo_budget_ratio(&b, 10, 1, INFINITY) != NULL);
  /* 10 % of 100 requests, no minimum */
  CHECK(bo_budget_ratio(&b, 10, 0, 10) == NULL);
  CHECK(bo_budget_acquire(&b, BO_RETRY, 0) == 0);
  for (i = 0; i < 100; i++) bo_budget_acquire(&b, BO_REQUEST, 0.5);
  while (bo_budget_acquire(&b, BO_RETRY, 1.0)) n++;
  CHECK(n == 10);
  /* a window later the requests and retries have both expired */
  CHECK(bo_budget_acquire(&b, BO_RETRY, 20.0) == 0);
  for (i = 0; i < 30; i++) bo_budget_acquire(&b, BO_REQUEST, 20.0);
  n = 0;
  while (bo_budget_acquire(&b, BO_TIMEOUT, 21.0)) n++;
  CHECK(n == 3);
  /* time going backwards counts as no time passing */
  CHECK(bo_budget_acquire(&b, BO_RETRY, 0.0) == 0);
  CHECK(bo_budget_acquire(&b, BO_RETRY, NAN) == 0);
  /* minimum rate: 1/s over a 10 s window allows 10 retries per window */
  CHECK(bo_budget_ratio(&b, 0, 1, 10) == NULL);
  n = 0;
  while (bo_budget_acquire(&b, BO_RETRY, 100.0)) n++;
  CHECK(n == 10);
  CHECK(bo_budget_acquire(&b, BO_RETRY, 111.0) == 1);
  /* huge and negative clocks are fine */
  CHECK(bo_budget_ratio(&b, 0, 1, 10) == NULL);
  CHECK(bo_budget_acquire(&b, BO_RETRY, -1e300) == 1);
  CHECK(bo_budget_acquire(&b, BO_RETRY, 1e300) == 1);
  CHECK(bo_budget_acquire(&b, BO_RETRY, INFINITY) == 1);
}

int main(void) {
  test_rng();
  test_bad_params();
  test_huge_attempts();
  test_exponential_values();
  test_stops();
  test_bucket();
  test_ratio();
  return check_done();
}
