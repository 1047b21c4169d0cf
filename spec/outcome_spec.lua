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
end)
