--- otskit.retry -- Tablestore-aware retry: what is safe to retry
-- (retry.tablestore), how long to wait (otskit.backoff schedules) and how
-- much retrying the process may do (a retry budget).
local backoff = require "otskit.backoff"
local errors = require "otskit.errors"

local retry = {}

--- The defaults retry.call uses (see docs/retry.md "Defaults", measured with
-- bench/retry_storm_bench.lua): backoff.defaults for the schedule and a
-- per-process token bucket (AWS SDK standard mode: 500 tokens, a retry
-- costs 5, a retry after a timeout 10, a success refunds).
retry.defaults = backoff.defaults
retry.budget = backoff.budget()

-- How much later than the computed delay a server's suggestion may take us.
retry.max_extra_delay = 5

---------------------------------------------------------------------------
-- Classification: what the official SDKs' default retry policies retry

-- The classes of codes and transport messages are otskit.errors'.

--- The code of a write whose outcome is unknown: an attempt was sent and
-- no trustworthy answer came back (a timeout, a dropped connection, a 5xx
-- after the request was sent), so it may have been applied, and the write
-- could not safely be repeated (otskit.errors: OTSOutcomeUnknown).
retry.OUTCOME_UNKNOWN = "OTSOutcomeUnknown"

-- Operations that change nothing: retried after ambiguous failures.
local READ_OPS = {}
for _, op in ipairs { "GetRow", "BatchGetRow", "GetRange", "ListTable",
    "DescribeTable", "Search", "ComputeSplits", "ParallelScan", "SQLQuery",
    "ListSearchIndex", "DescribeSearchIndex", "ListStream", "DescribeStream",
    "GetShardIterator", "GetStreamRecord", "ComputeSplitPointsBySize" } do
  READ_OPS[op:lower()] = true
end

local function norm_op(op)
  if type(op) ~= "string" then return nil end
  return (op:gsub("_", ""):lower())
end

-- code, message, http status of an error value (string or table)
local function parts(err)
  if type(err) == "table" then
    return err.code, err.message, tonumber(err.http_status or err.status)
  end
  if type(err) == "string" then return err, err, nil end
  return nil, tostring(err), nil
end

--- retry.is_read(op) -> true when op ("GetRow", "get_range", ...) names
-- an operation that changes nothing (nil and unknown names: false).
function retry.is_read(op)
  return READ_OPS[norm_op(op) or ""] == true
end

--- retry.ambiguous(err) -> true when err says a sent request got no
-- trustworthy answer, so a write may have been applied: the codes and
-- transport messages of class "idempotent" in otskit.errors (OTSTimeout,
-- OTSInternalServerError, OTSServerUnavailable, RequestTimeout,
-- NetworkError, OTSResponseCorrupted, timeout, closed, ...),
-- OTSOutcomeUnknown itself, an HTTP 500/502/503/504 without a code
-- otskit knows, or a table with network = true (and not not_sent).
-- Throttling codes (the request was refused) and failures before sending
-- are not ambiguous.
function retry.ambiguous(err)
  if type(err) == "table" and err.not_sent then return false end
  local code, msg, status = parts(err)
  if code == retry.OUTCOME_UNKNOWN then return true end
  local class = code ~= nil and errors.class(code, msg) or nil
  if class == "idempotent" then return true end
  if class == nil and status and (status == 500 or status == 502 or status == 503 or status == 504) then
    return true
  end
  if class == "throttle" or class == "retry" then return false end
  return type(err) == "table" and err.network == true
end

local function no_conditional(opts)
  if opts and opts.conditional ~= nil then
    error("otskit.retry: opts.conditional is not supported: a conditional write that was applied and "
      .. "is sent again fails its condition (or applies twice); pass idempotent = true only when "
      .. "repeating the write is harmless", 3)
  end
end

--- retry.tablestore(err, op [, opts]) -> "retry" | "throttle" | "fail".
-- err: a code string ("OTSServerBusy", or a transport message such as
-- "timeout") or a table { code, message, http_status }. op: the operation
-- ("GetRow", "get_row", ...); nil or an unknown name counts as a write.
-- By the code's class in otskit.errors: "throttle" gives "throttle"
-- (retry with the longer throttle base); "retry" (not applied) gives
-- "retry" for any op; "idempotent" (outcome unknown: timeouts, internal
-- errors, a lost connection) gives "retry" for reads and for writes only
-- when opts.idempotent is set (the caller promises that applying the
-- write twice gives the same row and the same answer; a condition does
-- not: opts.conditional is refused, it raises); "never"
-- (OTSConditionCheckFail, OTSParameterInvalid, ...) gives "fail". An
-- error without a code otskit knows goes by its HTTP status as the SDKs
-- do: 429 throttles, 500/502/503/504 are "idempotent", others fail; a
-- table with `network = true` (the answer was lost or unreadable) counts
-- as "idempotent" whatever its code.
function retry.tablestore(err, op, opts)
  no_conditional(opts)
  local code, msg, status = parts(err)
  local class = code ~= nil and errors.class(code, msg) or nil
  if class == "throttle" then return "throttle" end
  if class == "retry" then return "retry" end
  local ambiguous = class == "idempotent"
  if class == nil and status then
    if status == 429 then return "throttle" end
    ambiguous = status == 500 or status == 502 or status == 503 or status == 504
  end
  if type(err) == "table" and err.network then ambiguous = true end
  if not ambiguous then return "fail" end
  if READ_OPS[norm_op(op) or ""] then return "retry" end
  if opts and opts.idempotent then return "retry" end
  return "fail"
end

local function is_timeout(err)
  local code = parts(err)
  return (code ~= nil and errors.is_timeout(code)) or (type(err) == "table" and err.timeout) or false
end

---------------------------------------------------------------------------
-- Sleeping and time

-- nginx phases in which ngx.sleep may yield
local YIELDABLE = require("otskit.openresty").YIELDABLE

-- Inside nginx: ngx.sleep where it may yield; a blocking sleep only before
-- serving (init, init_worker); elsewhere (header_filter, log, ...) a sleep
-- would stall every request of the worker, so a needed one raises.
local function default_sleep()
  local ngx = rawget(_G, "ngx")
  if type(ngx) ~= "table" or not ngx.get_phase then return backoff.sleep end
  local phase = ngx.get_phase()
  -- ngx.sleep has millisecond resolution and logs a warning for 0: a
  -- jittered delay under 1 ms waits 1 ms
  if YIELDABLE[phase] then
    return function(d) return ngx.sleep(d < 0.001 and 0.001 or d) end
  end
  if phase == "init" or phase == "init_worker" then return backoff.sleep end
  return function()
    error("otskit.retry: cannot sleep in the nginx '" .. tostring(phase)
          .. "' phase; pass opts.sleep or retry from a yieldable phase", 0)
  end
end

local CALL_KEYS = {
  op = true, idempotent = true, classify = true,
  backoff = true, schedule = true, budget = true, sleep = true, clock = true,
}

local function fail(fmt, ...) error("otskit.retry: " .. fmt:format(...), 3) end

-- The per-call machinery shared by retry.call and retry.batch_write.
local function setup(opts, what)
  if opts == nil then opts = {} end
  if type(opts) ~= "table" then fail("%s: opts must be a table", what) end
  if opts.conditional ~= nil then
    fail("%s: option 'conditional' is not supported: a conditional write that was applied and is "
      .. "sent again fails its condition; pass idempotent = true only when a repeat is harmless", what)
  end
  for k in pairs(opts) do
    if not CALL_KEYS[k] then fail("%s: unknown option '%s'", what, tostring(k)) end
  end
  local m = {}
  if opts.schedule ~= nil then
    m.s = opts.schedule
    if (type(m.s) ~= "table" and type(m.s) ~= "userdata") or type(m.s.reset) ~= "function"
        or type(m.s.next) ~= "function" then
      fail("%s: schedule must be a backoff schedule (backoff.new)", what)
    end
    m.s:reset()
  else
    m.s = backoff.new(opts.backoff)
  end
  m.budget = opts.budget
  if m.budget == nil then m.budget = retry.budget end
  if m.budget ~= false and ((type(m.budget) ~= "table" and type(m.budget) ~= "userdata")
      or type(m.budget.acquire) ~= "function" or type(m.budget.success) ~= "function") then
    fail("%s: budget must be false or a budget (backoff.budget)", what)
  end
  if opts.classify ~= nil and type(opts.classify) ~= "function" then fail("%s: classify must be a function", what) end
  m.sleep = opts.sleep or default_sleep()
  m.clock = opts.clock or backoff.now
  if type(m.sleep) ~= "function" or type(m.clock) ~= "function" then
    fail("%s: sleep and clock must be functions", what)
  end
  -- ratio budgets read the caller's clock when one is given
  m.now = opts.clock and m.clock or nil
  m.classify = opts.classify or function(err) return retry.tablestore(err, opts.op, opts) end
  m.t0 = m.clock()
  -- an explicit op that changes something: a failure after an ambiguous
  -- attempt is reported as OTSOutcomeUnknown
  m.write = opts.op ~= nil and not retry.is_read(opts.op)
  m.op = opts.op
  return m
end

-- After a retryable failure: the delay before the next attempt, or nil
-- and a reason ("attempts", "deadline", "budget").
local function plan(m, err, verdict)
  local elapsed = m.clock() - m.t0
  local delay, why = m.s:next(elapsed, verdict == "throttle")
  if not delay then return nil, why end
  local ra = type(err) == "table" and tonumber(err.retry_after)
  if ra and ra == ra then
    -- honour the server, within [computed, computed + max_extra_delay]
    delay = math.max(delay, math.min(ra, delay + retry.max_extra_delay))
    local dl = m.s.deadline
    if dl > 0 and delay > dl - elapsed then delay = math.max(0, dl - elapsed) end
  end
  local kind = is_timeout(err) and "timeout" or "retry"
  if m.budget and not m.budget:acquire(kind, m.now and m.now()) then return nil, "budget" end
  m.kind = kind
  return delay
end

local function describe(err)
  local code, msg = parts(err)
  return tostring(msg or code), code
end

-- The final failure of a write one of whose attempts was ambiguous.
local function unknown(m, msg, code)
  if code == retry.OUTCOME_UNKNOWN then return msg, code end
  return ("outcome unknown: the %s may have been applied (%s: %s)"):format(tostring(m.op), tostring(code), msg),
    retry.OUTCOME_UNKNOWN
end

local pack = table.pack or function(...) return { n = select("#", ...), ... } end
local unpack = table.unpack or unpack

--- How a callee failed, as one error value. fn / send fail in any of
-- otskit's conventions:
--   nil, message, code [, ...]  (the store, the client, the patterns)
--                               -> { code = code, message = message, values = {n = , ...} }
--                                  (values: everything fn returned, so
--                                  extra values such as a request id or
--                                  an HTTP status are kept)
--   nil, err                    err a code string ("OTSServerBusy", or a
--                               transport message such as "timeout") or a
--                               table { code, message, http_status, retry_after }
--   error(err) with err a table carrying a string `code` (raised)
-- Anything else raised (a string: a programming mistake) is re-raised.
local function failure_of(r)
  if r[3] ~= nil and type(r[2]) ~= "table" then
    return { code = r[3], message = r[2], values = r }
  end
  return r[2]
end

-- fn(...) under pcall: the results packed, or for a raised error table
-- with a code, { nil, err }; other raised errors propagate unchanged.
local function attempt_call(fn, ...)
  local r = pack(pcall(fn, ...))
  if r[1] then
    local n = r.n
    for i = 2, n do r[i - 1] = r[i] end
    r[n], r.n = nil, n - 1
    return r
  end
  local e = r[2]
  if type(e) == "table" and type(e.code) == "string" then return { n = 2, nil, e } end
  error(e, 0)
end

local function failed(r) return not r[1] and (r[2] ~= nil or r[3] ~= nil) end

--- retry.call(fn, opts) -> fn's results, or nil, message, code, attempts,
-- last_error. fn(attempt) returns its results on success, or fails in
-- any of otskit's conventions: `nil, message, code` (code is what is
-- classified and returned; last_error is then { code, message, values =
-- everything fn returned, with n }), `nil, err` (err a code string or a
-- table { code, message, http_status, retry_after }), or by raising a
-- table with a string `code` (treated as a returned error). Any other
-- raised error (a string: a programming mistake) is not retried and
-- propagates unchanged. Retries while opts.classify(err, attempt)
-- (default retry.tablestore(err, opts.op, opts)) says "retry" or
-- "throttle", until the schedule stops (message names "max_attempts" or
-- "deadline", code is the last error's) or the budget refuses (message
-- "retry budget exhausted", code "RetryBudgetExhausted"). When opts.op
-- names a write (anything but a read, see retry.is_read) and an attempt
-- failed ambiguously (retry.ambiguous), a final failure has code
-- "OTSOutcomeUnknown" instead (the message names the write and the last
-- error; last_error is that error): the write may have been applied.
-- opts: op, idempotent (repeating the write is harmless: ambiguous
-- failures are retried), classify, backoff (options for backoff.new,
-- over retry.defaults) or schedule (a schedule object, reset first; do
-- not share one between concurrent calls), budget (default retry.budget;
-- false: none), sleep (default ngx.sleep where it may yield, else a
-- nanosleep), clock (seconds). err.retry_after (seconds) stretches the
-- delay up to computed + 5 s.
function retry.call(fn, opts)
  if type(fn) ~= "function" then fail("call: fn must be a function (got %s)", type(fn)) end
  local m = setup(opts, "call")
  if m.budget then m.budget:acquire("request", m.now and m.now()) end
  m.kind = "request"
  local attempt = 0
  local maybe = false -- a write attempt got no trustworthy answer
  while true do
    attempt = attempt + 1
    local r = attempt_call(fn, attempt)
    if not failed(r) then
      if m.budget then m.budget:success(m.kind, m.now and m.now()) end
      return unpack(r, 1, r.n)
    end
    local err = failure_of(r)
    local msg, code = describe(err)
    if m.write and not maybe and retry.ambiguous(err) then maybe = true end
    local verdict = m.classify(err, attempt)
    if verdict ~= "retry" and verdict ~= "throttle" then
      if maybe then msg, code = unknown(m, msg, code) end
      return nil, msg, code, attempt, err
    end
    local delay, why = plan(m, err, verdict)
    if not delay then
      if why == "budget" then
        local _, bm, bc = errors.fail("RetryBudgetExhausted")
        if maybe then bm, bc = unknown(m, bm, bc) end
        return nil, bm, bc, attempt, err
      end
      msg = ("%s (gave up after %d attempts: %s)"):format(msg, attempt,
        why == "deadline" and "deadline reached" or "max_attempts reached")
      if maybe then msg, code = unknown(m, msg, code) end
      return nil, msg, code, attempt, err
    end
    if delay > 0 then m.sleep(delay) end
  end
end

local function row_ok(r) return r == true or (type(r) == "table" and r.ok == true) end

--- retry.batch_write(send, rows, opts) -> results, nfailed, attempts.
-- send(batch, attempt) writes a batch (a sub-list of rows, in order) and
-- returns one result per row, in the same order: true (or { ok = true })
-- for a written row, or the row's error (a code string or { code,
-- message }, e.g. the store's { ok = false, code, message }); or it fails
-- as a whole as fn of retry.call does (nil, message, code; nil, err; a
-- raised error table with a code). Only failed rows
-- whose errors retry.tablestore(err, opts.op or "BatchWriteRow", opts)
-- calls retryable are sent again, under one schedule and budget (opts as
-- for retry.call). results[i] is true or the final error of rows[i]; a
-- row left unwritten because the budget refused holds { code =
-- "RetryBudgetExhausted", message = "retry budget exhausted", last = err }.
-- Unless op is a read, a row that failed in the end after an ambiguous
-- attempt (retry.ambiguous: its write may have been applied) holds
-- { code = "OTSOutcomeUnknown", message, last = its final error }.
function retry.batch_write(send, rows, opts)
  if type(send) ~= "function" then fail("batch_write: send must be a function") end
  if type(rows) ~= "table" then fail("batch_write: rows must be a list") end
  opts = opts or {}
  local op = opts.op or "BatchWriteRow"
  local m = setup(opts, "batch_write")
  local classify = opts.classify or function(err) return retry.tablestore(err, op, opts) end
  local results, pending = {}, {}
  local write, maybe = not retry.is_read(op), {} -- rows an ambiguous attempt may have written
  -- the length is a claim (__len may say 2^40): walk the rows that exist,
  -- so work and memory follow the real list
  local nrows = #rows
  if type(nrows) ~= "number" or nrows ~= math.floor(nrows) or nrows < 0 then
    fail("batch_write: #rows must be a non-negative integer")
  end
  for i = 1, nrows do
    if rows[i] == nil then fail("batch_write: rows[%d] is nil but #rows is %.0f: rows must be a list", i, nrows) end
    pending[i] = i
  end
  if m.budget and #pending > 0 then m.budget:acquire("request", m.now and m.now()) end
  m.kind = "request"
  local attempt = 0
  while #pending > 0 do
    attempt = attempt + 1
    local batch = {}
    for j, i in ipairs(pending) do batch[j] = rows[i] end
    local r = attempt_call(send, batch, attempt)
    local res, err = r[1], nil
    if res == nil or res == false then res, err = nil, failure_of(r) end
    local again, verdict, last = {}, nil, nil
    if res == nil then
      local v = classify(err, attempt)
      local amb = write and retry.ambiguous(err)
      for _, i in ipairs(pending) do
        results[i] = err
        if amb then maybe[i] = true end
      end
      if v == "retry" or v == "throttle" then again, verdict, last = pending, v, err end
    else
      if type(res) ~= "table" then fail("batch_write: send must return a list of row results") end
      for j, i in ipairs(pending) do
        local r = res[j]
        if r == nil then fail("batch_write: send returned no result for row %d of %d", j, #batch) end
        if row_ok(r) then
          results[i] = true
        else
          results[i] = r
          if write and retry.ambiguous(r) then maybe[i] = true end
          local v = classify(r, attempt)
          if v == "retry" or v == "throttle" then
            again[#again + 1] = i
            if verdict ~= "throttle" then verdict, last = v, r end
          end
        end
      end
    end
    if #again == 0 then
      if m.budget then m.budget:success(m.kind, m.now and m.now()) end
      break
    end
    local delay, why = plan(m, last, verdict)
    if not delay then
      if why == "budget" then
        for _, i in ipairs(again) do
          results[i] = { code = "RetryBudgetExhausted", message = errors.message("RetryBudgetExhausted"), last = results[i] }
        end
      end
      break
    end
    if delay > 0 then m.sleep(delay) end
    pending = again
  end
  local nfailed = 0
  for i = 1, nrows do
    if results[i] ~= true then
      nfailed = nfailed + 1
      if maybe[i] then
        local r = results[i]
        local c, msg = parts(r)
        if r == nil or c ~= retry.OUTCOME_UNKNOWN then
          results[i] = { code = retry.OUTCOME_UNKNOWN, last = r,
            message = ("outcome unknown: the row may have been written (%s: %s)"):format(tostring(c), tostring(msg)) }
        end
      end
    end
  end
  return results, nfailed, attempt
end

return retry
