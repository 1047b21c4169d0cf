-- spec/search_remember_spec.lua -- the SQL texts a search remembers per
-- query shape (otskit.store.search.query's memos: a range's condition, a
-- driving leaf's texts, the search's WHERE, top_rows' statement on a
-- value index) are the texts built afresh: random queries (ranges of
-- every shape -- sides, flags, a typed INTEGER beyond 2^53 bound as text
-- on LuaJIT --, terms, bools whose leaves take other parameter numbers)
-- compiled with the memos warm from the queries before them compile to
-- the same condition, score, parameters and driver record as after
-- query.forget(); and random searches with aggregations answer alike
-- both ways.
local store = require "otskit.store"
local cjson = require "cjson.safe"
local helper = require "helper"
local query = require "otskit.store.search.query"

local function pick(r, t) return t[r.int(1, #t)] end

local BIG = "9007199254740993" -- 2^53 + 1: decimal text bound as an INTEGER on LuaJIT

local function value(r, f)
  if f == "x" then return r.int(-40, 40) / 4 end
  if f == "dt" then return 1700000000000 + r.int(0, 50) * 3600000 end
  if r.int(1, 8) == 1 then return store.integer(BIG) end
  return r.int(-20, 20)
end

local function leaf(r)
  local f = pick(r, { "x", "l", "dt", "la" })
  local k = r.int(1, 6)
  if k == 1 then return { term = { field_name = f, term = value(r, f) } } end
  if k == 2 then return { terms = { field_name = f, terms = { value(r, f), value(r, f) } } } end
  if k == 3 then return { term = { field_name = "k", term = pick(r, { "a", "b" }) } } end
  local q = { field_name = f }
  if r.int(1, 3) > 1 then q.include_lower = r.int(0, 1) == 1 end
  if r.int(1, 3) > 1 then q.include_upper = r.int(0, 1) == 1 end
  if r.int(1, 4) > 1 then q.from = value(r, f) end
  if r.int(1, 4) > 1 then q.to = value(r, f) end
  return { range = q }
end

local function random_query(r, depth)
  if depth > 1 or r.int(1, 3) > 1 then return leaf(r) end
  local b = {}
  for _, k in ipairs({ "must", "filter", "must_not", "should" }) do
    if r.int(1, 2) == 1 then
      b[k] = {}
      for i = 1, r.int(1, 3) do b[k][i] = random_query(r, depth + 1) end
    end
  end
  return { bool = b }
end

-- what a compile gives: its condition, score, parameters and driver
local function compiled(def, p, q, drive)
  local ctx = query.ctx(def, p)
  ctx.drive, ctx.top = drive, drive
  local cond, score, code = ctx:compile(q, "d", nil, 0)
  local from = ctx.from
  return cjson.encode({ cond = cond or false, score = score or false, code = code or false, binds = ctx.binds,
    from = from and { tbl = from.tbl, cond = from.cond, vcond = from.vcond, bounds = from.bounds } or false,
    cols = ctx.cols or false, w = cond and query.with_driver(cond) or false,
    wo = cond and query.without_driver(cond) or false })
end

local function new_db(r)
  local db = assert(store.open{})
  assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
  assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = {
    { field_name = "x", field_type = "DOUBLE", enable_sort_and_agg = true },
    { field_name = "l", field_type = "LONG", enable_sort_and_agg = true },
    { field_name = "k", field_type = "KEYWORD", enable_sort_and_agg = true },
    { field_name = "dt", field_type = "DATE", enable_sort_and_agg = true, date_formats = { "epoch_millis" } },
    { field_name = "la", field_type = "LONG", is_array = true, enable_sort_and_agg = true },
  } } })
  for id = 1, r.int(5, 40) do
    local c = {}
    if r.int(1, 10) <= 8 then c.x = r.int(-40, 40) / 4 end
    if r.int(1, 10) <= 8 then c.l = r.int(-20, 20) end
    if r.int(1, 10) <= 8 then c.k = pick(r, { "a", "b", "c" }) end
    if r.int(1, 10) <= 6 then c.dt = 1700000000000 + r.int(0, 50) * 3600000 end
    if r.int(1, 10) <= 5 then c.la = cjson.encode({ r.int(-5, 5), r.int(-5, 5) }) end
    assert(db:put_row{ table = "t", primary_key = { { "id", id } }, columns = c })
  end
  return db
end

describe("otskit.store search: remembered SQL texts", function()
  it("random queries compile to the same texts, parameters and driver with the memos warm as afresh", function()
    local trials = helper.trials(60)
    for trial = 1, trials do
      local r = helper.rng(7300 + trial)
      local db = new_db(r)
      local ix = db:_search_defs().t.ix
      -- (every query compiled with the memos the ones before it left,
      -- then each afresh)
      local qs, warm = {}, {}
      for i = 1, 40 do
        qs[i] = { random_query(r, 0), r.int(1, 4) > 1 }
        warm[i] = compiled(ix.def, ix.p, qs[i][1], qs[i][2])
      end
      for i, q in ipairs(qs) do
        query.forget()
        assert.are.equal(compiled(ix.def, ix.p, q[1], q[2]), warm[i], cjson.encode(q[1]))
      end
      db:close()
    end
  end)

  it("random searches with top_rows and other aggregations answer alike with the memos warm and afresh", function()
    local trials = helper.trials(30)
    for trial = 1, trials do
      local r = helper.rng(7400 + trial)
      local db = new_db(r)
      local reqs, warm = {}, {}
      for i = 1, 12 do
        local q = r.int(1, 5) > 1 and random_query(r, 0) or nil
        local fs = { field_name = pick(r, { "x", "l", "k", "dt" }) }
        if r.int(1, 2) == 1 then fs.order = pick(r, { "ASC", "DESC" }) end
        local req = { table = "t", index = "ix", query = q, limit = r.int(0, 4), get_total_count = r.int(0, 1) == 1,
          aggs = { { name = "t", type = "top_rows", limit = r.int(1, 5), sort = { { field_sort = fs } } },
            { name = "s", type = "sum", field_name = pick(r, { "x", "l", "la" }) },
            { name = "c", type = "count", field_name = pick(r, { "x", "l", "k" }) } } }
        if r.int(1, 2) == 1 then
          req.group_bys = { { name = "g", type = "range", field_name = pick(r, { "x", "l" }),
            ranges = { { to = 0 }, { from = 0, to = 5 }, { from = 5 } } } }
        end
        reqs[i] = req
        local a, am, ac = db:search(req)
        warm[i] = cjson.encode({ a or false, am or false, ac or false })
      end
      for i, req in ipairs(reqs) do
        query.forget()
        local b, bm, bc = db:search(req)
        assert.are.equal(cjson.encode({ b or false, bm or false, bc or false }), warm[i], cjson.encode(req))
      end
      db:close()
    end
  end)
end)
