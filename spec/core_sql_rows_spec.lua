-- otskit.core.sql.rows: max, skip and count against a Lua model, over
-- random tables and random arguments (the search index pages and counts
-- with one statement through count)
local core = require "otskit.core"
local sql, kv = core.sql, core.kv

describe("otskit.core.sql.rows", function()
  it("keeps at most max rows after skipping skip, and with count reports every row produced", function()
    local h = assert(kv.open(":memory:"))
    assert(sql.exec(h, "CREATE TABLE t (a INTEGER PRIMARY KEY, b)"))
    local seed = 7
    local function rnd(n) seed = (seed * 48271) % 2147483647; return seed % n end
    local have = 0
    for round = 1, 200 do
      local add = rnd(20)
      for _ = 1, add do
        have = have + 1
        assert(sql.rows(h, "INSERT INTO t VALUES (?1, ?2)", { have, rnd(5) }))
      end
      local b = rnd(5)
      local want = {}
      for a = 1, have do
        local r = sql.rows(h, "SELECT b FROM t WHERE a = ?1", { a })[1][1]
        if r >= b then want[#want + 1] = a end
      end
      local max, skip = rnd(12) - 1, rnd(8) -- max -1: no limit
      local count = rnd(2) == 1
      local rows, n, total = sql.rows(h, "SELECT a FROM t WHERE b >= ?1 ORDER BY a", { b }, 1, max, skip, count)
      assert(rows, n)
      local expect = {}
      for i = skip + 1, #want do
        if max >= 0 and #expect >= max then break end
        expect[#expect + 1] = want[i]
      end
      assert.are.equal(#expect, n, "round " .. round)
      for i, a in ipairs(expect) do assert.are.equal(a, rows[i][1]) end
      if count then assert.are.equal(#want, total, "round " .. round) else assert.is_nil(total) end
    end
    h:close()
  end)

  it("reports a failure while counting as any other", function()
    local h = assert(kv.open(":memory:"))
    local rows, msg, code = sql.rows(h, "SELECT nosuch FROM nowhere", nil, nil, 1, 0, true)
    assert.is_nil(rows)
    assert.matches("sqlite", msg)
    assert.are.equal("KVError", code)
    h:close()
  end)
end)
