/* backoff_fuzz.c -- arbitrary parameters (raw doubles: NaN, inf, denormals,
 * huge values) and call sequences: a schedule either refuses its
 * parameters or hands out finite delays in [0, max(cap, throttle_base)]
 * that never pass the deadline; budgets never go out of range or NaN. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"

typedef struct { const uint8_t *p; size_t n; } input;

static uint8_t byte(input *in) {
  uint8_t b = 0;
  if (in->n) { b = *in->p++; in->n--; }
  return b;
}

static double dbl(input *in) {
  uint8_t b[8] = {0};
  double d;
  size_t i;
  /* half of the time a "reasonable" value, so deep paths are reached */
  if (byte(in) & 1) return (double)byte(in) / 16.0;
  for (i = 0; i < 8; i++) b[i] = byte(in);
  memcpy(&d, b, sizeof d);
  return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input in = {data, size};
  bo_schedule s;
  bo_budget b;
  double base = dbl(&in), cap = dbl(&in), mult = dbl(&in), tb = dbl(&in);
  double deadline = dbl(&in), d;
  int64_t max_attempts = (int64_t)(int8_t)byte(&in);
  bo_strategy st = (bo_strategy)(byte(&in) % 6);
  if (bo_schedule_init(&s, st, base, cap, mult, tb, max_attempts, deadline) == NULL) {
    double top = s.cap > s.throttle_base ? s.cap : s.throttle_base;
    bo_rng_seed(&s.rng, (uint64_t)byte(&in) * 0x9e3779b97f4a7c15ULL);
    while (in.n) {
      uint8_t op = byte(&in);
      int64_t before = s.attempt;
      double elapsed = dbl(&in);
      if (op % 8 == 0) { bo_schedule_reset(&s); continue; }
      if (bo_schedule_next(&s, elapsed, op & 1, &d) == BO_OK) {
        if (!(d >= 0 && d <= top)) abort();
        if (s.deadline > 0 && elapsed > 0 && !(elapsed + d <= s.deadline * (1 + 1e-12))) abort();
        if (s.attempt != before + 1) abort();
      } else if (s.attempt != before) {
        abort();
      }
    }
  }
  in.p = data; in.n = size;
  if (bo_budget_bucket(&b, dbl(&in), dbl(&in), dbl(&in), dbl(&in)) == NULL) {
    while (in.n) {
      uint8_t op = byte(&in);
      if (op & 1) bo_budget_acquire(&b, (bo_kind)(op % 3), 0);
      else bo_budget_success(&b, (bo_kind)(op % 3), 0);
      if (!(b.tokens >= 0 && b.tokens <= b.capacity)) abort();
    }
  }
  in.p = data; in.n = size;
  if (bo_budget_ratio(&b, dbl(&in), dbl(&in), dbl(&in)) == NULL) {
    while (in.n) {
      uint8_t op = byte(&in);
      double now = dbl(&in);
      if (op & 1) bo_budget_acquire(&b, (bo_kind)(op % 3), now);
      else bo_budget_success(&b, (bo_kind)(op % 3), now);
      if (isnan(bo_budget_available(&b, now))) abort();
    }
  }
  return 0;
}
