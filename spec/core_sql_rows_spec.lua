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

  it("keys: decodes each row's key into one flat list, with max, skip, count and the mark row's raw key", function()
    local key = require "otskit.key"
    local h = assert(kv.open(":memory:"))
    assert(sql.exec(h, "CREATE TABLE t (a INTEGER PRIMARY KEY, k BLOB, b)"))
    local seed = 11
    local function rnd(n) seed = (seed * 48271) % 2147483647; return seed % n end
    local function str()
      local c = {}
      for i = 1, rnd(6) do c[i] = string.char(rnd(4) == 0 and 0 or 97 + rnd(26)) end -- zeros escape in a tuple
      return table.concat(c)
    end
    local BIG = { 0, 1, -1, 2^53, -2^53, 123456789 }
    local keys = {}
    for a = 1, 60 do
      local v = { a * 1000 + BIG[rnd(#BIG) + 1], str(), str() }
      keys[a] = v
      assert(sql.rows(h, "INSERT INTO t VALUES (?1, CAST(?2 AS BLOB), ?3)", { a, key.pack(v), rnd(3) }))
    end
    for round = 1, 100 do
      local b = rnd(3)
      local want = {}
      for a = 1, #keys do
        if sql.rows(h, "SELECT b FROM t WHERE a = ?1", { a })[1][1] >= b then want[#want + 1] = a end
      end
      local max, skip, mark = rnd(12) - 1, rnd(8), rnd(12)
      local count = rnd(2) == 1
      local vals, n, total, mk = sql.keys(h, "SELECT k, a FROM t WHERE b >= ?1 ORDER BY a", { b }, 1, max, skip,
        count, "iss", mark)
      assert(vals, n)
      local expect = {}
      for i = skip + 1, #want do
        if max >= 0 and #expect >= max then break end
        expect[#expect + 1] = want[i]
      end
      assert.are.equal(#expect, n, "round " .. round)
      assert.are.equal(3 * n, #vals)
      for i, a in ipairs(expect) do
        local k1 = keys[a][1] -- (LuaJIT: an integer beyond 2^53 comes as its decimal text)
        if not math.type and (k1 > 2^53 or k1 < -2^53) then k1 = ("%.0f"):format(k1) end
        assert.are.equal(k1, vals[(i - 1) * 3 + 1], "round " .. round)
        for j = 2, 3 do assert.are.equal(keys[a][j], vals[(i - 1) * 3 + j], "round " .. round) end
      end
      -- total: every row with count, else those stepped over or kept before the statement stopped
      assert.are.equal(count and #want or max == 0 and 0 or math.min(skip, #want) + n, total)
      if mark >= 1 and mark <= n then
        assert.are.equal(key.pack(keys[expect[mark]]), mk)
      else
        assert.is_nil(mk)
      end
    end
    h:close()
  end)

  it("keys: a key that is not a tuple of the given types fails with KVCorrupt", function()
    local key = require "otskit.key"
    local h = assert(kv.open(":memory:"))
    assert(sql.exec(h, "CREATE TABLE t (k)"))
    for _, c in ipairs({
      { key.pack({ 1 }), "s" }, { key.pack({ "x" }), "i" }, { key.pack({ 1, 2 }), "i" }, { key.pack({ 1 }), "ii" },
      { "\255", "i" }, { key.pack({ key.text("x") }), "s" }, { key.pack({ 1.5 }), "i" },
    }) do
      assert(sql.exec(h, "DELETE FROM t"))
      assert(sql.rows(h, "INSERT INTO t VALUES (CAST(?1 AS BLOB))", { c[1] }))
      local vals, msg, code = sql.keys(h, "SELECT k FROM t", nil, 0, -1, 0, false, c[2])
      assert.is_nil(vals)
      assert.matches("damaged", msg)
      assert.are.equal("KVCorrupt", code)
    end
    assert(sql.exec(h, "DELETE FROM t"))
    assert(sql.rows(h, "INSERT INTO t VALUES (?1)", { 7 })) -- not a BLOB
    assert.are.equal("KVCorrupt", select(3, sql.keys(h, "SELECT k FROM t", nil, 0, -1, 0, false, "i")))
    assert.has_error(function() sql.keys(h, "SELECT k FROM t", nil, 0, -1, 0, false, "x") end)
    local vals, n, total = sql.keys(h, "SELECT k FROM t WHERE 0", nil, 0, 5, 0, true, "i")
    assert.are.same({}, vals)
    assert.are.equal(0, n)
    assert.are.equal(0, total)
    h:close()
  end)
  it("keys with names: each row as a search returns it, its columns made when first read", function()
    local key = require "otskit.key"
    local values = require "otskit.values"
    local h = assert(kv.open(":memory:"))
    assert(sql.exec(h, "CREATE TABLE t (a INTEGER PRIMARY KEY, k BLOB)"))
    local seed = 23
    local function rnd(n) seed = (seed * 48271) % 2147483647; return seed % n end
    local TYPES = { i = "INTEGER", s = "STRING", b = "BINARY" }
    for round = 1, 60 do
      assert(sql.exec(h, "DELETE FROM t"))
      local types, names, cols = {}, {}, {}
      for j = 1, 1 + rnd(4) do
        types[j] = ({ "i", "s", "b" })[1 + rnd(3)]
        names[j] = "c" .. j
        cols[j] = TYPES[types[j]]
      end
      local want = {}
      for a = 1, rnd(12) do
        local vals = {}
        for j, ty in ipairs(types) do
          if ty == "i" then
            -- (beyond 2^53 too: LuaJIT gives those as decimal text, a typed cell)
            vals[j] = rnd(3) == 0 and key.int("9007199254740993") or rnd(1000) - 500
          else
            vals[j] = ("x"):rep(rnd(4)) .. string.char(rnd(256))
          end
        end
        assert(sql.rows(h, "INSERT INTO t VALUES (?1, CAST(?2 AS BLOB))", { a, key.pack(vals) }))
        local pk = {}
        for j, v in ipairs(vals) do
          if type(v) ~= "number" and type(v) ~= "string" then v = tostring(v) end -- (an int64 box)
          if values.LUA54 and type(v) == "string" and cols[j] == "INTEGER" then v = math.tointeger(tonumber(v)) end
          pk[j] = values.key_cell(names[j], cols[j], v)
        end
        want[a] = { primary_key = pk, columns = {} }
      end
      local rows, n = sql.keys(h, "SELECT k FROM t ORDER BY a", nil, 0, -1, 0, false, table.concat(types), nil, names)
      assert(rows, n)
      assert.are.equal(#want, n)
      for a, row in ipairs(rows) do
        assert.are.same(want[a].primary_key, row.primary_key, "round " .. round)
        assert.is_nil(rawget(row, "columns")) -- (not made yet)
        assert.is_nil(row.cells)
        local c = row.columns
        assert.are.same({}, c)
        assert.are.equal(c, row.columns) -- the same table each time
        assert.are.equal(c, rawget(row, "columns"))
        local seen = {}
        for k in pairs(row) do seen[#seen + 1] = k end
        table.sort(seen)
        assert.are.same({ "columns", "primary_key" }, seen)
        assert.are.same(want[a], row)
      end
    end
    h:close()
  end)
end)
