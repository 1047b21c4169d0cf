--- otskit.store.search.groupby -- a search's group-bys: field, range,
-- filter, geo_distance, histogram, date_histogram, geo_grid, composite.
-- Buckets are counted by SQL (GROUP BY over the matched documents joined
-- to the index's value tables; a document counts once per bucket however
-- many of its array values fall in it); each bucket's sub_aggs and
-- sub_group_bys run on the bucket's scope (the matched documents AND the
-- bucket's condition).
--
-- A group-by: { name, type, field_name, size, sort = { {group_key_sort =
-- {order}} | {row_count_sort = {order}} | {sub_agg_sort = {sub_agg_name,
-- order}} }, min_doc_count, sub_aggs, sub_group_bys, ranges = { {from,
-- to} }, filters = { query }, origin = {lat, lon}, interval, offset,
-- missing, field_range = {min, max}, time_zone, precision, sources,
-- next_token }. Its result: { name, type, items = { {key | from, to |
-- timestamp | keys, row_count, sub_aggs, sub_group_bys} }, next_token,
-- source_names }.
local base = require "otskit.store.base"
local agg = require "otskit.store.search.agg"
local sort = require "otskit.store.search.sort"
local geohash = require "otskit.store.search.geohash"
local query = require "otskit.store.search.query"
local docvalues = require "otskit.store.search.docvalues"

local gb = {}

--- The service's limits. per_level: 5 group-bys per level (sub_group_bys
-- count afresh), as the service's documentation says; the service's own
-- SDK tests send at most 5 in one level (aggregations differ: see
-- otskit.store.search.agg.LIMITS).
gb.LIMITS = { per_level = 5, depth = 3, size = 2000, default_size = 10, filters = 10, ranges = 100,
  geo_ranges = 10, buckets = 10000, composite_sources = 32 }
local L = gb.LIMITS
local bad = agg.bad

local NUMERIC = { LONG = true, DOUBLE = true, DATE = true }
local run_list

local function key_string(d, v)
  if d.type == "KEYWORD" then return v end
  if d.type == "BOOLEAN" then return v == 1 and "true" or "false" end
  if d.type == "DOUBLE" then
    local s = ("%.17g"):format(v)
    for p = 1, 17 do
      local t = ("%." .. p .. "g"):format(v)
      if tonumber(t) == v then s = t; break end
    end
    return s
  end
  -- LONG, DATE: an int64 exactly (5.4: an integer; LuaJIT: a number up to
  -- 2^53, the decimal text SQLite's integer comes back as beyond it)
  if type(v) == "string" then return v end
  return math.tointeger and math.tointeger(v) and ("%d"):format(v) or ("%.0f"):format(v)
end

-- a LONG or DATE group key's value -> something ordered as it is (on
-- LuaJIT, where one beyond 2^53 is decimal text: a sign, then 19 digits)
local function ordered(v)
  if math.type then return v end
  local s = type(v) == "string" and v or ("%.0f"):format(v)
  local neg = s:sub(1, 1) == "-"
  s = ("0"):rep(19 - #s + (neg and 1 or 0)) .. s:gsub("^%-", "")
  if neg then return "0" .. s:gsub("%d", function(c) return string.char(105 - c:byte()) end) end
  return "1" .. s
end

-- children of a bucket: its sub-aggregations and sub-group-bys
local function children(env, g, item, scope, depth, what)
  if g.sub_aggs ~= nil then
    local r, m, c = agg.run_list(env, g.sub_aggs, scope, what .. ".sub_aggs")
    if not r then return nil, m, c end
    item.sub_aggs = r
  end
  if g.sub_group_bys ~= nil then
    local r, m, c = run_list(env, g.sub_group_bys, scope, depth + 1, what .. ".sub_group_bys")
    if not r then return nil, m, c end
    item.sub_group_bys = r
  end
  return item
end

local ORDER = { ASC = false, DESC = true }
local SORTER_KEYS = { group_key_sort = base.set{ "order" }, row_count_sort = base.set{ "order" },
  sub_agg_sort = base.set{ "sub_agg_name", "order" } }
local RANGE_KEYS, ORIGIN_KEYS, FIELD_RANGE_KEYS = base.set{ "from", "to" }, base.set{ "lat", "lon" }, base.set{ "min", "max" }

-- sorts items by the group-by's sorters; key(item) -> a comparable key
local function sort_items(env, g, items, key, default, what)
  local sorters = g.sort
  if sorters == nil then sorters = default end
  if type(sorters) ~= "table" then return bad(what .. ": sort must be a list of sorters") end
  local lok, lm, lc = base.list(sorters, what .. ": sort"); if not lok then return nil, lm, lc end
  local cmp = {}
  for i, s in ipairs(sorters) do
    if type(s) ~= "table" then return bad(what .. ": each sorter is a table") end
    local kind, b = next(s)
    if not SORTER_KEYS[kind] or next(s, kind) ~= nil then
      return bad(what .. ": a sorter is one of group_key_sort, row_count_sort and sub_agg_sort")
    end
    if type(b) ~= "table" then return bad(what .. ": " .. kind .. " must be a table") end
    local ok, km, kc = base.known(b, SORTER_KEYS[kind], what .. ": " .. kind); if not ok then return nil, km, kc end
    local desc = ORDER[b.order or "ASC"]
    if desc == nil then return bad(what .. ": order must be ASC or DESC") end
    if kind == "group_key_sort" then
      cmp[i] = { key, desc }
    elseif kind == "row_count_sort" then
      cmp[i] = { function(it) return it.row_count end, desc }
    elseif kind == "sub_agg_sort" then
      local name = b.sub_agg_name
      local found = false
      for _, a in ipairs(g.sub_aggs or {}) do if a.name == name then found = true end end
      if not found then return bad(what .. ": sub_agg_sort names no sub-aggregation: " .. tostring(name)) end
      cmp[i] = { function(it)
        local v = agg.value(it.sub_aggs, name)
        return v == nil and -math.huge or v
      end, desc }
    else
      return bad(what .. ": a sorter is group_key_sort, row_count_sort or sub_agg_sort")
    end
  end
  for i, it in ipairs(items) do it._n = i end
  table.sort(items, function(x, y)
    for _, c in ipairs(cmp) do
      local a, b = c[1](x), c[1](y)
      if a ~= b then
        if c[2] then return a > b end
        return a < b
      end
    end
    return x._n < y._n
  end)
  for _, it in ipairs(items) do it._n = nil end
  return items
end

local function size_of(g, what, default)
  local s = g.size
  if s == nil then return default or L.default_size end
  if type(s) ~= "number" or s ~= math.floor(s) or s < 1 or s > L.size then
    return bad(what .. ": size must be an integer in 1.." .. L.size)
  end
  return s
end

local function min_docs(g, what, default)
  local m = g.min_doc_count
  if m == nil then return default end
  if type(m) ~= "number" or m ~= math.floor(m) or m < 0 then return bad(what .. ": min_doc_count must be an integer >= 0") end
  return m
end

local function valtbl(env, d) return agg.vt(env, d) end

local K = {}

-- the ORDER BY of a field group-by's (key, count) rows when its sort uses
-- only group_key_sort and row_count_sort (the rows' order then equals
-- sort_items', whose last tie-break is the key ascending) | nil
local function sql_order(g)
  local sorters = g.sort
  if sorters == nil then return "2 DESC, 1 ASC" end
  if type(sorters) ~= "table" then return nil end
  local out = {}
  for i, so in ipairs(sorters) do
    if type(so) ~= "table" then return nil end
    local kind, b = next(so)
    if next(so, kind) ~= nil or type(b) ~= "table" and b ~= nil then return nil end
    local o = (b or {}).order or "ASC"
    if o ~= "ASC" and o ~= "DESC" then return nil end
    if kind == "group_key_sort" then out[i] = "1 " .. o
    elseif kind == "row_count_sort" then out[i] = "2 " .. o
    else return nil end
  end
  out[#out + 1] = "1 ASC"
  return table.concat(out, ", ")
end

function K.field(env, g, scope, depth, what)
  local size, m, c = size_of(g, what)
  if not size then return nil, m, c end
  local mdc, m2, c2 = min_docs(g, what, 1)
  if not mdc then return nil, m2, c2 end
  local d, m3, c3 = agg.field(env, g.field_name, what)
  if d == nil then return nil, m3, c3 end
  local items = {}
  if d then
    local ctx = env.ctx
    local f = ctx:bind(d.id)
    local gx, exprs, fill = agg.col(env, d), nil, nil
    if gx and g.sub_aggs ~= nil then -- the sub-aggregations in the same GROUP BY
      local m5, c5
      exprs, m5, c5 = agg.by_col(env, g.sub_aggs, scope, what .. ".sub_aggs")
      if exprs == false then return nil, m5, c5 end
      fill = m5
    end
    local rows
    -- the top `size` groups picked by SQL when the sort allows it (every
    -- group otherwise; sort_items orders them either way)
    local order = sql_order(g)
    local tail = ("HAVING count(*) >= %s ORDER BY %s"):format(ctx:bind(mdc), order or "1 ASC")
    if order then tail = tail .. " LIMIT " .. ctx:bind(size) end
    -- over the value column; without sub-aggregations over every
    -- document, the value table's B-tree (ordered by value) is faster
    if gx and (exprs or g.sub_aggs == nil and scope ~= agg.ALL) then
      local sel = { gx, "count(*)" }
      for i, e in ipairs(exprs or {}) do sel[i + 2] = e end
      rows = agg.query(env, ("SELECT %s FROM %sdoc d WHERE %s AND %s IS NOT NULL GROUP BY 1 %s"):format(
        table.concat(sel, ", "), ctx.p, scope, gx, tail))
    else
      -- (f, v, doc) is unique: count(*) counts the documents of a value
      rows = agg.query(env, ("SELECT n.v, count(*) %s GROUP BY n.v %s"):format(agg.values_of(env, d, scope), tail))
      fill = nil
    end
    for _, r in ipairs(rows) do
      if r[2] >= mdc then
        items[#items + 1] = { v = r[1], key = key_string(d, r[1]), row_count = r[2], sub_aggs = fill and fill(r, 3) }
      end
    end
    local function bucket(it)
      local x = ctx:bind(it.v)
      if type(it.v) == "string" and d.type ~= "KEYWORD" then x = "CAST(" .. x .. " AS INTEGER)" end -- LuaJIT int64 text
      return ("%s AND d.id IN (SELECT doc FROM %s WHERE f = %s AND v = %s)"):format(scope, valtbl(env, d), f, x)
    end
    local by_sub = false
    for _, s in ipairs(type(g.sort) == "table" and g.sort or {}) do if type(s) == "table" and s.sub_agg_sort then by_sub = true end end
    -- simple sub-aggregations of every group at once
    local batched = g.sub_aggs ~= nil and not fill and agg.by_group(env, g.sub_aggs, d, scope)
    local rest = g
    if fill then rest = { sub_group_bys = g.sub_group_bys } end
    if batched then
      rest = { sub_group_bys = g.sub_group_bys }
      for _, it in ipairs(items) do it.sub_aggs = batched(it.v) end
    end
    if by_sub then
      for _, it in ipairs(items) do
        local ok, mm, cc = children(env, rest, it, bucket(it), depth, what)
        if not ok then return nil, mm, cc end
      end
    end
    local r, m4, c4 = sort_items(env, g, items, NUMERIC[d.type] and d.type ~= "DOUBLE"
        and function(it) return ordered(it.v) end or function(it) return it.v end,
      { { row_count_sort = { order = "DESC" } }, { group_key_sort = { order = "ASC" } } }, what)
    if not r then return nil, m4, c4 end
    for i = size + 1, #items do items[i] = nil end
    if not by_sub then
      for _, it in ipairs(items) do
        local ok, mm, cc = children(env, rest, it, bucket(it), depth, what)
        if not ok then return nil, mm, cc end
      end
    end
    for _, it in ipairs(items) do it.v = nil end
  end
  return { items = items }
end

local function ranges_of(g, what, max)
  local rs = g.ranges
  if type(rs) ~= "table" or #rs == 0 or #rs > max then return bad(what .. ": ranges must list 1.." .. max .. " ranges") end
  local lok, lm, lc = base.list(rs, what .. ": ranges"); if not lok then return nil, lm, lc end
  for _, r in ipairs(rs) do
    if type(r) ~= "table" then return bad(what .. ": each range is { from, to }") end
    local ok, km, kc = base.known(r, RANGE_KEYS, what .. ": a range"); if not ok then return nil, km, kc end
    if r.from ~= nil and type(r.from) ~= "number" or r.to ~= nil and type(r.to) ~= "number" then
      return bad(what .. ": range bounds are numbers")
    end
  end
  return rs
end

-- range-like group-bys: cond(from, to) -> SQL condition on d; counts:
-- the ranges' document counts in order (nil: counted here, one statement
-- per range)
local function ranged(env, g, scope, depth, what, rs, cond, counts)
  local items = {}
  for i, r in ipairs(rs) do
    local from, to = r.from or -math.huge, r.to or math.huge
    local s = scope .. " AND " .. cond(from, to)
    local n = counts and counts[i] or agg.query(env, ("SELECT count(*) FROM %sdoc d WHERE %s"):format(env.ctx.p, s))[1][1]
    local it = { from = from + 0.0, to = to + 0.0, row_count = n }
    local ok, m, c = children(env, g, it, s, depth, what)
    if not ok then return nil, m, c end
    items[i] = it
  end
  return { items = items }
end

function K.range(env, g, scope, depth, what)
  local rs, m, c = ranges_of(g, what, L.ranges)
  if not rs then return nil, m, c end
  local d, m2, c2 = agg.field(env, g.field_name, what, NUMERIC)
  if d == nil then return nil, m2, c2 end
  local ctx = env.ctx
  local counts
  local own = d and not agg.multi(d) and agg.own(env, d, scope)
  if own and scope == agg.ALL and env.db and g.sub_aggs == nil and g.sub_group_bys == nil then
    -- every document, plain counts: the field's doc values, one C pass a range
    -- (otskit.store.search.docvalues.range_counts; nil: the value index)
    counts = docvalues.range_counts(env.db, env.ix, d, rs)
  end
  if counts then -- (counted)
  elseif own then -- every document, or the leaf's own field: its value index, a range each
    counts = {}
    local lb = scope ~= agg.ALL and env.leaf.bounds
    for i, r in ipairs(rs) do
      local lo, lo_op, hi, hi_op = r.from or -math.huge, ">=", r.to or math.huge, "<"
      local cond = own
      if lb and (lb.lo == nil or type(lb.lo) == "number") and (lb.hi == nil or type(lb.hi) == "number") then
        -- the leaf's range and this one as one pair of bounds (SQLite
        -- seeks on one pair; a second is a test of every entry between)
        cond = "f = " .. ctx:bind(d.id)
        if lb.lo ~= nil and (lb.lo > lo or lb.lo == lo and not lb.lo_incl) then lo, lo_op = lb.lo, lb.lo_incl and ">=" or ">" end
        if lb.hi ~= nil and lb.hi < hi then hi, hi_op = lb.hi, lb.hi_incl and "<=" or "<" end
      end
      counts[i] = agg.query(env, ("SELECT count(*) FROM %snum WHERE %s AND v %s %s AND v %s %s"):format(ctx.p, cond,
        lo_op, ctx:bind(lo), hi_op, ctx:bind(hi)))[1][1]
    end
  elseif d and d.col then -- the value column of the scope's documents, every range in one pass
    local sums = {}
    for i, r in ipairs(rs) do
      sums[i] = ("total(d.%s >= %s AND d.%s < %s)"):format(d.col, ctx:bind(r.from or -math.huge), d.col, ctx:bind(r.to or math.huge))
    end
    local row = agg.query(env, ("SELECT %s FROM %sdoc d WHERE %s"):format(table.concat(sums, ", "), ctx.p, scope))[1]
    counts = {}
    for i = 1, #rs do counts[i] = math.floor(row[i]) end
  end
  return ranged(env, g, scope, depth, what, rs, function(from, to)
    if not d then return "0" end
    return ("d.id IN (SELECT doc FROM %s WHERE f = %s AND v >= %s AND v < %s)"):format(agg.vt(env, d, "num"), ctx:bind(d.id),
      ctx:bind(from), ctx:bind(to))
  end, counts)
end

function K.geo_distance(env, g, scope, depth, what)
  local rs, m, c = ranges_of(g, what, L.geo_ranges)
  if not rs then return nil, m, c end
  local o = g.origin
  if type(o) ~= "table" or type(o.lat) ~= "number" or type(o.lon) ~= "number" or o.lat < -90 or o.lat > 90
    or o.lon < -180 or o.lon > 180 then
    return bad(what .. ": origin must be { lat, lon } in range")
  end
  local ok, km, kc = base.known(o, ORIGIN_KEYS, what .. ": origin"); if not ok then return nil, km, kc end
  local d, m2, c2 = agg.field(env, g.field_name, what, { GEO_POINT = true })
  if d == nil then return nil, m2, c2 end
  local ctx = env.ctx
  local counts
  if d then -- every range in one pass over the points (each distance computed once)
    local sums, lat, lon = {}, ctx:bind(o.lat), ctx:bind(o.lon)
    for i, r in ipairs(rs) do
      local c = ("x >= %s AND x < %s"):format(ctx:bind(r.from or -math.huge), ctx:bind(r.to or math.huge))
      sums[i] = agg.multi(d) and ("count(DISTINCT CASE WHEN %s THEN doc END)"):format(c) or ("total(%s)"):format(c)
    end
    local gt = agg.vt(env, d, "gpt")
    local src = scope == agg.ALL
      and ("SELECT geo_dist(g.lat, g.lon, %s, %s) AS x, g.doc AS doc FROM %s g WHERE g.f = %s"):format(lat, lon, gt, ctx:bind(d.id))
      or ("SELECT geo_dist(g.lat, g.lon, %s, %s) AS x, g.doc AS doc FROM %sdoc d JOIN %s g ON g.doc = d.id AND g.f = %s WHERE %s")
        :format(lat, lon, ctx.p, gt, ctx:bind(d.id), scope)
    local row = agg.query(env, ("SELECT %s FROM (%s)"):format(table.concat(sums, ", "), src))[1]
    counts = {}
    for i = 1, #rs do counts[i] = math.floor(row[i]) end
  end
  return ranged(env, g, scope, depth, what, rs, function(from, to)
    if not d then return "0" end
    return ("d.id IN (SELECT doc FROM %s WHERE f = %s AND geo_dist(lat, lon, %s, %s) >= %s AND geo_dist(lat, lon, %s, %s) < %s)")
      :format(agg.vt(env, d, "gpt"), ctx:bind(d.id), ctx:bind(o.lat), ctx:bind(o.lon), ctx:bind(from), ctx:bind(o.lat), ctx:bind(o.lon), ctx:bind(to))
  end, counts)
end

function K.filter(env, g, scope, depth, what)
  local fs = g.filters
  if type(fs) ~= "table" or #fs == 0 or #fs > L.filters then return bad(what .. ": filters must list 1.." .. L.filters .. " queries") end
  local lok, lm, lc = base.list(fs, what .. ": filters"); if not lok then return nil, lm, lc end
  local items = {}
  local ctx = env.ctx
  for i, q in ipairs(fs) do
    -- compiled as a search's query: a filter that is one leaf on a
    -- single-valued top-level field records its value index (ctx.from)
    local top, from, drive = ctx.top, ctx.from, ctx.drive
    ctx.top, ctx.from, ctx.drive = true, nil, true
    local ok, cond, m, c = pcall(ctx.compile, ctx, q, "d", nil, 0)
    local leaf = ctx.from
    ctx.top, ctx.from, ctx.drive = top, from, drive
    if not ok then error(cond, 0) end
    if not cond then return nil, m, c end
    local alone = leaf and query.without_driver(cond) == "1"
    cond = query.with_driver(cond)
    local s = scope .. " AND (" .. cond .. ")"
    local n
    if alone and scope == agg.ALL then -- over every document: the filter's value index alone
      n = agg.query(env, ("SELECT count(*) FROM %s WHERE %s"):format(leaf.tbl, leaf.cond))[1][1]
    else -- the filter drives; the search's leaf is a test of each document's value column
      n = agg.query(env, ("SELECT count(*) FROM %sdoc d WHERE %s AND (%s)"):format(ctx.p, agg.narrow(env, scope), cond))[1][1]
    end
    local it = { row_count = n }
    local ok, m2, c2 = children(env, g, it, s, depth, what)
    if not ok then return nil, m2, c2 end
    items[i] = it
  end
  return { items = items }
end

-- histogram and date_histogram (otskit.store.search.histogram)
require("otskit.store.search.histogram")(gb, K, { children = children, sort_items = sort_items, min_docs = min_docs,
  ordered = ordered, NUMERIC = NUMERIC, FIELD_RANGE_KEYS = FIELD_RANGE_KEYS })

-- geo_grid: otskit.store.search.geohash.group_by
function K.geo_grid(env, g, scope, depth, what)
  return geohash.group_by(env, g, scope, depth, what, { agg = agg, size_of = size_of, sort_items = sort_items, children = children })
end

K.composite = require("otskit.store.search.composite")(gb, K, children)

-- the keys of each type's group-by (another is refused, never ignored)
local KEYS = {}
for ty, ks in pairs({ field = { "field_name", "size", "sort", "min_doc_count" }, range = { "field_name", "ranges" },
  filter = { "filters" }, geo_distance = { "field_name", "origin", "ranges" },
  histogram = { "field_name", "interval", "offset", "missing", "min_doc_count", "sort", "field_range" },
  date_histogram = { "field_name", "interval", "offset", "missing", "min_doc_count", "sort", "field_range", "time_zone" },
  geo_grid = { "field_name", "precision", "size", "sort" }, composite = { "sources", "size", "next_token" } }) do
  KEYS[ty] = base.set(ks)
  KEYS[ty].name, KEYS[ty].type, KEYS[ty].sub_aggs, KEYS[ty].sub_group_bys = true, true, true, true
end
gb.KEYS = KEYS

--- gb.run_list(env, list, scope, depth, where) -> { results } | nil, msg, code
function run_list(env, list, scope, depth, where)
  if list == nil then return nil end
  if type(list) ~= "table" then return bad(where .. ": group_bys must be a list") end
  if depth > L.depth then return bad(("%s: group-bys nest at most %d levels"):format(where, L.depth)) end
  if #list > L.per_level then return bad(("%s: at most %d group-bys per level"):format(where, L.per_level)) end
  local lok, lm, lc = base.list(list, where); if not lok then return nil, lm, lc end
  local out, seen = {}, {}
  for i, g in ipairs(list) do
    if type(g) ~= "table" then return bad(where .. ": each group-by is a table") end
    if type(g.name) ~= "string" or g.name == "" then return bad(where .. ": each group-by needs a name") end
    if seen[g.name] then return bad(where .. ": duplicate group-by name " .. g.name) end
    seen[g.name] = true
    local f = K[g.type]
    if not f then return bad(("%s: unknown group-by type %s"):format(where, tostring(g.type))) end
    local ok, km, kc = base.known(g, KEYS[g.type], ("%s: %s group_by [%s]"):format(where, g.type, g.name))
    if not ok then return nil, km, kc end
    local what = ("group_by [%s]"):format(g.name)
    local r, m, c = f(env, g, scope, depth, what)
    if not r then return nil, m, c end
    if #r.items == 0 then -- no bucket ran its sort and children: checked on an empty scope all the same
      local ok2, m2, c2 = true, nil, nil
      if KEYS[g.type].sort and g.sort ~= nil then ok2, m2, c2 = sort_items(env, g, {}, function() return 0 end, {}, what) end
      if ok2 then ok2, m2, c2 = children(env, g, {}, "0", depth, what) end
      if not ok2 then return nil, m2, c2 end
    end
    r.name, r.type = g.name, g.type
    out[i] = r
  end
  return out
end
gb.run_list = run_list

return gb
