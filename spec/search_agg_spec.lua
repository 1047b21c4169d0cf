-- spec/search_agg_spec.lua -- search analytics (otskit.store.search.agg,
-- .groupby) against a brute-force Lua model over random documents:
-- avg, min, max, sum, count, distinct_count, percentiles with and without
-- missing values, on single values and arrays; group_by_field (with a
-- sub-aggregation), range, histogram, filter, composite paging; collapse;
-- count, percentiles, top_rows, range, filter, geo_distance, geo_grid and
-- composite over single-valued fields, over every document and under a
-- one-leaf query (the paths that read a value index alone).
-- Single-valued fields (x, k) take the index's value columns (aggregates
-- and GROUP BYs over p.."doc"), the array n the value tables: both are
-- checked, with sub-aggregations and missing values on each.
local store = require "otskit.store"
local cjson = require "cjson.safe"

local ROUNDS = os.getenv("OTSKIT_QUICK") and 4 or 20

local function close(a, b)
  if a == nil or b == nil then return a == b end
  return math.abs(a - b) <= 1e-9 * math.max(1, math.abs(a), math.abs(b))
end

local function setup(seed)
  math.randomseed(seed)
  local db = assert(store.open{})
  assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
  assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = {
    { field_name = "n", field_type = "LONG", enable_sort_and_agg = true, is_array = true },
    { field_name = "x", field_type = "DOUBLE", enable_sort_and_agg = true },
    { field_name = "k", field_type = "KEYWORD", enable_sort_and_agg = true },
  } } })
  local docs = {}
  for i = 1, math.random(0, 60) do
    local d = { id = i }
    if math.random() < 0.8 then
      d.n = {}
      for j = 1, math.random(1, 3) do d.n[j] = math.random(-20, 20) end
    end
    if math.random() < 0.7 then d.x = math.random(-1000, 1000) / 8 end
    if math.random() < 0.8 then d.k = "k" .. math.random(1, 6) end
    local cols = { x = d.x, k = d.k }
    if d.n then cols.n = cjson.encode(d.n) end
    assert(db:put_row{ table = "t", primary_key = { { "id", i } }, columns = cols })
    docs[#docs + 1] = d
  end
  return db, docs
end

-- the values of field f of document d (a list). The index keeps each
-- distinct value of an array once (p.."num" is keyed by (f, v, doc)), so
-- an array's repeated values count once: the model does the same.
local function vals(d, f)
  local v = d[f]
  if v == nil then return {} end
  if type(v) ~= "table" then return { v } end
  local out, seen = {}, {}
  for _, x in ipairs(v) do if not seen[x] then seen[x] = true; out[#out + 1] = x end end
  return out
end

local function model_agg(docs, a)
  local all = {}
  for _, d in ipairs(docs) do
    local v = vals(d, a.field_name)
    if #v == 0 and a.missing ~= nil then v = { a.missing } end
    for _, x in ipairs(v) do all[#all + 1] = x end
  end
  if a.type == "count" then return #all end
  if a.type == "distinct_count" then
    local s, n = {}, 0
    for _, x in ipairs(all) do if not s[x] then s[x] = true; n = n + 1 end end
    return n
  end
  if a.type == "sum" then local s = 0 for _, x in ipairs(all) do s = s + x end return s end
  table.sort(all)
  if a.type == "percentiles" then -- linear interpolation between the closest ranks
    local out = {}
    for i, p in ipairs(a.percentiles) do
      if #all > 0 then
        local r = p / 100 * (#all - 1) + 1
        local lo = math.floor(r)
        out[i] = all[lo] + (all[math.min(lo + 1, #all)] - all[lo]) * (r - lo)
      end
    end
    return out
  end
  if #all == 0 then return nil end
  if a.type == "min" then return all[1] end
  if a.type == "max" then return all[#all] end
  local s = 0
  for _, x in ipairs(all) do s = s + x end
  return s / #all
end

local function check(db, all)
  -- every document, or those a query keeps (the value tables read through
  -- the matched documents)
  local query, docs = nil, all
  if math.random() < 0.5 then
    local lo = math.random(-60, 60)
    query, docs = { range = { field_name = "x", from = lo, include_lower = true } }, {}
    for _, d in ipairs(all) do if d.x and d.x >= lo then docs[#docs + 1] = d end end
  end
  local aggs, expect = {}, {}
  for i = 1, 5 do
    local ty = ({ "avg", "min", "max", "sum", "count", "distinct_count", "percentiles" })[math.random(7)]
    local f = math.random() < 0.5 and "n" or "x"
    local a = { name = "a" .. i, type = ty, field_name = f }
    if ty == "percentiles" then a.percentiles = { 0, 25, 50, 90, 100 } end
    if ty ~= "count" and math.random() < 0.5 then a.missing = math.random(-5, 5) end
    aggs[i], expect[i] = a, model_agg(docs, a)
  end
  local lo = math.random(-20, 10)
  local fsize, fmode = math.random(1, 7), math.random(3)
  local fsorts = { nil, { { row_count_sort = { order = "ASC" } } }, { { group_key_sort = { order = "DESC" } } } }
  local miss2 = math.random() < 0.5 and math.random(-5, 5) or nil
  local subs = { { name = "a", type = "avg", field_name = "x", missing = miss2 }, { name = "mi", type = "min", field_name = "x" },
    { name = "ma", type = "max", field_name = "x", missing = miss2 }, { name = "c", type = "count", field_name = "x" },
    { name = "dc", type = "distinct_count", field_name = "x", missing = miss2 }, { name = "su", type = "sum", field_name = "x" } }
  local res = assert(db:search{ table = "t", index = "ix", limit = 0, get_total_count = true, aggs = aggs, query = query,
    group_bys = {
      { name = "f", type = "field", field_name = "k", size = fsize, sort = fsorts[fmode],
        sub_aggs = { { name = "s", type = "sum", field_name = "n" } } },
      { name = "r", type = "range", field_name = "n", ranges = { { from = lo, to = lo + 7 }, { from = lo } } },
      { name = "h", type = "histogram", field_name = "n", interval = 5, min_doc_count = 1 },
      { name = "q", type = "filter", filters = { { range = { field_name = "x", from = 0 } }, { exists = { field_name = "k" } } } },
      { name = "f2", type = "field", field_name = "k", size = 2000, sub_aggs = subs,
        sort = { { sub_agg_sort = { sub_agg_name = "c", order = "DESC" } }, { group_key_sort = { order = "DESC" } } } },
    } })
  -- (at most 5 group-bys a level: the sixth in a search of its own)
  res.group_bys[6] = assert(db:search{ table = "t", index = "ix", limit = 0, query = query, group_bys = {
      { name = "h2", type = "histogram", field_name = "x", interval = 20, min_doc_count = 1, missing = miss2 } } }).group_bys[1]
  assert.are.equal(#docs, res.total_count)
  for i, a in ipairs(aggs) do
    local got = res.aggs[i].value
    if a.type == "percentiles" then
      for j, it in ipairs(res.aggs[i].items) do
        assert.are.equal(a.percentiles[j], it.key)
        assert(close(it.value, expect[i][j]), ("percentile %s: %s vs %s"):format(it.key, tostring(it.value), tostring(expect[i][j])))
      end
    else
      assert(close(got, expect[i]), ("%s(%s missing %s): %s vs model %s"):format(a.type, a.field_name,
        tostring(a.missing), tostring(got), tostring(expect[i])))
    end
  end
  -- field: per keyword, rows and the sum of n
  local by = {}
  for _, d in ipairs(docs) do
    if d.k then
      local b = by[d.k] or { n = 0, s = 0 }
      by[d.k] = b
      b.n = b.n + 1
      for _, x in ipairs(vals(d, "n")) do b.s = b.s + x end
    end
  end
  local fr = res.group_bys[1].items
  local order = {}
  for key, b in pairs(by) do order[#order + 1] = { key = key, n = b.n } end
  table.sort(order, function(a, b)
    if fmode == 3 then return a.key > b.key end
    if a.n ~= b.n then if fmode == 1 then return a.n > b.n end return a.n < b.n end
    return a.key < b.key
  end)
  assert.are.equal(math.min(fsize, #order), #fr)
  for i, it in ipairs(fr) do
    assert.are.equal(order[i].key, it.key)
    assert.are.equal(by[it.key].n, it.row_count)
    assert(close(by[it.key].s, it.sub_aggs[1].value))

  end
  -- range: rows with a value in [from, to)
  local function count(pred)
    local c = 0
    for _, d in ipairs(docs) do
      local hit = false
      for _, x in ipairs(vals(d, "n")) do if pred(x) then hit = true end end
      if hit then c = c + 1 end
    end
    return c
  end
  local rr = res.group_bys[2].items
  assert.are.equal(count(function(x) return x >= lo and x < lo + 7 end), rr[1].row_count)
  assert.are.equal(count(function(x) return x >= lo end), rr[2].row_count)
  -- histogram: every bucket of 5 that has rows, ascending
  local hs = {}
  for _, d in ipairs(docs) do
    local seen = {}
    for _, x in ipairs(vals(d, "n")) do
      local b = math.floor(x / 5) * 5
      if not seen[b] then seen[b] = true; hs[b] = (hs[b] or 0) + 1 end
    end
  end
  local keys = {}
  for b in pairs(hs) do keys[#keys + 1] = b end
  table.sort(keys)
  local hi = res.group_bys[3].items
  assert.are.equal(#keys, #hi)
  for i, b in ipairs(keys) do
    assert.are.equal(b, hi[i].key)
    assert.are.equal(hs[b], hi[i].row_count)
  end
  -- filter
  local f1, f2 = 0, 0
  for _, d in ipairs(docs) do
    if d.x and d.x >= 0 then f1 = f1 + 1 end
    if d.k then f2 = f2 + 1 end
  end
  assert.are.equal(f1, res.group_bys[4].items[1].row_count)
  assert.are.equal(f2, res.group_bys[4].items[2].row_count)
  -- field over a value column, every sub-aggregation in the same GROUP BY
  local groups, names = {}, {}
  for _, d in ipairs(docs) do
    if d.k then
      if not groups[d.k] then groups[d.k] = {}; names[#names + 1] = d.k end
      table.insert(groups[d.k], d)
    end
  end
  local want = {}
  for _, k in ipairs(names) do
    local subv = {}
    for j, a in ipairs(subs) do subv[j] = model_agg(groups[k], a) end
    want[#want + 1] = { key = k, n = #groups[k], subs = subv }
  end
  table.sort(want, function(a, b)
    if a.subs[4] ~= b.subs[4] then return a.subs[4] > b.subs[4] end
    return a.key > b.key
  end)
  local f2r = res.group_bys[5].items
  assert.are.equal(#want, #f2r)
  for i, w in ipairs(want) do
    assert.are.equal(w.key, f2r[i].key)
    assert.are.equal(w.n, f2r[i].row_count)
    for j, a in ipairs(subs) do
      assert.are.equal(a.name, f2r[i].sub_aggs[j].name)
      assert(close(w.subs[j], f2r[i].sub_aggs[j].value), ("group %s %s: %s vs model %s"):format(w.key, a.name,
        tostring(f2r[i].sub_aggs[j].value), tostring(w.subs[j])))
    end
  end
  -- histogram over a value column, missing values in their bucket
  local h2 = {}
  for _, d in ipairs(docs) do
    local x = d.x
    if x == nil then x = miss2 end
    if x ~= nil then local b = math.floor(x / 20) * 20; h2[b] = (h2[b] or 0) + 1 end
  end
  local k2 = {}
  for b in pairs(h2) do k2[#k2 + 1] = b end
  table.sort(k2)
  local h2r = res.group_bys[6].items
  assert.are.equal(#k2, #h2r)
  for i, b in ipairs(k2) do
    assert.are.equal(b, h2r[i].key)
    assert.are.equal(h2[b], h2r[i].row_count)
  end
end

describe("search analytics vs a brute-force model", function()
  it("aggregations and group-bys over random documents", function()
    for round = 1, ROUNDS do
      local db, docs = setup(round * 7919)
      check(db, docs)
      if round % 2 == 0 then
        -- an index made before the value columns (p.."doc" without them):
        -- every aggregation from the value tables, and writes still index
        local sql = require("otskit.core").sql
        assert(sql.exec(db.h, "ALTER TABLE s1_doc DROP COLUMN a2; ALTER TABLE s1_doc DROP COLUMN a3"))
        db.sx = nil
        local d = { id = #docs + 1, x = 3.5, k = "k1", n = { 1, 2 } }
        assert(db:put_row{ table = "t", primary_key = { { "id", d.id } }, columns = { x = d.x, k = d.k, n = cjson.encode(d.n) } })
        docs[#docs + 1] = d
        assert.is_false(db:_search_defs().t.ix.def.cols)
        check(db, docs)
      end
      db:close()
    end
  end)

  it("composite pages cover every (k, n bucket) pair once; collapse keeps one row per k", function()
    for round = 1, ROUNDS do
      local db, docs = setup(round * 104729)
      local want, total = {}, 0
      for _, d in ipairs(docs) do
        if d.k then
          local seen = {}
          for _, x in ipairs(vals(d, "n")) do
            local key = d.k .. "|" .. math.floor(x / 10) * 10
            if not seen[key] then seen[key] = true; want[key] = (want[key] or 0) + 1 end
          end
        end
      end
      local tok, got = nil, {}
      repeat
        local r = assert(db:search{ table = "t", index = "ix", limit = 0, group_bys = { { name = "c", type = "composite",
          size = math.random(1, 5), next_token = tok, sources = { { name = "k", type = "field", field_name = "k" },
            { name = "h", type = "histogram", field_name = "n", interval = 10 } } } } })
        local g = r.group_bys[1]
        for _, it in ipairs(g.items) do
          local key = it.keys[1] .. "|" .. it.keys[2]
          assert.is_nil(got[key])
          got[key] = it.row_count
          total = total + 1
        end
        tok = g.next_token
      until not tok
      for k, v in pairs(want) do assert.are.equal(v, got[k], k) end
      for k in pairs(got) do assert(want[k], k) end
      local ks, nk = {}, 0
      for _, d in ipairs(docs) do
        local key = d.k or "\0none"
        if not ks[key] then ks[key] = true; nk = nk + 1 end
      end
      local c = assert(db:search{ table = "t", index = "ix", limit = 100, collapse = { field_name = "k" } })
      assert.are.equal(nk, #c.rows)
      db:close()
    end
  end)

  it("range, filter, geo_distance, geo_grid, top_rows, count, percentiles and composite over single-valued fields", function()
    -- over every document and under a query that is one range leaf on x
    -- (both read the value index alone where they can; other queries the
    -- value columns), against the model
    local geohash = require "otskit.store.search.geohash"
    local sql = require("otskit.core").sql
    for round = 1, ROUNDS * 3 do
      math.randomseed(round * 31337)
      local db = assert(store.open{})
      assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
      assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = {
        { field_name = "x", field_type = "DOUBLE", enable_sort_and_agg = true },
        { field_name = "k", field_type = "KEYWORD", enable_sort_and_agg = true },
        { field_name = "g", field_type = "GEO_POINT", enable_sort_and_agg = true },
      } } })
      local all = {}
      for i = 1, math.random(0, 80) do
        local d = { id = i }
        if math.random() < 0.7 then d.x = math.random(-100, 100) / 4 end
        if math.random() < 0.8 then d.k = "k" .. math.random(1, 4) end
        if math.random() < 0.8 then d.lat, d.lon = math.random(-800, 800) / 10, math.random(-1700, 1700) / 10 end
        assert(db:put_row{ table = "t", primary_key = { { "id", i } }, columns = { x = d.x, k = d.k,
          g = d.lat and ("%.1f,%.1f"):format(d.lat, d.lon) or nil } })
        all[#all + 1] = d
      end
      local query, docs = nil, all
      local r1 = math.random(-10, 10)
      if round % 3 == 2 then -- a leaf on another field: the value columns of its documents
        query, docs = { term = { field_name = "k", term = "k1" } }, {}
        for _, d in ipairs(all) do if d.k == "k1" then docs[#docs + 1] = d end end
      elseif round % 3 == 1 then
        local lo, hi = math.random(-30, 10), math.random(-10, 30)
        local il, iu = math.random() < 0.5, math.random() < 0.5
        if math.random() < 0.3 then lo = r1 end -- (a bound the range group-by shares)
        query, docs = { range = { field_name = "x", from = lo, to = hi, include_lower = il, include_upper = iu } }, {}
        for _, d in ipairs(all) do
          if d.x and (d.x > lo or il and d.x == lo) and (d.x < hi or iu and d.x == hi) then docs[#docs + 1] = d end
        end
      end
      local olat, olon = math.random(-60, 60), math.random(-150, 150)
      local d1, d2 = math.random(1, 5000) * 1000, math.random(5000, 15000) * 1000
      local p = math.random(1, 3)
      local desc = math.random() < 0.5
      local res = assert(db:search{ table = "t", index = "ix", limit = 0, query = query,
        aggs = { { name = "n", type = "count", field_name = "x" },
          { name = "t", type = "top_rows", limit = 3, sort = { { field_sort = { field_name = "x", order = desc and "DESC" or "ASC" } } } },
          { name = "p", type = "percentiles", field_name = "x", percentiles = { 0, 10, 50, 99, 100 } } },
        group_bys = {
          { name = "r", type = "range", field_name = "x", ranges = { { to = r1 }, { from = r1, to = r1 + 5 }, { from = r1 } } },
          { name = "f", type = "filter", filters = { { term = { field_name = "k", term = "k2" } }, { range = { field_name = "x", from = r1, include_lower = true } } } },
          { name = "gd", type = "geo_distance", field_name = "g", origin = { lat = olat, lon = olon },
            ranges = { { from = 0, to = d1 }, { from = d1, to = d2 }, { from = d2 } } },
          { name = "gg", type = "geo_grid", field_name = "g", precision = p, size = 4 },
          { name = "gs", type = "geo_grid", field_name = "g", precision = p, size = 3,
            sort = { { row_count_sort = { order = "ASC" } }, { group_key_sort = { order = "DESC" } } } },
        } })
      res.group_bys[6] = assert(db:search{ table = "t", index = "ix", limit = 0, query = query, group_bys = {
          { name = "c", type = "composite", size = 2000, sources = { { name = "k", type = "field", field_name = "k" },
            { name = "h", type = "histogram", field_name = "x", interval = 5 } } } } }).group_bys[1]
      -- count, percentiles
      local xs = {}
      for _, d in ipairs(docs) do if d.x then xs[#xs + 1] = d.x end end
      table.sort(xs)
      assert.are.equal(#xs, res.aggs[1].value)
      assert.are.equal(5, #res.aggs[3].items) -- (one item per percentile asked: the loop below checks each)
      for j, it in ipairs(res.aggs[3].items) do
        assert.are.equal(({ 0, 10, 50, 99, 100 })[j], it.key)
        local want
        if #xs > 0 then
          local r = it.key / 100 * (#xs - 1) + 1
          local lo = math.floor(r)
          want = xs[lo] + (xs[math.min(lo + 1, #xs)] - xs[lo]) * (r - lo)
        end
        assert(close(want, it.value), ("percentile %s: %s vs %s"):format(j, tostring(it.value), tostring(want)))
      end
      -- top_rows: by x (documents without x last), then primary key
      local order = {}
      for _, d in ipairs(docs) do order[#order + 1] = d end
      table.sort(order, function(a, b)
        if (a.x == nil) ~= (b.x == nil) then return a.x ~= nil end
        if a.x ~= b.x then if desc then return a.x > b.x end return a.x < b.x end
        return a.id < b.id
      end)
      local tr = res.aggs[2].rows
      assert.are.equal(math.min(3, #docs), #tr)
      for i, row in ipairs(tr) do assert.are.equal(order[i].id, tonumber(row.primary_key[1][2])) end
      -- range, filter
      local function count(pred)
        local c = 0
        for _, d in ipairs(docs) do if pred(d) then c = c + 1 end end
        return c
      end
      local rr = res.group_bys[1].items
      assert.are.equal(count(function(d) return d.x and d.x < r1 end), rr[1].row_count)
      assert.are.equal(count(function(d) return d.x and d.x >= r1 and d.x < r1 + 5 end), rr[2].row_count)
      assert.are.equal(count(function(d) return d.x and d.x >= r1 end), rr[3].row_count)
      assert.are.equal(count(function(d) return d.k == "k2" end), res.group_bys[2].items[1].row_count)
      assert.are.equal(count(function(d) return d.x and d.x >= r1 end), res.group_bys[2].items[2].row_count)
      -- geo_distance (the distance SQLite's geo_dist computes)
      local function dist(d)
        return sql.rows(db.h, "SELECT geo_dist(?1, ?2, ?3, ?4)", { d.lat, d.lon, olat, olon })[1][1]
      end
      local gd = res.group_bys[3].items
      assert.are.equal(count(function(d) return d.lat and dist(d) < d1 end), gd[1].row_count)
      assert.are.equal(count(function(d) return d.lat and dist(d) >= d1 and dist(d) < d2 end), gd[2].row_count)
      assert.are.equal(count(function(d) return d.lat and dist(d) >= d2 end), gd[3].row_count)
      -- geo_grid, default sort (rows descending, then cell) and a given one
      local cells = {}
      for _, d in ipairs(docs) do
        if d.lat then
          local lat, lon = tonumber(("%.1f"):format(d.lat)), tonumber(("%.1f"):format(d.lon))
          local h = geohash.encode(lat, lon, p)
          cells[h] = (cells[h] or 0) + 1
        end
      end
      local cl = {}
      for h, n in pairs(cells) do cl[#cl + 1] = { h, n } end
      table.sort(cl, function(a, b) if a[2] ~= b[2] then return a[2] > b[2] end return a[1] < b[1] end)
      local gg = res.group_bys[4].items
      assert.are.equal(math.min(4, #cl), #gg)
      for i, it in ipairs(gg) do assert.are.same({ cl[i][1], cl[i][2] }, { it.key, it.row_count }) end
      table.sort(cl, function(a, b) if a[2] ~= b[2] then return a[2] < b[2] end return a[1] > b[1] end)
      local gs = res.group_bys[5].items
      assert.are.equal(math.min(3, #cl), #gs)
      for i, it in ipairs(gs) do assert.are.same({ cl[i][1], cl[i][2] }, { it.key, it.row_count }) end
      -- composite: every (k, x bucket) pair in key order
      local pairs_ = {}
      for _, d in ipairs(docs) do
        if d.k and d.x then
          local b = math.floor(d.x / 5) * 5
          local key = d.k .. "\0" .. ("%020.3f"):format(b + 1e9)
          local e = pairs_[key] or { k = d.k, b = b, n = 0 }
          pairs_[key] = e
          e.n = e.n + 1
        end
      end
      local keys = {}
      for key in pairs(pairs_) do keys[#keys + 1] = key end
      table.sort(keys)
      local cp = res.group_bys[6].items
      assert.are.equal(#keys, #cp)
      for i, key in ipairs(keys) do
        local e = pairs_[key]
        assert.are.same({ e.k, e.b, e.n }, { cp[i].keys[1], tonumber(cp[i].keys[2]), cp[i].row_count })
      end
      db:close()
    end
  end)

  it("aggregates and groups by fields inside NESTED fields by their path, as arrays of the row", function()
    -- the rows of the service's own SDK test (one sub-document a row:
    -- Col_Long_Nested 1, 2, 2, 3, 3, 3, 4, 4, 4, 4; Col_Keyword hangzhou x4,
    -- tablestore x6), whose answers were checked against the service, then
    -- rows of several sub-documents and two levels against the model
    local db = assert(store.open{})
    assert(db:create_table{ name = "t", primary_key = { { "pk1", "STRING" } } })
    assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = {
      { field_name = "Col_Keyword", field_type = "KEYWORD", enable_sort_and_agg = true },
      { field_name = "Col_Nested", field_type = "NESTED", field_schemas = {
        { field_name = "Col_Long_Nested", field_type = "LONG", enable_sort_and_agg = true },
        { field_name = "Col_Keyword_Nested", field_type = "KEYWORD", enable_sort_and_agg = true },
        { field_name = "Col_Geo_Nested", field_type = "GEO_POINT", enable_sort_and_agg = true },
        { field_name = "Deep", field_type = "NESTED", field_schemas = {
          { field_name = "x", field_type = "DOUBLE", enable_sort_and_agg = true } } } } },
    } } })
    local longs = { 1, 2, 2, 3, 3, 3, 4, 4, 4, 4 }
    for i = 1, 10 do
      assert(db:put_row{ table = "t", primary_key = { { "pk1", "pk_" .. (i - 1) } }, columns = {
        Col_Keyword = i <= 4 and "hangzhou" or "tablestore",
        Col_Nested = cjson.encode({ { Col_Long_Nested = longs[i] } }) } })
    end
    local res = assert(db:search{ table = "t", index = "ix", limit = 0,
      aggs = { { name = "agg1", type = "avg", field_name = "Col_Nested.Col_Long_Nested" } },
      group_bys = { { name = "group_by1", type = "field", field_name = "Col_Nested.Col_Long_Nested" },
        { name = "g2", type = "field", field_name = "Col_Keyword",
          sub_aggs = { { name = "sub_agg1", type = "avg", field_name = "Col_Nested.Col_Long_Nested" } },
          sub_group_bys = { { name = "sub_group_by1", type = "field", field_name = "Col_Nested.Col_Long_Nested" } } } } })
    assert.are.equal(3, res.aggs[1].value)
    local function kc(items)
      local out = {}
      for i, it in ipairs(items) do out[i] = { it.key, it.row_count } end
      return out
    end
    assert.are.same({ { "4", 4 }, { "3", 3 }, { "2", 2 }, { "1", 1 } }, kc(res.group_bys[1].items))
    local g2 = res.group_bys[2].items
    assert.are.same({ { "tablestore", 6 }, { "hangzhou", 4 } }, kc(g2))
    assert(close(11 / 3, g2[1].sub_aggs[1].value))
    assert(close(2, g2[2].sub_aggs[1].value))
    assert.are.same({ { "4", 4 }, { "3", 2 } }, kc(g2[1].sub_group_bys[1].items))
    assert.are.same({ { "2", 2 }, { "1", 1 }, { "3", 1 } }, kc(g2[2].sub_group_bys[1].items))
    -- the NESTED field itself is refused as the service refuses it
    local r, msg, code = db:search{ table = "t", index = "ix", limit = 0,
      aggs = { { name = "agg1", type = "sum", field_name = "Col_Nested" } } }
    assert.is_nil(r)
    assert.are.equal("OTSParameterInvalid", code)
    assert.matches("field_name:Col_Nested type:nested is invalid, allow %[", msg)
    db:close()

    for round = 1, ROUNDS do
      math.randomseed(round * 7177)
      db = assert(store.open{})
      assert(db:create_table{ name = "t", primary_key = { { "pk1", "STRING" } } })
      assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = {
        { field_name = "k", field_type = "KEYWORD", enable_sort_and_agg = true },
        { field_name = "n", field_type = "NESTED", field_schemas = {
          { field_name = "v", field_type = "LONG", enable_sort_and_agg = true },
          { field_name = "g", field_type = "GEO_POINT", enable_sort_and_agg = true },
          { field_name = "m", field_type = "NESTED", field_schemas = {
            { field_name = "x", field_type = "DOUBLE", enable_sort_and_agg = true } } } } },
      } } })
      local rows = {}
      for i = 1, math.random(0, 30) do
        local row = { k = "k" .. math.random(1, 3), subs = {} }
        for j = 1, math.random(0, 3) do
          local sd = {}
          if math.random() < 0.8 then sd.v = math.random(-5, 5) end
          if math.random() < 0.5 then sd.g = ("%d,%d"):format(math.random(-40, 40), math.random(-100, 100)) end
          if math.random() < 0.7 then
            sd.m = {}
            for q = 1, math.random(1, 2) do sd.m[q] = { x = math.random(-8, 8) / 2 } end
          end
          row.subs[j] = sd
        end
        assert(db:put_row{ table = "t", primary_key = { { "pk1", "r" .. i } }, columns = { k = row.k,
          n = #row.subs > 0 and cjson.encode(row.subs) or nil } })
        rows[i] = row
      end
      -- the model: a row's distinct values of a path
      local function rvals(row, path)
        local out, seen = {}, {}
        for _, sd in ipairs(row.subs) do
          local list = {}
          if path == "n.m.x" then for _, m in ipairs(sd.m or {}) do list[#list + 1] = m.x end
          elseif sd[path:sub(3)] ~= nil then list[1] = sd[path:sub(3)] end
          for _, x in ipairs(list) do if not seen[x] then seen[x] = true; out[#out + 1] = x end end
        end
        return out
      end
      local q = math.random() < 0.5 and { term = { field_name = "k", term = "k1" } } or nil
      local in_q = {}
      for _, row in ipairs(rows) do if not q or row.k == "k1" then in_q[#in_q + 1] = row end end
      local res2 = assert(db:search{ table = "t", index = "ix", limit = 0, query = q,
        aggs = { { name = "s", type = "sum", field_name = "n.m.x" }, { name = "mx", type = "max", field_name = "n.v" },
          { name = "c", type = "count", field_name = "n.v" }, { name = "dc", type = "distinct_count", field_name = "n.m.x" },
          { name = "a", type = "avg", field_name = "n.v", missing = 100 } },
        group_bys = { { name = "f", type = "field", field_name = "n.v", size = 100 },
          { name = "h", type = "histogram", field_name = "n.m.x", interval = 2, min_doc_count = 1 },
          { name = "r", type = "range", field_name = "n.v", ranges = { { to = 0 }, { from = 0 } } },
          { name = "gd", type = "geo_distance", field_name = "n.g", origin = { lat = 0, lon = 0 }, ranges = { { to = 3000000 }, { from = 3000000 } } } } })
      local sum, mx, cnt, dset, ndc, asum, an = 0, nil, 0, {}, 0, 0, 0
      local byv, hist, r1, r2 = {}, {}, 0, 0
      for _, row in ipairs(in_q) do
        for _, x in ipairs(rvals(row, "n.m.x")) do
          sum = sum + x
          if not dset[x] then dset[x] = true; ndc = ndc + 1 end
        end
        local vs = rvals(row, "n.v")
        cnt = cnt + #vs
        if #vs == 0 then asum, an = asum + 100, an + 1 end
        local neg, pos = false, false
        for _, v in ipairs(vs) do
          if not mx or v > mx then mx = v end
          asum, an = asum + v, an + 1
          byv[v] = (byv[v] or 0) + 1
          if v < 0 then neg = true else pos = true end
        end
        if neg then r1 = r1 + 1 end
        if pos then r2 = r2 + 1 end
        local hb = {}
        for _, x in ipairs(rvals(row, "n.m.x")) do hb[math.floor(x / 2) * 2] = true end
        for b in pairs(hb) do hist[b] = (hist[b] or 0) + 1 end
      end
      assert(close(sum, res2.aggs[1].value))
      assert.are.equal(mx and mx + 0.0, res2.aggs[2].value)
      assert.are.equal(cnt, res2.aggs[3].value)
      assert.are.equal(ndc, res2.aggs[4].value)
      assert(close(an > 0 and asum / an or nil, res2.aggs[5].value))
      local fi = {}
      for v, n in pairs(byv) do fi[#fi + 1] = { tostring(v), n, v } end
      table.sort(fi, function(a, b) if a[2] ~= b[2] then return a[2] > b[2] end return a[3] < b[3] end)
      for _, e in ipairs(fi) do e[3] = nil end
      assert.are.same(fi, kc(res2.group_bys[1].items))
      local hk = {}
      for b in pairs(hist) do hk[#hk + 1] = b end
      table.sort(hk)
      local hi = res2.group_bys[2].items
      assert.are.equal(#hk, #hi)
      for i, b in ipairs(hk) do assert.are.same({ b, hist[b] }, { hi[i].key, hi[i].row_count }) end
      assert.are.same({ r1, r2 }, { res2.group_bys[3].items[1].row_count, res2.group_bys[3].items[2].row_count })
      local g1, g2n = 0, 0
      for _, row in ipairs(in_q) do
        local near, far = false, false
        for _, sd in ipairs(row.subs) do
          if sd.g then
            local lat, lon = sd.g:match("^(.-),(.*)$")
            local dd = require("otskit.core").sql.rows(db.h, "SELECT geo_dist(?1, ?2, 0, 0)", { tonumber(lat), tonumber(lon) })[1][1]
            if dd < 3000000 then near = true else far = true end
          end
        end
        if near then g1 = g1 + 1 end
        if far then g2n = g2n + 1 end
      end
      assert.are.same({ g1, g2n }, { res2.group_bys[4].items[1].row_count, res2.group_bys[4].items[2].row_count })
      db:close()
    end
  end)

  it("refuses bad requests with OTSParameterInvalid", function()
    local db = setup(1)
    local function bad(req)
      req.table, req.index, req.limit = "t", "ix", 0
      local r, msg, code = db:search(req)
      assert.is_nil(r)
      assert.are.equal("OTSParameterInvalid", code, msg)
    end
    bad{ aggs = { { name = "a", type = "median", field_name = "n" } } }
    bad{ aggs = { { name = "a", type = "avg", field_name = "k" } } }
    bad{ aggs = { { name = "a", type = "avg", field_name = "n", missing = "x" } } }
    bad{ aggs = { { name = "a", type = "avg", field_name = "n" }, { name = "a", type = "sum", field_name = "n" } } }
    bad{ aggs = { { name = "a", type = "top_rows", limit = 101 } } }
    bad{ aggs = { { name = "a", type = "percentiles", field_name = "n", percentiles = { 101 } } } }
    bad{ group_bys = { { name = "g", type = "field", field_name = "k", size = 2001 } } }
    bad{ group_bys = { { name = "g", type = "histogram", field_name = "n", interval = 0 } } }
    bad{ group_bys = { { name = "g", type = "date_histogram", field_name = "n", interval = { value = 1, unit = "DAY" } } } }
    bad{ group_bys = { { name = "g", type = "composite", next_token = "forged", sources = {
      { name = "k", type = "field", field_name = "k" } } } } }
    bad{ group_bys = { { name = "g", type = "field", field_name = "k", bogus = 1 } } }
    -- a histogram's offset that is no finite number (NaN raised out of search)
    for _, off in ipairs({ 0 / 0, 1 / 0, -1 / 0, "1" }) do
      bad{ group_bys = { { name = "g", type = "histogram", field_name = "n", interval = 2, offset = off } } }
      bad{ group_bys = { { name = "g", type = "composite", sources = {
        { name = "h", type = "histogram", field_name = "n", interval = 2, offset = off } } } } }
    end
    -- at most 5 group-bys a level (the documented bound; sub_group_bys
    -- count afresh), 16 aggregations (the service takes 8 in one level)
    local six, seventeen = {}, {}
    for i = 1, 6 do six[i] = { name = "g" .. i, type = "field", field_name = "k" } end
    for i = 1, 17 do seventeen[i] = { name = "a" .. i, type = "count", field_name = "k" } end
    bad{ group_bys = six }
    bad{ aggs = seventeen }
    table.remove(six)
    table.remove(seventeen)
    local ok = assert(db:search{ table = "t", index = "ix", limit = 0, group_bys = six, aggs = { (table.unpack or unpack)(seventeen, 1, 8) } })
    assert.are.equal(5, #ok.group_bys)
    assert.are.equal(8, #ok.aggs)
    bad{ collapse = { field_name = "nope" } }
    db:close()
  end)
end)
