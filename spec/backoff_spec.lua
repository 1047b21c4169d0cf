local backoff = require "otskit.backoff"
local helper = require "spec.helper"

local STRATEGIES = { "full", "equal", "decorrelated", "exponential", "constant" }

local function raises(pattern, fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok, "expected an error matching " .. pattern)
  assert.matches(pattern, tostring(err))
end

-- Counts n samples of draw() into k equal buckets over [lo, hi) and checks
-- each bucket against the uniform expectation within 5 standard deviations
-- (seeded, so the outcome is fixed; 5 sigma leaves room for a new seed).
local function assert_uniform(draw, lo, hi, n, k)
  local counts = {}
  for i = 1, k do counts[i] = 0 end
  for _ = 1, n do
    local x = draw()
    assert.is_true(x >= lo and x < hi, ("sample %.17g outside [%g, %g)"):format(x, lo, hi))
    local b = math.floor((x - lo) / (hi - lo) * k) + 1
    if b > k then b = k end
    counts[b] = counts[b] + 1
  end
  local p = 1 / k
  local sd = math.sqrt(n * p * (1 - p))
  for i = 1, k do
    assert.is_true(math.abs(counts[i] - n * p) <= 5 * sd,
      ("bucket %d of [%g, %g): %d, expected %.0f +- %.0f"):format(i, lo, hi, counts[i], n * p, 5 * sd))
  end
end

describe("otskit.backoff", function()
  describe("new", function()
    it("uses the documented defaults", function()
      local s = backoff.new { seed = 1 }
      assert.equal("full", s.strategy)
      assert.equal(0, s.attempt)
      assert.equal(backoff.defaults.deadline, s.deadline)
      for _ = 1, backoff.defaults.max_attempts - 1 do
        local d = s:next()
        assert.is_true(d >= 0 and d < backoff.defaults.cap)
      end
      assert.same({ nil, "attempts" }, { s:next() })
    end)

    it("raises a clear error for bad configuration", function()
      raises("otskit.backoff: base must be", backoff.new, { base = 0 })
      raises("otskit.backoff: base must be", backoff.new, { base = -1 })
      raises("otskit.backoff: base must not be NaN", backoff.new, { base = 0 / 0 })
      raises("otskit.backoff: base must be", backoff.new, { base = math.huge, cap = math.huge })
      raises("otskit.backoff: cap must be", backoff.new, { base = 1, cap = 0.5 })
      raises("otskit.backoff: multiplier must be", backoff.new, { multiplier = 0.5 })
      raises("otskit.backoff: multiplier must not be NaN", backoff.new, { multiplier = 0 / 0 })
      raises("otskit.backoff: throttle_base must be", backoff.new, { base = 1, cap = 2, throttle_base = 0.5 })
      raises("otskit.backoff: max_attempts", backoff.new, { max_attempts = -1 })
      raises("otskit.backoff: max_attempts", backoff.new, { max_attempts = 2.5 })
      raises("otskit.backoff: deadline must be", backoff.new, { deadline = -1 })
      raises("otskit.backoff: unknown strategy 'linear'", backoff.new, { strategy = "linear" })
      raises("otskit.backoff: new: unknown option 'max_attempt'", backoff.new, { max_attempt = 3 })
      raises("otskit.backoff: new expects a table", backoff.new, 5)
      raises("otskit.backoff: seed", backoff.new, { seed = "x" })
      raises("otskit.backoff: base must be a number", backoff.new, { base = "1" })
    end)

    it("rejects bad elapsed times", function()
      local s = backoff.new { seed = 1 }
      raises("otskit.backoff: elapsed must be >= 0", s.next, s, -1)
      raises("otskit.backoff: elapsed must not be NaN", s.next, s, 0 / 0)
    end)

    it("treats 0 and math.huge as no limit", function()
      local s = backoff.new { strategy = "constant", base = 1, max_attempts = math.huge, deadline = math.huge, seed = 1 }
      for _ = 1, 1000 do assert.equal(1, s:next(1e12)) end
      s = backoff.new { strategy = "constant", base = 1, max_attempts = 0, deadline = 0, seed = 1 }
      for _ = 1, 1000 do assert.equal(1, s:next(1e12)) end
    end)
  end)

  describe("schedules", function()
    it("replay the same delays for the same seed, and differ between seeds", function()
      for _, st in ipairs(STRATEGIES) do
        local a = backoff.new { strategy = st, base = 0.01, cap = 5, max_attempts = 0, deadline = 0, seed = 99 }
        local b = backoff.new { strategy = st, base = 0.01, cap = 5, max_attempts = 0, deadline = 0, seed = 99 }
        local c = backoff.new { strategy = st, base = 0.01, cap = 5, max_attempts = 0, deadline = 0, seed = "100" }
        local differ = false
        for _ = 1, 50 do
          local x, y, z = a:next(), b:next(), c:next()
          assert.equal(x, y)
          if x ~= z then differ = true end
        end
        assert.equal(st ~= "exponential" and st ~= "constant", differ)
      end
    end)

    it("give the same known delays for a seed on Lua 5.4 and LuaJIT", function()
      local s = backoff.new { strategy = "full", base = 0.05, cap = 2, max_attempts = 4, deadline = 10, seed = 42 }
      assert.is_true(math.abs(s:next(0) - 0.0041931485529941) < 1e-15)
      assert.is_true(math.abs(s:next(0.1) - 0.037898025066267) < 1e-15)
    end)

    it("seed unseeded schedules from the OS: two draw different delays", function()
      local a = backoff.new { strategy = "full", base = 1, cap = 1, max_attempts = 0 }
      local b = backoff.new { strategy = "full", base = 1, cap = 1, max_attempts = 0 }
      local same = 0
      for _ = 1, 20 do if a:next() == b:next() then same = same + 1 end end
      assert.is_true(same < 20)
    end)

    it("exponential doubles up to the cap; constant stays at base", function()
      local s = backoff.new { strategy = "exponential", base = 0.1, cap = 1, max_attempts = 0, deadline = 0 }
      local want = { 0.1, 0.2, 0.4, 0.8, 1, 1, 1 }
      for i, w in ipairs(want) do
        assert.is_true(math.abs(s:next() - w) < 1e-12)
        assert.equal(i, s.attempt)
      end
      s:reset()
      assert.equal(0, s.attempt)
      assert.is_true(math.abs(s:next() - 0.1) < 1e-12)
      s = backoff.new { strategy = "constant", base = 0.25, max_attempts = 0, deadline = 0 }
      for _ = 1, 10 do assert.equal(0.25, s:next()) end
    end)

    it("stop at max_attempts (counting the first attempt) and at the deadline", function()
      local s = backoff.new { max_attempts = 3, seed = 1 }
      assert.is_number(s:next())
      assert.is_number(s:next())
      assert.same({ nil, "attempts" }, { s:next() })
      assert.equal(2, s.attempt)
      s = backoff.new { strategy = "constant", base = 1, cap = 1, max_attempts = 0, deadline = 2.5 }
      assert.equal(1, s:next(0))
      assert.equal(1, s:next(1))
      assert.is_true(math.abs(s:next(2.2) - 0.3) < 1e-12) -- cut to what remains
      assert.same({ nil, "deadline" }, { s:next(2.5) })
    end)

    it("use throttle_base for throttled retries", function()
      local s = backoff.new { strategy = "exponential", base = 0.1, cap = 1, throttle_base = 2, max_attempts = 0 }
      assert.equal(2, s:next(0, true))
      assert.is_true(math.abs(s:next(0) - 0.2) < 1e-12)
    end)

    it("never overflow, go negative or NaN for random parameters and huge attempt counts", function()
      local r = helper.rng(2024)
      for _ = 1, helper.trials(200) do
        local st = STRATEGIES[r.int(1, #STRATEGIES)]
        local base = 10 ^ (r.float() * 8 - 6)          -- 1e-6 .. 100 s
        local cap = math.min(86400, base * 10 ^ (r.float() * 6)) -- up to 1e6 x base, at most a day
        local mult = 1 + r.float() * (r.int(0, 1) == 0 and 3 or 1e6)
        local deadline = r.int(0, 1) == 0 and 0 or math.min(86400, base * 10 ^ (r.float() * 4))
        local s = backoff.new { strategy = st, base = base, cap = cap, multiplier = mult,
                                max_attempts = 0, deadline = deadline, seed = r.int(0, 1e9) }
        local elapsed = 0
        for i = 1, 300 do
          local d, why = s:next(elapsed)
          if d == nil then
            assert.equal("deadline", why)
            assert.is_true(deadline > 0 and elapsed >= deadline)
            break
          end
          assert.is_true(d == d and d >= 0 and d <= cap, ("%s attempt %d: %s"):format(st, i, tostring(d)))
          if deadline > 0 then assert.is_true(elapsed + d <= deadline * (1 + 1e-12)) end
          elapsed = elapsed + d + r.float() * base
        end
      end
    end)

    it("stay within [0, cap] with jitter alive at attempt 10^6", function()
      local n = helper.trials(1000000)
      for _, st in ipairs { "full", "equal", "decorrelated" } do
        local s = backoff.new { strategy = st, base = 0.001, cap = 1, max_attempts = 0, deadline = 0, seed = 5 }
        for _ = 1, n do
          local d = s:next()
          assert(d >= 0 and d <= 1)
        end
        assert.equal(n, s.attempt)
        local lo, hi = math.huge, -math.huge
        for _ = 1, 200 do
          local d = s:next()
          lo, hi = math.min(lo, d), math.max(hi, d)
        end
        assert.is_true(hi - lo > 0.3, st .. ": jitter vanished at the cap")
        assert.is_true(hi < 1)
      end
    end)
  end)

  describe("jitter distributions (bucketed histograms against the formula)", function()
    local N, K = helper.trials(20000), 10
    -- attempt n has L = min(cap, base * 2^n); draw the delay of attempt n
    local function at(st, n, seed)
      local s = backoff.new { strategy = st, base = 0.01, cap = 1, max_attempts = 0, deadline = 0, seed = seed }
      return function()
        s:reset()
        for _ = 1, n do s:next() end
        return s:next()
      end
    end

    it("full: U[0, L) below and at the cap", function()
      assert_uniform(at("full", 3, 11), 0, 0.08, N, K)
      assert_uniform(at("full", 40, 12), 0, 1, N, K)
    end)

    it("equal: L/2 + U[0, L/2) below and at the cap", function()
      assert_uniform(at("equal", 2, 13), 0.02, 0.04, N, K)
      assert_uniform(at("equal", 40, 14), 0.5, 1, N, K)
    end)

    it("decorrelated: U[base, prev * 3), and U[base, cap) at the cap (no pile-up on it)", function()
      -- first retry: prev = base, so U[base, 3 base)
      assert_uniform(at("decorrelated", 0, 15), 0.01, 0.03, N, K)
      -- base 0.5, cap 1: every prev * 3 >= cap, so each draw is U[0.5, 1)
      local s = backoff.new { strategy = "decorrelated", base = 0.5, cap = 1, max_attempts = 0, deadline = 0, seed = 16 }
      assert_uniform(function() return s:next() end, 0.5, 1, N, K)
    end)
  end)

  describe("budget", function()
    it("token bucket: AWS standard-mode defaults", function()
      local b = backoff.budget()
      assert.equal("bucket", b:type())
      assert.equal(500, b:available())
      assert.is_true(b:acquire("request"))
      local n = 0
      while b:acquire("retry") do n = n + 1 end
      assert.equal(100, n)
      b:success("retry")                 -- refunds what the retry took
      assert.equal(5, b:available())
      assert.is_false(b:acquire("timeout"))
      b:success("retry")
      assert.is_true(b:acquire("timeout")) -- a retry after a timeout costs 10
      assert.equal(0, b:available())
      for _ = 1, 600 do b:success("request") end
      assert.equal(500, b:available())     -- never above capacity
    end)

    it("token bucket: capacity 0 refuses every retry", function()
      local b = backoff.budget { capacity = 0 }
      assert.is_true(b:acquire("request"))
      assert.is_false(b:acquire("retry"))
      assert.is_false(b:acquire("timeout"))
    end)

    it("ratio: percent of first attempts plus a minimum rate, over a sliding window", function()
      local b = backoff.budget { type = "ratio", percent = 20, min_per_sec = 0, window = 10 }
      assert.equal("ratio", b:type())
      assert.is_false(b:acquire("retry", 0))
      for _ = 1, 50 do b:acquire("request", 1) end
      local n = 0
      while b:acquire("retry", 2) do n = n + 1 end
      assert.equal(10, n)
      assert.is_false(b:acquire("retry", 30)) -- all expired, no minimum
      b = backoff.budget { type = "ratio", percent = 0, min_per_sec = 2, window = 5 }
      n = 0
      while b:acquire("retry", 100) do n = n + 1 end
      assert.equal(10, n)
      assert.is_true(b:acquire("retry", 106))
    end)

    it("token bucket in a shared dict: one budget for every worker", function()
      -- a stand-in for ngx.shared.DICT: incr(key, v, init) and get(key)
      local store = {}
      local dict = {
        incr = function(_, k, v, init)
          if store[k] == nil then
            if init == nil then return nil, "not found" end
            store[k] = init
          end
          store[k] = store[k] + v
          return store[k]
        end,
        get = function(_, k) return store[k] end,
      }
      local w1 = backoff.budget { dict = dict, capacity = 20 }
      local w2 = backoff.budget { dict = dict, capacity = 20 }
      assert.equal(20, w1:available())
      assert.is_true(w1:acquire("retry"))
      assert.is_true(w2:acquire("timeout"))
      assert.equal(5, w1:available())
      assert.is_false(w2:acquire("timeout")) -- refused, and given back
      assert.equal(5, w2:available())
      assert.is_true(w2:acquire("retry"))
      assert.is_false(w1:acquire("retry"))
      w1:success("timeout")
      assert.equal(10, w2:available())
      for _ = 1, 50 do w2:success("request") end
      assert.equal(20, w1:available()) -- trimmed to capacity
      assert.equal("bucket", w1:type())
      assert.is_true(w1:acquire("request"))
      assert.has_error(function() w1:acquire("bogus") end, "otskit.backoff: bad kind 'bogus' (request, retry, timeout)")
      local none = backoff.budget { dict = dict, key = "other", capacity = 0 }
      assert.is_false(none:acquire("retry"))
      -- a failing dict refuses retries rather than allowing them all
      local broken = backoff.budget { dict = { incr = function() return nil, "no memory" end,
                                               get = function() return nil end } }
      assert.is_false(broken:acquire("retry"))
      assert.has_error(function() backoff.budget { dict = 5 } end)
    end)

    it("raises on bad configuration and kinds", function()
      raises("otskit.backoff: capacity must be", backoff.budget, { capacity = -1 })
      raises("otskit.backoff: capacity must not be NaN", backoff.budget, { capacity = 0 / 0 })
      raises("otskit.backoff: retry_cost must be", backoff.budget, { retry_cost = math.huge })
      raises("otskit.backoff: percent must be", backoff.budget, { type = "ratio", percent = -5 })
      raises("otskit.backoff: window must be", backoff.budget, { type = "ratio", window = 0 })
      raises("otskit.backoff: budget: unknown type 'leaky'", backoff.budget, { type = "leaky" })
      raises("otskit.backoff: budget: unknown option 'percent'", backoff.budget, { percent = 5 })
      local b = backoff.budget()
      assert.has_error(function() b:acquire("retries") end)
      raises("otskit.backoff: now must not be NaN", b.acquire, b, "retry", 0 / 0)
    end)
  end)

  it("sleep and now: a non-busy sleep on a monotonic clock", function()
    local t0, c0 = backoff.now(), os.clock()
    backoff.sleep(0.05)
    assert.is_true(backoff.now() - t0 >= 0.049)
    assert.is_true(os.clock() - c0 < 0.03) -- CPU time: it did not spin
    raises("otskit.backoff: sleep", backoff.sleep, -1)
    backoff.sleep(0)
  end)
end)
