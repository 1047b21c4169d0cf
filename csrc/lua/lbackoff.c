/* lbackoff.c -- Lua binding of backoff.c: otskit.core.backoff. Also the two
 * OS services the Lua side needs outside OpenResty, which plain C parts
 * must not have: a monotonic clock and a non-busy sleep (nanosleep). */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "backoff.h"
#include "compat.h"
#include "laux.h"
#include "parts.h"

#define SCHEDULE "otskit.backoff.schedule"
#define BUDGET "otskit.backoff.budget"

static const char *const strategy_names[] = {
  "full", "equal", "decorrelated", "exponential", "constant", NULL};
static const char *const kind_names[] = {"request", "retry", "timeout", NULL};

/* A number argument that must not be NaN (raises otherwise). */
static double checknum(lua_State *L, int idx, const char *what) {
  double v;
  if (lua_type(L, idx) != LUA_TNUMBER)
    return otsk_error(L, "backoff", "%s must be a number (got %s)", what,
                      luaL_typename(L, idx));
  v = (double)lua_tonumber(L, idx);
  if (v != v) return otsk_error(L, "backoff", "%s must not be NaN", what);
  return v;
}

/* schedule(strategy, base, cap, multiplier, throttle_base, max_attempts,
 *          deadline [, seed]) -> a schedule; seeded from getrandom when
 * seed is nil. max_attempts and seed are int64 (decimal strings allowed). */
static int l_schedule(lua_State *L) {
  bo_strategy st = (bo_strategy)luaL_checkoption(L, 1, NULL, strategy_names);
  double base = checknum(L, 2, "base"), cap = checknum(L, 3, "cap");
  double mult = checknum(L, 4, "multiplier"), tb = checknum(L, 5, "throttle_base");
  int64_t max_attempts = 0;
  double deadline = checknum(L, 7, "deadline");
  int64_t seed = 0;
  int seeded = !lua_isnoneornil(L, 8);
  bo_schedule tmp, *s;
  const char *err;
  const char *why = NULL;
  if (!otsk_toint64(L, 6, &max_attempts, &why))
    return otsk_error(L, "backoff", "max_attempts must be an integer (%s)", why);
  if (seeded && !otsk_toint64(L, 8, &seed, &why))
    return otsk_error(L, "backoff", "seed must be an integer (%s)", why);
  err = bo_schedule_init(&tmp, st, base, cap, mult, tb, max_attempts, deadline);
  if (err) return otsk_error(L, "backoff", "%s", err);
  s = (bo_schedule *)lua_newuserdatauv(L, sizeof *s, 0);
  memset(s, 0, sizeof *s);
  luaL_setmetatable(L, SCHEDULE);
  *s = tmp;
  if (seeded) bo_rng_seed(&s->rng, (uint64_t)seed);
  else bo_rng_seed_os(&s->rng);
  return 1;
}

static bo_schedule *checkschedule(lua_State *L) {
  return (bo_schedule *)luaL_checkudata(L, 1, SCHEDULE);
}

static const char *const stop_reasons[] = {NULL, "attempts", "deadline"};

/* s:next([elapsed [, throttled]]) -> delay | nil, "attempts" | "deadline" */
static int s_next(lua_State *L) {
  bo_schedule *s = checkschedule(L);
  double elapsed = 0, d = 0;
  bo_status st;
  if (!lua_isnoneornil(L, 2)) {
    elapsed = checknum(L, 2, "elapsed");
    if (elapsed < 0) return otsk_error(L, "backoff", "elapsed must be >= 0");
  }
  st = bo_schedule_next(s, elapsed, lua_toboolean(L, 3), &d);
  if (st != BO_OK) {
    lua_pushnil(L);
    lua_pushstring(L, stop_reasons[st]);
    return 2;
  }
  lua_pushnumber(L, (lua_Number)d);
  return 1;
}

static int s_reset(lua_State *L) {
  bo_schedule_reset(checkschedule(L));
  lua_settop(L, 1);
  return 1;
}

static int s_tostring(lua_State *L) {
  bo_schedule *s = checkschedule(L);
  lua_pushfstring(L, "otskit.backoff.schedule(%s, base %f, cap %f): %p",
                  strategy_names[s->strategy], (lua_Number)s->base,
                  (lua_Number)s->cap, (void *)s);
  return 1;
}

/* s.attempt (delays handed out since the last reset) and the methods */
static int s_index(lua_State *L) {
  bo_schedule *s = checkschedule(L);
  const char *k = lua_tostring(L, 2);
  if (k && strcmp(k, "attempt") == 0) {
    otsk_pushint64(L, s->attempt);
    return 1;
  }
  if (k && strcmp(k, "strategy") == 0) {
    lua_pushstring(L, strategy_names[s->strategy]);
    return 1;
  }
  if (k && strcmp(k, "deadline") == 0) {
    lua_pushnumber(L, (lua_Number)s->deadline);
    return 1;
  }
  lua_pushvalue(L, 2);
  lua_rawget(L, lua_upvalueindex(1));
  return 1;
}

/* bucket(capacity, retry_cost, timeout_cost, reward) -> budget */
static int l_bucket(lua_State *L) {
  bo_budget tmp, *b;
  const char *err = bo_budget_bucket(&tmp, checknum(L, 1, "capacity"),
                                     checknum(L, 2, "retry_cost"),
                                     checknum(L, 3, "timeout_cost"),
                                     checknum(L, 4, "reward"));
  if (err) return otsk_error(L, "backoff", "%s", err);
  b = (bo_budget *)lua_newuserdatauv(L, sizeof *b, 0);
  luaL_setmetatable(L, BUDGET);
  *b = tmp;
  return 1;
}

/* ratio(percent, min_per_sec, window) -> budget */
static int l_ratio(lua_State *L) {
  bo_budget tmp, *b;
  const char *err = bo_budget_ratio(&tmp, checknum(L, 1, "percent"),
                                    checknum(L, 2, "min_per_sec"),
                                    checknum(L, 3, "window"));
  if (err) return otsk_error(L, "backoff", "%s", err);
  b = (bo_budget *)lua_newuserdatauv(L, sizeof *b, 0);
  luaL_setmetatable(L, BUDGET);
  *b = tmp;
  return 1;
}

static bo_budget *checkbudget(lua_State *L) {
  return (bo_budget *)luaL_checkudata(L, 1, BUDGET);
}

static double monotonic(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* the optional "now" argument at idx (used by ratio budgets): the caller's
 * clock, or the monotonic clock when absent */
static double optnow(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return monotonic();
  return checknum(L, idx, "now");
}

/* b:acquire(kind, now) -> true | false */
static int b_acquire(lua_State *L) {
  bo_budget *b = checkbudget(L);
  bo_kind kind = (bo_kind)luaL_checkoption(L, 2, "retry", kind_names);
  lua_pushboolean(L, bo_budget_acquire(b, kind, optnow(L, 3)));
  return 1;
}

/* b:success(kind, now) */
static int b_success(lua_State *L) {
  bo_budget *b = checkbudget(L);
  bo_kind kind = (bo_kind)luaL_checkoption(L, 2, "request", kind_names);
  bo_budget_success(b, kind, optnow(L, 3));
  return 0;
}

/* b:available(now) -> tokens (bucket) or retries allowed now (ratio) */
static int b_available(lua_State *L) {
  bo_budget *b = checkbudget(L);
  lua_pushnumber(L, (lua_Number)bo_budget_available(b, optnow(L, 2)));
  return 1;
}

static int b_type(lua_State *L) {
  lua_pushstring(L, checkbudget(L)->type == BO_BUCKET ? "bucket" : "ratio");
  return 1;
}

/* now() -> seconds of a monotonic clock (arbitrary origin) */
static int l_now(lua_State *L) {
  lua_pushnumber(L, (lua_Number)monotonic());
  return 1;
}

/* sleep(seconds): blocks the thread without spinning (nanosleep, resumed
 * after signals). 0 returns at once; at most 1e6 s. */
static int l_sleep(lua_State *L) {
  double sec = checknum(L, 1, "seconds");
  struct timespec ts, rem;
  if (sec < 0 || sec > 1e6) return otsk_error(L, "backoff", "sleep: seconds must be 0..1e6");
  if (sec == 0) return 0;
  ts.tv_sec = (time_t)floor(sec);
  ts.tv_nsec = (long)((sec - floor(sec)) * 1e9);
  if (ts.tv_nsec > 999999999L) ts.tv_nsec = 999999999L;
  while (nanosleep(&ts, &rem) != 0 && errno == EINTR) ts = rem;
  return 0;
}

static const luaL_Reg schedule_methods[] = {
  {"next", s_next}, {"reset", s_reset}, {NULL, NULL}};
static const luaL_Reg budget_methods[] = {
  {"acquire", b_acquire}, {"success", b_success}, {"available", b_available},
  {"type", b_type}, {NULL, NULL}};
static const luaL_Reg funcs[] = {
  {"schedule", l_schedule}, {"bucket", l_bucket}, {"ratio", l_ratio},
  {"now", l_now}, {"sleep", l_sleep}, {NULL, NULL}};

int otsk_open_backoff(lua_State *L) {
  /* schedules: __index is a function (for s.attempt) over the methods */
  luaL_newmetatable(L, SCHEDULE);
  lua_newtable(L);
  otsk_setfuncs(L, schedule_methods);
  lua_pushcclosure(L, s_index, 1);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, s_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushstring(L, SCHEDULE);
  lua_setfield(L, -2, "__name");
  lua_pop(L, 1);
  otsk_newclass(L, BUDGET, budget_methods, NULL);
  lua_newtable(L);
  otsk_setfuncs(L, funcs);
  return 1;
}
