-- store_fidelity_spec.lua -- the embedded store against the service's
-- documented behaviour: cell versions and timestamps, time_to_live,
-- max_versions, time ranges, filters (single, composite, pagination),
-- filtered rows costing the page budget, AUTO_INCREMENT, return_type,
-- update_table, and the service's error codes. Random models where the
-- behaviour has many cases.
local helper = require "helper"
local store = require "otskit.store"
local kv = require("otskit.core").kv

local INF_MIN, INF_MAX, AUTO = store.INF_MIN, store.INF_MAX, store.AUTO_INCREMENT
local P = "OTSParameterInvalid"
local DAY = 86400

local function fails_with(code, ok, msg, got)
  assert.is_nil(ok)
  assert.is_string(msg)
  assert.equal(code, got, msg)
  return msg
end

-- a store whose clock the test moves (seconds)
local function clocked(now0, opts)
  local c = { now = now0 or 1700000000 }
  opts = opts or {}
  opts.clock = function() return c.now end
  local db = assert(store.open(opts))
  return db, c
end

local function scan_all(db, req)
  local rows, pages, empty, start = {}, 0, 0, req.start
  repeat
    local r = {}
    for k, v in pairs(req) do r[k] = v end
    r.start = start
    local page = assert(db:get_range(r))
    pages = pages + 1
    if #page.rows == 0 and page.next_start_primary_key then empty = empty + 1 end
    for _, row in ipairs(page.rows) do rows[#rows + 1] = row end
    start = page.next_start_primary_key
  until start == nil
  return rows, pages, empty
end

describe("otskit.store fidelity", function()
  describe("versions", function()
    it("keeps timestamps per cell; columns is the newest, cells every returned version", function()
      local db, c = clocked()
      assert(db:create_table{ name = "t", primary_key = {{"id", "INTEGER"}}, options = { max_versions = 3 } })
      local now = c.now * 1000
      assert(db:put_row{ table = "t", primary_key = {1},
        columns = {{"a", "old", now - 2000}, {"a", "mid", now - 1000}, {"a", "new", now}, {"b", 7}} })
      local row = db:get_row{ table = "t", primary_key = {1} }.row
      assert.same({ a = "new", b = 7 }, row.columns)
      assert.same({{"a", "new", now, "STRING"}, {"b", 7, now, "INTEGER"}}, row.cells)
      row = db:get_row{ table = "t", primary_key = {1}, max_versions = 2 }.row
      assert.same({{"a", "new", now, "STRING"}, {"a", "mid", now - 1000, "STRING"}, {"b", 7, now, "INTEGER"}}, row.cells)
      row = db:get_row{ table = "t", primary_key = {1}, time_range = { now - 2000, now } }.row
      assert.same({ a = "mid" }, row.columns)
      assert.same({{"a", "mid", now - 1000, "STRING"}, {"a", "old", now - 2000, "STRING"}}, row.cells)
      row = db:get_row{ table = "t", primary_key = {1}, time_range = { specific = now - 2000 } }.row
      assert.same({{"a", "old", now - 2000, "STRING"}}, row.cells)
      -- a time range that selects nothing: no row
      assert.is_nil(db:get_row{ table = "t", primary_key = {1}, time_range = { 1, 2 } }.row)
      -- DELETE removes one version; DELETE_ALL every version
      assert(db:update_row{ table = "t", primary_key = {1}, update = { DELETE = {{"a", now}} } })
      assert.same({ a = "mid", b = 7 }, db:get_row{ table = "t", primary_key = {1} }.row.columns)
      assert(db:update_row{ table = "t", primary_key = {1}, update = { DELETE_ALL = {"a"} } })
      assert.same({ b = 7 }, db:get_row{ table = "t", primary_key = {1}, max_versions = 3 }.row.columns)
      fails_with(P, db:update_row{ table = "t", primary_key = {1}, update = { DELETE = {"b"} } })
    end)

    it("reads match a model of random versioned writes, max_versions and time ranges", function()
      local r = helper.rng(41)
      for _ = 1, helper.trials(15) do
        local maxv = r.int(1, 4)
        local db, c = clocked()
        assert(db:create_table{ name = "t", primary_key = {{"id", "INTEGER"}}, options = { max_versions = maxv } })
        local base = c.now * 1000
        local model = {} -- id -> name -> { ts -> value }; a row, once written, exists
        local function trim(m)
          for _, vs in pairs(m) do
            local ts = {}
            for t in pairs(vs) do ts[#ts + 1] = t end
            table.sort(ts, function(a, b) return a > b end)
            for i = maxv + 1, #ts do vs[ts[i]] = nil end
          end
        end
        for _ = 1, 60 do
          local id, name = r.int(1, 3), ({ "a", "b", "c" })[r.int(1, 3)]
          local ts = base - r.int(0, 9) * 10
          local m = model[id]
          local op = r.int(1, 4)
          if op == 1 then
            local v = r.int(-50, 50)
            assert(db:update_row{ table = "t", primary_key = {id}, update = { PUT = {{name, v, ts}} } })
            m = m or {}
            m[name] = m[name] or {}
            m[name][ts] = v
            model[id] = m
            trim(m)
          elseif op == 2 then
            local res = db:update_row{ table = "t", primary_key = {id}, update = { DELETE = {{name, ts}} } }
            assert(res)
            if m and m[name] then
              m[name][ts] = nil
              if next(m[name]) == nil then m[name] = nil end
            end
          elseif op == 3 then
            assert(db:update_row{ table = "t", primary_key = {id}, update = { DELETE_ALL = {name} } })
            if m then m[name] = nil end -- (a missing row stays missing)
          else
            local v = r.int(0, 9)
            assert(db:put_row{ table = "t", primary_key = {id}, columns = {{name, v, ts}} })
            model[id] = { [name] = { [ts] = v } }
          end
        end
        -- reads with random max_versions and time ranges agree with the model
        for _ = 1, 40 do
          local id = r.int(1, 3)
          local req = { table = "t", primary_key = {id} }
          local lo, hi = base - 100, base + 1
          if r.int(0, 1) == 1 then
            lo = base - r.int(0, 9) * 10
            hi = lo + r.int(1, 40)
            req.time_range = { lo, hi }
          end
          local mv = req.time_range and maxv or 1
          if r.int(0, 1) == 1 then req.max_versions = r.int(1, 5); mv = math.min(req.max_versions, maxv) end
          local want = {}
          for name, vs in pairs((model[id] or {})) do
            local ts = {}
            for t in pairs(vs) do if t >= lo and t < hi then ts[#ts + 1] = t end end
            table.sort(ts, function(a, b) return a > b end)
            for i = 1, math.min(mv, #ts) do want[#want + 1] = { name, vs[ts[i]], ts[i], "INTEGER" } end
          end
          table.sort(want, function(a, b) if a[1] ~= b[1] then return a[1] < b[1] end return a[3] > b[3] end)
          local got = assert(db:get_row(req)).row
          local empty = model[id] ~= nil and next(model[id]) == nil
          for _, vs in pairs(model[id] or {}) do if next(vs) ~= nil then empty = false end end
          if #want == 0 and empty and not req.time_range then
            -- a row without cells (its versions deleted) still exists
            assert.same({}, got.columns)
          elseif #want == 0 then
            assert.is_nil(got)
          else
            assert.same(want, got.cells)
            local cols = {}
            for i = #want, 1, -1 do cols[want[i][1]] = want[i][2] end
            assert.same(cols, got.columns)
          end
        end
        db:close()
      end
    end)

    it("expires versions past time_to_live on every read and condition", function()
      local db, c = clocked()
      assert(db:create_table{ name = "t", primary_key = {{"id", "INTEGER"}},
        options = { time_to_live = DAY, max_versions = 2 } })
      assert(db:put_row{ table = "t", primary_key = {1}, columns = { a = 1 } })
      c.now = c.now + DAY / 2
      assert(db:update_row{ table = "t", primary_key = {1}, update = { PUT = { b = 2 } } })
      assert(db:put_row{ table = "t", primary_key = {2}, columns = { a = 9 } })
      c.now = c.now + DAY / 2 + 1 -- a (row 1) is past its TTL, b is not
      assert.same({ b = 2 }, db:get_row{ table = "t", primary_key = {1} }.row.columns)
      c.now = c.now + DAY
      assert.is_nil(db:get_row{ table = "t", primary_key = {1} }.row)
      local page = assert(db:get_range{ table = "t", start = {INF_MIN}, stop = {INF_MAX} })
      assert.equal(0, #page.rows)
      local got = assert(db:batch_get_row{ tables = {{ table = "t", primary_keys = {{1}, {2}} }} })
      assert.is_nil(got.tables[1].rows[1].row)
      -- an expired row does not exist for conditions
      fails_with("OTSConditionCheckFail", db:update_row{ table = "t", primary_key = {1},
        update = { PUT = { z = 1 } }, condition = "EXPECT_EXIST" })
      assert(db:put_row{ table = "t", primary_key = {1}, columns = { z = 1 }, condition = "EXPECT_NOT_EXIST" })
      -- INCREMENT starts from 0 when the old value expired
      assert(db:update_row{ table = "t", primary_key = {2}, update = { INCREMENT = { a = 1 } } })
      assert.equal(1, db:get_row{ table = "t", primary_key = {2} }.row.columns.a)
    end)

    it("refuses timestamps beyond max_time_deviation and bad options", function()
      local db, c = clocked()
      assert(db:create_table{ name = "t", primary_key = {{"id", "INTEGER"}}, options = { max_time_deviation = 60 } })
      local now = c.now * 1000
      assert(db:put_row{ table = "t", primary_key = {1}, columns = {{"a", 1, now - 60000}} })
      fails_with(P, db:put_row{ table = "t", primary_key = {1}, columns = {{"a", 1, now - 60001}} })
      fails_with(P, db:update_row{ table = "t", primary_key = {1}, update = { PUT = {{"a", 1, now + 60001}} } })
      fails_with(P, db:put_row{ table = "t", primary_key = {1}, columns = {{"a", 1, -5}} })
      fails_with(P, db:create_table{ name = "u", primary_key = {{"id", "INTEGER"}}, options = { time_to_live = 3600 } })
      fails_with(P, db:create_table{ name = "u", primary_key = {{"id", "INTEGER"}}, options = { max_versions = 0 } })
      fails_with(P, db:create_table{ name = "u", primary_key = {{"id", "INTEGER"}}, options = { allow_update = "no" } })
      fails_with(P, db:get_row{ table = "t", primary_key = {1}, max_versions = 0 })
      fails_with(P, db:get_row{ table = "t", primary_key = {1}, time_range = { 5, 5 } })
      fails_with(P, db:get_row{ table = "t", primary_key = {1}, time_range = { specific = 5, 9 } })
    end)

    it("update_table changes options and reserved throughput; describe_table reports them", function()
      local db = clocked()
      assert(db:create_table{ name = "t", primary_key = {{"id", "INTEGER"}}, reserved = { read = 1, write = 2 } })
      local d = assert(db:describe_table{ name = "t" })
      assert.same({ time_to_live = -1, max_versions = 1, max_time_deviation = 86400, allow_update = true }, d.options)
      assert.same({ read = 1, write = 2 }, d.reserved)
      local u = assert(db:update_table{ name = "t", options = { max_versions = 5, time_to_live = 2 * DAY } })
      assert.same({ time_to_live = 2 * DAY, max_versions = 5, max_time_deviation = 86400, allow_update = true }, u.options)
      assert.same({ read = 1, write = 2 }, u.reserved)
      assert.same(u.options, db:describe_table{ name = "t" }.options)
      fails_with(P, db:update_table{ name = "t" })
      fails_with(P, db:update_table{ name = "t", options = { max_versions = -1 } })
      fails_with("OTSObjectNotExist", db:update_table{ name = "nope", options = { max_versions = 2 } })
      assert.same(u.options, db:describe_table{ name = "t" }.options)
    end)

    it("keeps options and AUTO_INCREMENT counters in a file db across reopen", function()
      local path = os.tmpname()
      os.remove(path)
      local c = { now = 1700000000 }
      local db = assert(store.open{ path = path, clock = function() return c.now end })
      assert(db:create_table{ name = "t", primary_key = {{"p", "STRING"}, {"n", "INTEGER", "AUTO_INCREMENT"}},
        options = { max_versions = 4, time_to_live = DAY } })
      local first = assert(db:put_row{ table = "t", primary_key = {"x", AUTO}, return_type = "RT_PK" }).row.primary_key[2][2]
      db:close()
      db = assert(store.open{ path = path, clock = function() return c.now - 100 end }) -- clock went back
      local d = db:describe_table{ name = "t" }
      assert.same({ time_to_live = DAY, max_versions = 4, max_time_deviation = 86400, allow_update = true }, d.options)
      assert.same({ "n", "INTEGER", "AUTO_INCREMENT" }, d.table_meta.primary_key[2])
      local second = assert(db:put_row{ table = "t", primary_key = {"x", AUTO}, return_type = "RT_PK" }).row.primary_key[2][2]
      assert.is_true(second > first)
      db:close()
      os.remove(path); os.remove(path .. "-wal"); os.remove(path .. "-shm")
    end)
  end)

  describe("filters", function()
    -- a random filter tree over columns a (INTEGER), s (STRING), m (often missing)
    local function rand_filter(r, depth)
      if depth < 3 and r.int(0, 2) == 0 then
        local op = ({ "AND", "OR", "NOT" })[r.int(1, 3)]
        local n = op == "NOT" and 1 or r.int(2, 3)
        local subs = {}
        for i = 1, n do subs[i] = rand_filter(r, depth + 1) end
        return { logical = op, conditions = subs }
      end
      local col = ({ "a", "s", "m" })[r.int(1, 3)]
      local value = col == "s" and ({ "", "b", "bb", "c" })[r.int(1, 4)] or r.int(-2, 2)
      if r.int(0, 5) == 0 then value = col == "s" and 1 or "x" end -- another type: never equal
      return { column = col, comparator = ({ "EQUAL", "NOT_EQUAL", "GREATER_THAN", "GREATER_EQUAL",
        "LESS_THAN", "LESS_EQUAL" })[r.int(1, 6)], value = value, pass_if_missing = r.int(0, 1) == 1 }
    end
    local CMP = {
      EQUAL = function(x) return x == 0 end, NOT_EQUAL = function(x) return x ~= 0 end,
      GREATER_THAN = function(x) return x > 0 end, GREATER_EQUAL = function(x) return x >= 0 end,
      LESS_THAN = function(x) return x < 0 end, LESS_EQUAL = function(x) return x <= 0 end,
    }
    local function model(f, cols)
      if f.logical == "NOT" then return not model(f.conditions[1], cols) end
      if f.logical == "AND" then
        for _, s in ipairs(f.conditions) do if not model(s, cols) then return false end end
        return true
      end
      if f.logical == "OR" then
        for _, s in ipairs(f.conditions) do if model(s, cols) then return true end end
        return false
      end
      local v = cols[f.column]
      if v == nil then return f.pass_if_missing end
      if type(v) ~= type(f.value) then return f.comparator == "NOT_EQUAL" end
      local x = type(v) == "string" and kv.cmp(v, f.value) or (v < f.value and -1 or (v > f.value and 1 or 0))
      return CMP[f.comparator](x)
    end

    it("get_range, get_row and batch_get_row return exactly the rows a random filter passes", function()
      local r = helper.rng(77)
      local db = assert(store.open{ page = { rows = 7 } })
      assert(db:create_table{ name = "t", primary_key = {{"id", "INTEGER"}} })
      local data = {}
      for id = 1, 60 do
        local cols = { a = r.int(-2, 2), s = ({ "", "b", "bb", "c" })[r.int(1, 4)] }
        if r.int(0, 1) == 1 then cols.m = r.int(-2, 2) end
        data[id] = cols
        assert(db:put_row{ table = "t", primary_key = {id}, columns = cols })
      end
      local empties = 0
      for _ = 1, helper.trials(60) do
        local f = rand_filter(r, 1)
        local want = {}
        for id = 1, 60 do if model(f, data[id]) then want[#want + 1] = id end end
        local rows, _, empty = scan_all(db, { table = "t", start = {INF_MIN}, stop = {INF_MAX}, filter = f,
          limit = r.int(1, 10) })
        empties = empties + empty
        local got = {}
        for i, row in ipairs(rows) do
          got[i] = row.primary_key[1][2]
          assert.same(data[got[i]], row.columns)
        end
        assert.same(want, got)
        local id = r.int(1, 60)
        local one = assert(db:get_row{ table = "t", primary_key = {id}, filter = f }).row
        assert.equal(model(f, data[id]), one ~= nil)
        local b = assert(db:batch_get_row{ tables = {{ table = "t", primary_keys = {{id}, {61}}, filter = f }} })
        assert.equal(model(f, data[id]), b.tables[1].rows[1].row ~= nil)
        assert.is_true(b.tables[1].rows[1].ok and b.tables[1].rows[2].ok)
      end
      assert.is_true(empties > 0) -- the page budget produced 0-row pages with a next key
    end)

    it("tests only the columns read; latest_version_only = false looks at every version", function()
      local db, c = clocked()
      assert(db:create_table{ name = "t", primary_key = {{"id", "INTEGER"}}, options = { max_versions = 3 } })
      local now = c.now * 1000
      assert(db:put_row{ table = "t", primary_key = {1}, columns = {{"a", 5, now - 10}, {"a", 1, now}, {"b", "x"}} })
      local f = { column = "a", comparator = "EQUAL", value = 5 }
      assert.is_nil(db:get_row{ table = "t", primary_key = {1}, filter = f }.row)
      f.latest_version_only = false
      assert.is_nil(db:get_row{ table = "t", primary_key = {1}, filter = f }.row) -- max_versions 1: only a=1 read
      local row = db:get_row{ table = "t", primary_key = {1}, filter = f, max_versions = 3 }.row
      assert.same({ a = 1, b = "x" }, row.columns)
      -- a filter column not read counts as missing
      local g = { column = "a", comparator = "EQUAL", value = 1, pass_if_missing = false }
      assert.is_not_nil(db:get_row{ table = "t", primary_key = {1}, filter = g }.row)
      assert.is_nil(db:get_row{ table = "t", primary_key = {1}, filter = g, columns = {"b"} }.row)
      g.pass_if_missing = true
      assert.same({ b = "x" }, db:get_row{ table = "t", primary_key = {1}, filter = g, columns = {"b"} }.row.columns)
    end)

    it("pages through columns and column ranges", function()
      local db = clocked()
      assert(db:create_table{ name = "t", primary_key = {{"id", "INTEGER"}} })
      local cols = {}
      for i = 1, 9 do cols["c" .. i] = i end
      assert(db:put_row{ table = "t", primary_key = {1}, columns = cols })
      local row = db:get_row{ table = "t", primary_key = {1}, filter = { pagination = { offset = 2, limit = 3 } } }.row
      assert.same({ c3 = 3, c4 = 4, c5 = 5 }, row.columns)
      assert.equal(3, #row.cells)
      row = db:get_row{ table = "t", primary_key = {1}, start_column = "c4", end_column = "c7" }.row
      assert.same({ c4 = 4, c5 = 5, c6 = 6 }, row.columns)
      row = db:get_row{ table = "t", primary_key = {1}, start_column = "c8" }.row
      assert.same({ c8 = 8, c9 = 9 }, row.columns)
      assert.is_nil(db:get_row{ table = "t", primary_key = {1}, start_column = "d" }.row)
      fails_with(P, db:get_row{ table = "t", primary_key = {1}, filter = { pagination = { offset = 0 } } })
      fails_with(P, db:get_row{ table = "t", primary_key = {1}, filter = { pagination = { offset = 0, limit = 1 }, column = "a" } })
    end)

    it("filtered-out rows cost read capacity and the page budget", function()
      local db = assert(store.open{ page = { rows = 10 } })
      assert(db:create_table{ name = "t", primary_key = {{"id", "INTEGER"}} })
      for id = 1, 35 do assert(db:put_row{ table = "t", primary_key = {id}, columns = { v = ("x"):rep(5000), k = id } }) end
      local none = { column = "k", comparator = "LESS_THAN", value = 0 }
      local page = assert(db:get_range{ table = "t", start = {INF_MIN}, stop = {INF_MAX}, filter = none })
      assert.equal(0, #page.rows)
      assert.same({{"id", 11}}, page.next_start_primary_key)
      assert.is_true(page.consumed.capacity_unit.read >= 10) -- 10 rows of ~5 KB were scanned
      local _, pages, empty = scan_all(db, { table = "t", start = {INF_MIN}, stop = {INF_MAX}, filter = none })
      assert.equal(4, pages)
      assert.equal(3, empty)
      local got = db:get_row{ table = "t", primary_key = {1}, filter = none }
      assert.is_nil(got.row)
      assert.equal(2, got.consumed.capacity_unit.read)
    end)
  end)

  describe("readers and 0-row pages", function()
    it("merge.read over get_range keeps going through empty pages", function()
      local merge = require "otskit.merge"
      local db = assert(store.open{ page = { rows = 4 } })
      assert(db:create_table{ name = "t", primary_key = {{"b", "INTEGER"}, {"ts", "INTEGER"}} })
      local want = {}
      for b = 0, 3 do
        for ts = 1, 40 do
          local keep = ts % 13 == b -- sparse matches: most pages are empty
          assert(db:put_row{ table = "t", primary_key = {b, ts}, columns = { keep = keep } })
          if keep then want[#want + 1] = ts * 10 + b end
        end
      end
      table.sort(want)
      local function fetch(b, after, n)
        local start = after or {b, INF_MIN}
        if after and after.resume then -- a cursor: just after (or at) its key
          local ts = math.floor(tonumber(after.key) / 10)
          start = {b, after.inclusive and ts or ts + 1}
        end
        local page, msg, code = db:get_range{ table = "t", start = start, stop = {b, INF_MAX},
          limit = n, filter = { column = "keep", comparator = "EQUAL", value = true } }
        if not page then return nil, msg, code end
        local rows = {}
        for i, row in ipairs(page.rows) do rows[i] = { k = ("%08d"):format(row.primary_key[2][2] * 10 + b), v = row.primary_key[2][2] * 10 + b } end
        return rows, page.next_start_primary_key
      end
      local got, cursor = {}, nil
      repeat
        local rows, c = assert(merge.read{ sources = {0, 1, 2, 3}, fetch = fetch, key = "k", limit = 2, cursor = cursor })
        for _, r in ipairs(rows) do got[#got + 1] = r.v end
        cursor = c
      until cursor == nil
      assert.same(want, got)
    end)

    it("the timeseries pager (common.range_read under every pattern) returns every row through empty pages", function()
      local timeseries = require "otskit.patterns.timeseries"
      local db = assert(store.open{ page = { rows = 3 } })
      local s = timeseries.new{ store = db, table = "m", buckets = 4 }
      assert(s:create())
      local pts = {}
      for i = 1, 50 do pts[i] = { i, "dev", { v = i } } end
      assert(s:put_many(pts))
      -- points without the read column are skipped: pages of 0 rows + next key
      for i = 51, 80 do assert(s:put(i, "dev", { other = i })) end
      local got, cursor = {}, nil
      repeat
        local rows, c = assert(s:read{ from = 1, to = 81, limit = 7, cursor = cursor, columns = {"v"} })
        for _, r in ipairs(rows) do got[#got + 1] = r.ts end
        cursor = c
      until cursor == nil
      local want = {}
      for i = 1, 50 do want[i] = 51 - i end -- newest first
      assert.same(want, got)
    end)
  end)

  describe("AUTO_INCREMENT and return_type", function()
    it("generates increasing values per partition-key value; RT_PK returns them", function()
      local db = clocked()
      assert(db:create_table{ name = "o", primary_key = {{"user", "STRING"}, {"seq", "INTEGER", "AUTO_INCREMENT"}} })
      local seen = { a = {}, b = {} }
      for i = 1, 30 do
        local u = i % 3 == 0 and "b" or "a"
        local res = assert(db:put_row{ table = "o", primary_key = {u, AUTO}, columns = { i = i }, return_type = "RT_PK" })
        assert.equal(u, res.row.primary_key[1][2])
        local v = res.row.primary_key[2][2]
        local prev = seen[u][#seen[u]]
        if prev then assert.is_true(v > prev) end
        seen[u][#seen[u] + 1] = v
      end
      local b = assert(db:batch_write_row{ tables = {{ table = "o", rows = {
        { type = "PUT", primary_key = {"a", AUTO}, return_type = "RT_PK" },
        { type = "PUT", primary_key = {"a", AUTO}, return_type = "RT_PK" } } }} })
      local v1, v2 = b.tables[1].rows[1].row.primary_key[2][2], b.tables[1].rows[2].row.primary_key[2][2]
      assert.is_true(v1 > seen.a[#seen.a] and v2 > v1)
      local rows = scan_all(db, { table = "o", start = {"a", INF_MIN}, stop = {"a", INF_MAX} })
      assert.equal(#seen.a + 2, #rows)
      assert.is_nil(db:put_row{ table = "o", primary_key = {"a", AUTO} }.row) -- RT_NONE: no row
      fails_with(P, db:create_table{ name = "x", primary_key = {{"p", "INTEGER", "AUTO_INCREMENT"}} })
      fails_with(P, db:create_table{ name = "x", primary_key = {{"p", "INTEGER"}, {"q", "STRING", "AUTO_INCREMENT"}} })
      fails_with(P, db:create_table{ name = "x", primary_key = {{"p", "INTEGER"}, {"q", "INTEGER", "AUTOINC"}} })
      fails_with(P, db:get_row{ table = "o", primary_key = {"a", AUTO} })
      fails_with(P, db:delete_row{ table = "o", primary_key = {"a", AUTO} })
      fails_with(P, db:put_row{ table = "o", primary_key = {"a", AUTO}, condition = "EXPECT_NOT_EXIST" })
    end)

    it("RT_AFTER_MODIFY returns the columns after the write (INCREMENT's new value)", function()
      local db = clocked()
      assert(db:create_table{ name = "c", primary_key = {{"id", "STRING"}} })
      local res = assert(db:update_row{ table = "c", primary_key = {"x"}, update = { INCREMENT = { n = 5 }, PUT = { tag = "t" } },
        return_type = "RT_AFTER_MODIFY", return_column_names = {"n"} })
      assert.same({ n = 5 }, res.row.columns)
      assert.same({{"id", "x"}}, res.row.primary_key)
      res = assert(db:update_row{ table = "c", primary_key = {"x"}, update = { INCREMENT = { n = -2 } },
        return_type = "RT_AFTER_MODIFY" })
      assert.same({ n = 3 }, res.row.columns)
      assert.equal(3, res.row.cells[1][2])
      res = assert(db:put_row{ table = "c", primary_key = {"y"}, columns = { a = 1, b = 2 }, return_type = "RT_AFTER_MODIFY",
        return_column_names = {"b"} })
      assert.same({ b = 2 }, res.row.columns)
      local bw = assert(db:batch_write_row{ tables = {{ table = "c", rows = {
        { type = "UPDATE", primary_key = {"x"}, update = { INCREMENT = { n = 10 } }, return_type = "RT_AFTER_MODIFY" } } }} })
      assert.same({ n = 13 }, bw.tables[1].rows[1].row.columns)
      fails_with(P, db:update_row{ table = "c", primary_key = {"x"}, update = { INCREMENT = { n = 1 } }, return_type = "RT_ALL" })
      fails_with(P, db:update_row{ table = "c", primary_key = {"x"}, update = { INCREMENT = { n = 1 } }, return_column_names = {"n"} })
      fails_with(P, db:delete_row{ table = "c", primary_key = {"x"}, return_type = "RT_AFTER_MODIFY" })
    end)
  end)

  describe("the service's behaviour where the store used to differ", function()
    it("columns_to_get: a row with none of them is not returned", function()
      local db = clocked()
      assert(db:create_table{ name = "t", primary_key = {{"id", "INTEGER"}} })
      assert(db:put_row{ table = "t", primary_key = {1}, columns = { a = 1 } })
      assert(db:put_row{ table = "t", primary_key = {2}, columns = { b = 1 } })
      assert(db:put_row{ table = "t", primary_key = {3} })
      assert.is_nil(db:get_row{ table = "t", primary_key = {2}, columns = {"a"} }.row)
      assert.is_nil(db:get_row{ table = "t", primary_key = {3}, columns = {"a"} }.row)
      assert.same({}, db:get_row{ table = "t", primary_key = {3} }.row.columns) -- no columns asked: the key
      local page = assert(db:get_range{ table = "t", start = {INF_MIN}, stop = {INF_MAX}, columns = {"a"} })
      assert.equal(1, #page.rows)
      assert.equal(1, page.rows[1].primary_key[1][2])
    end)

    it("update_row with only deletes creates nothing; with no operation it is refused", function()
      local db = clocked()
      assert(db:create_table{ name = "t", primary_key = {{"id", "INTEGER"}} })
      assert(db:update_row{ table = "t", primary_key = {1}, update = { DELETE_ALL = {"a"} } })
      assert(db:update_row{ table = "t", primary_key = {1}, update = { DELETE = {{"a", 5}} } })
      assert.is_nil(db:get_row{ table = "t", primary_key = {1} }.row)
      assert.equal(0, #db:get_range{ table = "t", start = {INF_MIN}, stop = {INF_MAX} }.rows)
      fails_with(P, db:update_row{ table = "t", primary_key = {1}, update = {} })
      fails_with(P, db:update_row{ table = "t", primary_key = {1}, update = { PUT = {} } })
      assert.is_nil(db:get_row{ table = "t", primary_key = {1} }.row)
    end)

    it("refuses a column condition or filter on a primary-key column and invalid UTF-8", function()
      local db = clocked()
      assert(db:create_table{ name = "t", primary_key = {{"id", "INTEGER"}, {"s", "STRING"}} })
      assert(db:put_row{ table = "t", primary_key = {1, "a"}, columns = { v = 1 } })
      fails_with(P, db:update_row{ table = "t", primary_key = {1, "a"}, update = { PUT = { v = 2 } },
        condition = { row_existence = "IGNORE", column_condition = { column = "id", comparator = "EQUAL", value = 1 } } })
      fails_with(P, db:get_row{ table = "t", primary_key = {1, "a"}, filter = { column = "s", comparator = "EQUAL", value = "a" } })
      fails_with(P, db:put_row{ table = "t", primary_key = {1, "\255"} })
      fails_with(P, db:put_row{ table = "t", primary_key = {1, "a"}, columns = { v = "\192\128" } }) -- overlong
      fails_with(P, db:put_row{ table = "t", primary_key = {1, "a"}, columns = { v = "\237\160\128" } }) -- surrogate
      fails_with(P, db:get_row{ table = "t", primary_key = {1, "a"}, filter = { column = "v", comparator = "EQUAL", value = "\255" } })
      assert(db:put_row{ table = "t", primary_key = {1, "\244\143\191\191"}, columns = { v = "h\195\169", w = store.binary("\255") } })
      assert.equal(1, db:get_row{ table = "t", primary_key = {1, "a"} }.row.columns.v)
    end)

    it("answers with the service's codes and messages", function()
      local db = clocked()
      assert(db:create_table{ name = "t", primary_key = {{"a", "INTEGER"}, {"b", "STRING"}} })
      local m = fails_with("OTSInvalidPK", db:put_row{ table = "t", primary_key = {1} })
      assert.equal("Validate PK size fail. Input: 1, Meta: 2.", m)
      m = fails_with("OTSInvalidPK", db:get_row{ table = "t", primary_key = {{"a", 1}, {"c", "x"}} })
      assert.equal("Validate PK name fail. Input: c, Meta: b.", m)
      m = fails_with("OTSInvalidPK", db:delete_row{ table = "t", primary_key = {"1", "x"} })
      assert.equal("Validate PK type fail. Input: VT_STRING, Meta: VT_INTEGER.", m)
      fails_with("OTSInvalidPK", db:get_range{ table = "t", start = {INF_MIN}, stop = {INF_MAX, INF_MAX} })
      local wide = {}
      for i = 1, 1025 do wide["c" .. i] = i end
      fails_with(P, db:put_row{ table = "t", primary_key = {1, "x"}, columns = wide })
      local big = {}
      for i = 1, 3 do big["c" .. i] = ("y"):rep(2000000) end
      fails_with(P, db:put_row{ table = "t", primary_key = {1, "x"}, columns = big })
      fails_with(P, db:put_row{ table = ("n"):rep(256), primary_key = {1, "x"} })
      fails_with(P, db:get_row{ table = "bad-name", primary_key = {1, "x"} })
      assert.equal("Requested table does not exist.", (select(2, db:get_row{ table = "nope", primary_key = {1, "x"} })))
      assert.equal("Begin key must less than end key in FORWARD",
        (select(2, db:get_range{ table = "t", start = {2, INF_MIN}, stop = {1, INF_MIN} })))
      assert.equal("The limit must be greater than 0.",
        (select(2, db:get_range{ table = "t", start = {1, INF_MIN}, stop = {2, INF_MIN}, limit = 0 })))
      assert.equal("Duplicated primary key name: 'a'.",
        (select(2, db:create_table{ name = "u", primary_key = {{"a", "INTEGER"}, {"a", "STRING"}} })))
      assert.equal("Condition check failed.",
        (select(2, db:put_row{ table = "t", primary_key = {9, "z"}, condition = "EXPECT_EXIST" })))
    end)

    it("batch_get_row fails a bad key alone and reports per-row capacity", function()
      local db = clocked()
      assert(db:create_table{ name = "t", primary_key = {{"id", "INTEGER"}} })
      assert(db:put_row{ table = "t", primary_key = {1}, columns = { v = ("x"):rep(9000) } })
      local res = assert(db:batch_get_row{ tables = {{ table = "t", primary_keys = {{1}, {"bad"}, {1, 2}, {7}} }} })
      local rows = res.tables[1].rows
      assert.is_true(rows[1].ok)
      assert.equal(3, rows[1].consumed.capacity_unit.read)
      assert.same({ false, "OTSInvalidPK" }, { rows[2].ok, rows[2].code })
      assert.same({ false, "OTSInvalidPK" }, { rows[3].ok, rows[3].code })
      assert.is_true(rows[4].ok and rows[4].row == nil)
      fails_with(P, db:batch_get_row{ tables = {{ table = "t", primary_keys = {} }} })
      fails_with(P, db:batch_get_row{ tables = {} })
      fails_with(P, db:batch_write_row{ tables = {{ table = "t", rows = {} }} })
      fails_with(P, db:batch_write_row{ tables = {} })
    end)

    it("refuses every unsupported option, naming it", function()
      local db = clocked()
      assert(db:create_table{ name = "t", primary_key = {{"id", "INTEGER"}} })
      local cases = {
        { "put_row", { table = "t", primary_key = {1}, trace_id = "x" } },
        { "update_row", { table = "t", primary_key = {1}, update = { PUT = { a = 1 } }, columnFilter = {} } },
        { "delete_row", { table = "t", primary_key = {1}, return_column_names = {"a"} } },
        { "get_row", { table = "t", primary_key = {1}, cache_blocks = true } },
        { "get_range", { table = "t", start = {INF_MIN}, stop = {INF_MAX}, token = "x" } },
        { "batch_get_row", { tables = {{ table = "t", primary_keys = {{1}}, regex = true }} } },
        { "batch_write_row", { tables = {{ table = "t", rows = {{ type = "PUT", primary_key = {1}, ttl = 5 }} }} } },
        { "create_table", { name = "u", primary_key = {{"id", "INTEGER"}}, stream_spec = {} } },
        { "describe_table", { name = "t", index = true } },
        { "update_table", { name = "t", options = { max_versions = 2 }, stream = true } },
      }
      for _, case in ipairs(cases) do
        local res, msg, code = db[case[1]](db, case[2])
        if res then
          -- a batch write refuses the row alone
          res = res.tables[1].rows[1]
          msg, code = res.message, res.code
        end
        assert.equal(P, code, case[1])
        local named = false
        for k in pairs(case[2]) do
          if msg:find("'" .. k .. "'", 1, true) then named = true end
        end
        assert.is_true(named or msg:find("'ttl'", 1, true) ~= nil or msg:find("'regex'", 1, true) ~= nil, msg)
      end
    end)
  end)
end)
