/* backoff.c -- retry delay schedules, retry budgets, xoshiro256**. */
#include <math.h>
#include <stddef.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "backoff.h"

/* ---- PRNG ------------------------------------------------------------------ */

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void bo_rng_seed(bo_rng *r, uint64_t seed) {
  int i;
  for (i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

int bo_rng_seed_os(bo_rng *r) {
  static uint64_t counter; /* only distinguishes calls in the fallback */
  uint64_t x;
  int i;
  if (getrandom(r->s, sizeof r->s, GRND_NONBLOCK) == (ssize_t)sizeof r->s &&
      (r->s[0] | r->s[1] | r->s[2] | r->s[3]) != 0)
    return 1;
  /* no kernel entropy: pid, addresses (ASLR) and a counter, mixed */
  x = ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)r ^
      (uint64_t)(uintptr_t)&x ^ (++counter * 0x2545f4914f6cdd1dULL);
  for (i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
  return 0;
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t bo_rng_next(bo_rng *r) {
  uint64_t *s = r->s;
  uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return out;
}

double bo_rng_double(bo_rng *r) {
  return (double)(bo_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- schedules ------------------------------------------------------------- */

static int finite_pos(double x) { return x > 0 && x <= 1.7976931348623157e308; }

/* durations: at most BO_MAX_SECONDS (a delay or a deadline beyond a day
 * is a mistake, and bounded values stay exact when turned into
 * milliseconds or a struct timespec) */
static int duration(double x) { return x > 0 && x <= BO_MAX_SECONDS; }

const char *bo_schedule_init(bo_schedule *s, bo_strategy strategy, double base,
                             double cap, double multiplier, double throttle_base,
                             int64_t max_attempts, double deadline) {
  if ((unsigned)strategy > (unsigned)BO_CONSTANT) return "unknown strategy";
  if (!duration(base)) return "base must be a number of seconds in (0, 86400]";
  if (!duration(cap) || cap < base) return "cap must be a number of seconds >= base, at most 86400";
  if (!(multiplier >= 1) || !finite_pos(multiplier))
    return "multiplier must be a finite number >= 1";
  if (throttle_base == 0) throttle_base = base;
  if (!duration(throttle_base) || throttle_base < base)
    return "throttle_base must be a number of seconds >= base, at most 86400";
  if (max_attempts < 0) return "max_attempts must be >= 0 (0: no limit)";
  if (!(deadline >= 0) || (deadline > BO_MAX_SECONDS && deadline != HUGE_VAL))
    return "deadline must be a number of seconds in [0, 86400] (0: none)";
  memset(s, 0, offsetof(bo_schedule, rng));
  s->strategy = strategy;
  s->base = base;
  s->cap = cap;
  s->multiplier = multiplier;
  s->throttle_base = throttle_base;
  s->max_attempts = max_attempts;
  s->deadline = deadline;
  s->attempt = 0;
  s->prev = base;
  return NULL;
}

void bo_schedule_reset(bo_schedule *s) {
  s->attempt = 0;
  s->prev = s->base;
}

/* a + U[0, b - a): stays in [a, b) for a < b, and is a for a >= b */
static double uniform(bo_rng *r, double a, double b) {
  double d = a + (b - a) * bo_rng_double(r);
  return (d < b) ? d : a;
}

bo_status bo_schedule_next(bo_schedule *s, double elapsed, int throttled,
                           double *delay) {
  double base = throttled ? s->throttle_base : s->base;
  double cap = (s->cap > base) ? s->cap : base;
  double l, d, hi;
  if (s->max_attempts > 0 && s->attempt >= s->max_attempts - 1)
    return BO_STOP_ATTEMPTS;
  if (!(elapsed > 0)) elapsed = 0; /* NaN, negative */
  if (s->deadline > 0 && !(elapsed < s->deadline)) return BO_STOP_DEADLINE;
  /* L = min(cap, base * m^n): pow gives +inf for huge n, never NaN (m >= 1) */
  l = base * pow(s->multiplier, (double)s->attempt);
  if (!(l < cap)) l = cap;
  switch (s->strategy) {
  case BO_FULL: d = uniform(&s->rng, 0, l); break;
  case BO_EQUAL: d = uniform(&s->rng, l / 2, l); break;
  case BO_DECORRELATED:
    /* U[base, min(cap, prev * m)): drawing below the cap, not clamping to
     * it, keeps the jitter once the cap is reached */
    hi = (s->prev > base ? s->prev : base) * s->multiplier;
    if (!(hi < cap)) hi = cap;
    d = uniform(&s->rng, base, hi);
    s->prev = d;
    break;
  case BO_EXPONENTIAL: d = l; break;
  default: d = base; break;
  }
  if (s->deadline > 0 && d > s->deadline - elapsed) d = s->deadline - elapsed;
  if (s->attempt < INT64_MAX) s->attempt++;
  *delay = d;
  return BO_OK;
}

/* ---- budgets --------------------------------------------------------------- */

static int finite_nonneg(double x) { return x >= 0 && x <= 1.7976931348623157e308; }

const char *bo_budget_bucket(bo_budget *b, double capacity, double retry_cost,
                             double timeout_cost, double reward) {
  if (!finite_nonneg(capacity)) return "capacity must be a finite number >= 0";
  if (!finite_nonneg(retry_cost)) return "retry_cost must be a finite number >= 0";
  if (!finite_nonneg(timeout_cost)) return "timeout_cost must be a finite number >= 0";
  if (!finite_nonneg(reward)) return "reward must be a finite number >= 0";
  memset(b, 0, sizeof *b);
  b->type = BO_BUCKET;
  b->capacity = b->tokens = capacity;
  b->retry_cost = retry_cost;
  b->timeout_cost = timeout_cost;
  b->reward = reward;
  return NULL;
}

const char *bo_budget_ratio(bo_budget *b, double percent, double min_per_sec,
                            double window) {
  int i;
  if (!(percent >= 0 && percent <= 1000)) return "percent must be 0..1000";
  if (!finite_nonneg(min_per_sec)) return "min_per_sec must be a finite number >= 0";
  if (!finite_pos(window)) return "window must be a finite number > 0";
  memset(b, 0, sizeof *b);
  b->type = BO_RATIO;
  b->percent = percent;
  b->min_per_sec = min_per_sec;
  b->window = window;
  b->last_now = -HUGE_VAL;
  for (i = 0; i < BO_SLOTS; i++) b->slot_epoch[i] = INT64_MIN;
  return NULL;
}

static double bucket_cost(const bo_budget *b, bo_kind kind) {
  return kind == BO_TIMEOUT ? b->timeout_cost : kind == BO_RETRY ? b->retry_cost : b->reward;
}

/* The slot epoch of now (time never runs backwards here) and its slot,
 * cleared when it last held an older epoch. */
static int64_t ratio_epoch(bo_budget *b, double now, int *slot) {
  double q;
  int64_t k;
  if (now > b->last_now) b->last_now = now; /* NaN and the past: no change */
  q = floor(b->last_now / (b->window / BO_SLOTS));
  if (!(q > -4e18)) q = -4e18; /* also the initial -inf */
  if (q > 4e18) q = 4e18;
  k = (int64_t)q;
  *slot = (int)(((k % BO_SLOTS) + BO_SLOTS) % BO_SLOTS);
  if (b->slot_epoch[*slot] != k) {
    b->slot_epoch[*slot] = k;
    b->deposits[*slot] = b->withdrawals[*slot] = 0;
  }
  return k;
}

static double ratio_available(bo_budget *b, double now) {
  int i, slot;
  int64_t k = ratio_epoch(b, now, &slot);
  double dep = 0, wd = 0;
  for (i = 0; i < BO_SLOTS; i++) {
    if (b->slot_epoch[i] > k - BO_SLOTS && b->slot_epoch[i] <= k) {
      dep += b->deposits[i];
      wd += b->withdrawals[i];
    }
  }
  return b->min_per_sec * b->window + b->percent / 100 * dep - wd;
}

int bo_budget_acquire(bo_budget *b, bo_kind kind, double now) {
  int slot;
  if (b->type == BO_BUCKET) {
    double c;
    if (kind == BO_REQUEST) return 1;
    c = bucket_cost(b, kind);
    if (c > b->tokens || b->capacity <= 0) return 0;
    b->tokens -= c;
    return 1;
  }
  if (kind == BO_REQUEST) {
    ratio_epoch(b, now, &slot);
    b->deposits[slot] += 1;
    return 1;
  }
  if (ratio_available(b, now) < 1) return 0;
  ratio_epoch(b, now, &slot);
  b->withdrawals[slot] += 1;
  return 1;
}

void bo_budget_success(bo_budget *b, bo_kind kind, double now) {
  if (b->type == BO_BUCKET) {
    b->tokens += bucket_cost(b, kind);
    if (b->tokens > b->capacity) b->tokens = b->capacity;
  } else {
    int slot;
    ratio_epoch(b, now, &slot); /* time still advances */
  }
}

double bo_budget_available(bo_budget *b, double now) {
  if (b->type == BO_BUCKET) return b->tokens;
  return ratio_available(b, now);
}
