--- otskit.wire.search -- the search index operations: CreateSearchIndex,
-- DescribeSearchIndex, ListSearchIndex, UpdateSearchIndex,
-- DeleteSearchIndex, Search, ComputeSplits, ParallelScan. Operations have
-- the shape of otskit.wire.rows's (req, from_req, res, from_res), mapping
-- the messages of proto/search.proto to what the store's methods take and
-- return (otskit.store.search).
local pb = require "otskit.wire.plainbuffer"
local common = require "otskit.wire.common"
local sq = require "otskit.wire.search_query"
local sa = require "otskit.wire.search_agg"
local sh = require "otskit.wire.search_highlight"
require "otskit.wire.search_score" -- registers functions_score
require "otskit.wire.search_knn" -- registers knn_vector

local invalid, check_keys, set, consumed = common.invalid, common.check_keys, common.set, common.consumed
local dec, enc = sq.decode_message, sq.encode_message

local OPS = {}

-- the counts a search request carries (int32 on the wire): refused here,
-- before anything is sent; the service's own caps (limit 100 ...) are the
-- server's to apply
local function counts(req, lo, ...)
  for _, f in ipairs({ ... }) do
    local v = req[f]
    if v ~= nil and not (type(v) == "number" and v >= lo and v <= 2147483647 and v == math.floor(v)) then
      return invalid(("%s must be an integer %d..2147483647, got %s"):format(f, lo,
        type(v) == "number" and tostring(v) or type(v) .. " " .. ("%q"):format(tostring(v)):sub(1, 40)))
    end
  end
  return true
end

----------------------------------------------------------------------
-- schemas

local PARAM_MSG = { single_word = "SingleWordAnalyzerParameter", split = "SplitAnalyzerParameter",
  fuzzy = "FuzzyAnalyzerParameter" }

-- the keys of each part that travel (another is refused, never dropped)
local FIELD_KEYS = sq.set{ "field_name", "field_type", "analyzer", "index", "enable_sort_and_agg", "store", "is_array",
  "date_formats", "enable_highlighting", "analyzer_parameter", "vector_options", "field_schemas" }
local VECTOR_KEYS = sq.set{ "dimension", "metric_type", "data_type" }
local SCHEMA_KEYS = sq.set{ "field_schemas", "index_setting", "index_sort" }
local SETTING_KEYS = sq.set{ "number_of_shards", "routing_fields", "routing_partition_size" }
local CTG_KEYS = sq.set{ "return_type", "column_names" }
local PARAM_KEYS = { single_word = sq.set{ "case_sensitive", "delimit_word" }, split = sq.set{ "delimiter" },
  fuzzy = sq.set{ "min_chars", "max_chars" } }

local function field_out(f)
  if type(f) ~= "table" then return invalid("field_schemas must be a list of field tables") end
  local ok, km, kc = sq.known(f, FIELD_KEYS, "field schema")
  if ok and f.vector_options ~= nil then ok, km, kc = sq.known(f.vector_options, VECTOR_KEYS, "vector_options") end
  if not ok then return nil, km, kc end
  local m = { field_name = f.field_name, field_type = f.field_type, analyzer = f.analyzer, index = f.index,
    doc_values = f.enable_sort_and_agg, store = f.store, is_array = f.is_array, date_formats = f.date_formats,
    enable_highlighting = f.enable_highlighting }
  if f.analyzer_parameter ~= nil and (type(f.analyzer_parameter) ~= "table" or next(f.analyzer_parameter) ~= nil) then
    local an = f.analyzer or "single_word"
    local name = PARAM_MSG[an]
    if not name then return invalid("analyzer " .. tostring(an) .. " takes no parameters") end
    local pok, pm, pc = sq.known(f.analyzer_parameter, PARAM_KEYS[an], an .. " analyzer_parameter")
    if not pok then return nil, pm, pc end
    local b, msg, code = enc(name, f.analyzer_parameter)
    if not b then return nil, msg, code end
    m.analyzer_parameter = b
  end
  if f.vector_options then
    local v = f.vector_options
    m.vector_options = { dimension = v.dimension, metric_type = v.metric_type and "VM_" .. v.metric_type or nil,
      data_type = v.data_type and "VD_" .. v.data_type or nil }
  end
  if f.field_schemas then
    m.field_schemas = {}
    for i, k in ipairs(f.field_schemas) do
      local km, msg, code = field_out(k)
      if not km then return nil, msg, code end
      m.field_schemas[i] = km
    end
  end
  return m
end

local function field_in(m)
  if m.index_options ~= nil then return invalid("FieldSchema.index_options is not supported by otskit") end
  if m.is_virtual_field or (m.source_field_names and #m.source_field_names > 0) then
    return invalid("virtual fields are not supported by otskit")
  end
  local f = { field_name = m.field_name, field_type = m.field_type, analyzer = m.analyzer, index = m.index,
    enable_sort_and_agg = m.doc_values, store = m.store, is_array = m.is_array, enable_highlighting = m.enable_highlighting }
  if m.date_formats and #m.date_formats > 0 then f.date_formats = m.date_formats end
  if m.analyzer_parameter ~= nil and m.analyzer_parameter ~= "" then
    local name = PARAM_MSG[m.analyzer or "single_word"]
    if not name then return invalid("analyzer " .. tostring(m.analyzer) .. " takes no analyzer_parameter") end
    local p, msg, code = dec(name, m.analyzer_parameter)
    if not p then return nil, msg, code end
    f.analyzer_parameter = p
  end
  if m.vector_options then
    local v = m.vector_options
    f.vector_options = { dimension = v.dimension, metric_type = sq.strip(v.metric_type, "VM_"),
      data_type = sq.strip(v.data_type, "VD_") }
  end
  if m.field_schemas and #m.field_schemas > 0 then
    f.field_schemas = {}
    for i, k in ipairs(m.field_schemas) do
      local kf, msg, code = field_in(k)
      if not kf then return nil, msg, code end
      f.field_schemas[i] = kf
    end
  end
  return f
end

local function schema_out(s)
  if type(s) ~= "table" then return invalid("schema must be a table") end
  local ok, km, kc = sq.known(s, SCHEMA_KEYS, "schema")
  if ok and s.index_setting ~= nil then ok, km, kc = sq.known(s.index_setting, SETTING_KEYS, "index_setting") end
  if not ok then return nil, km, kc end
  local fs = {}
  for i, f in ipairs(s.field_schemas or {}) do
    local m, msg, code = field_out(f)
    if not m then return nil, msg, code end
    fs[i] = m
  end
  local sort, m2, c2 = sq.encode_sort(s.index_sort)
  if m2 then return nil, m2, c2 end
  local set_ = s.index_setting
  return { field_schemas = fs, index_sort = sort,
    index_setting = set_ and { number_of_shards = set_.number_of_shards, routing_fields = set_.routing_fields,
      routing_partition_size = set_.routing_partition_size } or nil }
end

local function schema_in(m)
  if m == nil then return nil end
  local fs = {}
  for i, f in ipairs(m.field_schemas or {}) do
    local x, msg, code = field_in(f)
    if not x then return nil, msg, code end
    fs[i] = x
  end
  local s = { field_schemas = fs }
  if m.index_sort and m.index_sort.sorter and #m.index_sort.sorter > 0 then
    local sort, msg, code = sq.decode_sort(m.index_sort)
    if not sort then return nil, msg, code end
    s.index_sort = sort
  end
  if m.index_setting then
    local st = m.index_setting
    s.index_setting = { routing_fields = st.routing_fields and #st.routing_fields > 0 and st.routing_fields or nil,
      number_of_shards = st.number_of_shards, routing_partition_size = st.routing_partition_size }
  end
  return s
end

----------------------------------------------------------------------
-- management

OPS.CreateSearchIndex = {
  req = function(req)
    local ok, msg, code = check_keys(req, set("table", "index", "schema", "time_to_live", "source_index_name"),
      "CreateSearchIndexRequest")
    if not ok then return nil, msg, code end
    local s, m2, c2
    if req.schema ~= nil then
      s, m2, c2 = schema_out(req.schema)
      if not s then return nil, m2, c2 end
    end
    return { table_name = req.table, index_name = req.index, schema = s, source_index_name = req.source_index_name,
      time_to_live = req.time_to_live }
  end,
  from_req = function(m)
    local s, msg, code = schema_in(m.schema)
    if msg then return nil, msg, code end
    return { table = m.table_name, index = m.index_name, schema = s, source_index_name = m.source_index_name,
      time_to_live = m.time_to_live }
  end,
  res = function() return {} end,
  from_res = function() return {} end,
}

local function names(what)
  return {
    req = function(req)
      local ok, msg, code = check_keys(req, set("table", "index"), what .. "Request")
      if not ok then return nil, msg, code end
      return { table_name = req.table, index_name = req.index }
    end,
    from_req = function(m) return { table = m.table_name, index = m.index_name } end,
  }
end

OPS.DeleteSearchIndex = names("DeleteSearchIndex")
OPS.DeleteSearchIndex.res = function() return {} end
OPS.DeleteSearchIndex.from_res = function() return {} end

OPS.UpdateSearchIndex = {
  req = function(req)
    local ok, msg, code = check_keys(req, set("table", "index", "time_to_live"), "UpdateSearchIndexRequest")
    if not ok then return nil, msg, code end
    return { table_name = req.table, index_name = req.index, time_to_live = req.time_to_live }
  end,
  from_req = function(m) return { table = m.table_name, index = m.index_name, time_to_live = m.time_to_live } end,
  res = function() return {} end,
  from_res = function() return {} end,
}

OPS.ListSearchIndex = {
  req = function(req)
    local ok, msg, code = check_keys(req, set("table"), "ListSearchIndexRequest")
    if not ok then return nil, msg, code end
    return { table_name = req.table }
  end,
  from_req = function(m) return { table = m.table_name } end,
  res = function(res) return { indices = res.indices } end,
  from_res = function(m)
    local out = {}
    for i, x in ipairs(m.indices or {}) do out[i] = { table_name = x.table_name, index_name = x.index_name } end
    return { indices = out }
  end,
}

OPS.DescribeSearchIndex = names("DescribeSearchIndex")
OPS.DescribeSearchIndex.res = function(res)
  local s, msg, code = schema_out(res.schema)
  if not s then return nil, msg, code end
  return { schema = s, sync_stat = res.sync_stat, create_time = res.create_time, time_to_live = res.time_to_live,
    index_status = res.index_status, metering_info = { row_count = res.row_count, storage_size = 0, reserved_read_cu = 0,
      timestamp = res.sync_stat and res.sync_stat.current_sync_timestamp or 0 } }
end
OPS.DescribeSearchIndex.from_res = function(m)
  local s, msg, code = schema_in(m.schema)
  if msg then return nil, msg, code end
  return { schema = s, sync_stat = m.sync_stat, create_time = m.create_time, time_to_live = m.time_to_live,
    index_status = m.index_status, row_count = m.metering_info and m.metering_info.row_count or nil }
end

----------------------------------------------------------------------
-- search

local function ctg_out(c)
  if c == nil then return nil end
  if type(c) ~= "table" then return invalid("columns_to_get must be a table") end
  local ok, km, kc = sq.known(c, CTG_KEYS, "columns_to_get")
  if not ok then return nil, km, kc end
  return { return_type = c.return_type, column_names = c.column_names }
end

local function ctg_in(m)
  if m == nil then return nil end
  return { return_type = m.return_type, column_names = m.column_names and #m.column_names > 0 and m.column_names or nil }
end

local function rows_out(rows)
  local out = {}
  for i, r in ipairs(rows or {}) do
    local b, msg, code = pb.encode_row(r)
    if not b then return nil, msg, code end
    out[i] = b
  end
  return out
end

local function rows_in(list)
  local out = {}
  for i, b in ipairs(list or {}) do
    local r, msg, code = pb.decode_row(b)
    if not r then return nil, msg or "a search row does not decode", code or "CorruptPlainBuffer" end
    out[i] = r
  end
  return out
end

OPS.Search = {
  req = function(req)
    local ok, msg, code = check_keys(req, set("table", "index", "query", "sort", "offset", "limit", "token",
      "get_total_count", "columns_to_get", "routing_values", "timeout_ms", "aggs", "group_bys", "collapse", "highlight"),
      "SearchRequest")
    if not ok then return nil, msg, code end
    ok, msg, code = counts(req, 0, "offset", "limit")
    if not ok then return nil, msg, code end
    local q
    if req.query ~= nil then
      local m1, c1
      q, m1, c1 = sq.encode_query(req.query)
      if not q then return nil, m1, c1 end
    end
    local sort, m2, c2 = sq.encode_sort(req.sort)
    if m2 then return nil, m2, c2 end
    local hl, m7, c7 = sh.enc_highlight(req.highlight)
    if m7 then return nil, m7, c7 end
    local sqm, m6, c6 = sa.to_query(req, { offset = req.offset, limit = req.limit, query = q, sort = sort,
      getTotalCount = req.get_total_count, token = req.token, highlight = hl })
    if not sqm then return nil, m6, c6 end
    local body, m3, c3 = enc("SearchQuery", sqm)
    if not body then return nil, m3, c3 end
    local ctg, m4, c4 = ctg_out(req.columns_to_get)
    if m4 then return nil, m4, c4 end
    local rv
    if req.routing_values then
      rv = {}
      for i, pk in ipairs(req.routing_values) do
        local b, m5, c5 = pb.encode_pk(pk)
        if not b then return nil, m5, c5 end
        rv[i] = b
      end
    end
    return { table_name = req.table, index_name = req.index, columns_to_get = ctg, search_query = body,
      routing_values = rv, timeout_ms = req.timeout_ms }
  end,
  from_req = function(m)
    local s, msg, code = dec("SearchQuery", m.search_query)
    if not s then return nil, msg, code end
    local req = { table = m.table_name, index = m.index_name, offset = s.offset, limit = s.limit,
      get_total_count = s.getTotalCount, columns_to_get = ctg_in(m.columns_to_get), timeout_ms = m.timeout_ms }
    if s.token ~= nil and s.token ~= "" then req.token = s.token end
    if s.highlight then req.highlight = sh.dec_highlight(s.highlight) end
    if s.query then
      local q, m1, c1 = sq.decode_query(s.query)
      if not q then return nil, m1, c1 end
      req.query = q
    end
    if s.sort and s.sort.sorter and #s.sort.sorter > 0 then -- (with a token too: the store refuses one other than the token's)
      local so, m2, c2 = sq.decode_sort(s.sort)
      if not so then return nil, m2, c2 end
      req.sort = so
    end
    if m.routing_values and #m.routing_values > 0 then
      req.routing_values = {}
      for i, b in ipairs(m.routing_values) do
        local pk, m3, c3 = pb.decode_key(b, "SearchRequest.routing_values")
        if not pk then return nil, m3, c3 end
        req.routing_values[i] = pk
      end
    end
    return sa.from_query(s, req)
  end,
  res = function(res)
    local rows, msg, code = rows_out(res.rows)
    if not rows then return nil, msg, code end
    local hits = sh.enc_hits(res.search_hits)
    return sa.to_response(res, { total_hits = res.total_count or -1, rows = rows, is_all_succeeded = res.is_all_succeeded ~= false,
      search_hits = hits, next_token = res.next_token, consumed = consumed(res.consumed) }, rows_out)
  end,
  from_res = function(m)
    local rows, msg, code = rows_in(m.rows)
    if not rows then return nil, msg, code end
    local res = { total_count = m.total_hits or -1, rows = rows, is_all_succeeded = m.is_all_succeeded ~= false }
    if m.next_token ~= nil and m.next_token ~= "" then res.next_token = m.next_token end
    if m.search_hits and #m.search_hits > 0 then res.search_hits = sh.dec_hits(m.search_hits) end
    return sa.from_response(m, res, rows_in)
  end,
}

OPS.ComputeSplits = {
  req = function(req)
    local ok, msg, code = check_keys(req, set("table", "index"), "ComputeSplitsRequest")
    if not ok then return nil, msg, code end
    return { table_name = req.table, search_index_splits_options = { index_name = req.index } }
  end,
  from_req = function(m)
    local o = m.search_index_splits_options
    if not o then return invalid("ComputeSplits: search_index_splits_options is missing") end
    return { table = m.table_name, index = o.index_name }
  end,
  res = function(res) return { session_id = res.session_id, splits_size = res.splits_size } end,
  from_res = function(m) return { session_id = m.session_id, splits_size = m.splits_size } end,
}

OPS.ParallelScan = {
  req = function(req)
    local ok, msg, code = check_keys(req, set("table", "index", "session_id", "query", "limit", "alive_time", "token",
      "current_parallel_id", "max_parallel", "columns_to_get", "timeout_ms"), "ParallelScanRequest")
    if not ok then return nil, msg, code end
    ok, msg, code = counts(req, 1, "limit", "max_parallel")
    if not ok then return nil, msg, code end
    local q
    if req.query ~= nil then
      local m1, c1
      q, m1, c1 = sq.encode_query(req.query)
      if not q then return nil, m1, c1 end
    end
    local ctg, m2, c2 = ctg_out(req.columns_to_get)
    if m2 then return nil, m2, c2 end
    return { table_name = req.table, index_name = req.index, columns_to_get = ctg, session_id = req.session_id,
      timeout_ms = req.timeout_ms, scan_query = { query = q, limit = req.limit, alive_time = req.alive_time,
        token = req.token, current_parallel_id = req.current_parallel_id, max_parallel = req.max_parallel } }
  end,
  from_req = function(m)
    local s = m.scan_query or {}
    local req = { table = m.table_name, index = m.index_name, columns_to_get = ctg_in(m.columns_to_get),
      limit = s.limit, alive_time = s.alive_time, current_parallel_id = s.current_parallel_id,
      max_parallel = s.max_parallel, timeout_ms = m.timeout_ms }
    if m.session_id ~= nil and m.session_id ~= "" then req.session_id = m.session_id end
    if s.token ~= nil and s.token ~= "" then req.token = s.token end
    if s.query then
      local q, m1, c1 = sq.decode_query(s.query)
      if not q then return nil, m1, c1 end
      req.query = q
    end
    return req
  end,
  res = function(res)
    local rows, msg, code = rows_out(res.rows)
    if not rows then return nil, msg, code end
    return { rows = rows, next_token = res.next_token }
  end,
  from_res = function(m)
    local rows, msg, code = rows_in(m.rows)
    if not rows then return nil, msg, code end
    local res = { rows = rows }
    if m.next_token ~= nil and m.next_token ~= "" then res.next_token = m.next_token end
    return res
  end,
}

return { OPS = OPS }
