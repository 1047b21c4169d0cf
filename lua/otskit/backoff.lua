--- otskit.backoff -- retry delay schedules and retry budgets (C core).
-- Times are seconds. Schedules read no clock: the caller passes the time
-- elapsed since the first attempt. A schedule is seeded (seed = integer,
-- for tests and replays) or draws its seed from getrandom(2), so nginx
-- workers forked from one master do not share a sequence.
local core = require "otskit.core"
local C = core.backoff

local backoff = {}

--- The defaults of backoff.new and retry.call, chosen with
-- bench/retry_storm_bench.lua (docs/retry.md "Defaults"): full jitter over a
-- 500 ms window (U[0, 0.5 s) at every retry: at 50 contending clients
-- the fewest calls of the candidates that finish within 1.2x of the
-- fastest SDK policy), throttled retries over a 1 s window, 3 attempts
-- (SRE guidance), 10 s in all.
backoff.defaults = {
  strategy = "full",
  base = 0.5,
  cap = 0.5,
  multiplier = 2,
  throttle_base = 1.0,
  max_attempts = 3,
  deadline = 10,
}

local STRATEGIES = { full = true, equal = true, decorrelated = true,
                     exponential = true, constant = true }
local NEW_KEYS = { strategy = true, base = true, cap = true, multiplier = true,
                   throttle_base = true, max_attempts = true, deadline = true,
                   seed = true }

local function fail(fmt, ...)
  error("otskit.backoff: " .. fmt:format(...), 3)
end

local function check_keys(opts, allowed, what)
  if opts == nil then return {} end
  if type(opts) ~= "table" then fail("%s expects a table of options (got %s)", what, type(opts)) end
  for k in pairs(opts) do
    if not allowed[k] then fail("%s: unknown option '%s'", what, tostring(k)) end
  end
  return opts
end

local function pick(opts, defaults, k)
  local v = opts[k]
  if v == nil then v = defaults[k] end
  return v
end

--- backoff.new{ strategy, base, cap, multiplier, max_attempts, deadline,
-- throttle_base, seed } -> schedule. Missing options come from
-- backoff.defaults, except that multiplier defaults to 3 for
-- "decorrelated". max_attempts counts every attempt, the first included
-- (0 or math.huge: no limit); deadline is the total seconds (0 or
-- math.huge: none). Raises "otskit.backoff: ..." on a bad option: base
-- <= 0, cap < base, multiplier < 1, NaN, unknown strategy or key.
function backoff.new(opts)
  opts = check_keys(opts, NEW_KEYS, "new")
  local d = backoff.defaults
  local strategy = pick(opts, d, "strategy")
  if not STRATEGIES[strategy] then
    fail("unknown strategy '%s' (full, equal, decorrelated, exponential, constant)", tostring(strategy))
  end
  local mult = opts.multiplier
  if mult == nil then mult = (strategy == "decorrelated") and 3 or d.multiplier end
  local base = pick(opts, d, "base")
  local cap = opts.cap
  if cap == nil then
    cap = d.cap
    if type(base) == "number" and base > cap then cap = base end
  end
  local tb = opts.throttle_base
  if tb == nil then
    tb = d.throttle_base
    if type(base) == "number" and base > tb then tb = base end
  end
  local max_attempts = pick(opts, d, "max_attempts")
  if max_attempts == math.huge then max_attempts = 0 end
  local deadline = pick(opts, d, "deadline")
  if deadline == math.huge then deadline = 0 end
  return C.schedule(strategy, base, cap, mult, tb, max_attempts, deadline, opts.seed)
end

-- s:next([elapsed [, throttled]]) -> delay | nil, "attempts" | "deadline"
-- s:reset() -> s;  s.attempt -> delays handed out since the last reset
-- (implemented in csrc/lua/lbackoff.c)

local BUDGET_KEYS = {
  bucket = { type = true, capacity = true, retry_cost = true, timeout_cost = true, reward = true,
             dict = true, key = true },
  ratio = { type = true, percent = true, min_per_sec = true, window = true },
}

--- backoff.budget{ type = "bucket", capacity = 500, retry_cost = 5,
-- timeout_cost = 10, reward = 1 } -> a token bucket (AWS SDK standard
-- mode numbers are the defaults), or
-- backoff.budget{ type = "ratio", percent = 10, min_per_sec = 1,
-- window = 10 } -> a ratio budget (Finagle-like: retries within any
-- `window` seconds <= min_per_sec * window + percent % of first attempts).
-- b:acquire(kind [, now]) -> true | false, kind "request" (a first
-- attempt: always true, counted by ratio budgets), "retry" or "timeout"
-- (a retry after a timeout costs more in a bucket); b:success(kind [, now])
-- after a request succeeds, kind being its last acquire ("request" for a
-- first-try success); b:available([now]). `now` is seconds on any clock
-- (default: a monotonic clock); only ratio budgets use it. Capacity 0 is
-- valid and refuses every retry. With dict = ngx.shared.NAME (and an
-- optional key) the bucket lives in that shared dict: one budget for all
-- nginx workers.
function backoff.budget(opts)
  local t = (type(opts) == "table" and opts.type) or "bucket"
  if not BUDGET_KEYS[t] then fail("budget: unknown type '%s' (bucket, ratio)", tostring(t)) end
  opts = check_keys(opts, BUDGET_KEYS[t], "budget")
  local function num(k, def)
    local v = opts[k]
    if v == nil then return def end
    return v
  end
  if t == "bucket" then
    local b = C.bucket(num("capacity", 500), num("retry_cost", 5), num("timeout_cost", 10), num("reward", 1))
    if opts.dict == nil then return b end
    return backoff.shared_bucket(opts, b)
  end
  return C.ratio(num("percent", 10), num("min_per_sec", 1), num("window", 10))
end

-- A token bucket kept in an OpenResty shared dict, so every nginx worker
-- draws from one budget. dict:incr is atomic across workers; a refused
-- take is given back, and a refund above capacity is trimmed (between the
-- two steps another worker may briefly see a value off by one cost). If
-- the dict fails (no memory), retries are refused: a broken budget must
-- not turn into unlimited retries.
local SharedBucket = {}
SharedBucket.__index = SharedBucket

function backoff.shared_bucket(opts, checked)
  local dict = opts.dict
  if type(dict) ~= "table" and type(dict) ~= "userdata" then
    fail("budget: dict must be an ngx.shared dictionary")
  end
  local key = opts.key or "otskit:retry-budget"
  if type(key) ~= "string" then fail("budget: key must be a string") end
  local cap = checked:available()
  local cost = { request = opts.reward or 1, retry = opts.retry_cost or 5,
                 timeout = opts.timeout_cost or 10 }
  return setmetatable({ dict = dict, key = key, capacity = cap, cost = cost }, SharedBucket)
end

local function kind_of(kind, def)
  kind = kind or def
  if kind ~= "request" and kind ~= "retry" and kind ~= "timeout" then
    error("otskit.backoff: bad kind '" .. tostring(kind) .. "' (request, retry, timeout)", 3)
  end
  return kind
end

function SharedBucket:acquire(kind)
  kind = kind_of(kind, "retry")
  if kind == "request" then return true end
  if self.capacity <= 0 then return false end
  local c = self.cost[kind]
  local v = self.dict:incr(self.key, -c, self.capacity)
  if not v then return false end
  if v < 0 then
    self.dict:incr(self.key, c)
    return false
  end
  return true
end

function SharedBucket:success(kind)
  local c = self.cost[kind_of(kind, "request")]
  local v = self.dict:incr(self.key, c, self.capacity)
  if v and v > self.capacity then self.dict:incr(self.key, self.capacity - v) end
end

function SharedBucket:available()
  local v = self.dict:get(self.key)
  if v == nil then return self.capacity end
  return math.max(0, math.min(self.capacity, v))
end

function SharedBucket:type() return "bucket" end

--- backoff.now() -> seconds on a monotonic clock (arbitrary origin).
backoff.now = C.now

--- backoff.sleep(seconds): a blocking, non-busy sleep (nanosleep). Inside
-- OpenResty use ngx.sleep instead (otskit.retry does).
backoff.sleep = C.sleep

return backoff
