-- otskit.retry around the embedded store, each call written the way a
-- user writes it: retry.call(function() return db:op(req) end, opts), the
-- store failing with its own `nil, message, code` (injected faults). The
-- retryable failures must be retried, the others returned with their code,
-- and what ends up stored must be exactly what was asked.
local retry = require "otskit.retry"
local store = require "otskit.store"
local helper = require "helper"

local INF_MIN, INF_MAX = store.INF_MIN, store.INF_MAX

-- simulated time: retries sleep on a fake clock, nothing really waits
local function sim()
  local now = 0
  return {
    clock = function() return now end,
    sleep = function(d) now = now + d end,
  }
end

local function opts(t, op, extra)
  local o = { op = op, sleep = t.sleep, clock = t.clock, budget = false,
              backoff = { base = 0.001, cap = 0.01, throttle_base = 0.002,
                          max_attempts = 40, deadline = 0, seed = 11 } }
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

describe("retry.call around every store operation (nil, message, code)", function()
  for trial = 1, helper.trials(4) do
    it("50% injected faults: every retryable failure retried, results exact (seed " .. trial .. ")", function()
      local t = sim()
      local db = assert(store.open { clock = t.clock })
      local attempts = 0
      -- every call goes through here: the store's own results, untouched
      local function call(op, method, req, extra)
        return retry.call(function()
          attempts = attempts + 1
          return db[method](db, req)
        end, opts(t, op, extra))
      end

      -- DDL: the injector covers row operations only, so a wrapper fails
      -- the first attempt of each the way Tablestore does for a table
      -- still being created
      local flaky = {}
      local function ddl(op, method, req)
        return retry.call(function(attempt)
          attempts = attempts + 1
          if attempt == 1 then flaky[op] = true; return nil, "The table is not ready.", "OTSTableNotReady" end
          return db[method](db, req)
        end, opts(t, op))
      end
      assert(ddl("CreateTable", "create_table", { name = "t",
        primary_key = { { "k", "INTEGER" } }, splits = { 50, 100, 150 } }))
      assert.are.equal("t", assert(ddl("DescribeTable", "describe_table", { name = "t" })).table_meta.table)
      assert.are.same({ "t" }, assert(ddl("ListTable", "list_table", {})).table_names)

      db:inject { rate = 0.5, code = "OTSServerBusy", seed = trial * 7919 }
      attempts = 0
      local N = 200
      for i = 1, N do
        local res, msg, code = call("PutRow", "put_row",
          { table = "t", primary_key = { i }, columns = { v = i, n = 0 } }, { idempotent = true })
        assert(res, ("put %d: %s %s"):format(i, tostring(msg), tostring(code)))
      end
      -- each failed attempt was retried: attempts = puts + injected failures
      local st = db:fault_stats()
      assert.is_true(st.failed > N / 4, "the injector failed " .. st.failed .. " calls")
      assert.are.equal(N + st.failed, attempts)

      -- INCREMENT is not idempotent, but OTSServerBusy means "not applied":
      -- retried, and every increment lands exactly once
      for i = 1, N, 2 do
        for _ = 1, 3 do
          assert(call("UpdateRow", "update_row", { table = "t", primary_key = { i },
            update = { INCREMENT = { n = 1 } } }))
        end
      end
      for i = 1, N do
        local got = assert(call("GetRow", "get_row", { table = "t", primary_key = { i } }))
        assert.are.equal(i, got.row.columns.v)
        assert.are.equal(i % 2 == 1 and 3 or 0, got.row.columns.n)
      end

      -- deletes, then a paged range read retried page by page
      for i = 2, N, 2 do assert(call("DeleteRow", "delete_row", { table = "t", primary_key = { i } })) end
      local start, seen = { INF_MIN }, {}
      repeat
        local page = assert(call("GetRange", "get_range", { table = "t", start = start,
          stop = { INF_MAX }, limit = 7 }))
        for _, r in ipairs(page.rows) do seen[#seen + 1] = r.primary_key[1][2] end
        start = page.next_start_primary_key
      until start == nil
      assert.are.equal(N / 2, #seen)
      for j, k in ipairs(seen) do assert.are.equal(2 * j - 1, k) end

      local got = assert(call("BatchGetRow", "batch_get_row", { tables = { { table = "t",
        primary_keys = { { 1 }, { 2 }, { 3 } } } } }))
      local rows = got.tables[1].rows
      assert.are.equal(1, rows[1].row.columns.v)
      assert.is_nil(rows[2].row)
      assert.are.equal(3, rows[3].row.columns.v)

      db:inject(nil)
      assert(call("DeleteTable", "delete_table", { name = "t" }))
      assert.is_nil((db:describe_table { name = "t" }))
      assert.is_true(flaky.CreateTable and flaky.DescribeTable and flaky.ListTable)
      db:close()
    end)
  end

  it("batch_write_row through retry.batch_write: request and row faults, every row lands once", function()
    local t = sim()
    local db = assert(store.open { clock = t.clock })
    assert(db:create_table { name = "b", primary_key = { { "k", "INTEGER" } } })
    db:inject { rate = 0.3, row_rate = 0.3, code = "OTSServerBusy", seed = 5 }
    local rows = {}
    for i = 1, 150 do rows[i] = { type = "UPDATE", primary_key = { i }, update = { INCREMENT = { n = i } } } end
    local sends = 0
    local results, nfailed, attempts = retry.batch_write(function(batch)
      sends = sends + 1
      -- the store's own answer: nil, message, code for the whole request;
      -- per-row { ok, code, message } otherwise
      local res, msg, code = db:batch_write_row { tables = { { table = "b", rows = batch } } }
      if not res then return nil, msg, code end
      return res.tables[1].rows
    end, rows, opts(t, "BatchWriteRow"))
    assert.are.equal(0, nfailed)
    assert.is_true(attempts > 1 and sends == attempts)
    assert.is_true(db:fault_stats().rows_failed > 0)
    db:inject(nil)
    for i = 1, 150 do
      assert.is_true(results[i])
      assert.are.equal(i, db:get_row { table = "b", primary_key = { i } }.row.columns.n)
    end
    db:close()
  end)

  it("a send failing with nil, message, code: the code is classified and returned", function()
    local t = sim()
    local n = 0
    local results, nfailed = retry.batch_write(function()
      n = n + 1
      return nil, "Invalid primary key.", "OTSInvalidPK"
    end, { "a", "b" }, opts(t, "BatchWriteRow"))
    assert.are.equal(1, n)
    assert.are.equal(2, nfailed)
    assert.are.equal("OTSInvalidPK", results[1].code)
    assert.are.equal("Invalid primary key.", results[1].message)
    n = 0
    results, nfailed = retry.batch_write(function()
      n = n + 1
      if n < 3 then return nil, "Server is busy.", "OTSServerBusy" end
      return { true, true }
    end, { "a", "b" }, opts(t, "BatchWriteRow"))
    assert.are.equal(3, n)
    assert.are.equal(0, nfailed)
  end)
end)

describe("retry.call understands every failure convention", function()
  it("nil, message, code: not retryable -> one attempt, message and code returned", function()
    local t = sim()
    local db = assert(store.open {})
    assert(db:create_table { name = "t", primary_key = { { "k", "INTEGER" } } })
    assert(db:put_row { table = "t", primary_key = { 1 } })
    local n = 0
    local ok, msg, code, attempts, last = retry.call(function()
      n = n + 1
      return db:put_row { table = "t", primary_key = { 1 }, condition = "EXPECT_NOT_EXIST" }
    end, opts(t, "PutRow"))
    assert.is_nil(ok)
    assert.are.equal(1, n)
    assert.are.equal("OTSConditionCheckFail", code)
    assert.are.equal(select(2, db:put_row { table = "t", primary_key = { 1 }, condition = "EXPECT_NOT_EXIST" }), msg)
    assert.are.equal(1, attempts)
    assert.are.equal("OTSConditionCheckFail", last.code)
    db:close()
  end)

  it("an ambiguous code: a plain write is not retried, an idempotent one is", function()
    local t = sim()
    local db = assert(store.open {})
    assert(db:create_table { name = "t", primary_key = { { "k", "INTEGER" } } })
    db:inject { rate = 1, code = "OTSTimeout", applied = true, ops = { "update_row" } }
    local n = 0
    local ok, _, code, attempts = retry.call(function()
      n = n + 1
      return db:update_row { table = "t", primary_key = { 1 }, update = { INCREMENT = { c = 1 } } }
    end, opts(t, "UpdateRow"))
    assert.is_nil(ok)
    assert.are.equal("OTSOutcomeUnknown", code)
    assert.are.equal(1, attempts)
    db:inject(nil)
    -- applied once, not retried: no double increment
    assert.are.equal(1, db:get_row { table = "t", primary_key = { 1 } }.row.columns.c)
    db:inject { rate = 0.5, code = "OTSTimeout", seed = 3, ops = { "put_row" } }
    n = 0
    for i = 1, 20 do
      assert(retry.call(function() n = n + 1; return db:put_row { table = "t", primary_key = { i + 10 } } end,
        opts(t, "PutRow", { idempotent = true })))
    end
    assert.is_true(n > 20)
    db:close()
  end)

  it("gives up with the last code, the attempt count and extra values kept", function()
    local t = sim()
    local ok, msg, code, attempts, last = retry.call(function()
      return nil, "Server is busy.", "OTSServerBusy", "req-42", 503
    end, opts(t, "GetRow", { backoff = { base = 0.001, cap = 0.001, throttle_base = 0.001, max_attempts = 4, seed = 1 } }))
    assert.is_nil(ok)
    assert.are.equal("OTSServerBusy", code)
    assert.matches("^Server is busy%. %(gave up after 4 attempts: max_attempts reached%)$", msg)
    assert.are.equal(4, attempts)
    assert.are.equal("req-42", last.values[4])
    assert.are.equal(503, last.values[5])
  end)

  it("error tables and code strings, returned or raised", function()
    local t = sim()
    local n = 0
    local v, a = retry.call(function(attempt)
      n = n + 1
      if attempt == 1 then return nil, { code = "OTSPartitionUnavailable", message = "moving" } end
      if attempt == 2 then return nil, "OTSRowOperationConflict" end
      if attempt == 3 then error({ code = "OTSServerBusy", message = "busy" }) end
      return "done", attempt
    end, opts(t, "PutRow"))
    assert.are.equal("done", v)
    assert.are.equal(4, a)
    -- a raised error table that is not retryable comes back as nil, msg, code
    local ok, msg, code, attempts = retry.call(function()
      error({ code = "OTSParameterInvalid", message = "bad column" })
    end, opts(t, "PutRow"))
    assert.is_nil(ok)
    assert.are.same({ "bad column", "OTSParameterInvalid", 1 }, { msg, code, attempts })
    -- anything else raised is a programming mistake: propagated unchanged, once
    n = 0
    assert.has_error(function()
      retry.call(function() n = n + 1; error("my bug", 0) end, opts(t, "PutRow"))
    end, "my bug")
    assert.are.equal(1, n)
    -- success values pass through, including nil-first-free multiple returns
    assert.are.same({ 1, nil, 3, n = 3 }, table.pack and table.pack(retry.call(function() return 1, nil, 3 end, opts(t, "GetRow")))
      or { n = 3, retry.call(function() return 1, nil, 3 end, opts(t, "GetRow")) })
  end)

  it("the issue's case: 200 puts, 50% OTSServerBusy, none fails", function()
    local t = sim()
    local db = assert(store.open { clock = t.clock })
    assert(db:create_table { name = "t", primary_key = { { "k", "INTEGER" } } })
    db:inject { rate = 0.5, code = "OTSServerBusy", seed = 1 }
    local failed, calls = 0, 0
    for i = 1, 200 do
      local ok = retry.call(function()
        calls = calls + 1
        return db:put_row { table = "t", primary_key = { i }, columns = { v = i } }
      end, { op = "PutRow", idempotent = true, sleep = t.sleep, clock = t.clock, budget = false,
             backoff = { max_attempts = 30, seed = 2 } })
      if not ok then failed = failed + 1 end
    end
    assert.are.equal(0, failed)
    assert.is_true(calls > 300)
    db:inject(nil)
    local page = db:get_range { table = "t", start = { INF_MIN }, stop = { INF_MAX } }
    assert.are.equal(200, #page.rows)
    db:close()
  end)
end)
