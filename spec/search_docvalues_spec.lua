-- spec/search_docvalues_spec.lua -- a bool search answered with doc
-- values (otskit.store.search.docvalues: the non-driving clauses tested
-- on in-memory arrays) answers as the SQL path: random indexes (values of
-- every kind, edge values, values a field's type does not take) and
-- random bool searches, each asked with doc values forced and with them
-- off (docvalues.mode), rows, order, total count and the pages after
-- (tokens) compared; writes and deletes between the searches from the
-- searching connection and from a second connection on the same file,
-- so arrays read before a write must never answer after it.
local store = require "otskit.store"
local cjson = require "cjson.safe"
local helper = require "helper"
local docvalues = require "otskit.store.search.docvalues"

local LUA54 = math.type ~= nil
local function pick(r, t) return t[r.int(1, #t)] end
local function enc(v)
  return tostring(cjson.encode(v)):gsub("nan", "NaN")
end

local KS = { "a", "b", "c" }
local SS = { "", "a", "ab", "a\0", "a\0b", "b", "\244\143\191\191", "\195\169", "zz", "B" }
local ti = math.tointeger or function(x) return x end
local BIG = LUA54 and { math.maxinteger, math.mininteger, ti(2 ^ 62), -ti(2 ^ 62), ti(2 ^ 53) + 1 }
  or { 2 ^ 53, -2 ^ 53, 2 ^ 52 + 1 }
local XS = { -0.0, 0.0, 5, -3, 2 ^ 53, 2 ^ 53 + 2, 1e17, 1e300, -1e300 }

local function lval(r)
  local k = r.int(1, 10)
  if k == 1 then return pick(r, BIG) end
  return r.int(-20, 20)
end
local function xval(r)
  local k = r.int(1, 8)
  if k == 1 then return pick(r, XS) end
  return r.int(-40, 40) / 4
end

local function random_row(r)
  local c = {}
  if r.int(1, 10) <= 8 then c.k = pick(r, KS) end
  if r.int(1, 10) <= 7 then c.l = lval(r) end
  if r.int(1, 10) <= 7 then c.x = xval(r) end
  if r.int(1, 10) <= 6 then c.b = r.int(0, 1) == 1 end
  if r.int(1, 10) <= 6 then c.s = pick(r, SS) end
  if r.int(1, 10) <= 5 then c.dt = 1700000000000 + r.int(0, 50) * 3600000 end
  if r.int(1, 10) <= 3 then c.la = cjson.encode({ r.int(-5, 5), r.int(-5, 5) }) end
  -- values the field's type does not take: not indexed (no value)
  local odd = r.int(1, 30)
  if odd == 1 then c.l = 2.5 elseif odd == 2 then c.l = "7" elseif odd == 3 then c.b = "true"
  elseif odd == 4 then c.s = 5 elseif odd == 5 then c.x = "1.5" end
  return c
end

-- a value to query field f with (sometimes one no row has, or NaN)
local function qval(r, f)
  if f == "l" then return r.int(1, 12) == 1 and pick(r, { 2.0, 1e300, -1e300 }) or lval(r) end
  if f == "x" then return r.int(1, 10) == 1 and pick(r, { 0 / 0, 1 / 0, -1 / 0 }) or xval(r) end
  if f == "b" then return r.int(0, 1) == 1 end
  if f == "s" then return r.int(1, 6) == 1 and pick(r, { "a\0a", "aa", "", "\255\255", "c" }) or pick(r, SS) end
  if f == "k" then return pick(r, KS) end
  if f == "dt" then return 1700000000000 + r.int(-2, 52) * 3600000 end
  return r.int(-5, 5) -- la
end

local FIELDS = { "l", "x", "b", "s", "k", "dt", "l", "x", "s" }

local function leaf(r, f)
  f = f or pick(r, FIELDS)
  if r.int(1, 25) == 1 then f = "la" end -- an array: not doc values (SQL)
  local k = r.int(1, 8)
  if k <= 3 then return { term = { field_name = f, term = qval(r, f) } } end
  if k == 4 then
    local t = {}
    for i = 1, r.int(1, 4) do t[i] = qval(r, f) end
    return { terms = { field_name = f, terms = t } }
  end
  if k == 5 then return { exists = { field_name = f } } end
  local q = { field_name = f }
  if r.int(1, 4) > 1 then q.from = qval(r, f) end
  if r.int(1, 4) > 1 then q.to = qval(r, f) end
  if r.int(0, 1) == 1 then q.include_lower = r.int(0, 1) == 1 end
  if r.int(0, 1) == 1 then q.include_upper = r.int(0, 1) == 1 end
  return { range = q }
end

local function random_bool(r)
  local b = { must = {}, filter = {}, must_not = {} }
  -- the driver: a term on k most often (its value index, in key order)
  local d = r.int(1, 6)
  local drv
  if d <= 4 then drv = { term = { field_name = "k", term = pick(r, KS) } }
  elseif d == 5 then drv = { range = { field_name = "l", from = -10, to = 10 } }
  else drv = { terms = { field_name = "s", terms = { "a", "ab", "b" } } } end
  table.insert(r.int(0, 1) == 1 and b.must or b.filter, drv)
  for _ = 1, r.int(1, 4) do
    local where = pick(r, { "must", "filter", "must_not", "must_not" })
    table.insert(b[where], leaf(r))
  end
  if r.int(1, 15) == 1 then b.should = { leaf(r) } end -- (SQL)
  if r.int(1, 15) == 1 then b.filter[#b.filter + 1] = { bool = { must_not = { leaf(r) } } } end -- (SQL)
  for _, k in ipairs({ "must", "filter", "must_not" }) do
    if #b[k] == 0 then b[k] = nil elseif #b[k] == 1 and r.int(0, 1) == 1 then b[k] = b[k][1] end -- one query, not a list
  end
  return { bool = b }
end

local function keys_of(res)
  local out = {}
  for i, row in ipairs(res.rows) do out[i] = tostring(row.primary_key[1][2]) end
  return out
end

local function tmpdir()
  local p = os.tmpname()
  os.remove(p)
  assert(os.execute("mkdir -p " .. p))
  return p
end

local SCHEMA = { field_schemas = {
  { field_name = "k", field_type = "KEYWORD" },
  { field_name = "l", field_type = "LONG" },
  { field_name = "x", field_type = "DOUBLE" },
  { field_name = "b", field_type = "BOOLEAN" },
  { field_name = "s", field_type = "KEYWORD" },
  { field_name = "dt", field_type = "DATE", date_formats = { "epoch_millis" } },
  { field_name = "la", field_type = "LONG", is_array = true },
} }

-- a store file in a new directory: table t with lo..hi random rows and
-- search index ix over SCHEMA, open on two connections (db, other)
local function indexed_file(r, lo, hi)
  local dir = tmpdir()
  local path = dir .. "/s.db"
  local db = assert(store.open{ path = path, partitions = false })
  assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
  local nrows = r.int(lo, hi)
  for id = 1, nrows do assert(db:put_row{ table = "t", primary_key = { { "id", id } }, columns = random_row(r) }) end
  assert(db:create_search_index{ table = "t", index = "ix", schema = SCHEMA })
  return dir, db, assert(store.open{ path = path, partitions = false }), nrows
end

describe("otskit.store search: doc values answer as the SQL path", function()
  after_each(function() docvalues.mode = "auto" end)

  it("random bool searches between writes of this connection and of another", function()
    local trials = helper.trials(30)
    local compared, hits0 = 0, docvalues.stats.hits
    for trial = 1, trials do
      local r = helper.rng(7300 + trial)
      local dir, db, other, nrows = indexed_file(r, 20, 300)
      for step = 1, 24 do
        -- writes between the searches: puts (new rows and over old ones)
        -- and deletes, from this connection or the other
        if step > 1 and r.int(1, 3) <= 2 then
          for _ = 1, r.int(1, 4) do
            local w = r.int(1, 2) == 1 and db or other
            local id = r.int(1, nrows + 20)
            if r.int(1, 4) == 1 then assert(w:delete_row{ table = "t", primary_key = { { "id", id } } })
            else assert(w:put_row{ table = "t", primary_key = { { "id", id } }, columns = random_row(r) }) end
          end
        end
        local q = random_bool(r)
        local req = { table = "t", index = "ix", query = q, limit = r.int(1, 25), offset = r.int(0, 1) == 1 and r.int(0, 4) or nil,
          get_total_count = r.int(1, 4) > 1 }
        local what = ("trial %d step %d: %s"):format(trial, step, enc(req))
        -- (auto first: its answer is either path's and must be the same)
        local mode_order = { "force", "off", "auto" }
        local res = {}
        for _, mode in ipairs(mode_order) do
          docvalues.mode = mode
          local a, am, ac = db:search(req)
          res[mode] = { a, am, ac }
        end
        docvalues.mode = "auto"
        local want = res.off
        for _, mode in ipairs({ "force", "auto" }) do
          local got = res[mode]
          assert(got[1] ~= nil == (want[1] ~= nil), ("%s: %s / %s"):format(what, tostring(got[2]), tostring(want[2])))
          if not want[1] then
            assert.are.equal(want[3], got[3], what)
          else
            assert.are.same(keys_of(want[1]), keys_of(got[1]), mode .. " " .. what)
            assert.are.equal(want[1].total_count, got[1].total_count, mode .. " " .. what)
            assert.are.equal(want[1].next_token == nil, got[1].next_token == nil, what)
          end
        end
        -- the pages after (tokens), each path its own
        local tf, to = res.force[1] and res.force[1].next_token, want[1] and want[1].next_token
        local pages = 0
        while to and pages < 5 do
          docvalues.mode = "force"
          local pf = assert(db:search{ table = "t", index = "ix", query = q, token = tf, limit = 7, get_total_count = true })
          docvalues.mode = "off"
          local po = assert(db:search{ table = "t", index = "ix", query = q, token = to, limit = 7, get_total_count = true })
          docvalues.mode = "auto"
          assert.are.same(keys_of(po), keys_of(pf), "page " .. pages .. " " .. what)
          assert.are.equal(po.total_count, pf.total_count, what)
          tf, to = pf.next_token, po.next_token
          assert.are.equal(to == nil, tf == nil, what)
          pages = pages + 1
        end
        if want[1] then compared = compared + 1 end
      end
      other:close()
      db:close()
      os.execute("rm -rf " .. dir)
    end
    assert(compared > trials * 12, "too few searches answered: " .. compared)
    -- (doc values did answer: most random searches are theirs)
    assert(docvalues.stats.hits - hits0 > trials * 8, "doc values answered " .. (docvalues.stats.hits - hits0))
  end)

  it("a range group-by over every document counts as the SQL path (random ranges, writes between)", function()
    local trials = helper.trials(20)
    local hits0, compared = docvalues.stats.hits, 0
    local EDGE = { 0, -0.0, 0.5, -0.5, 2 ^ 53, -2 ^ 53, 2 ^ 63, -2 ^ 63, 1e300, -1e300, 1 / 0, -1 / 0, 0 / 0,
      1700000000000, 1700000000000 + 25 * 3600000 + 0.5 }
    if LUA54 then EDGE[#EDGE + 1] = math.maxinteger; EDGE[#EDGE + 1] = math.mininteger end
    local function bound(r)
      local k = r.int(1, 10)
      if k <= 2 then return nil end
      if k == 3 then return pick(r, EDGE) end
      if k <= 6 then return r.int(-20, 20) end
      if k <= 8 then return r.int(-40, 40) / 4 end
      return 1700000000000 + r.int(-2, 52) * 3600000
    end
    local function fmt(res)
      if not res[1] then return "error " .. tostring(res[3]) end
      local out = {}
      for _, g in ipairs(res[1].group_bys) do
        out[#out + 1] = g.name .. ":"
        for _, it in ipairs(g.items) do
          out[#out + 1] = ("[%.17g,%.17g)=%s%s"):format(it.from, it.to, tostring(it.row_count),
            it.sub_aggs and enc(it.sub_aggs) or "")
        end
      end
      return table.concat(out, " ")
    end
    for trial = 1, trials do
      local r = helper.rng(9100 + trial)
      local dir, db, other, nrows = indexed_file(r, 0, 200)
      for step = 1, 20 do
        if step > 1 and r.int(1, 3) == 1 then
          for _ = 1, r.int(1, 4) do
            local w = r.int(1, 2) == 1 and db or other
            local id = r.int(1, nrows + 20)
            if r.int(1, 4) == 1 then assert(w:delete_row{ table = "t", primary_key = { { "id", id } } })
            else assert(w:put_row{ table = "t", primary_key = { { "id", id } }, columns = random_row(r) }) end
          end
        end
        local gbs = {}
        for i = 1, r.int(1, 3) do
          local rs = {}
          for j = 1, r.int(1, 5) do rs[j] = { from = bound(r), to = bound(r) } end
          local g = { name = "g" .. i, type = "range", field_name = pick(r, { "l", "x", "dt", "l", "x", "la", "k" }), ranges = rs }
          if r.int(1, 10) == 1 then g.sub_aggs = { { name = "c", type = "count", field_name = "l" } } end -- (SQL)
          gbs[i] = g
        end
        local req = { table = "t", index = "ix", group_bys = gbs, limit = 0 }
        local k = r.int(1, 10)
        if k <= 4 then req.query = { match_all = {} }
        elseif k == 5 then req.query = { range = { field_name = "l", from = -5, to = 5 } } end -- (SQL)
        local what = ("trial %d step %d: %s"):format(trial, step, enc(req))
        local res = {}
        for _, mode in ipairs({ "auto", "force", "off" }) do
          docvalues.mode = mode
          res[mode] = fmt({ db:search(req) })
        end
        docvalues.mode = "auto"
        assert.are.equal(res.off, res.force, "force " .. what)
        assert.are.equal(res.off, res.auto, "auto " .. what)
        if res.off:sub(1, 5) ~= "error" then compared = compared + 1 end
      end
      other:close()
      db:close()
      os.execute("rm -rf " .. dir)
    end
    assert(compared > trials * 10, "too few searches answered: " .. compared)
    assert(docvalues.stats.hits - hits0 > trials * 5, "doc values answered " .. (docvalues.stats.hits - hits0))
  end)

  it("is not used inside another transaction, nor when a value does not fit, and a stale array never answers", function()
    local db = assert(store.open{ partitions = false })
    assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
    for id = 1, 50 do
      assert(db:put_row{ table = "t", primary_key = { { "id", id } }, columns = { k = "a", l = id, s = "v" .. id % 5 } })
    end
    assert(db:create_search_index{ table = "t", index = "ix", schema = SCHEMA })
    local q = { bool = { must = { { term = { field_name = "k", term = "a" } } }, filter = { { range = { field_name = "l", from = 10, to = 20 } } } } }
    local function ask()
      return assert(db:search{ table = "t", index = "ix", query = q, limit = 100, get_total_count = true })
    end
    -- auto: arrays read after dv.QUIET searches on one content
    docvalues.mode = "auto"
    local h0 = docvalues.stats.hits
    for _ = 1, docvalues.QUIET - 1 do assert.are.equal(9, ask().total_count) end
    assert.are.equal(h0, docvalues.stats.hits)
    assert.are.equal(9, ask().total_count)
    assert.are.equal(h0 + 1, docvalues.stats.hits)
    assert(docvalues.bytes(db) > 0)
    -- a write: the next search is SQL's and sees it
    assert(db:put_row{ table = "t", primary_key = { { "id", 15 } }, columns = { k = "b", l = 15 } })
    assert.are.equal(8, ask().total_count)
    assert.are.equal(h0 + 1, docvalues.stats.hits)
    -- a write before every search: the arrays are never read again
    local b0 = docvalues.stats.builds
    for i = 1, 2 * docvalues.QUIET do
      assert(db:put_row{ table = "t", primary_key = { { "id", 100 + i } }, columns = { k = "c", l = 1 } })
      assert.are.equal(8, ask().total_count)
    end
    assert.are.equal(b0, docvalues.stats.builds)
    assert.are.equal(h0 + 1, docvalues.stats.hits)
    assert.are.equal(0, docvalues.bytes(db))
    -- a write the searching connection makes and rolls back, then a
    -- search in a transaction of its own: SQL (never the arrays)
    docvalues.mode = "force"
    assert.are.equal(8, ask().total_count)
    local h1 = docvalues.stats.hits
    assert(db.h:begin(false))
    assert(db:put_row{ table = "t", primary_key = { { "id", 16 } }, columns = { k = "b", l = 16 } })
    assert.are.equal(7, ask().total_count)
    assert.are.equal(h1, docvalues.stats.hits)
    assert(db.h:rollback())
    assert.are.equal(8, ask().total_count)
    -- a LONG column holding a REAL (a damaged or foreign value): unfit, SQL
    local ix = db:_search_defs().t.ix
    local col = ix.def.byname.l.col
    assert(require("otskit.core").sql.exec(db.h, ("UPDATE %sdoc SET %s = 12.5 WHERE %s = 12"):format(ix.p, col, col)))
    local h2 = docvalues.stats.hits
    assert.are.equal(8, ask().total_count)
    assert.are.equal(h2, docvalues.stats.hits)
    db:close()
  end)

  it("a column read that SQLite fails answers that failure (not out of memory, not unfit)", function()
    local dvc = require("otskit.core").dv
    local db = assert(store.open{ path = ":memory:" })
    -- abs() of the smallest int64 fails while stepping (SQLITE_ERROR, 1)
    for _, kind in ipairs({ "i64", "f64", "ord" }) do
      local ok, r, msg, code = pcall(dvc.column, db.h, "SELECT 0, abs(-9223372036854775807 - 1)", kind, 4)
      assert.is_true(ok, tostring(r))
      assert.is_nil(r)
      assert.are.equal("KVError", code)
      assert.matches("integer overflow", msg)
    end
    -- an unfit value is still unfit, a fit one a column
    assert.are.same({ nil, "unfit" }, { dvc.column(db.h, "SELECT 0, 'x'", "i64", 4) })
    assert.is_truthy(dvc.column(db.h, "SELECT 0, 5", "i64", 4))
    db:close()
  end)
end)
