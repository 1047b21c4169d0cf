-- spec/search_cbuild_spec.lua -- the index build in C (csrc/core/sbuild.c,
-- otskit.core.sql.build) writes exactly the tables the Lua build writes:
-- random rows of every cell type (wrong types for the field, integral
-- and huge doubles, int64 extremes, BINARY, text of ASCII, CJK, Latin,
-- full-width and invalid UTF-8 bytes under each single_word parameter,
-- "lat,lon" strings well and badly formed), several versions per column,
-- expired cells under a table TTL, rows with no column; two indexes over
-- the same rows, one built each way, compared table by table (every
-- value with its SQLite type), and again after writes that both follow.
-- An index the C build does not take (arrays, NESTED, DATE, routing, a
-- field named as a primary key column) is built in Lua. OTSKIT_QUICK:
-- fewer rows and rounds; OTSKIT_SEED=S runs the one round of seed S (a
-- failure names its seed).
local store = require "otskit.store"
local helper = require "helper"
local build = require "otskit.store.search.build"
local sql = require("otskit.core").sql

local QUICK = helper.quick()
local ROUNDS = QUICK and 3 or 12
local ROWS = QUICK and 300 or 1500
local SEED = tonumber(os.getenv("OTSKIT_SEED") or "")

local R -- this round's helper.rng
local function rnd(n) return R.int(0, n - 1) end
local function pick(t) return t[rnd(#t) + 1] end
local utf8_ok = require("otskit.core").row.utf8

local PIECES = { "a", "B", "z", "Q", "0", "7", " ", "  ", ",", ".", "-", "_", "\t", "\n", "abc", "ABC", "x1y2", "12ab",
  "中", "文", "한", "あ", "é", "É", "ß", "Ω", "ｆ", "１", "２", "　", "\194\160", "—", "\194\191", "×",
  "\128", "\191", "\192", "\193", "\245", "\255", "\224\160", "\240\144", "\0", "ab\200cd", "Hello", "WORLD", "w0042", "Z", "XyZ", "AZaz09" }
-- (a STRING is UTF-8: the invalid pieces go into BINARY values only)
local function text(binary)
  local t = {}
  for i = 1, rnd(12) do
    local p = pick(PIECES)
    while not binary and not utf8_ok(p) do p = pick(PIECES) end
    t[i] = p
  end
  return table.concat(t)
end

local GEOS = { "30.5,120.25", " 30 , 120 ", "+1e1,-2E-1", "91,0", "-91,0", "0,181", "0,-180", "90,180", "1e,2", ".5,.5",
  "5.,5.", "-90,180", "abc", "30.1,120.2,3", "1e400,0", "1e-400,0", ",1", "1,", "", " ", "--1,2", "+-1,2", "1e5.5,1",
  "0x10,1", "inf,1", "nan,1", "\t12.25\n,\v-33.5\f", "00012,-000.5", "9.0e1,1.8E+2", "1 2,3" }
local function geo()
  if rnd(3) == 0 then return ("%.5f,%.5f"):format(rnd(18000) / 100 - 90, rnd(36000) / 100 - 180) end
  return pick(GEOS)
end

local BIG = { "9223372036854775807", "-9223372036854775808", "9007199254740993", "-9007199254740993", "4611686018427387904" }
local function value(kind)
  local r = rnd(10)
  if r == 0 then return store.integer(pick(BIG)) end
  if r == 1 then return pick({ 0, 1, -1, 42, 2 ^ 40, -12345 }) end
  if r == 2 then return store.double(pick({ 1.5, -0.25, 3.0, 1e300, -1e300, 2 ^ 63, 2 ^ 62, 9.21e18, -0.0, 1 / 3 })) end
  if r == 3 then return rnd(2) == 0 end
  if r == 4 then return store.binary(text(true)) end
  if r == 5 then return geo() end
  if r == 6 then return "k" .. rnd(20) end
  -- the field's own kind, mostly
  if kind == "LONG" then return rnd(1000) - 500 end
  if kind == "DOUBLE" then return store.double(rnd(1000) / 8) end
  if kind == "BOOLEAN" then return rnd(2) == 0 end
  if kind == "GEO_POINT" then return geo() end
  if kind == "KEYWORD" then return pick({ "a", "b", "", "中文", "K" .. rnd(5) }) end
  return text()
end

local FIELDS = {
  { field_name = "l", field_type = "LONG", enable_sort_and_agg = true },
  { field_name = "d", field_type = "DOUBLE" },
  { field_name = "b", field_type = "BOOLEAN" },
  { field_name = "k", field_type = "KEYWORD", enable_sort_and_agg = true },
  { field_name = "t", field_type = "TEXT" },
  { field_name = "tc", field_type = "TEXT", analyzer = "single_word",
    analyzer_parameter = { case_sensitive = true, delimit_word = true } },
  { field_name = "td", field_type = "TEXT", analyzer = "max_word" },
  { field_name = "tn", field_type = "TEXT", analyzer = "min_word", index = false },
  { field_name = "g", field_type = "GEO_POINT" },
  { field_name = "x", field_type = "LONG", index = false },
  { field_name = "y", field_type = "DOUBLE", enable_sort_and_agg = true },
}
local NAMES = {}
for i, f in ipairs(FIELDS) do NAMES[i] = f.field_name end
NAMES[#NAMES + 1] = "other"

-- every table of index prefix p, each value quoted (its SQLite type shows)
local function dump(db, p)
  local out = {}
  for _, n in ipairs({ "doc", "num", "kw", "has", "gpt", "geo", "vec", "fts" }) do
    local cols = {}
    for _, r in ipairs(assert(sql.rows(db.h, "SELECT name FROM pragma_table_info(?1)", { p .. n }))) do
      cols[#cols + 1] = "quote(" .. r[1] .. ")"
    end
    local rowid = (n == "fts") and "rowid, " or ""
    local rows = assert(sql.rows(db.h, ("SELECT %s%s FROM %s%s ORDER BY %s"):format(rowid, table.concat(cols, ", "), p, n,
      n == "fts" and "rowid" or "1, 2")))
    for i, r in ipairs(rows) do
      for j = 1, #cols + (n == "fts" and 1 or 0) do r[j] = tostring(r[j]) end
      rows[i] = table.concat(r, "|")
    end
    out[n] = rows
  end
  return out
end

local function same(a, b)
  for n, rows in pairs(a) do
    assert.are.equal(#rows, #b[n], n .. ": row count")
    for i = 1, #rows do
      if rows[i] ~= b[n][i] then
        error(("%s row %d: C %q, Lua %q"):format(n, i, rows[i], b[n][i]))
      end
    end
  end
end

local function prefix(db, index)
  local r = assert(sql.rows(db.h, "SELECT id FROM s_meta WHERE tbl = 't' AND idx = ?1", { index }))
  return "s" .. r[1][1] .. "_"
end

local function build_both(db, fields, extra)
  local sc = { field_schemas = fields }
  for k, v in pairs(extra or {}) do sc[k] = v end
  build.C = nil
  assert(db:create_search_index{ table = "t", index = "c", schema = sc })
  build.C = false
  local ok, e = pcall(function() assert(db:create_search_index{ table = "t", index = "lua", schema = sc }) end)
  build.C = nil
  assert(ok, e)
  return prefix(db, "c"), prefix(db, "lua")
end

describe("search index build in C", function()
  after_each(function() build.C = nil end)

  it("writes the tables the Lua build writes, and both follow later writes alike", function()
    local function one_round(seed)
      R = helper.rng(seed)
      local now = 1700000000
      local db = assert(store.open{ clock = function() return now end })
      local ttl = rnd(2) == 0 and 86400 * 2 or -1
      assert(db:create_table{ name = "t", primary_key = { { "p", "STRING" }, { "id", "INTEGER" } },
        options = { time_to_live = ttl, max_versions = 1 + rnd(3) } })
      local function pk() return { { "p", pick({ "a", "b", "", "中", "é" }) }, { "id", rnd(ROWS * 2) - 10 } } end
      local function cols()
        local c = {}
        for _, name in ipairs(NAMES) do
          if rnd(4) ~= 0 then
            local kind = "TEXT"
            for _, f in ipairs(FIELDS) do if f.field_name == name then kind = f.field_type end end
            c[#c + 1] = { name, value(kind) }
          end
        end
        return c
      end
      for _ = 1, ROWS do
        now = now + rnd(300) -- three days and more in all: the TTL's cut falls among them
        local r = rnd(10)
        if r < 7 then assert(db:put_row{ table = "t", primary_key = pk(), columns = cols() })
        elseif r < 9 then assert(db:update_row{ table = "t", primary_key = pk(), update = { PUT = cols() } })
        else assert(db:put_row{ table = "t", primary_key = pk(), columns = {} }) end
      end
      now = now + rnd(86400)
      local pc, pl = build_both(db, FIELDS)
      local a, b = dump(db, pc), dump(db, pl)
      assert(#a.doc > 0)
      same(a, b)
      -- writes after the build: both indexes follow them
      for _ = 1, 40 do
        local r = rnd(3)
        if r == 0 then assert(db:put_row{ table = "t", primary_key = pk(), columns = cols() })
        elseif r == 1 then assert(db:update_row{ table = "t", primary_key = pk(), update = { PUT = cols() } })
        else assert(db:delete_row{ table = "t", primary_key = pk() }) end
      end
      same(dump(db, pc), dump(db, pl))
      -- and both answer alike
      local q = { table = "t", index = "c", query = { match_all = {} }, limit = 100, get_total_count = true }
      local rc = assert(db:search(q))
      q.index = "lua"
      local rl = assert(db:search(q))
      assert.are.same(rl.rows, rc.rows)
      assert.are.equal(rl.total_count, rc.total_count)
      db:close()
    end
    for round = 1, SEED and 1 or ROUNDS do
      local seed = SEED or round * 7919
      local ok, e = pcall(one_round, seed)
      if not ok then error(("seed %d (OTSKIT_SEED=%d replays it): %s"):format(seed, seed, tostring(e)), 0) end
    end
  end)

  it("fails on a stored row that is not one as the Lua build does", function()
    local outs = {}
    for _, c in ipairs({ true, false }) do
      local db = assert(store.open{})
      assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
      for i = 1, 5 do assert(db:put_row{ table = "t", primary_key = { { "id", i } }, columns = { l = i, t = "a b" } }) end
      assert(sql.exec(db.h, ("UPDATE \"%s\" SET value = x'05ff' WHERE key IN (SELECT key FROM \"%s\" LIMIT 1 OFFSET 2)")
        :format(db.tables.t.kv, db.tables.t.kv)))
      if c then build.C = nil else build.C = false end
      local res, msg, code = db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = {
        { field_name = "l", field_type = "LONG" }, { field_name = "t", field_type = "TEXT" } } } }
      build.C = nil
      assert.is_nil(res)
      outs[#outs + 1] = { msg, code }
      -- nothing of the index stays
      assert.are.same({ indices = {} }, assert(db:list_search_index{ table = "t" }))
      db:close()
    end
    assert.are.same(outs[2], outs[1])
  end)

  it("leaves to Lua the indexes it does not take", function()
    local db = assert(store.open{})
    assert(db:create_table{ name = "t", primary_key = { { "p", "STRING" }, { "id", "INTEGER" } } })
    for i = 1, 50 do
      assert(db:put_row{ table = "t", primary_key = { { "p", "x" .. i % 3 }, { "id", i } }, columns = {
        a = '["x","y"]', n = '[{"v":1}]', dt = "2024-01-02", l = i } })
    end
    local called = 0
    local build = sql.build
    sql.build = function(...) called = called + 1; return build(...) end
    local ok, e = pcall(function()
      for i, extra in ipairs({
        { { field_name = "a", field_type = "KEYWORD", is_array = true } },
        { { field_name = "n", field_type = "NESTED", field_schemas = { { field_name = "v", field_type = "LONG" } } } },
        { { field_name = "dt", field_type = "DATE", date_formats = { "yyyy-MM-dd" } } },
        { { field_name = "id", field_type = "LONG" } },
        { { field_name = "l", field_type = "TEXT", analyzer = "split" } },
        { { field_name = "l", field_type = "TEXT", analyzer = "fuzzy" } },
      }) do
        local fs = { { field_name = "l", field_type = "LONG" } }
        for _, f in ipairs(extra) do fs[#fs + 1] = f end
        if extra[1].field_name == "l" then fs = extra end
        assert(db:create_search_index{ table = "t", index = "i" .. i, schema = { field_schemas = fs } })
        assert.are.equal(0, called)
        assert(db:delete_search_index{ table = "t", index = "i" .. i })
      end
      assert(db:create_search_index{ table = "t", index = "r", schema = { field_schemas = { { field_name = "l", field_type = "LONG" } },
        index_setting = { routing_fields = { "p" } } } })
      assert.are.equal(0, called)
      assert(db:create_search_index{ table = "t", index = "plain", schema = { field_schemas = { { field_name = "l", field_type = "LONG" } } } })
      assert.are.equal(1, called)
    end)
    sql.build = build
    assert(ok, e)
    local r = assert(db:search{ table = "t", index = "plain", query = { range = { field_name = "l", from = 10, to = 20, include_lower = true } },
      get_total_count = true })
    assert.are.equal(10, r.total_count)
    db:close()
  end)
end)
