-- otskit.client: the plumbing (signing per attempt, errors, retries, batch
-- row retries, parallel, the pager) against the embedded store behind an
-- in-process fake server (spec/support/fake_wire.lua). The real codec
-- and otskit serve are exercised by spec/store_contract_spec.lua.
local client = require "otskit.client"
local store = require "otskit.store"
local merge = require "otskit.merge"
local backoff = require "otskit.backoff"
local fake = require "support.fake_wire"
local helper = require "helper"

local INF_MIN, INF_MAX = store.INF_MIN, store.INF_MAX

local function fresh(opts)
  opts = opts or {}
  local db = assert(store.open{})
  assert(db:create_table{ name = "t", primary_key = {{"id", "INTEGER"}} })
  local tr, log = fake.server(db, opts)
  -- no retry budget unless a test gives one (the process-wide default
  -- would be drained by the property trials before it)
  local budget = opts.budget
  if budget == nil then budget = false end
  local c = client.new{ endpoint = "http://127.0.0.1:1/ignored/path", instance = "inst",
    access_key_id = "AK", access_key_secret = "SK", transport = tr, wire = fake,
    retry = opts.retry or { strategy = "full", base = 0.001, cap = 0.002, throttle_base = 0.001, max_attempts = 4, deadline = 60 },
    budget = budget }
  return c, db, log
end

describe("otskit.client", function()
  it("refuses bad options", function()
    local base = { endpoint = "http://h", instance = "i", access_key_id = "a", access_key_secret = "s", wire = fake }
    local function with(k, v) local o = {}; for a, b in pairs(base) do o[a] = b end; o[k] = v; return o end
    assert.has_error(function() client.new(with("endpint", "x")) end, "otskit.client: new: unknown option 'endpint'")
    assert.has_error(function() client.new(with("endpoint", "ftp://h")) end)
    assert.has_error(function() client.new(with("instance", "")) end)
    assert.has_error(function() client.new(with("timeout", -1)) end)
    assert.has_error(function() client.new(with("retry", { max_atempts = 2 })) end)
    assert.has_error(function() client.new(with("transport", "carrier-pigeon")) end)
    assert.has_error(function() client.new(with("location", "/x")) end)      -- curl has no location
    assert.has_error(function() client.new(with("transport", "nginx")) end)  -- not in OpenResty
    local c = client.new(base)
    assert.has_error(function() c:get_row("t") end, "otskit.client: get_row expects a request table")
  end)

  it("maps every call to the store and back, signing each request", function()
    local c, db, log = fresh()
    assert(c:put_row{ table = "t", primary_key = {{"id", 1}}, columns = { a = "x", n = 5 } })
    local r = assert(c:get_row{ table = "t", primary_key = {{"id", 1}} })
    assert.same(db:get_row{ table = "t", primary_key = {{"id", 1}} }.row, r.row)
    assert.equal("rid-2", r.request_id)
    assert(c:update_row{ table = "t", primary_key = {1}, update = { INCREMENT = { n = 2 } } })
    assert.equal(7, assert(c:get_row{ table = "t", primary_key = {1} }).row.columns.n)
    assert.same({ "t" }, assert(c:list_table()).table_names)
    local page = assert(c:get_range{ table = "t", start = {INF_MIN}, stop = {INF_MAX} })
    assert.equal(1, #page.rows)
    assert(c:delete_row{ table = "t", primary_key = {1} })
    assert.is_nil(assert(c:get_row{ table = "t", primary_key = {1} }).row)
    for _, e in ipairs(log) do assert.truthy(e.date:match("^D%d+$")) end
    -- 8 calls, and one DescribeTable for the key names of {1}
    assert.equal(9, #log)
    local described = 0
    for _, e in ipairs(log) do if e.api == "DescribeTable" then described = described + 1 end end
    assert.equal(1, described)
  end)

  it("returns nil, message, code, request id and HTTP status on errors", function()
    local c = fresh()
    assert(c:put_row{ table = "t", primary_key = {1} })
    local ok, msg, code, rid, status = c:put_row{ table = "t", primary_key = {1}, condition = "EXPECT_NOT_EXIST" }
    assert.is_nil(ok)
    assert.equal("OTSConditionCheckFail", code)
    assert.is_string(msg)
    assert.equal("rid-3", rid)   -- 1: DescribeTable, 2: the first put
    assert.equal(403, status)
    ok, msg, code, rid, status = c:get_row{ table = "nope", primary_key = {1} }
    assert.equal("OTSObjectNotExist", code); assert.equal(404, status)
    -- refused by the codec: no request goes out
    ok, msg, code, rid = c:get_row{ table = "__unencodable", primary_key = {{"id", 1}} }
    assert.same({ "OTSParameterInvalid", nil }, { code, rid })
  end)

  it("retries throttling for writes, re-signing every attempt", function()
    -- a constant 2 ms between attempts (full jitter may sleep ~0, and two
    -- attempts then share the millisecond of x-ots-date)
    local c, _, log = fresh{ script = function(api, _, n)
      if api == "PutRow" and n <= 2 then return { status = 503, code = "OTSServerBusy" } end
    end, retry = { strategy = "constant", base = 0.002, cap = 0.002, throttle_base = 0.002,
                   max_attempts = 4, deadline = 60 } }
    assert(c:put_row{ table = "t", primary_key = {1}, columns = { a = 1 } })
    -- 1: DescribeTable (the positional key), 2: the put, throttled, 3: its retry
    assert.equal(3, #log)
    assert.same({ "DescribeTable", "PutRow", "PutRow" }, { log[1].api, log[2].api, log[3].api })
    local first, retried = tonumber(log[2].date:match("^D(%d+)$")), tonumber(log[3].date:match("^D(%d+)$"))
    assert.is_true(retried > first, ("the retry is dated %s, the attempt %s"):format(log[3].date, log[2].date))
  end)

  it("retries an ambiguous failure for reads and idempotent writes only", function()
    local timeouts = function(api)
      if api ~= "CreateTable" and api ~= "DescribeTable" then return { status = 503, code = "OTSTimeout" } end
    end
    local c, _, log = fresh{ script = timeouts }
    -- not idempotent: an increment, a row_existence or a column condition
    -- (applied once, sent again, it fails its condition), an
    -- AUTO_INCREMENT key: sent once, the outcome reported unknown
    local writes = {
      { "update_row", { table = "t", primary_key = {{"id", 1}}, update = { INCREMENT = { n = 1 } } } },
      { "update_row", { table = "t", primary_key = {{"id", 1}}, update = { { "INCREMENT", "n", 1 } } } },
      { "put_row", { table = "t", primary_key = {{"id", 1}}, condition = "EXPECT_NOT_EXIST" } },
      { "put_row", { table = "t", primary_key = {{"id", 1}}, condition = "EXPECT_EXIST" } },
      { "delete_row", { table = "t", primary_key = {{"id", 1}}, condition = "EXPECT_EXIST" } },
      { "put_row", { table = "t", primary_key = {{"id", 1}}, condition = { row_existence = "IGNORE",
          column_condition = { column = "v", comparator = "EQUAL", value = 1 } } } },
    }
    for i, w in ipairs(writes) do
      local ok, msg, code, _, status = c[w[1]](c, w[2])
      assert.is_nil(ok); assert.equal("OTSOutcomeUnknown", code); assert.equal(503, status)
      assert.matches("OTSTimeout", msg, 1, true)
      assert.equal(i, #log)
    end
    local n = #writes
    -- idempotent: a plain put, update and delete are retried
    c:put_row{ table = "t", primary_key = {{"id", 1}}, columns = { v = 1 } }
    assert.equal(n + 4, #log)
    local ok, _, code = c:update_row{ table = "t", primary_key = {{"id", 1}}, update = { PUT = { v = 2 } } }
    assert.is_nil(ok); assert.equal("OTSOutcomeUnknown", code) -- 4 attempts, each may have landed
    assert.equal(n + 8, #log)
    c:delete_row{ table = "t", primary_key = {{"id", 1}} }
    assert.equal(n + 12, #log)
    ok, _, code = c:get_row{ table = "t", primary_key = {{"id", 1}} }
    assert.equal(n + 16, #log)                          -- a read: retried
    assert.equal("OTSTimeout", code)                    -- and nothing was written
  end)

  it("retries a write that was never sent, not one that timed out unless idempotent", function()
    local c, db, log = fresh{ script = function(api, _, n)
      if api ~= "UpdateRow" then return nil end
      if n == 1 then return { failure = "connect" } end
      if n == 3 or n == 4 then return { apply_then = { failure = "timeout" } } end
    end }
    local inc = function(id) return { table = "t", primary_key = {id}, update = { INCREMENT = { n = 1 } } } end
    assert(c:update_row(inc(1)))
    assert.equal(2, #log)
    local ok, msg, code = c:update_row(inc(2))
    assert.is_nil(ok); assert.equal("OTSOutcomeUnknown", code)
    assert.matches("RequestTimeout", msg, 1, true)
    assert.equal(3, #log)
    assert.equal(1, db:get_row{ table = "t", primary_key = {2} }.row.columns.n)   -- it landed, once
    -- an idempotent write that timed out after landing: retried, same row
    assert(c:update_row{ table = "t", primary_key = {3}, update = { PUT = { n = 7 } } })
    assert.equal(5, #log)
    assert.equal(7, db:get_row{ table = "t", primary_key = {3} }.row.columns.n)
  end)

  it("gives HTTP errors without a Tablestore body an HTTP<status> code", function()
    local c, _, log = fresh{ script = function() return { status = 502 } end }
    local ok, _, code, _, status = c:get_row{ table = "t", primary_key = {1} }
    assert.is_nil(ok); assert.equal("HTTP502", code); assert.equal(502, status)
    assert.equal(4, #log)
  end)

  it("checks the response MD5 and signature", function()
    local c, _, log = fresh{ script = function(api, _, n)
      if api == "GetRow" and n == 1 then return { corrupt = true } end
      if api == "PutRow" then return { badsig = true } end
      if api == "DeleteRow" then return { garbage = true } end
    end }
    assert(c:get_row{ table = "t", primary_key = {1} })      -- corrupted read: retried
    assert.equal(2, #log)
    local ok, _, code = c:put_row{ table = "t", primary_key = {1} }
    assert.is_nil(ok); assert.equal("OTSResponseSignatureMismatch", code)
    -- an answer that does not decode: a delete may have been applied
    local msg
    ok, msg, code = c:delete_row{ table = "t", primary_key = {1} }
    assert.is_nil(ok); assert.equal("OTSOutcomeUnknown", code)
    assert.matches("OTSResponseInvalid", msg, 1, true)
  end)

  it("verifies by default: MD5 and signature required, the date within the skew window", function()
    local year_ago = function() return ("D%d"):format(math.floor(os.time() - 365 * 86400) * 1000) end
    local act = {}
    local c, _, log = fresh{ script = function(api) if api == "GetRow" then return act.now end end,
      retry = { strategy = "full", base = 0.001, cap = 0.001, max_attempts = 2 } }
    local function get() return c:get_row{ table = "t", primary_key = { { "id", 1 } } } end
    for _, case in ipairs {
      { { strip = { "x-ots-contentmd5" } }, "OTSResponseSignatureMismatch", "x%-ots%-contentmd5" },
      { { strip = { "authorization" } }, "OTSResponseSignatureMismatch", "not signed" },
      { { strip = { "x-ots-date" } }, "OTSResponseSignatureMismatch", "does not verify" },
      { { date = "" }, "OTSResponseInvalid", "no x%-ots%-date" },
      { { date = year_ago() }, "OTSResponseInvalid", "more than 900 s" },
      { { date = "yesterday" }, "OTSResponseInvalid", "does not parse" },
    } do
      act.now = case[1]
      local ok, msg, code = get()
      assert.is_nil(ok, case[2]); assert.equal(case[2], code); assert.matches(case[3], msg)
    end
    act.now = nil
    assert(get())
    -- unsigned = true: answers without the headers pass, present ones are checked
    local tr = fake.server(assert(store.open{}), { script = function() return act.now end })
    local u = client.new{ endpoint = "http://127.0.0.1:1", instance = "inst", access_key_id = "AK",
      access_key_secret = "SK", transport = tr, wire = fake, budget = false, unsigned = true,
      retry = { max_attempts = 1 } }
    assert(u:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
    act.now = { strip = { "x-ots-contentmd5", "authorization", "x-ots-date" } }
    assert(u:get_row{ table = "t", primary_key = { { "id", 1 } } })
    act.now = { badsig = true }
    local ok, _, code = u:get_row{ table = "t", primary_key = { { "id", 1 } } }
    assert.is_nil(ok); assert.equal("OTSResponseSignatureMismatch", code)
    -- skew = false: the date is not checked; bad options refused
    act.now = { date = year_ago() }
    local ns = client.new{ endpoint = "http://127.0.0.1:1", instance = "inst", access_key_id = "AK",
      access_key_secret = "SK", transport = tr, wire = fake, budget = false, skew = false }
    assert(ns:get_row{ table = "t", primary_key = { { "id", 1 } } })
    assert.has_error(function() client.new{ endpoint = "http://h", instance = "i", access_key_id = "a",
      access_key_secret = "s", skew = -1 } end)
    assert.has_error(function() client.new{ endpoint = "http://h", instance = "i", access_key_id = "a",
      access_key_secret = "s", unsigned = "yes" } end)
    assert.is_true(#log > 0)
  end)

  it("refuses rows for another key or outside the range asked (property)", function()
    local r = helper.rng(24)
    local forge
    local c, db = fresh{ script = function(api) if forge and forge.api == api then return forge.act end end,
      retry = { strategy = "full", base = 0.001, cap = 0.001, max_attempts = 2 } }
    for i = 1, 40 do assert(db:put_row{ table = "t", primary_key = { i }, columns = { v = i } }) end
    for _ = 1, helper.trials(60) do
      local id = r.int(1, 40)
      local other = r.int(1, 40)
      -- GetRow: the answer's row is another key's
      forge = { api = "GetRow", act = { rows = function(res)
        res.row = db:get_row{ table = "t", primary_key = { other } }.row; return res end } }
      local ok, msg, code = c:get_row{ table = "t", primary_key = { { "id", id } } }
      if other == id then assert.truthy(ok) else
        assert.is_nil(ok); assert.equal("OTSResponseInvalid", code); assert.matches("not the key or range asked", msg)
      end
      -- GetRange [lo, hi): a row from outside, or a next key outside
      local lo = r.int(1, 35)
      local hi = lo + r.int(1, 5)
      local outside = r.int(0, 1) == 0 and r.int(1, lo) - 1 or r.int(hi, 41)
      local which = r.int(1, 2)
      forge = { api = "GetRange", act = { rows = function(res)
        if which == 1 then
          res.rows[#res.rows + 1] = { primary_key = { { "id", outside } }, columns = { v = outside } }
        else
          res.next_start_primary_key = { { "id", outside } }
        end
        return res end } }
      ok, _, code = c:get_range{ table = "t", start = { { "id", lo } }, stop = { { "id", hi } } }
      if which == 2 and outside == hi then assert.truthy(ok)      -- a next key at stop ends the range
      else assert.is_nil(ok); assert.equal("OTSResponseInvalid", code) end
      forge = nil
      local page = assert(c:get_range{ table = "t", start = { { "id", lo } }, stop = { { "id", hi } } })
      assert.equal(hi - lo, #page.rows)
    end
  end)

  it("stops at the retry budget", function()
    local c = fresh{ budget = backoff.budget{ capacity = 0 },
      script = function(api) if api == "GetRow" then return { status = 503, code = "OTSServerBusy" } end end }
    local ok, msg, code = c:get_row{ table = "t", primary_key = {1} }
    assert.is_nil(ok); assert.equal("RetryBudgetExhausted", code); assert.truthy(msg:find("budget"))
  end)

  it("resends only the batch rows that failed with a retryable code (property)", function()
    local rng = helper.rng(11)
    for trial = 1, helper.trials(20) do
      local c, db, log = fresh{ retry = { base = 0.001, cap = 0.001, throttle_base = 0.001, max_attempts = 10, deadline = 0 } }
      db:inject{ row_rate = 0.3, code = "OTSServerBusy", seed = trial, ops = { "batch_write_row" } }
      local n = rng.int(1, 60)
      local rows = {}
      for i = 1, n do rows[i] = { type = "PUT", primary_key = { i }, columns = { v = i } } end
      local res = assert(c:batch_write_row{ tables = {{ table = "t", rows = rows }} })
      local row_failures = db:fault_stats().rows_failed
      db:inject(nil)
      local sent = 0
      for _, e in ipairs(log) do
        if e.api == "BatchWriteRow" then sent = sent + #e.req.tables[1].rows end
      end
      local failed = 0
      for i = 1, n do
        local r = res.tables[1].rows[i]
        if r.ok then
          assert.equal(i, db:get_row{ table = "t", primary_key = { i } }.row.columns.v)
        else
          failed = failed + 1
          assert.equal("OTSServerBusy", r.code)
        end
      end
      assert.equal(failed, res.failed)
      -- every resent row had failed: sends = n + rows that failed at least once
      assert.is_true(sent >= n)
      assert.equal(n + row_failures - failed, sent)
    end
  end)

  it("retries failed batch_get_row rows and keeps the row shapes", function()
    local c, db = fresh{ retry = { base = 0.001, cap = 0.001, throttle_base = 0.001, max_attempts = 20, deadline = 0 } }
    for i = 1, 30 do db:put_row{ table = "t", primary_key = { i }, columns = { v = i } } end
    db:inject{ row_rate = 0.4, code = "OTSServerBusy", seed = 3, ops = { "batch_get_row" } }
    local keys = {}
    for i = 1, 35 do keys[i] = { i } end
    local res = assert(c:batch_get_row{ tables = {{ table = "t", primary_keys = keys }} })
    db:inject(nil)
    for i = 1, 35 do
      local r = res.tables[1].rows[i]
      assert.is_true(r.ok)
      if i <= 30 then assert.equal(i, r.row.columns.v) else assert.is_nil(r.row) end
    end
  end)

  it("reports a batch failing as a whole like any call", function()
    local c = fresh{ script = function(api) if api == "BatchWriteRow" then return { status = 400, code = "OTSParameterInvalid", message = "bad" } end end }
    local ok, msg, code, rid, status = c:batch_write_row{ tables = {{ table = "t", rows = {{ type = "PUT", primary_key = {1} }} }} }
    assert.is_nil(ok); assert.equal("bad", msg); assert.equal("OTSParameterInvalid", code)
    assert.is_string(rid); assert.equal(400, status)
  end)

  it("runs parallel jobs' requests together", function()
    local c = fresh()
    for i = 1, 8 do assert(c:put_row{ table = "t", primary_key = { i }, columns = { v = i } }) end
    local events, got = {}, {}
    local jobs = {}
    for i = 1, 8 do
      jobs[i] = function()
        events[#events + 1] = "start"
        got[i] = assert(c:get_row{ table = "t", primary_key = { i } }).row.columns.v
        events[#events + 1] = "end"
      end
    end
    c:parallel(jobs)
    for i = 1, 8 do assert.equal(i, got[i]) end
    for i = 1, 8 do assert.equal("start", events[i]) end   -- all sent before any answer
    for i = 9, 16 do assert.equal("end", events[i]) end
    assert.has_error(function() c:parallel{ function() error("boom") end } end, "boom")
  end)

  it("lets merge.read fan out through client:parallel", function()
    local c = fresh()
    local db2 = assert(store.open{})
    assert(c:create_table{ name = "b", primary_key = {{"b", "INTEGER"}, {"ts", "INTEGER"}} })
    local want = {}
    for ts = 1, 200 do
      assert(c:put_row{ table = "b", primary_key = { ts % 8, ts } })
      want[#want + 1] = ts
    end
    local rounds = 0
    local function fetch(b, after, n)
      local page = assert(c:get_range{ table = "b", start = after or { b, INF_MIN }, stop = { b, INF_MAX }, limit = n })
      return page.rows, page.next_start_primary_key
    end
    local out, cursor = {}, nil
    repeat
      local rows
      rows, cursor = merge.read{ sources = {0, 1, 2, 3, 4, 5, 6, 7}, fetch = function(src, after, want_n)
          if after and after.resume then after = { src, after.key[1] + 1 } end
          return fetch(src, after, want_n)
        end, key = { 2 }, limit = 37, cursor = cursor,
        parallel = function(jobs) rounds = rounds + 1; return c:parallel(jobs) end }
      assert(rows)
      for _, r in ipairs(rows) do out[#out + 1] = r.primary_key[2][2] end
    until cursor == nil
    assert.same(want, out)
    assert.is_true(rounds > 0)
    db2:close()
  end)
end)

describe("otskit.client pager", function()
  it("follows next_start_primary_key through empty pages", function()
    local pages = {
      { rows = { "a" }, next_start_primary_key = { 2 } },
      { rows = {}, next_start_primary_key = { 5 } },
      { rows = {}, next_start_primary_key = { 7 } },
      { rows = { "b", "c" }, next_start_primary_key = nil },
    }
    local starts = {}
    local db = { get_range = function(_, req) starts[#starts + 1] = req.start; return table.remove(pages, 1) end }
    local got = {}
    for row in client.Client.range(db, { table = "t", start = { 0 } }) do got[#got + 1] = row end
    assert.same({ "a", "b", "c" }, got)
    assert.same({ { 0 }, { 2 }, { 5 }, { 7 } }, starts)
  end)

  it("stops with NoProgress when the next key does not advance, after a few early-ended pages", function()
    local r = helper.rng(7)
    for _ = 1, helper.trials(40) do
      -- k pages that end where they began, then the rest of the range
      local k = r.int(0, 40)
      local calls = 0
      local db = { get_range = function(_, req)
        calls = calls + 1
        if calls <= k then return { rows = {}, next_start_primary_key = req.start } end
        return { rows = { "x" } }
      end }
      local got, err = {}, nil
      local it = client.Client.range(db, { table = "t", start = { { "id", 1 } } })
      while true do
        local row, msg, code = it()
        if row == nil then err = code; break end
        got[#got + 1] = row
      end
      if k < 32 then
        assert.same({ "x" }, got); assert.is_nil(err); assert.equal(k + 1, calls)
      else
        assert.same({}, got); assert.equal("NoProgress", err); assert.equal(32, calls)
      end
    end
  end)

  it("bounds the whole read by the client's deadline, not only each page", function()
    local db = assert(store.open{})
    assert(db:create_table{ name = "t", primary_key = {{"id", "INTEGER"}} })
    for i = 1, 50 do db:put_row{ table = "t", primary_key = { i } } end
    local tr = fake.server(db, { script = function() backoff.sleep(0.02) end })
    local c = client.new{ endpoint = "http://127.0.0.1:1", instance = "inst", access_key_id = "AK",
      access_key_secret = "SK", transport = tr, wire = fake, budget = false, retry = { deadline = 0.2 } }
    local t0 = backoff.now()
    local it = c:range{ table = "t", start = {{"id", INF_MIN}}, stop = {{"id", INF_MAX}}, limit = 1 }
    local m, last = 0, nil
    while true do
      local row, _, c3 = it()
      if row == nil then last = c3; break end
      m = m + 1
    end
    assert.equal("RequestTimeout", last)
    assert.is_true(m < 50 and m >= 2, "read " .. m .. " rows")
    assert.is_true(backoff.now() - t0 < 2)
  end)

  it("stops with nil, message, code on a failed page", function()
    local db = { get_range = function() return nil, "busy", "OTSServerBusy" end }
    local it = client.Client.range(db, { table = "t" })
    local row, msg, code = it()
    assert.same({ nil, "busy", "OTSServerBusy" }, { row, msg, code })
    assert.same({ nil, "busy", "OTSServerBusy" }, { it() })
  end)

  it("reads the embedded store too", function()
    local db = assert(store.open{})
    assert(db:create_table{ name = "t", primary_key = {{"id", "INTEGER"}} })
    for i = 1, 25 do db:put_row{ table = "t", primary_key = { i } } end
    local n = 0
    for row in client.Client.range(db, { table = "t", start = {INF_MIN}, stop = {INF_MAX}, limit = 4 }) do
      n = n + 1
      assert.equal(n, row.primary_key[1][2])
    end
    assert.equal(25, n)
  end)
end)
