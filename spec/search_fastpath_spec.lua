-- spec/search_fastpath_spec.lua -- the search paths that read a value
-- index alone (a query that is one leaf on a single-valued top-level
-- field, or no query: otskit.store.search.agg's env.leaf / agg.ALL, the
-- range group-by's intersected bounds, top_rows' walk of the value index,
-- the count on its own or taken from a page that ended short, the page
-- of keys decoded in C or read row by row) answer as the
-- general path does: each random search is asked as is and again with a
-- clause every row meets (an exists on a field every row has) beside it,
-- which takes the general path; aggregations, group-bys, the rows of
-- each page and the total count must be the same (with and without an
-- index time to live). Refusals too: a request
-- one path refuses the other refuses with the same code.
local store = require "otskit.store"
local cjson = require "cjson.safe"
local helper = require "helper"

local function enc(v) return tostring(cjson.encode(v)) end

local KW = { "a", "ab", "b", "ba", "c", "k1", "k2" }

local function pick(r, t) return t[r.int(1, #t)] end

local function random_row(r)
  local c = { all = 1 }
  if r.int(1, 10) <= 7 then c.x = r.int(-40, 40) / 4 end
  if r.int(1, 10) <= 7 then c.l = r.int(-20, 20) end
  if r.int(1, 10) <= 7 then c.k = pick(r, KW) end
  if r.int(1, 10) <= 5 then c.dt = 1700000000000 + r.int(0, 50) * 3600000 end
  if r.int(1, 10) <= 5 then
    local a = {}
    for i = 1, r.int(0, 3) do a[i] = r.int(-5, 5) end
    c.la = cjson.encode(a)
  end
  return c
end

local function num_leaf(r, f)
  local lo, hi
  if f == "x" then lo, hi = r.int(-40, 40) / 4, r.int(-40, 40) / 4
  elseif f == "l" then lo, hi = r.int(-20, 20), r.int(-20, 20)
  else lo, hi = 1700000000000 + r.int(0, 50) * 3600000, 1700000000000 + r.int(0, 50) * 3600000 end
  local k = r.int(1, 4)
  if k == 1 then return { term = { field_name = f, term = lo } } end
  if k == 2 then return { terms = { field_name = f, terms = { lo, hi } } } end
  local q = { field_name = f, include_lower = r.int(0, 1) == 1, include_upper = r.int(0, 1) == 1 }
  if r.int(1, 4) > 1 then q.from = lo end
  if r.int(1, 4) > 1 then q.to = hi end
  return { range = q }
end

local function leaf(r)
  local k = r.int(1, 7)
  if k == 1 then return nil end -- every row: agg.ALL
  if k == 7 then return { exists = { field_name = pick(r, { "x", "l", "k", "dt" }) } } end
  if k == 2 then
    local j = r.int(1, 3)
    if j == 1 then return { term = { field_name = "k", term = pick(r, KW) } } end
    if j == 2 then return { terms = { field_name = "k", terms = { pick(r, KW), pick(r, KW) } } } end
    return { prefix = { field_name = "k", prefix = pick(r, { "a", "b", "k", "" }) } }
  end
  return num_leaf(r, pick(r, { "x", "x", "l", "dt" }))
end

local function numf(r) return pick(r, { "x", "l", "dt", "la" }) end

local function aggs_of(r)
  local out = {}
  for i = 1, r.int(1, 6) do
    local k = r.int(1, 8)
    local a = { name = "a" .. i }
    if k == 1 then a.type, a.field_name = "count", pick(r, { "x", "l", "k", "la", "dt" })
    elseif k == 2 then a.type, a.field_name = "distinct_count", pick(r, { "x", "l", "k", "la" })
    elseif k <= 5 then
      a.type, a.field_name = pick(r, { "sum", "avg", "min", "max" }), numf(r)
      if r.int(1, 3) == 1 then a.missing = r.int(-3, 3) end
    elseif k == 6 then
      a.type, a.field_name = "percentiles", numf(r)
      a.percentiles = { 0, r.int(1, 99), 50, 100 }
      if r.int(1, 4) == 1 then a.missing = r.int(-3, 3) end
    else
      a.type, a.limit = "top_rows", r.int(1, 5)
      local fs = { field_name = pick(r, { "x", "l", "k", "dt" }) }
      if r.int(1, 2) == 1 then fs.order = pick(r, { "ASC", "DESC" }) end
      if r.int(1, 3) == 1 then fs.mode = pick(r, { "MIN", "MAX" }) end
      a.sort = { { field_sort = fs } }
    end
    out[i] = a
  end
  return out
end

local function gbs_of(r)
  local out = {}
  for i = 1, r.int(1, 5) do
    local k = r.int(1, 6)
    local g = { name = "g" .. i }
    if k == 6 then
      g.type, g.field_name = "date_histogram", "dt"
      g.interval = { value = r.int(1, 3), unit = pick(r, { "HOUR", "DAY", "MONTH" }) }
      if r.int(1, 3) == 1 then g.min_doc_count = r.int(0, 2) end
      if r.int(1, 3) == 1 then g.missing = 1700000000000 + r.int(0, 50) * 3600000 end
      if r.int(1, 4) == 1 then g.time_zone = pick(r, { "+05:30", "-08:00" }) end
    elseif k == 1 then
      g.type, g.field_name = "histogram", pick(r, { "x", "l", "dt", "la" })
      g.interval = g.field_name == "dt" and 3600000 * r.int(1, 5) or r.int(1, 4)
      if r.int(1, 3) == 1 then g.offset = g.field_name == "dt" and 0 or r.int(-2, 2) end
      if r.int(1, 3) == 1 then g.min_doc_count = r.int(0, 2) end
      if r.int(1, 4) == 1 and g.field_name ~= "dt" then g.missing = r.int(-3, 3) end
    elseif k == 2 then
      g.type, g.field_name = "range", pick(r, { "x", "l", "la" })
      local a, b = r.int(-10, 10), r.int(-10, 10)
      if a > b then a, b = b, a end
      g.ranges = { { to = a }, { from = a, to = b }, { from = b } }
    elseif k == 3 then
      g.type = "filter"
      g.filters = { num_leaf(r, "x"), { term = { field_name = "k", term = pick(r, KW) } } }
    elseif k == 4 then
      g.type, g.field_name, g.size = "field", pick(r, { "k", "l" }), 50
      g.sub_aggs = { { name = "s", type = "sum", field_name = "x" }, { name = "c", type = "count", field_name = "l" } }
    else
      g.type, g.size = "composite", 1000
      g.sources = { { name = "k", type = "field", field_name = "k" },
        { name = "h", type = "histogram", field_name = pick(r, { "x", "l" }), interval = r.int(1, 5) } }
    end
    out[i] = g
  end
  return out
end

-- the same answer (numbers within 1e-9 relative: a sum's order)
local function same(a, b, path)
  if type(a) == "number" and type(b) == "number" then
    if a == b or math.abs(a - b) <= 1e-9 * math.max(1, math.abs(a), math.abs(b)) then return true end
    return false, path
  end
  if type(a) ~= type(b) then return false, path end
  if type(a) ~= "table" then return a == b, path end
  for k, v in pairs(a) do
    local ok, p = same(v, b[k], path .. "." .. tostring(k))
    if not ok then return false, p end
  end
  for k in pairs(b) do if a[k] == nil then return false, path .. "." .. tostring(k) end end
  return true
end

local function keys_of(res)
  local out = {}
  for i, row in ipairs(res.rows or {}) do out[i] = row.primary_key[1][2] end
  return out
end

describe("otskit.store search: the value-index paths answer as the general path", function()
  it("random one-leaf searches with aggregations, group-bys and pages, with and without a clause every row meets", function()
    local trials = helper.trials(40)
    local compared, fast_rows = 0, 0
    for trial = 1, trials do
      local r = helper.rng(9100 + trial)
      -- (every other trial: an index time to live, rows written over a
      -- day, some expired by the searches)
      local now = 1700000000
      local db = assert(store.open{ clock = function() return now end })
      assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
      assert(db:create_search_index{ table = "t", index = "ix", time_to_live = trial % 2 == 0 and 86400 or nil,
        schema = { field_schemas = {
        { field_name = "x", field_type = "DOUBLE", enable_sort_and_agg = true },
        { field_name = "l", field_type = "LONG", enable_sort_and_agg = true },
        { field_name = "k", field_type = "KEYWORD", enable_sort_and_agg = true },
        { field_name = "dt", field_type = "DATE", enable_sort_and_agg = true, date_formats = { "epoch_millis" } },
        { field_name = "la", field_type = "LONG", is_array = true, enable_sort_and_agg = true },
        { field_name = "all", field_type = "LONG", enable_sort_and_agg = true },
      } } })
      for id = 1, r.int(0, 60) do
        assert(db:put_row{ table = "t", primary_key = { { "id", id } }, columns = random_row(r) })
        now = now + r.int(0, 3000)
      end
      now = now + r.int(0, 86400)
      for _ = 1, 15 do
        local q = leaf(r)
        local every = { exists = { field_name = "all" } }
        local slow = q and { bool = { must = { q, every } } } or { bool = { must = { every }, filter = { every } } }
        local req = { table = "t", index = "ix", limit = r.int(0, 6), offset = r.int(0, 3), get_total_count = r.int(0, 1) == 1 }
        -- (with columns: the page read row by row; without, its keys decoded
        -- in C; either way a page short of limit + 1 rows gives the count)
        if r.int(1, 3) == 1 then req.columns_to_get = { return_type = "RETURN_ALL" } end
        if r.int(1, 2) == 1 then req.aggs = aggs_of(r) end
        if r.int(1, 2) == 1 then req.group_bys = gbs_of(r) end
        local function ask(query)
          local q2 = {}
          for k, v in pairs(req) do q2[k] = v end
          q2.query = query
          return db:search(q2)
        end
        local a, am, ac = ask(q)
        local b, bm, bc = ask(slow)
        local what = enc({ query = q, aggs = req.aggs, group_bys = req.group_bys })
        assert(a ~= nil == (b ~= nil), ("%s: %s / %s"):format(what, tostring(am), tostring(bm)))
        if not a then
          assert.are.equal(bc, ac, what)
        else
          local ok, p = same(a.aggs, b.aggs, "aggs")
          assert(ok, what .. ": " .. tostring(p) .. "\n" .. enc(a.aggs) .. "\n" .. enc(b.aggs))
          ok, p = same(a.group_bys, b.group_bys, "group_bys")
          assert(ok, what .. ": " .. tostring(p) .. "\n" .. enc(a.group_bys) .. "\n" .. enc(b.group_bys))
          assert.are.same(keys_of(b), keys_of(a), what)
          assert.are.equal(b.total_count, a.total_count, what)
          -- the rest of the matches, page by page (token)
          local ta, tb = a.next_token, b.next_token
          assert.are.equal(tb == nil, ta == nil, what)
          local pages = 0
          while ta and pages < 30 do
            local na = assert(db:search{ table = "t", index = "ix", query = q, token = ta, limit = 4 })
            local nb = assert(db:search{ table = "t", index = "ix", query = slow, token = tb, limit = 4 })
            assert.are.same(keys_of(nb), keys_of(na), what)
            fast_rows = fast_rows + #na.rows
            ta, tb = na.next_token, nb.next_token
            assert.are.equal(tb == nil, ta == nil, what)
            pages = pages + 1
          end
          compared = compared + 1
        end
      end
      db:close()
    end
    assert(compared > trials * 5, "too few searches answered: " .. compared)
  end)

  it("top_rows refuses a sorter with a key beside field_sort on the value-index path too", function()
    -- (the path once asked only whether field_sort was the table's last
    -- key in next() order: on Lua 5.4 a stray key before it was ignored)
    local db = assert(store.open{})
    assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
    assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = {
      { field_name = "x", field_type = "LONG", enable_sort_and_agg = true } } } })
    for i = 1, 5 do assert(db:put_row{ table = "t", primary_key = { { "id", i } }, columns = { x = i } }) end
    for _, query in ipairs({ false, { range = { field_name = "x", from = 0 } } }) do
      for _, extra in ipairs({ "a", "b", "order", "type", "zz", "x", "field_sortx", "pk_sort" }) do
        local s = { field_sort = { field_name = "x" } }
        s[extra] = 1
        local res, msg, code = db:search{ table = "t", index = "ix", limit = 0, query = query or nil,
          aggs = { { name = "t", type = "top_rows", limit = 2, sort = { s } } } }
        assert.is_nil(res, extra)
        assert.are.equal("OTSParameterInvalid", code, extra .. ": " .. tostring(msg))
      end
      local res = assert(db:search{ table = "t", index = "ix", limit = 0, query = query or nil,
        aggs = { { name = "t", type = "top_rows", limit = 2, sort = { { field_sort = { field_name = "x", order = "DESC" } } } } } })
      assert.are.same({ 5, 4 }, { res.aggs[1].rows[1].primary_key[1][2], res.aggs[1].rows[2].primary_key[1][2] })
    end
    db:close()
  end)
end)
