--- otskit.analyze.sim -- the simulation machinery under otskit.analyze:
-- a retry budget that counts, simulated concurrent clients, reproducible
-- backoff schedules, and the poll that measures how long a write takes to
-- become visible to a query.
local backoff = require "otskit.backoff"
local retry = require "otskit.retry"

local sim = {}

-- a budget that counts the retries it grants (it never refuses)
function sim.counting_budget()
  local b = { retries = 0 }
  function b.acquire(_, kind) if kind ~= "request" then b.retries = b.retries + 1 end return true end
  function b.success() end
  function b.available() return math.huge end
  return b
end

-- an error inside a coroutine (env.concurrent): its own traceback kept
local function co_error(co, err)
  if type(err) == "table" and err.analyze_error then return err end
  return { analyze_error = true, msg = err, tb = debug.traceback(co, "", 0) }
end


-- Concurrent clients, simulated: each client is a coroutine with its own
-- clock. The scheduler always resumes the client whose clock is earliest
-- (ties in a seeded random order) and sets the shared clock to it; a
-- client yields before each request of env.yielding (so others may go
-- first), and each request takes `latency` seconds; a retry sleep moves
-- the client's clock forward and yields. So backoff really spreads the
-- clients out, as it does in a real deployment.
function sim.make(get_now, set_now, r, latency)
  local s = { running = nil }
  function s.concurrent(fns)
    local clients = {}
    local t0 = get_now()
    for i, f in ipairs(fns) do clients[i] = { co = coroutine.create(f), t = t0 } end
    local last = t0
    while true do
      local best, ties = nil, {}
      for _, c in ipairs(clients) do
        if coroutine.status(c.co) ~= "dead" then
          if best == nil or c.t < best.t then best, ties = c, { c }
          elseif c.t == best.t then ties[#ties + 1] = c end
        end
      end
      if not best then break end
      local c = #ties > 1 and ties[r.int(1, #ties)] or best
      set_now(c.t)
      s.running = c
      local ok, err = coroutine.resume(c.co)
      s.running = nil
      if not ok then error(co_error(c.co, err), 0) end
      c.t = get_now()
      if c.t > last then last = c.t end
    end
    set_now(last)
  end
  -- called by the yielding store and by sleep, inside a client
  function s.pause()
    if s.running and coroutine.running() == s.running.co then coroutine.yield() end
  end
  function s.yielding(inner)
    return setmetatable({}, { __index = function(_, k)
      local f = inner[k]
      if type(f) ~= "function" then return f end
      return function(_, ...)
        s.pause()
        local a, b, c = f(inner, ...)
        if s.running then set_now(get_now() + latency) end
        return a, b, c
      end
    end })
  end
  return s
end


-- A schedule for retry.call (opts.schedule) that is reproducible: each
-- reset (each call) draws a fresh seeded backoff schedule from the
-- design's PRNG, one per coroutine, so concurrent clients neither share
-- attempt counts nor draw the same delays.
function sim.seeded_schedule(r, base_opts)
  local by_co = setmetatable({}, { __mode = "k" })
  local main = {}
  local sched = {}
  local function slot() return coroutine.running() or main end
  function sched.reset(self)
    local o = {}
    for k, v in pairs(base_opts or {}) do o[k] = v end
    o.seed = r.int(1, 2147483646)
    local s = backoff.new(o)
    by_co[slot()] = s
    self.deadline = s.deadline
  end
  function sched.next(self, elapsed, throttled)
    local s = by_co[slot()]
    self.deadline = s.deadline
    return s:next(elapsed, throttled)
  end
  sched:reset()
  return sched
end


--- sim.visible(probe, o) -> ms | "over N": how long a write takes to
-- become visible: probe() (true once the query sees it) is called until it
-- answers true; 0 when the first probe sees it. With o.since (the clock
-- read just before the write was sent): else ms from it to the answer of
-- the probe that saw the write, what a writer waits to read its own write
-- through the index, never below the index's delay however slow either
-- request was. Without: ms from the call (the write's answer) to the
-- start of that probe, neither request's own time counted (a server slower
-- to answer than the delay shows 0). o.real (against a server): on the
-- real monotonic clock (backoff.now()), a
-- probe as soon as the previous one answered (2 ms apart). Else on the
-- simulated clock (o.now(), o.set_time(t)), a probe every o.step seconds
-- (0.01). Not seen within o.timeout seconds (10) of the call:
-- "over <timeout in ms>".
function sim.visible(probe, o)
  local timeout = o.timeout or 10
  if o.real then
    local t0 = backoff.now()
    local since = o.since or t0
    local first = true
    while true do
      local t = backoff.now()
      if probe() then
        if o.since then
          if first then return 0 end   -- the first read saw it
          t = backoff.now()
        end
        return math.floor((t - since) * 1000 + 0.5)
      end
      if backoff.now() - t0 > timeout then return ("over %d"):format(math.floor(timeout * 1000 + 0.5)) end
      first = false
      backoff.sleep(0.002)
    end
  end
  local step = o.step or 0.01
  local t0 = o.now()
  local since = o.since or t0
  for k = 0, math.ceil(timeout / step) do
    local t = t0 + k * step + 1e-7   -- just past the step: t0 + k * step may round below it
    o.set_time(t)
    if probe() then return k == 0 and 0 or math.floor((t - since) * 1000 + 0.5) end
  end
  return ("over %d"):format(math.floor(timeout * 1000 + 0.5))
end

--- sim.sleep(seconds): a real (non-busy) sleep
sim.sleep = backoff.sleep

--- sim.call(env, method, req, op, extra) -> what env.store[method](req)
-- answers, retried as the patterns retry theirs (otskit.retry, the
-- Tablestore classification, env.retry's clock and budget; extra: more
-- retry options).
function sim.call(env, method, req, op, extra)
  local o = { op = op }
  for k, v in pairs(env.retry) do o[k] = v end
  for k, v in pairs(extra or {}) do o[k] = v end
  local st = env.store
  return retry.call(function() return st[method](st, req) end, o)
end

return sim
