--- otskit.wire.search_agg -- a search's aggregations, group-bys and
-- collapse in the store's vocabulary (otskit.store.search.agg, .groupby)
-- <-> the service's messages (proto/search_agg.proto): SearchQuery's aggs
-- (10), group_bys (11) and collapse (5) are the bytes of Aggregations,
-- GroupBys and Collapse; an Aggregation's / GroupBy's body is its kind's
-- message serialized into bytes; SearchResponse's aggs (7) and group_bys
-- (8) are the bytes of AggregationsResult and GroupBysResult, each result
-- its kind's result message in bytes. Missing values, histogram
-- intervals, offsets, keys and field ranges are variants.
local common = require "otskit.wire.common"
local sq = require "otskit.wire.search_query"

local invalid = common.invalid
local dec, enc, strip = sq.decode_message, sq.encode_message, sq.strip

local sa = {}

local AGG_MSG = { avg = "AvgAggregation", max = "MaxAggregation", min = "MinAggregation", sum = "SumAggregation",
  count = "CountAggregation", distinct_count = "DistinctCountAggregation", top_rows = "TopRowsAggregation",
  percentiles = "PercentilesAggregation" }
local GB_MSG = { field = "GroupByField", range = "GroupByRange", filter = "GroupByFilter",
  geo_distance = "GroupByGeoDistance", histogram = "GroupByHistogram", date_histogram = "GroupByDateHistogram",
  geo_grid = "GroupByGeoGrid", composite = "GroupByComposite" }

local function int(v)
  if v == nil then return nil end
  return tonumber(v)
end

local function variant(b, what)
  if b == nil or b == "" then return nil end
  local v, m, c = sq.decode_variant(b, what)
  if m then return nil, m, c end
  return v
end

local dec_aggs, dec_gbs

local function agg_body(kind, m)
  local a = { field_name = m.field_name }
  local miss, mm, mc = variant(m.missing, kind .. ".missing")
  if mm then return nil, mm, mc end
  a.missing = miss
  if kind == "top_rows" then
    a.field_name = nil
    a.limit = m.limit
    if m.sort and m.sort.sorter and #m.sort.sorter > 0 then
      local so, sm, sc = sq.decode_sort(m.sort)
      if not so then return nil, sm, sc end
      a.sort = so
    end
  elseif kind == "percentiles" then
    a.percentiles = m.percentiles and #m.percentiles > 0 and m.percentiles or nil
  end
  return a
end

-- Aggregations message table -> list | nil, msg, code
function dec_aggs(m)
  if m == nil then return nil end
  local out = {}
  for i, x in ipairs(m.aggs or {}) do
    local kind = type(x.type) == "string" and strip(x.type, "AGG_"):lower() or nil
    local name = AGG_MSG[kind]
    if not name then return invalid("Aggregation.type: unknown aggregation " .. tostring(x.type)) end
    local body, bm, bc = dec(name, x.body or "")
    if not body then return nil, bm, bc end
    local a, am, ac = agg_body(kind, body)
    if not a then return nil, am, ac end
    a.name, a.type = x.name, kind
    out[i] = a
  end
  return out
end

local function gb_sort(m)
  if m == nil then return nil end
  local out = {}
  for i, s in ipairs(m.sorters or {}) do
    if s.group_key_sort then out[i] = { group_key_sort = { order = strip(s.group_key_sort.order, "SORT_ORDER_") } }
    elseif s.row_count_sort then out[i] = { row_count_sort = { order = strip(s.row_count_sort.order, "SORT_ORDER_") } }
    elseif s.sub_agg_sort then
      out[i] = { sub_agg_sort = { sub_agg_name = s.sub_agg_sort.sub_agg_name, order = strip(s.sub_agg_sort.order, "SORT_ORDER_") } }
    else return invalid("GroupBySorter: an empty sorter") end
  end
  return out
end

local function dtv(v)
  if v == nil then return nil end
  return { value = v.value, unit = v.unit }
end

local function gb_body(kind, m, depth)
  local g = { field_name = m.field_name, size = m.size, min_doc_count = int(m.min_doc_count), time_zone = m.time_zone }
  local e1, e2
  g.sort, e1, e2 = gb_sort(m.sort)
  if e1 then return nil, e1, e2 end
  if m.sub_aggs then
    g.sub_aggs, e1, e2 = dec_aggs(m.sub_aggs)
    if not g.sub_aggs then return nil, e1, e2 end
  end
  if m.sub_group_bys then
    g.sub_group_bys, e1, e2 = dec_gbs(m.sub_group_bys, depth + 1)
    if not g.sub_group_bys then return nil, e1, e2 end
  end
  if m.ranges then
    g.ranges = {}
    for i, r in ipairs(m.ranges) do
      g.ranges[i] = { from = r.from ~= -math.huge and r.from or nil, to = r.to ~= math.huge and r.to or nil }
    end
  end
  if kind == "filter" then
    g.filters = {}
    for i, q in ipairs(m.filters or {}) do
      local fq, fm, fc = sq.decode_query(q, depth + 1)
      if not fq then return nil, fm, fc end
      g.filters[i] = fq
    end
  elseif kind == "geo_distance" then
    g.origin = m.origin and { lat = m.origin.lat, lon = m.origin.lon } or nil
  elseif kind == "histogram" then
    for _, k in ipairs({ "interval", "missing", "offset" }) do
      g[k], e1, e2 = variant(m[k], "GroupByHistogram." .. k)
      if e1 then return nil, e1, e2 end
    end
  elseif kind == "date_histogram" then
    g.interval, g.offset = dtv(m.interval), dtv(m.offset)
    g.missing, e1, e2 = variant(m.missing, "GroupByDateHistogram.missing")
    if e1 then return nil, e1, e2 end
  elseif kind == "geo_grid" then
    g.precision = m.precision
  elseif kind == "composite" then
    g.sources, e1, e2 = dec_gbs(m.sources or {}, depth + 1)
    if not g.sources then return nil, e1, e2 end
    if m.next_token ~= nil and m.next_token ~= "" then g.next_token = m.next_token end
  end
  if m.field_range then
    local lo, m1, c1 = variant(m.field_range.min, "FieldRange.min")
    if m1 then return nil, m1, c1 end
    local hi, m2, c2 = variant(m.field_range.max, "FieldRange.max")
    if m2 then return nil, m2, c2 end
    g.field_range = { min = lo, max = hi }
  end
  return g
end

-- GroupBys message table -> list | nil, msg, code
function dec_gbs(m, depth)
  if depth > 8 then return invalid("group-bys nest too deep") end
  local out = {}
  for i, x in ipairs(m.group_bys or {}) do
    local kind = type(x.type) == "string" and strip(x.type, "GROUP_BY_"):lower() or nil
    local name = GB_MSG[kind]
    if not name then return invalid("GroupBy.type: unknown group-by " .. tostring(x.type)) end
    local body, bm, bc = dec(name, x.body or "")
    if not body then return nil, bm, bc end
    local g, gm, gc = gb_body(kind, body, depth)
    if not g then return nil, gm, gc end
    g.name, g.type = x.name, kind
    out[i] = g
  end
  return out
end

--- sa.from_query(s, req) -> req (with aggs, group_bys, collapse) | nil, msg,
-- code. s: the decoded SearchQuery.
function sa.from_query(s, req)
  if s.aggs ~= nil then
    local m, mm, mc = dec("Aggregations", s.aggs)
    if not m then return nil, mm, mc end
    local a, am, ac = dec_aggs(m)
    if not a then return nil, am, ac end
    if #a > 0 then req.aggs = a end
  end
  if s.group_bys ~= nil then
    local m, mm, mc = dec("GroupBys", s.group_bys)
    if not m then return nil, mm, mc end
    local g, gm, gc = dec_gbs(m, 1)
    if not g then return nil, gm, gc end
    if #g > 0 then req.group_bys = g end
  end
  if s.collapse ~= nil then
    local m, mm, mc = dec("Collapse", s.collapse)
    if not m then return nil, mm, mc end
    req.collapse = { field_name = m.field_name }
  end
  return req
end

----------------------------------------------------------------------
-- results

local enc_aggs, enc_gbs

local AGG_RES = { avg = "AvgAggregationResult", max = "MaxAggregationResult", min = "MinAggregationResult",
  sum = "SumAggregationResult", count = "CountAggregationResult", distinct_count = "DistinctCountAggregationResult",
  top_rows = "TopRowsAggregationResult", percentiles = "PercentilesAggregationResult" }

-- list -> AggregationsResult message table | nil, msg, code
function enc_aggs(list, rows_out)
  if list == nil then return nil end
  local out = {}
  for i, a in ipairs(list) do
    local body
    if a.type == "top_rows" then
      local rows, m, c = rows_out(a.rows)
      if not rows then return nil, m, c end
      body = { rows = rows }
    elseif a.type == "percentiles" then
      local items = {}
      for j, it in ipairs(a.items) do
        local v, m, c = sq.encode_variant(it.value, "percentile")
        if m then return nil, m, c end
        items[j] = { key = it.key, value = v }
      end
      body = { percentiles_aggregation_items = items }
    else
      body = { value = a.value }
    end
    local b, m, c = enc(AGG_RES[a.type], body)
    if not b then return nil, m, c end
    out[i] = { name = a.name, type = "AGG_" .. a.type:upper(), agg_result = b }
  end
  return { agg_results = out }
end

local GB_RES = { field = { "GroupByFieldResult", "group_by_field_result_items" },
  range = { "GroupByRangeResult", "group_by_range_result_items" },
  filter = { "GroupByFilterResult", "group_by_filter_result_items" },
  geo_distance = { "GroupByGeoDistanceResult", "group_by_geo_distance_result_items" },
  histogram = { "GroupByHistogramResult", "group_by_histogram_items" },
  date_histogram = { "GroupByDateHistogramResult", "group_by_date_histogram_items" },
  geo_grid = { "GroupByGeoGridResult", "group_by_geo_grid_result_items" },
  composite = { "GroupByCompositeResult", "group_by_composite_result_items" } }

local function item_out(kind, it, rows_out)
  local o = { row_count = it.row_count }
  if kind == "field" then o.key = it.key
  elseif kind == "range" or kind == "geo_distance" then o.from, o.to = it.from, it.to
  elseif kind == "histogram" then
    local k, m, c = sq.encode_variant(it.key, "histogram key")
    if not k then return nil, m, c end
    o.key, o.value, o.row_count = k, it.row_count, nil
  elseif kind == "date_histogram" then o.timestamp = it.timestamp
  elseif kind == "geo_grid" then
    o.key, o.geo_grid = it.key, { top_left = it.top_left, bottom_right = it.bottom_right }
  elseif kind == "composite" then o.keys = it.keys end
  local m, c
  if it.sub_aggs then
    o.sub_aggs_result, m, c = enc_aggs(it.sub_aggs, rows_out)
    if not o.sub_aggs_result then return nil, m, c end
  end
  if it.sub_group_bys then
    o.sub_group_bys_result, m, c = enc_gbs(it.sub_group_bys, rows_out)
    if not o.sub_group_bys_result then return nil, m, c end
  end
  return o
end

-- list -> GroupBysResult message table | nil, msg, code
function enc_gbs(list, rows_out)
  if list == nil then return nil end
  local out = {}
  for i, g in ipairs(list) do
    local spec = GB_RES[g.type]
    local items = {}
    for j, it in ipairs(g.items) do
      local o, m, c = item_out(g.type, it, rows_out)
      if not o then return nil, m, c end
      items[j] = o
    end
    local body = { [spec[2]] = items }
    if g.type == "composite" then body.source_group_by_names, body.next_token = g.source_names, g.next_token end
    local b, m, c = enc(spec[1], body)
    if not b then return nil, m, c end
    out[i] = { name = g.name, type = "GROUP_BY_" .. g.type:upper(), group_by_result = b }
  end
  return { group_by_results = out }
end

--- sa.to_response(res, out, rows_out) -> out (with aggs and group_bys
-- bytes) | nil, msg, code. rows_out(rows) -> PlainBuffer rows.
function sa.to_response(res, out, rows_out)
  if res.aggs then
    local m, mm, mc = enc_aggs(res.aggs, rows_out)
    if not m then return nil, mm, mc end
    local b, bm, bc = enc("AggregationsResult", m)
    if not b then return nil, bm, bc end
    out.aggs = b
  end
  if res.group_bys then
    local m, mm, mc = enc_gbs(res.group_bys, rows_out)
    if not m then return nil, mm, mc end
    local b, bm, bc = enc("GroupBysResult", m)
    if not b then return nil, bm, bc end
    out.group_bys = b
  end
  return out
end

----------------------------------------------------------------------
-- the client's side: a request's aggregations out, a response's results in

local function variant_out(v, what)
  if v == nil then return nil end
  return sq.encode_variant(v, what)
end

local enc_agg_list, enc_gb_list

-- the keys of each part that travel (its message's fields)
local set, known = sq.set, sq.known
local AGG_KEYS, GB_KEYS = {}, {}
for ty, ks in pairs({ avg = { "field_name", "missing" }, max = { "field_name", "missing" }, min = { "field_name", "missing" },
  sum = { "field_name", "missing" }, count = { "field_name" }, distinct_count = { "field_name", "missing" },
  top_rows = { "limit", "sort" }, percentiles = { "field_name", "percentiles", "missing" } }) do
  AGG_KEYS[ty] = set(ks)
  AGG_KEYS[ty].name, AGG_KEYS[ty].type = true, true
end
for ty, ks in pairs({ field = { "field_name", "size", "sort", "min_doc_count" }, range = { "field_name", "ranges" },
  filter = { "filters" }, geo_distance = { "field_name", "origin", "ranges" },
  histogram = { "field_name", "interval", "missing", "min_doc_count", "sort", "field_range", "offset" },
  date_histogram = { "field_name", "interval", "field_range", "missing", "min_doc_count", "time_zone", "sort", "offset" },
  geo_grid = { "field_name", "precision", "size" }, composite = { "sources", "size", "next_token" } }) do
  GB_KEYS[ty] = set(ks)
  GB_KEYS[ty].name, GB_KEYS[ty].type, GB_KEYS[ty].sub_aggs, GB_KEYS[ty].sub_group_bys = true, true, true, true
end
local GB_SORTER = { group_key_sort = set{ "order" }, row_count_sort = set{ "order" },
  sub_agg_sort = set{ "sub_agg_name", "order" } }
local RANGE, ORIGIN, FIELD_RANGE, DTV = set{ "from", "to" }, set{ "lat", "lon" }, set{ "min", "max" }, set{ "value", "unit" }
local COLLAPSE = set{ "field_name" }

local function gb_sort_out(list)
  if list == nil then return nil end
  if type(list) ~= "table" then return invalid("a group-by's sort must be a list of sorters") end
  local out = {}
  for i, s in ipairs(list) do
    if type(s) ~= "table" then return invalid("a group-by sorter is a table") end
    local kind, body = next(s)
    if not GB_SORTER[kind] or next(s, kind) ~= nil then
      return invalid("a group-by sorter is one of group_key_sort, row_count_sort and sub_agg_sort")
    end
    local ok, km, kc = known(body, GB_SORTER[kind], kind)
    if not ok then return nil, km, kc end
    local o = {}
    local function ord(b) return b and b.order and "SORT_ORDER_" .. b.order or nil end
    if s.group_key_sort then o.group_key_sort = { order = ord(s.group_key_sort) }
    elseif s.row_count_sort then o.row_count_sort = { order = ord(s.row_count_sort) }
    elseif s.sub_agg_sort then o.sub_agg_sort = { sub_agg_name = s.sub_agg_sort.sub_agg_name, order = ord(s.sub_agg_sort) }
    else return invalid("a group-by sorter is group_key_sort, row_count_sort or sub_agg_sort") end
    out[i] = o
  end
  return { sorters = out }
end

function enc_agg_list(list)
  if list == nil then return nil end
  if type(list) ~= "table" then return invalid("aggs must be a list") end
  local out = {}
  for i, a in ipairs(list) do
    if type(a) ~= "table" or not AGG_MSG[a.type] then return invalid("aggregation " .. i .. ": unknown type " .. tostring(a and a.type)) end
    local ok, km, kc = known(a, AGG_KEYS[a.type], a.type .. " aggregation " .. tostring(a.name))
    if not ok then return nil, km, kc end
    local miss, m, c = variant_out(a.missing, "aggregation missing")
    if m then return nil, m, c end
    local body = { field_name = a.field_name, missing = miss }
    if a.type == "top_rows" then
      local so, sm, sc = sq.encode_sort(a.sort)
      if sm then return nil, sm, sc end
      body = { limit = a.limit, sort = so }
    elseif a.type == "percentiles" then body.percentiles = a.percentiles
    elseif a.type == "count" then body.missing = nil end
    local b, bm, bc = enc(AGG_MSG[a.type], body)
    if not b then return nil, bm, bc end
    out[i] = { name = a.name, type = "AGG_" .. a.type:upper(), body = b }
  end
  return { aggs = out }
end

local function dtv_out(v)
  if v == nil then return nil end
  if type(v) ~= "table" then return nil, "a date interval is { value, unit }", "OTSParameterInvalid" end
  local ok, km, kc = known(v, DTV, "a date interval")
  if not ok then return nil, km, kc end
  return { value = v.value, unit = v.unit }
end

function enc_gb_list(list)
  if list == nil then return nil end
  if type(list) ~= "table" then return invalid("group_bys must be a list") end
  local out = {}
  for i, g in ipairs(list) do
    if type(g) ~= "table" or not GB_MSG[g.type] then return invalid("group-by " .. i .. ": unknown type " .. tostring(g and g.type)) end
    local ok, km, kc = known(g, GB_KEYS[g.type], g.type .. " group_by " .. tostring(g.name))
    if ok and type(g.ranges) == "table" then
      for _, r in ipairs(g.ranges) do
        ok, km, kc = known(r, RANGE, "group_by " .. tostring(g.name) .. ": a range")
        if not ok then break end
      end
    end
    if ok and g.origin ~= nil then ok, km, kc = known(g.origin, ORIGIN, "group_by " .. tostring(g.name) .. ": origin") end
    if ok and g.field_range ~= nil then
      ok, km, kc = known(g.field_range, FIELD_RANGE, "group_by " .. tostring(g.name) .. ": field_range")
    end
    if not ok then return nil, km, kc end
    local body = { field_name = g.field_name, size = g.size, min_doc_count = g.min_doc_count, time_zone = g.time_zone,
      precision = g.precision, next_token = g.next_token, ranges = g.ranges }
    local e1, e2
    body.sort, e1, e2 = gb_sort_out(g.sort)
    if e1 then return nil, e1, e2 end
    body.sub_aggs, e1, e2 = enc_agg_list(g.sub_aggs)
    if e1 then return nil, e1, e2 end
    body.sub_group_bys, e1, e2 = enc_gb_list(g.sub_group_bys)
    if e1 then return nil, e1, e2 end
    if g.type == "filter" then
      body.filters = {}
      for j, q in ipairs(type(g.filters) == "table" and g.filters or {}) do
        local qm, qe, qc = sq.encode_query(q)
        if not qm then return nil, qe, qc end
        body.filters[j] = qm
      end
    elseif g.type == "geo_distance" then body.origin = g.origin
    elseif g.type == "histogram" then
      for _, k in ipairs({ "interval", "missing", "offset" }) do
        body[k], e1, e2 = variant_out(g[k], "histogram " .. k)
        if e1 then return nil, e1, e2 end
      end
    elseif g.type == "date_histogram" then
      body.interval, e1, e2 = dtv_out(g.interval)
      if e1 then return nil, e1, e2 end
      body.offset, e1, e2 = dtv_out(g.offset)
      if e1 then return nil, e1, e2 end
      body.missing, e1, e2 = variant_out(g.missing, "date_histogram missing")
      if e1 then return nil, e1, e2 end
    elseif g.type == "composite" then
      body.sources, e1, e2 = enc_gb_list(g.sources)
      if e1 then return nil, e1, e2 end
    end
    if g.field_range ~= nil then
      local lo, m1, c1 = variant_out(g.field_range.min, "field_range.min")
      if m1 then return nil, m1, c1 end
      local hi, m2, c2 = variant_out(g.field_range.max, "field_range.max")
      if m2 then return nil, m2, c2 end
      body.field_range = { min = lo, max = hi }
    end
    local b, bm, bc = enc(GB_MSG[g.type], body)
    if not b then return nil, bm, bc end
    out[i] = { name = g.name, type = "GROUP_BY_" .. g.type:upper(), body = b }
  end
  return { group_bys = out }
end

--- sa.to_query(req, q) -> q (SearchQuery fields aggs, group_bys, collapse
-- added from the store-shaped req) | nil, msg, code
function sa.to_query(req, q)
  local m, e1, e2 = enc_agg_list(req.aggs)
  if e1 then return nil, e1, e2 end
  if m then q.aggs, e1, e2 = enc("Aggregations", m); if not q.aggs then return nil, e1, e2 end end
  m, e1, e2 = enc_gb_list(req.group_bys)
  if e1 then return nil, e1, e2 end
  if m then q.group_bys, e1, e2 = enc("GroupBys", m); if not q.group_bys then return nil, e1, e2 end end
  if req.collapse ~= nil then
    if type(req.collapse) ~= "table" then return invalid("collapse must be { field_name }") end
    local ok, km, kc = known(req.collapse, COLLAPSE, "collapse")
    if not ok then return nil, km, kc end
    q.collapse, e1, e2 = enc("Collapse", { field_name = req.collapse.field_name })
    if not q.collapse then return nil, e1, e2 end
  end
  return q
end

local aggs_in, gbs_in

function aggs_in(m, rows_in)
  local out = {}
  for i, r in ipairs(m.agg_results or {}) do
    local kind = strip(r.type, "AGG_"):lower()
    local name = AGG_RES[kind]
    if not name then return invalid("AggregationResult: unknown type " .. tostring(r.type)) end
    local b, bm, bc = dec(name, r.agg_result or "")
    if not b then return nil, bm, bc end
    local o = { name = r.name, type = kind }
    if kind == "top_rows" then
      local rows, rm, rc = rows_in(b.rows)
      if not rows then return nil, rm, rc end
      o.rows = rows
    elseif kind == "percentiles" then
      o.items = {}
      for j, it in ipairs(b.percentiles_aggregation_items or {}) do
        local v, vm, vc = variant(it.value, "percentile value")
        if vm then return nil, vm, vc end
        o.items[j] = { key = it.key, value = v }
      end
    else
      o.value = b.value ~= nil and tonumber(b.value) or nil
    end
    out[i] = o
  end
  return out
end

function gbs_in(m, rows_in)
  local out = {}
  for i, r in ipairs(m.group_by_results or {}) do
    local kind = strip(r.type, "GROUP_BY_"):lower()
    local spec = GB_RES[kind]
    if not spec then return invalid("GroupByResult: unknown type " .. tostring(r.type)) end
    local b, bm, bc = dec(spec[1], r.group_by_result or "")
    if not b then return nil, bm, bc end
    local o = { name = r.name, type = kind, items = {} }
    for j, it in ipairs(b[spec[2]] or {}) do
      local x = { row_count = tonumber(it.row_count), key = it.key, from = it.from, to = it.to,
        timestamp = tonumber(it.timestamp), keys = it.keys }
      if kind == "histogram" then
        local k, km, kc = variant(it.key, "histogram key")
        if km then return nil, km, kc end
        x.key, x.row_count = k, tonumber(it.value)
      elseif kind == "geo_grid" and it.geo_grid then
        x.top_left, x.bottom_right = it.geo_grid.top_left, it.geo_grid.bottom_right
      end
      local e1, e2
      if it.sub_aggs_result then
        x.sub_aggs, e1, e2 = aggs_in(it.sub_aggs_result, rows_in)
        if not x.sub_aggs then return nil, e1, e2 end
      end
      if it.sub_group_bys_result then
        x.sub_group_bys, e1, e2 = gbs_in(it.sub_group_bys_result, rows_in)
        if not x.sub_group_bys then return nil, e1, e2 end
      end
      o.items[j] = x
    end
    if kind == "composite" then
      o.source_names = b.source_group_by_names or {}
      if b.next_token ~= nil and b.next_token ~= "" then o.next_token = b.next_token end
    end
    out[i] = o
  end
  return out
end

--- sa.from_response(m, res, rows_in) -> res (with aggs and group_bys from
-- the SearchResponse m) | nil, msg, code
function sa.from_response(m, res, rows_in)
  local e1, e2
  if m.aggs ~= nil and m.aggs ~= "" then
    local a, am, ac = dec("AggregationsResult", m.aggs)
    if not a then return nil, am, ac end
    res.aggs, e1, e2 = aggs_in(a, rows_in)
    if not res.aggs then return nil, e1, e2 end
  end
  if m.group_bys ~= nil and m.group_bys ~= "" then
    local g, gm, gc = dec("GroupBysResult", m.group_bys)
    if not g then return nil, gm, gc end
    res.group_bys, e1, e2 = gbs_in(g, rows_in)
    if not res.group_bys then return nil, e1, e2 end
  end
  return res
end

return sa
