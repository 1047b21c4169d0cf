-- Ambiguous outcomes through a real `otskit serve`: answers slower than
-- the client's timeout (the server applies the write after the client gave
-- up), so every timed-out write may have landed. The client must never
-- apply a write twice: a write that is not idempotent ends with
-- OTSOutcomeUnknown instead of being resent, an idempotent one is resent,
-- and patterns.counter stays exact (its operation token tells a landed
-- attempt from a lost one). Final values are checked against the
-- acknowledged operations once the server drained.
local serve = require "support.serve"
local counter = require "otskit.patterns.counter"
local chunked = require "otskit.patterns.chunked"
local timeseries = require "otskit.patterns.timeseries"
local hashprefix = require "otskit.patterns.hashprefix"
local hotcold = require "otskit.patterns.hotcold"
local spliced = require "otskit.patterns.spliced"
local colsplit = require "otskit.patterns.colsplit"
local import = require "otskit.patterns.import"
local backoff = require "otskit.backoff"

local TIMEOUT = 0.25        -- the client's per-attempt timeout (s)
local LATENCY = "0-500"     -- ms added before the server applies: about half time out
local DRAIN = 0.8           -- s: every delayed request has been applied by then

local admin = serve.admin

describe("ambiguous outcomes through otskit serve (latency above the client timeout)", function()
  local s, c, direct
  setup(function()
    s = assert(serve.start{})
    -- the faulty path: short timeout, several attempts, no budget to drain
    c = assert(serve.client(s, { timeout = TIMEOUT, budget = false,
      retry = { base = 0.01, cap = 0.05, max_attempts = 3, deadline = 30 } }))
    -- for checking: a patient client
    direct = assert(serve.client(s, { timeout = 5, budget = false }))
    assert(direct:create_table{ name = "c", primary_key = { { "id", "STRING" } } })
    assert(direct:create_table{ name = "k", primary_key = { { "id", "INTEGER" } } })
  end)
  teardown(function()
    if c then c:close() end
    if direct then direct:close() end
    if s then s.stop() end
  end)
  before_each(function() admin(s, "DELETE") end)
  after_each(function() admin(s, "DELETE") end)

  local function drained()
    backoff.sleep(DRAIN)
    admin(s, "DELETE")
  end

  it("never resends an increment: acknowledged <= final <= acknowledged + unknown", function()
    assert(direct:put_row{ table = "c", primary_key = { { "id", "inc" } }, columns = { n = 0 } })
    admin(s, "PUT", "latency=" .. LATENCY .. ",apis=UpdateRow")
    local acked, unknown = 0, 0
    for i = 1, 16 do
      -- alternately with EXPECT_EXIST: a condition does not make it safe
      local ok, msg, code = c:update_row{ table = "c", primary_key = { { "id", "inc" } },
        update = { INCREMENT = { n = 1 } }, condition = i % 2 == 0 and "EXPECT_EXIST" or nil }
      if ok then
        acked = acked + 1
      else
        assert.equal("OTSOutcomeUnknown", code, msg)
        assert.matches("may have been applied", msg, 1, true)
        unknown = unknown + 1
      end
    end
    drained()
    local n = assert(direct:get_row{ table = "c", primary_key = { { "id", "inc" } } }).row.columns.n
    assert.is_true(n >= acked and n <= acked + unknown,
      ("final %d, acknowledged %d, unknown %d"):format(n, acked, unknown))
    assert.is_true(unknown > 0, "no attempt timed out: the latency did not exceed the timeout")
  end)

  it("answers OTSOutcomeUnknown, not a condition error, for an EXPECT_NOT_EXIST put that landed", function()
    admin(s, "PUT", "latency=400,apis=PutRow")
    local ok, msg, code = c:put_row{ table = "k", primary_key = { { "id", 1 } }, columns = { v = "a" },
      condition = "EXPECT_NOT_EXIST" }
    assert.is_nil(ok)
    assert.equal("OTSOutcomeUnknown", code, msg)
    drained()
    local row = assert(direct:get_row{ table = "k", primary_key = { { "id", 1 } } }).row
    assert.equal("a", row.columns.v)      -- it had landed, and was not sent twice
  end)

  it("resends an idempotent put until it is acknowledged: the rows equal what was written", function()
    admin(s, "PUT", "latency=" .. LATENCY .. ",apis=PutRow")
    local acked = {}
    for i = 10, 29 do
      local ok, _, code = c:put_row{ table = "k", primary_key = { { "id", i } }, columns = { v = i * 3 } }
      if ok then acked[#acked + 1] = i else assert.equal("OTSOutcomeUnknown", code) end
    end
    drained()
    assert.is_true(#acked > 0)
    for _, i in ipairs(acked) do
      assert.equal(i * 3, assert(direct:get_row{ table = "k", primary_key = { { "id", i } } }).row.columns.v)
    end
  end)

  it("patterns.counter over the client: final value = acknowledged increments, values unique", function()
    local ctr = counter.new{ store = c, table = "counters",
      retry = { backoff = { base = 0.005, cap = 0.05, max_attempts = 200, deadline = 60 } } }
    assert(ctr:create())
    admin(s, "PUT", "latency=" .. LATENCY .. ",apis=UpdateRow")
    local acked, seen = 0, {}
    for _ = 1, 12 do
      local v, msg, code = ctr:incr("hits")
      if v then
        assert.is_nil(seen[v], "value " .. tostring(v) .. " returned twice")
        seen[v] = true
        acked = acked + 1
      else
        -- only an honest "unknown" may come back, never a wrong value
        assert.equal("OTSOutcomeUnknown", code, msg)
      end
    end
    drained()
    local faults = assert(require("cjson.safe").decode(admin(s, "GET")))
    assert.is_table(faults.counters)
    assert.equal(acked, ctr:get("hits"))
    assert.equal(12, acked)
  end)

  -- the patterns' own retries: short, so a run stays quick
  -- a read's result: false (no row) passes, an error (nil, msg) raises
  local function found(r, msg)
    if r == nil then error(tostring(msg), 2) end
    return r
  end

  local QUICK = { backoff = { base = 0.01, cap = 0.05, max_attempts = 6, deadline = 30 }, budget = false }

  it("patterns.chunked puts and deletes one key: the value is the last acknowledged one's", function()
    -- every commit (a conditional PutRow of the manifest, or of a delete's
    -- tombstone) may time out and land late, after later operations
    local w = chunked.new{ store = c, table = "docs", chunk_size = 64, retry = QUICK }
    local r = chunked.new{ store = direct, table = "docs", chunk_size = 64 }
    assert(r:create())
    -- rounds of put, delete, put: a late delete would remove the put after it
    local unknown, acked_total = 0, 0
    for round = 1, 8 do
      -- (DeleteRow too: a delete made of a plain DeleteRow, resent, would
      -- land late and remove a newer value; drained() cleared the faults)
      admin(s, "PUT", "latency=" .. LATENCY .. ",apis=PutRow+DeleteRow")
      local ops, last = {}, 0 -- ops[i] = { value (false: deleted), outcome }
      for i = 1, 3 do
        local value = i ~= 2 and (("r%d.%d."):format(round, i)):rep(round * 9 + i) or false
        local ok, msg, code
        if value then ok, msg, code = w:put("doc", value) else ok, msg, code = w:delete("doc") end
        if not ok then
          -- an honest answer only: unknown, or a conflict with a late landing of ours
          assert.is_true(code == "OTSOutcomeUnknown" or code == "Conflict", tostring(code) .. ": " .. tostring(msg))
          unknown = unknown + 1
        end
        ops[i] = { value = value, outcome = ok and "acked" or (code == "OTSOutcomeUnknown" and "unknown") or "failed" }
        if ok then last, acked_total = i, acked_total + 1 end
      end
      drained()
      local final = r:get("doc")
      assert.is_not_nil(final)
      -- allowed: the last acknowledged op's value, or an unknown one after it
      -- (before any acknowledged op of a round: the state the round began with)
      local allowed = { last > 0 and ops[last].value or nil }
      if last == 0 then allowed = nil end
      if allowed then
        for i = last + 1, #ops do if ops[i].outcome == "unknown" then allowed[#allowed + 1] = ops[i].value end end
        local hit = false
        for _, v in pairs(allowed) do if v == final then hit = true end end
        if last > 0 and ops[last].value == false and final == false then hit = true end
        assert.is_true(hit, ("round %d: final %s is not the value of the last acknowledged op (%d) or an unknown one after it")
          :format(round, final and #final .. " bytes" or "deleted", last))
      end
    end
    assert.is_true(acked_total > 0, "nothing was acknowledged")
    assert.is_true(w.stats.retries + unknown > 0, "no commit timed out: the latency did not exceed the timeout")
  end)

  it("blind-put patterns (timeseries, hashprefix, hotcold, spliced, colsplit, import): acknowledged rows are exact", function()
    -- their writes are PutRow / BatchWriteRow PUT (and colsplit's update, a
    -- PUT under EXPECT_EXIST): applying one twice gives the same row and
    -- answer, so they are resent; every write goes to its own row here
    local ts = timeseries.new{ store = c, table = "pts", buckets = 4, retry = QUICK }
    local hp = hashprefix.new{ store = c, table = "hp", retry = QUICK }
    local hc = hotcold.new{ store = c, prefix = "hc", first = "2026-01", last = "2026-02", retry = QUICK }
    local sp = spliced.new{ store = c, table = "sp", splice = { { "a", "int", width = 4 } },
      rest = { { "b", "INTEGER" } }, retry = QUICK }
    local cs = colsplit.new{ store = c, table = "cs", primary_key = { { "id", "INTEGER" } }, hot = { "h" }, retry = QUICK }
    for _, p in ipairs { ts, hp, hc, sp, cs } do
      local q = setmetatable({ acc = { store = function(_, m, req) return direct[m](direct, req) end } }, { __index = p })
      assert(p.create(q))
    end
    assert(direct:create_table{ name = "imp", primary_key = { { "id", "INTEGER" } } })
    for i = 1, 6 do
      assert(direct:put_row{ table = "cs_cold", primary_key = { { "id", 100 + i } }, columns = { v = 0 } })
      assert(direct:put_row{ table = "cs_hot", primary_key = { { "id", 100 + i } }, columns = { h = 0 } })
    end
    admin(s, "PUT", "latency=" .. LATENCY .. ",apis=PutRow+UpdateRow+BatchWriteRow")
    local resent0 = c.stats.attempts - c.stats.calls
    local T0 = 1767225600 -- 2026-01-01
    local writes = {
      { "timeseries:put", function(i) return ts:put(T0 + i, "p" .. i, { v = i }) end },
      { "timeseries:put_many", function(i) return ts:put_many{ { T0 + 100 + i, "m" .. i, { v = i } } } end },
      { "hashprefix:put", function(i) return hp:put("id" .. i, { v = i }) end },
      { "hashprefix:put_many", function(i) return hp:put_many{ { "many" .. i, { v = i } } } end },
      { "hotcold:put", function(i) return hc:put("k", T0 + i, "", { v = i }) end },
      { "spliced:put", function(i) return sp:put({ i }, { i }, { v = i }) end },
      { "colsplit:put", function(i) return cs:put({ i }, { h = i, v = i }) end },
      { "colsplit:update", function(i) return cs:update({ 100 + i }, { h = i, v = i }) end },
      { "import.run", function(i)
          return import.run{ store = c, table = "imp", rows = { { { i }, { v = i } } }, retry = QUICK, workers = 1 }
        end },
    }
    local reads = {
      ["timeseries:put"] = function(i)
        local rows = found(ts:read{ from = T0 + i, to = T0 + i + 1, limit = 10 })
        return rows[1] and rows[1].columns.v
      end,
      ["timeseries:put_many"] = function(i)
        local rows = found(ts:read{ from = T0 + 100 + i, to = T0 + 101 + i, limit = 10 })
        return rows[1] and rows[1].columns.v
      end,
      ["hashprefix:put"] = function(i) local r = found(hashprefix.new{ store = direct, table = "hp" }:get("id" .. i)); return r and r.v end,
      ["hashprefix:put_many"] = function(i) local r = found(hashprefix.new{ store = direct, table = "hp" }:get("many" .. i)); return r and r.v end,
      ["hotcold:put"] = function(i)
        local rows = found(hotcold.new{ store = direct, prefix = "hc", first = "2026-01", last = "2026-02" }
          :read{ key = "k", from = T0 + i, to = T0 + i + 1 })
        return rows[1] and rows[1].columns.v
      end,
      ["spliced:put"] = function(i)
        local r = found(spliced.new{ store = direct, table = "sp", splice = { { "a", "int", width = 4 } },
          rest = { { "b", "INTEGER" } } }:get({ i }, { i }))
        return r and r.columns and r.columns.v or (r and r.v)
      end,
      ["colsplit:put"] = function(i)
        local r = found(colsplit.new{ store = direct, table = "cs", primary_key = { { "id", "INTEGER" } }, hot = { "h" } }:get({ i }))
        return r and r.h == i and r.v
      end,
      ["colsplit:update"] = function(i)
        local r = found(colsplit.new{ store = direct, table = "cs", primary_key = { { "id", "INTEGER" } }, hot = { "h" } }:get({ 100 + i }))
        return r and r.h == i and r.v
      end,
      ["import.run"] = function(i)
        local r = found(direct:get_row{ table = "imp", primary_key = { { "id", i } } }).row
        return r and r.columns.v
      end,
    }
    local outcome, amb = {}, 0
    for _, w in ipairs(writes) do
      outcome[w[1]] = {}
      for i = 1, 5 do
        local ok, msg, code = w[2](i)
        if type(ok) == "table" and ok.failed then -- import's report
          ok, msg, code = ok.failed == 0 or nil, ok.message, ok.code
        end
        if not ok then assert.equal("OTSOutcomeUnknown", code, w[1] .. ": " .. tostring(msg)) end
        outcome[w[1]][i] = ok and "acked" or "unknown"
      end
    end
    drained()
    local acked = 0
    for _, w in ipairs(writes) do
      for i = 1, 5 do
        local v = reads[w[1]](i)
        if outcome[w[1]][i] == "acked" then
          acked = acked + 1
          assert.equal(i, v, w[1] .. " " .. i .. " was acknowledged")
        else
          amb = amb + 1
          assert.is_true(v == nil or v == false or v == i, w[1] .. " " .. i .. ": " .. tostring(v))
        end
      end
    end
    assert.is_true(acked > 0)
    local st = ts.stats.retries + hp.stats.retries + hc.stats.retries + sp.stats.retries + cs.stats.retries
    assert.is_true(st + amb + (c.stats.attempts - c.stats.calls - resent0) > 0, "no write was resent: the latency did not exceed the timeout")
  end)
end)
