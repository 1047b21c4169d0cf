-- spec/sql_property_spec.lua -- random tables and random SELECTs (WHERE on
-- key ranges and attributes, ORDER BY, LIMIT, GROUP BY with COUNT, SUM,
-- MIN, MAX, AVG) through db:sql, against a Lua model over the same rows.
local store = require "otskit.store"
local helper = require "helper"

local function lt(a, b) -- SQL order of non-NULL values of one type
  if type(a) == "boolean" then return (a and 1 or 0) < (b and 1 or 0) end
  return a < b
end

-- a random table: keys (p1 INTEGER, p2 STRING), attributes a (INTEGER),
-- b (DOUBLE), c (STRING), d (BOOLEAN), each sometimes missing
local function make_rows(r, n)
  local rows, seen = {}, {}
  while #rows < n do
    local p1, p2 = r.int(-5, 30), r.bytes(r.int(0, 3), "abc")
    local k = p1 .. "/" .. p2
    if not seen[k] then
      seen[k] = true
      local row = { p1 = p1, p2 = p2 }
      if r.int(1, 6) > 1 then row.a = r.int(-50, 50) end
      if r.int(1, 6) > 1 then row.b = r.int(-40, 40) / 4 end
      if r.int(1, 6) > 1 then row.c = r.bytes(1, "xyz") end
      if r.int(1, 6) > 1 then row.d = r.int(0, 1) == 1 end
      rows[#rows + 1] = row
    end
  end
  return rows
end

-- conditions: { sql text, model predicate }
local function rand_cond(r)
  local k = r.int(1, 9)
  local v = r.int(-6, 31)
  if k == 1 then return ("p1 >= %d"):format(v), function(x) return x.p1 >= v end end
  if k == 2 then return ("p1 < %d"):format(v), function(x) return x.p1 < v end end
  if k == 3 then return ("p1 = %d"):format(v), function(x) return x.p1 == v end end
  if k == 4 then
    local w = v + r.int(0, 8)
    return ("p1 BETWEEN %d AND %d"):format(v, w), function(x) return x.p1 >= v and x.p1 <= w end
  end
  if k == 5 then
    local s = r.bytes(r.int(0, 2), "abc")
    return ("p2 > '%s'"):format(s), function(x) return x.p2 > s end
  end
  if k == 6 then
    local a = r.int(-50, 50)
    return ("a > %d"):format(a), function(x) return x.a ~= nil and x.a > a end
  end
  if k == 7 then
    local c = r.bytes(1, "xyz")
    return ("c = '%s'"):format(c), function(x) return x.c == c end
  end
  if k == 8 then return "d = TRUE", function(x) return x.d == true end end
  local b = r.int(-40, 40) / 4
  return ("(b <= %s OR a IS NULL)"):format(("%.2f"):format(b)), function(x)
    return (x.b ~= nil and x.b <= b) or x.a == nil
  end
end

local function where(r)
  local n = r.int(0, 3)
  local sqls, preds = {}, {}
  for i = 1, n do sqls[i], preds[i] = rand_cond(r) end
  local text = n > 0 and (" WHERE " .. table.concat(sqls, " AND ")) or ""
  return text, function(x)
    for _, p in ipairs(preds) do if not p(x) then return false end end
    return true
  end
end

local ORDERS = { { "p1", "p2" }, { "a", "p1", "p2" }, { "c", "p1", "p2" }, { "b", "p1", "p2" } }

-- NULLs first ascending, last descending (SQLite's and MySQL's order)
local function compare_rows(keys, desc)
  return function(x, y)
    for i, k in ipairs(keys) do
      local a, b = x[k], y[k]
      local d = i == 1 and desc
      if a ~= b then
        if a == nil then return not d end
        if b == nil then return d end
        if d then return lt(b, a) end
        return lt(a, b)
      end
    end
    return false
  end
end

local function near(a, b)
  if a == nil or b == nil then return a == b end
  if type(a) == "number" and type(b) == "number" then return math.abs(a - b) <= 1e-9 * math.max(1, math.abs(a)) end
  return a == b
end

local function check_equal(got, want, ncol, what)
  assert(#got.rows == #want, what .. ": " .. #got.rows .. " rows, the model " .. #want)
  for i, w in ipairs(want) do
    for j = 1, ncol do
      if not near(got.rows[i][j], w[j]) then
        error(("%s: row %d column %d: %s, the model %s"):format(what, i, j, tostring(got.rows[i][j]), tostring(w[j])))
      end
    end
  end
end

describe("SQL SELECT against a Lua model", function()
  it("agrees on random tables and statements", function()
    local r = helper.rng(2828)
    local tables = helper.trials(12)
    local queries = helper.quick() and 15 or 40
    local ranged = 0
    for t = 1, tables do
      local db = assert(store.open{})
      local name = "t" .. t
      assert(db:create_table{ name = name, primary_key = { { "p1", "INTEGER" }, { "p2", "STRING" } } })
      local rows = make_rows(r, r.int(0, 120))
      for _, x in ipairs(rows) do
        local cols = {}
        for _, c in ipairs({ "a", "b", "c", "d" }) do
          if x[c] ~= nil then
            local v = x[c]
            if c == "b" then v = store.double(v) end
            cols[#cols + 1] = { c, v }
          end
        end
        assert(db:put_row{ table = name, primary_key = { { "p1", x.p1 }, { "p2", x.p2 } }, columns = cols })
      end
      assert(db:sql(("CREATE TABLE %s (p1 BIGINT, p2 VARCHAR(1024), a BIGINT, b DOUBLE, c MEDIUMTEXT, d BOOL, "
        .. "PRIMARY KEY (p1, p2))"):format(name)))
      for _ = 1, queries do
        local wtext, pred = where(r)
        local kept = {}
        for _, x in ipairs(rows) do if pred(x) then kept[#kept + 1] = x end end
        local q, want, ncol
        if r.int(1, 3) < 3 then
          local keys = ORDERS[r.int(1, #ORDERS)]
          local desc = r.int(0, 1) == 1
          local limit = r.int(0, 1) == 1 and r.int(0, 20) or nil
          local ord = {}
          for i, k in ipairs(keys) do ord[i] = k .. ((i == 1 and desc) and " DESC" or "") end
          q = ("SELECT p1, p2, a, b, c, d FROM %s%s ORDER BY %s%s"):format(name, wtext, table.concat(ord, ", "),
            limit and (" LIMIT " .. limit) or "")
          table.sort(kept, compare_rows(keys, desc))
          want = {}
          for i, x in ipairs(kept) do
            if limit and i > limit then break end
            want[i] = { x.p1, x.p2, x.a, x.b, x.c, x.d }
          end
          ncol = 6
        else
          q = ("SELECT c, COUNT(*), COUNT(a), SUM(a), MIN(a), MAX(a), AVG(b) FROM %s%s GROUP BY c ORDER BY c")
            :format(name, wtext)
          local groups, order = {}, {}
          for _, x in ipairs(kept) do
            local g = x.c == nil and "\0nil" or x.c
            if not groups[g] then
              groups[g] = { c = x.c, n = 0, na = 0, nb = 0, sb = 0 }
              order[#order + 1] = groups[g]
            end
            local G = groups[g]
            G.n = G.n + 1
            if x.a ~= nil then
              G.na = G.na + 1
              G.sum = (G.sum or 0) + x.a
              G.min = G.min and math.min(G.min, x.a) or x.a
              G.max = G.max and math.max(G.max, x.a) or x.a
            end
            if x.b ~= nil then G.nb, G.sb = G.nb + 1, G.sb + x.b end
          end
          table.sort(order, compare_rows({ "c" }, false))
          want = {}
          for i, G in ipairs(order) do
            want[i] = { G.c, G.n, G.na, G.sum, G.min, G.max, G.nb > 0 and G.sb / G.nb or nil }
          end
          ncol = 7
        end
        local got, msg, code = db:sql(q, { max_scan_rows = 1000 })
        assert(got, q .. ": " .. tostring(msg) .. " " .. tostring(code))
        assert.are.equal("SELECT", got.type)
        assert.are.equal(ncol, #got.columns)
        check_equal(got, want, ncol, q)
        assert(got.scanned <= #rows, q)
        if wtext:find("p1 [>=<B]") then ranged = ranged + got.range_reads end
      end
      db:close()
    end
    assert(ranged > 0, "no key condition became a range read")
  end)

  it("reads only the key range a key condition names (not the whole table)", function()
    local db = assert(store.open{})
    assert(db:create_table{ name = "r", primary_key = { { "k", "INTEGER" } } })
    for i = 1, 500 do assert(db:put_row{ table = "r", primary_key = { { "k", i } }, columns = { { "v", i % 7 } } }) end
    assert(db:sql("CREATE TABLE r (k BIGINT, v BIGINT, PRIMARY KEY (k))"))
    local res = assert(db:sql("SELECT COUNT(*) FROM r WHERE k >= 100 AND k < 150 AND v = 3"))
    assert.are.equal(7, res.rows[1][1])
    assert.are.equal(50, res.scanned)
    assert.are.equal(1, res.range_reads)
    assert.are.equal(0, res.full_scans)
    res = assert(db:sql("SELECT k FROM r WHERE k <= 3 ORDER BY k DESC"))
    assert.are.same({ { 3 }, { 2 }, { 1 } }, res.rows)
    assert.are.equal(3, res.scanned)
    res = assert(db:sql("SELECT k FROM r ORDER BY k DESC LIMIT 2"))
    assert.are.same({ { 500 }, { 499 } }, res.rows)
    assert(res.scanned <= 3, "ORDER BY the key with LIMIT reads the last rows only: " .. res.scanned)
    res = assert(db:sql("SELECT v FROM r WHERE k = 42"))
    assert.are.same({ { 0 } }, res.rows)
    assert.are.equal(1, res.scanned)
    res = assert(db:sql("SELECT COUNT(*) FROM r WHERE k > 499.5"))
    assert.are.same({ { 1 } }, res.rows)
    res = assert(db:sql("SELECT COUNT(*) FROM r WHERE k = 'x'"))
    assert.are.same({ { 0 } }, res.rows)
    db:close()
  end)
end)
