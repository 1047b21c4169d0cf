/* backoff.h -- retry delay schedules, retry budgets and a small seedable
 * PRNG. Plain C: no Lua, no I/O, no sleeping, no clock. Times are seconds
 * as doubles; the caller passes elapsed time and "now" in. Every function
 * is re-entrant on its own struct (no global state). */
#ifndef OTSKIT_BACKOFF_H
#define OTSKIT_BACKOFF_H

#include <stdint.h>

/* ---- PRNG: xoshiro256**, seeded through splitmix64 ---------------------- */

typedef struct { uint64_t s[4]; } bo_rng;

/* Seeds r deterministically from seed (any value, 0 included). */
void bo_rng_seed(bo_rng *r, uint64_t seed);

/* Seeds r from getrandom(2), so processes forked from one parent (nginx
 * workers) draw different sequences. Returns 1, or 0 when getrandom failed
 * and a weaker pid/address/counter mix was used instead. */
int bo_rng_seed_os(bo_rng *r);

/* The next 64 random bits. */
uint64_t bo_rng_next(bo_rng *r);

/* A uniform double in [0, 1) with 53 random bits. */
double bo_rng_double(bo_rng *r);

/* ---- schedules ----------------------------------------------------------- */

typedef enum {
  BO_FULL = 0,         /* U[0, L)                                   */
  BO_EQUAL = 1,        /* L/2 + U[0, L/2)                           */
  BO_DECORRELATED = 2, /* U[base, min(cap, prev * multiplier))      */
  BO_EXPONENTIAL = 3,  /* L, no jitter                              */
  BO_CONSTANT = 4      /* base                                      */
} bo_strategy;         /* L = min(cap, base * multiplier^n), n = retry from 0 */

typedef enum { BO_OK = 0, BO_STOP_ATTEMPTS = 1, BO_STOP_DEADLINE = 2 } bo_status;

typedef struct {
  bo_strategy strategy;
  double base, cap, multiplier;
  double throttle_base;  /* base used for throttled retries (>= base) */
  int64_t max_attempts;  /* total attempts, the first included; 0: no limit */
  double deadline;       /* total seconds since the first attempt; 0: none */
  int64_t attempt;       /* delays handed out since the last reset */
  double prev;           /* the last delay (decorrelated) */
  bo_rng rng;
} bo_schedule;

/* Checks the parameters and initialises s (attempt 0). Returns NULL, or a
 * message naming the bad parameter (s is then untouched). Rules: base > 0,
 * cap >= base, throttle_base >= base (0 means base), all at most
 * BO_MAX_SECONDS; multiplier >= 1 and finite; max_attempts >= 0;
 * deadline in [0, BO_MAX_SECONDS] (0: none) or +inf (none).
 * The PRNG must be seeded separately (bo_rng_seed / bo_rng_seed_os). */
/* the longest duration a schedule takes (base, cap, throttle_base,
 * deadline): one day */
#define BO_MAX_SECONDS 86400.0

const char *bo_schedule_init(bo_schedule *s, bo_strategy strategy, double base,
                             double cap, double multiplier, double throttle_base,
                             int64_t max_attempts, double deadline);

/* The delay before the next attempt, after a failed one, given the seconds
 * elapsed since the first attempt (NaN or negative counts as 0). On BO_OK
 * *delay is finite, >= 0, <= max(cap, throttle_base) and never beyond the
 * deadline (cut to what remains); s->attempt grows by one. Stops with
 * BO_STOP_ATTEMPTS when max_attempts attempts have been made, and with
 * BO_STOP_DEADLINE when no time remains; a stop changes nothing. A
 * throttled retry uses throttle_base in place of base (and cap raised to
 * at least throttle_base). Any attempt count is safe: L saturates at cap. */
bo_status bo_schedule_next(bo_schedule *s, double elapsed, int throttled,
                           double *delay);

/* Back to attempt 0 (the PRNG continues its sequence). */
void bo_schedule_reset(bo_schedule *s);

/* ---- retry budgets --------------------------------------------------------- */

/* What an acquire is for: a first attempt, a retry, a retry after a timeout. */
typedef enum { BO_REQUEST = 0, BO_RETRY = 1, BO_TIMEOUT = 2 } bo_kind;

typedef enum { BO_BUCKET = 0, BO_RATIO = 1 } bo_budget_type;

#define BO_SLOTS 10 /* the ratio budget's window is kept in this many slots */

typedef struct {
  bo_budget_type type;
  /* token bucket (AWS SDK standard mode) */
  double capacity, tokens, retry_cost, timeout_cost, reward;
  /* ratio (Finagle RetryBudget): retries in any window <=
   * min_per_sec * window + percent / 100 * first attempts in that window */
  double percent, min_per_sec, window, last_now;
  int64_t slot_epoch[BO_SLOTS];
  double deposits[BO_SLOTS], withdrawals[BO_SLOTS];
} bo_budget;

/* A token bucket starting full. acquire(RETRY) takes retry_cost tokens,
 * acquire(TIMEOUT) takes timeout_cost, refused when fewer remain;
 * acquire(REQUEST) always succeeds. success(kind) gives back what the last
 * acquire of that kind took (reward for REQUEST: a first-try success),
 * never above capacity. Capacity 0 refuses every retry. All >= 0, finite.
 * Returns NULL or a message. */
const char *bo_budget_bucket(bo_budget *b, double capacity, double retry_cost,
                             double timeout_cost, double reward);

/* A ratio budget: acquire(REQUEST, now) counts a first attempt; a retry
 * (RETRY or TIMEOUT) is allowed while the retries of the last `window`
 * seconds stay within min_per_sec * window + percent% of the first attempts
 * of that window. percent in [0, 1000], min_per_sec >= 0, window > 0, all
 * finite. Time is the caller's (any origin; going backwards counts as no
 * time passing). Returns NULL or a message. */
const char *bo_budget_ratio(bo_budget *b, double percent, double min_per_sec,
                            double window);

/* 1 when the attempt may go ahead (and is accounted), 0 when refused. */
int bo_budget_acquire(bo_budget *b, bo_kind kind, double now);

/* Reports that a request succeeded after an acquire of this kind. */
void bo_budget_success(bo_budget *b, bo_kind kind, double now);

/* Tokens left (bucket) or retries still allowed now (ratio, may be < 1). */
double bo_budget_available(bo_budget *b, double now);

#endif
