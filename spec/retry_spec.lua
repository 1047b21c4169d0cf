local retry = require "otskit.retry"
local backoff = require "otskit.backoff"
local helper = require "spec.helper"

-- A fake clock: sleep advances it and records every delay.
local function fake()
  local f = { t = 0, sleeps = {} }
  f.clock = function() return f.t end
  f.sleep = function(d)
    assert.is_true(d >= 0)
    f.sleeps[#f.sleeps + 1] = d
    f.t = f.t + d
  end
  return f
end

-- fn failing with errs[1], errs[2], ... then returning "ok", attempt
local function failing(errs)
  return function(attempt)
    if errs[attempt] then return nil, errs[attempt] end
    return "ok", attempt
  end
end

local function opts(f, extra)
  local o = { sleep = f.sleep, clock = f.clock, budget = false, op = "GetRow",
              backoff = { strategy = "constant", base = 0.1, cap = 0.1, throttle_base = 1,
                          max_attempts = 5, deadline = 0 } }
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

describe("otskit.retry", function()
  describe("tablestore", function()
    local cases = {
      -- code, op, expected (no opts)
      { "OTSServerBusy", "PutRow", "throttle" },
      { "OTSNotEnoughCapacityUnit", "UpdateRow", "throttle" },
      { "OTSOperationThrottled", "GetRow", "throttle" },
      { "OTSCapacityUnitExhausted", "BatchWriteRow", "throttle" },
      { "OTSStorageServerBusy", "DeleteRow", "throttle" },
      { "OTSRowOperationConflict", "PutRow", "retry" },
      { "OTSTableNotReady", "UpdateRow", "retry" },
      { "OTSPartitionUnavailable", "BatchWriteRow", "retry" },
      { "OTSTimeout", "GetRow", "retry" },
      { "OTSTimeout", "PutRow", "fail" },
      { "OTSInternalServerError", "GetRange", "retry" },
      { "OTSInternalServerError", "UpdateRow", "fail" },
      { "OTSServerUnavailable", "BatchGetRow", "retry" },
      { "OTSServerUnavailable", "BatchWriteRow", "fail" },
      { "OTSTimeout", "get_range", "retry" },
      { "OTSTimeout", "sql_query", "retry" },
      { "OTSTimeout", nil, "fail" },
      { "OTSTimeout", "SomethingNew", "fail" },
      { "timeout", "GetRow", "retry" },
      { "timeout", "PutRow", "fail" },
      { "connection reset by peer", "DeleteRow", "fail" },
      { "connection refused", "PutRow", "retry" },
      { "OTSConditionCheckFail", "UpdateRow", "fail" },
      { "OTSConditionCheckFail", "GetRow", "fail" },
      { "OTSParameterInvalid", "GetRow", "fail" },
      { "OTSAuthFailed", "GetRow", "fail" },
      { "OTSObjectNotExist", "GetRow", "fail" },
      { "OTSRequestBodyTooLarge", "PutRow", "fail" },
      { "OTSOutOfColumnCountLimit", "PutRow", "fail" },
      { "OTSQuotaExhausted", "PutRow", "fail" },
      { "SomeUnknownCode", "GetRow", "fail" },
    }
    for _, c in ipairs(cases) do
      it(("%s on %s -> %s"):format(c[1], tostring(c[2]), c[3]), function()
        assert.equal(c[3], retry.tablestore(c[1], c[2]))
        assert.equal(c[3], retry.tablestore({ code = c[1], message = "m" }, c[2]))
      end)
    end

    it("retries ambiguous write failures only when marked idempotent, never for a condition alone", function()
      -- OTSOutcomeUnknown is ambiguous too, but never retried by the
      -- classification (a caller with a protocol of its own may: patterns.counter)
      assert.is_true(retry.ambiguous("OTSOutcomeUnknown"))
      assert.equal("fail", retry.tablestore("OTSOutcomeUnknown", "PutRow", { idempotent = true }))
      for _, code in ipairs { "OTSTimeout", "OTSInternalServerError", "OTSServerUnavailable", "timeout", "closed",
                              "RequestTimeout", "NetworkError" } do
        assert.is_true(retry.ambiguous(code))
        assert.equal("fail", retry.tablestore(code, "PutRow"))
        assert.equal("fail", retry.tablestore(code, "PutRow", {}))
        assert.equal("retry", retry.tablestore(code, "PutRow", { idempotent = true }))
        assert.equal("retry", retry.tablestore(code, "GetRow"))
        -- a condition does not make a repeat harmless: refused, not ignored
        assert.has_error(function() retry.tablestore(code, "UpdateRow", { conditional = true }) end)
      end
      for _, code in ipairs { "OTSServerBusy", "OTSRowOperationConflict", "connection refused",
                              "OTSConditionCheckFail", "OTSParameterInvalid" } do
        assert.is_false(retry.ambiguous(code))
      end
      assert.is_true(retry.ambiguous({ http_status = 502 }))
      assert.is_false(retry.ambiguous({ http_status = 429 }))
      assert.is_false(retry.ambiguous({ code = "NetworkError", network = true, not_sent = true }))
      -- never-retryable codes stay so whatever the flags
      assert.equal("fail", retry.tablestore("OTSConditionCheckFail", "PutRow", { idempotent = true }))
    end)

    it("throttles quota errors only for 'Too frequent table operations.'", function()
      assert.equal("throttle", retry.tablestore({ code = "OTSQuotaExhausted",
        message = "Too frequent table operations." }, "CreateTable"))
      assert.equal("fail", retry.tablestore({ code = "OTSQuotaExhausted",
        message = "Number of tables exceeded the quota." }, "CreateTable"))
    end)

    it("classifies HTTP statuses without a code", function()
      assert.equal("retry", retry.tablestore({ http_status = 503 }, "GetRow"))
      assert.equal("retry", retry.tablestore({ http_status = 500 }, "GetRange"))
      assert.equal("fail", retry.tablestore({ http_status = 502 }, "PutRow"))
      assert.equal("retry", retry.tablestore({ http_status = 502 }, "PutRow", { idempotent = true }))
      assert.equal("throttle", retry.tablestore({ http_status = 429 }, "PutRow"))
      assert.equal("fail", retry.tablestore({ http_status = 400 }, "GetRow"))
      assert.equal("fail", retry.tablestore({ http_status = 403 }, "GetRow"))
      -- a code otskit does not know goes by its status, as the SDKs do
      assert.equal("retry", retry.tablestore({ code = "OTSSomethingNew", http_status = 503 }, "GetRow"))
      assert.equal("fail", retry.tablestore({ code = "OTSSomethingNew", http_status = 503 }, "PutRow"))
      assert.equal("throttle", retry.tablestore({ code = "OTSSomethingNew", http_status = 429 }, "PutRow"))
      assert.equal("fail", retry.tablestore({ code = "OTSSomethingNew", http_status = 400 }, "GetRow"))
      -- a known code goes by its class whatever the status says
      assert.equal("fail", retry.tablestore({ code = "OTSFlowControl", http_status = 429 }, "GetRow"))
      assert.equal("fail", retry.tablestore({ code = "OTSConditionCheckFail", http_status = 503 }, "GetRow"))
      assert.equal("retry", retry.tablestore({ network = true, message = "eof" }, "GetRow"))
      assert.equal("fail", retry.tablestore({ network = true, message = "eof" }, "PutRow"))
    end)
  end)

  describe("call", function()
    it("returns fn's results (nils included) on the first success", function()
      local f = fake()
      local n = select("#", retry.call(function() return "a", nil, "c" end, opts(f)))
      assert.equal(3, n)
      local a, b, c = retry.call(function() return "a", nil, "c" end, opts(f))
      assert.same({ "a", nil, "c" }, { a, b, c })
      assert.equal(0, #f.sleeps)
      assert.same({ false }, { retry.call(function() return false end, opts(f)) })
    end)

    it("retries retryable errors, sleeping the schedule's delays", function()
      local f = fake()
      local res, attempt = retry.call(failing { "OTSTimeout", "OTSPartitionUnavailable" }, opts(f))
      assert.equal("ok", res)
      assert.equal(3, attempt)
      assert.same({ 0.1, 0.1 }, f.sleeps)
    end)

    it("uses the throttle base for throttling errors", function()
      local f = fake()
      assert.equal("ok", retry.call(failing { "OTSServerBusy", "OTSRowOperationConflict" }, opts(f)))
      assert.same({ 1, 0.1 }, f.sleeps)
    end)

    it("stops at once on an error that is not retryable", function()
      local f = fake()
      local v, msg, code, attempts, err = retry.call(failing {
        { code = "OTSConditionCheckFail", message = "Condition check failed." } }, opts(f))
      assert.is_nil(v)
      assert.equal("Condition check failed.", msg)
      assert.equal("OTSConditionCheckFail", code)
      assert.equal(1, attempts)
      assert.equal("OTSConditionCheckFail", err.code)
      assert.equal(0, #f.sleeps)
      -- a write that timed out is not retried blindly
      v, msg, code, attempts = retry.call(failing { "OTSTimeout" }, opts(f, { op = "PutRow" }))
      -- its outcome is unknown: the caller is told so, not "timeout"
      assert.same({ nil, "outcome unknown: the PutRow may have been applied (OTSTimeout: OTSTimeout)",
                    "OTSOutcomeUnknown", 1 }, { v, msg, code, attempts })
      -- unless marked idempotent; a condition alone is refused
      assert.equal("ok", retry.call(failing { "OTSTimeout" }, opts(f, { op = "PutRow", idempotent = true })))
      assert.has_error(function() retry.call(failing { "OTSTimeout" }, opts(f, { op = "PutRow", conditional = true })) end,
        "otskit.retry: call: option 'conditional' is not supported: a conditional write that was applied and "
        .. "is sent again fails its condition; pass idempotent = true only when a repeat is harmless")
      -- an ambiguous attempt followed by a definite failure: still unknown
      v, msg, code = retry.call(failing { "OTSTimeout", "OTSConditionCheckFail" },
        opts(f, { op = "UpdateRow", idempotent = true }))
      assert.is_nil(v); assert.equal("OTSOutcomeUnknown", code)
      assert.matches("OTSConditionCheckFail", msg, 1, true)
      -- reads never are
      v, msg, code = retry.call(failing { "OTSTimeout", "OTSParameterInvalid" }, opts(f, { op = "GetRow" }))
      assert.equal("OTSParameterInvalid", code)
    end)

    it("gives up after max_attempts with the last error's code and the attempt count", function()
      local f = fake()
      local errs = {}
      for i = 1, 10 do errs[i] = { code = "OTSServerUnavailable", message = "down " .. i } end
      local v, msg, code, attempts = retry.call(failing(errs), opts(f))
      assert.is_nil(v)
      assert.equal("OTSServerUnavailable", code)
      assert.equal(5, attempts)
      assert.matches("down 5 %(gave up after 5 attempts: max_attempts reached%)", msg)
      assert.equal(4, #f.sleeps)
    end)

    it("never sleeps past the deadline", function()
      local f = fake()
      local o = opts(f, { backoff = { strategy = "constant", base = 0.4, cap = 0.4, max_attempts = 0, deadline = 1 } })
      local v, msg, code, attempts = retry.call(function()
        f.t = f.t + 0.05 -- each attempt takes 50 ms
        return nil, "OTSTableNotReady"
      end, o)
      assert.is_nil(v)
      assert.equal("OTSTableNotReady", code)
      assert.matches("deadline reached", msg)
      assert.is_true(f.t <= 1 + 0.05 + 1e-9)
      assert.equal(#f.sleeps + 1, attempts)
    end)

    it("honours a server-suggested delay, clamped to [computed, computed + 5 s]", function()
      local cases = { { 2, 2 }, { 0.01, 0.1 }, { 100, 5.1 }, { 0 / 0, 0.1 } }
      for _, c in ipairs(cases) do
        local f = fake()
        retry.call(failing { { code = "OTSRowOperationConflict", retry_after = c[1] } }, opts(f))
        assert.is_true(math.abs(f.sleeps[1] - c[2]) < 1e-9, tostring(c[1]))
      end
      -- and still within the deadline
      local f = fake()
      retry.call(failing { { code = "OTSRowOperationConflict", retry_after = 3 } },
        opts(f, { backoff = { strategy = "constant", base = 0.1, cap = 0.1, deadline = 1 } }))
      assert.is_true(f.sleeps[1] <= 1)
    end)

    it("refuses locally when the budget is exhausted, and says so", function()
      local f = fake()
      local b = backoff.budget { capacity = 10, retry_cost = 5, timeout_cost = 10 }
      local down = function() return nil, "OTSServerUnavailable" end
      local v, msg, code, attempts = retry.call(down, opts(f, { budget = b }))
      assert.same({ nil, "retry budget exhausted", "RetryBudgetExhausted", 3 }, { v, msg, code, attempts })
      -- a later success refunds the cost of the retry that preceded it
      assert.equal(0, b:available())
      b = backoff.budget { capacity = 10, retry_cost = 5, timeout_cost = 10 }
      assert.equal("ok", retry.call(failing { "OTSServerUnavailable" }, opts(f, { budget = b })))
      assert.equal(10, b:available())
      -- a timeout costs 10: the second timeout is refused
      b = backoff.budget { capacity = 15, retry_cost = 5, timeout_cost = 10 }
      v, msg, code, attempts = retry.call(function() return nil, "OTSTimeout" end, opts(f, { budget = b }))
      assert.same({ nil, "RetryBudgetExhausted", 2 }, { v, code, attempts })
    end)

    it("shares retry.budget between calls by default", function()
      local f = fake()
      local saved = retry.budget
      retry.budget = backoff.budget { capacity = 5 }
      local o = opts(f)
      o.budget = nil
      assert.equal("ok", retry.call(failing { "OTSServerBusy" }, o))
      assert.equal(5, retry.budget:available())
      retry.budget:acquire("retry")
      local _, _, code = retry.call(failing { "OTSServerBusy" }, o)
      assert.equal("RetryBudgetExhausted", code)
      retry.budget = saved
    end)

    it("takes a custom classifier and a schedule object", function()
      local f = fake()
      local s = backoff.new { strategy = "constant", base = 0.2, max_attempts = 2 }
      s:next()
      local v, _, code, attempts = retry.call(failing { "E", "E", "E" }, {
        sleep = f.sleep, clock = f.clock, budget = false, schedule = s,
        classify = function(err) return err == "E" and "retry" or "fail" end })
      assert.same({ nil, "E", 2 }, { v, code, attempts }) -- reset first: one retry
      assert.same({ 0.2 }, f.sleeps)
    end)

    it("sleeps with ngx.sleep inside OpenResty's yieldable phases", function()
      local slept = {}
      _G.ngx = { sleep = function(d) slept[#slept + 1] = d end, get_phase = function() return "content" end }
      local ok, err = pcall(retry.call, failing { "OTSServerBusy" }, {
        budget = false, backoff = { strategy = "constant", base = 0.001, throttle_base = 0.002 } })
      _G.ngx = nil
      assert.is_true(ok, err)
      assert.same({ 0.002 }, slept)
    end)

    it("never hands ngx.sleep less than its 1 ms resolution", function()
      local slept = {}
      _G.ngx = { sleep = function(d) slept[#slept + 1] = d end, get_phase = function() return "content" end }
      local ok, err = pcall(retry.call, failing { "OTSServerBusy", "OTSServerBusy", "OTSServerBusy" }, {
        budget = false, backoff = { strategy = "full", base = 0.0004, cap = 0.0008,
                                     throttle_base = 0.0004, max_attempts = 4, seed = 3 } })
      _G.ngx = nil
      assert.is_true(ok, err)
      assert.equal(3, #slept)
      for _, d in ipairs(slept) do assert.equal(0.001, d) end
    end)

    it("refuses to block an nginx phase that cannot yield", function()
      _G.ngx = { sleep = function() end, get_phase = function() return "log" end }
      local ok, err = pcall(retry.call, failing { "OTSServerBusy" }, {
        budget = false, backoff = { strategy = "constant", base = 0.001 } })
      local ok2, v = pcall(retry.call, failing {}, { budget = false })
      _G.ngx = nil
      assert.is_false(ok)
      assert.matches("cannot sleep in the nginx 'log' phase", err)
      assert.is_true(ok2)          -- no failure, no sleep: fine
      assert.equal("ok", v)
    end)

    it("raises on programming mistakes", function()
      assert.has_error(function() retry.call("nope") end, "otskit.retry: call: fn must be a function (got string)")
      assert.has_error(function() retry.call(function() end, { sleeep = 1 }) end,
        "otskit.retry: call: unknown option 'sleeep'")
      assert.has_error(function() retry.call(function() end, { backoff = { base = -1 } }) end)
    end)

    it("property: never more than max_attempts, never past the deadline, right verdicts", function()
      local r = helper.rng(77)
      local codes = { "OTSServerBusy", "OTSTimeout", "OTSRowOperationConflict", "OTSConditionCheckFail",
                      "OTSInternalServerError", "timeout", "OTSParameterInvalid" }
      local ops = { "GetRow", "PutRow", "UpdateRow", "GetRange", "BatchWriteRow" }
      for _ = 1, helper.trials(300) do
        local f = fake()
        local max_attempts = r.int(1, 8)
        local deadline = r.int(0, 1) == 0 and 0 or r.float() * 3
        local op = ops[r.int(1, #ops)]
        local okat = r.int(1, 12)
        local calls, errs = 0, {}
        local v, _, code, attempts = retry.call(function(a)
          calls = calls + 1
          assert.equal(calls, a)
          f.t = f.t + r.float() * 0.2
          if a >= okat then return "done" end
          errs[a] = codes[r.int(1, #codes)]
          return nil, errs[a]
        end, { op = op, sleep = f.sleep, clock = f.clock, budget = false,
               backoff = { strategy = ({ "full", "equal", "decorrelated" })[r.int(1, 3)],
                           base = 0.01 + r.float() * 0.1, cap = 0.5, max_attempts = max_attempts,
                           deadline = deadline, seed = r.int(1, 1e6) } })
        assert.is_true(calls <= max_attempts)
        if v == "done" then
          for i = 1, calls - 1 do assert.is_not.equal("fail", retry.tablestore(errs[i], op)) end
        else
          assert.equal(calls, attempts)
          local amb = false
          for i = 1, calls do amb = amb or retry.ambiguous(errs[i]) end
          if amb and not retry.is_read(op) then
            assert.equal("OTSOutcomeUnknown", code)
          else
            assert.equal(errs[calls], code)
          end
        end
        local slept = 0
        for _, d in ipairs(f.sleeps) do slept = slept + d end
        if deadline > 0 then assert.is_true(slept <= deadline + 1e-9) end
      end
    end)
  end)

  describe("batch_write", function()
    it("retries only the failed rows whose errors are retryable", function()
      local f = fake()
      local rows = {}
      for i = 1, 10 do rows[i] = "row" .. i end
      local seen = {}
      local results, nfailed, attempts = retry.batch_write(function(batch, attempt)
        seen[attempt] = batch
        local res = {}
        for j, row in ipairs(batch) do
          if attempt == 1 and row == "row3" then res[j] = "OTSRowOperationConflict"
          elseif attempt == 1 and row == "row5" then res[j] = { code = "OTSServerBusy", message = "busy" }
          elseif row == "row7" then res[j] = { code = "OTSConditionCheckFail", message = "cond" }
          elseif row == "row9" then res[j] = "OTSTimeout"
          else res[j] = true end
        end
        return res
      end, rows, opts(f, { op = "BatchWriteRow" }))
      assert.same({ "row3", "row5" }, seen[2])
      assert.equal(2, attempts)
      assert.equal(2, nfailed)
      assert.same({ 1 }, f.sleeps) -- a throttled row: the throttle base
      for i = 1, 10 do
        if i == 7 then assert.equal("OTSConditionCheckFail", results[i].code)
        elseif i == 9 then
          assert.equal("OTSOutcomeUnknown", results[i].code); assert.equal("OTSTimeout", results[i].last)
        else assert.is_true(results[i]) end
      end
    end)

    it("retries a whole failed request when safe, and ambiguous rows when idempotent", function()
      local f = fake()
      local n = 0
      local results, nfailed = retry.batch_write(function(batch)
        n = n + 1
        if n == 1 then return nil, "OTSServerBusy" end
        if n == 2 then return { true, "OTSTimeout" } end
        return { true }
      end, { "a", "b" }, opts(f, { op = "BatchWriteRow", idempotent = true }))
      assert.same({ true, true }, results)
      assert.equal(0, nfailed)
      assert.equal(3, n)
      -- not idempotent: a failed request that may have been applied is not resent
      n = 0
      results, nfailed = retry.batch_write(function() n = n + 1; return nil, "OTSTimeout" end,
        { "a", "b" }, opts(f, { op = "BatchWriteRow" }))
      for i = 1, 2 do
        assert.equal("OTSOutcomeUnknown", results[i].code); assert.equal("OTSTimeout", results[i].last)
      end
      assert.equal(2, nfailed)
      assert.equal(1, n)
      -- a read batch: the plain error
      results = retry.batch_write(function() return nil, "OTSParameterInvalid" end, { "a" }, opts(f, { op = "BatchGetRow" }))
      assert.same({ "OTSParameterInvalid" }, results)
    end)

    it("marks rows refused by the budget", function()
      local f = fake()
      local results, nfailed = retry.batch_write(function(batch)
        local res = {}
        for j in ipairs(batch) do res[j] = j == 1 and true or "OTSPartitionUnavailable" end
        return res
      end, { "a", "b", "c" }, opts(f, { op = "BatchWriteRow", budget = backoff.budget { capacity = 0 } }))
      assert.is_true(results[1])
      assert.equal("RetryBudgetExhausted", results[2].code)
      assert.equal("retry budget exhausted", results[3].message)
      assert.equal("OTSPartitionUnavailable", results[3].last)
      assert.equal(2, nfailed)
    end)

    it("raises when send returns too few results", function()
      local f = fake()
      assert.has_error(function()
        retry.batch_write(function() return { true } end, { "a", "b" }, opts(f))
      end, "otskit.retry: batch_write: send returned no result for row 2 of 2")
    end)
  end)
end)
