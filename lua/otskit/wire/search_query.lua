--- otskit.wire.search_query -- a search query and sort in the store's
-- vocabulary (otskit.store.search.query, .sort) <-> the service's Query,
-- Sort and Sorter messages: a Query is its type and its kind's message
-- serialized into bytes; term, range and missing values are variants (a
-- type byte and the payload, as pb.encode_value writes). Decoding refuses
-- an unknown field, a query kind otskit does not run, and anything that
-- does not decode: OTSParameterInvalid.
local core = require("otskit.core").wire
local pb = require "otskit.wire.plainbuffer"
local common = require "otskit.wire.common"

local invalid = common.invalid

local sq = {}

local function set(list)
  local s = {}
  for _, k in ipairs(list) do s[k] = true end
  return s
end
sq.set = set

--- sq.known(v, allowed, what) -> true | nil, msg, code: v is a table whose
-- keys are all in allowed (common.check_keys). The encoders check every
-- part they write: a key they would not put on the wire is refused, never
-- dropped.
function sq.known(v, allowed, what)
  if type(v) ~= "table" then return invalid(what .. " must be a table") end
  return common.check_keys(v, allowed, what)
end
local known = sq.known

-- the keys of each kind's body that travel (its message's fields; weight
-- only where the message has one)
local BODY = {}
for kind, ks in pairs({ match = { "field_name", "text", "minimum_should_match", "operator", "weight" },
  match_phrase = { "field_name", "text", "weight" }, term = { "field_name", "term", "weight" },
  terms = { "field_name", "terms", "weight" }, range = { "field_name", "from", "to", "include_lower", "include_upper" },
  prefix = { "field_name", "prefix", "weight" }, wildcard = { "field_name", "value", "weight" },
  exists = { "field_name" }, bool = { "must", "must_not", "filter", "should", "minimum_should_match" },
  nested = { "path", "query", "score_mode", "weight", "inner_hits" }, const_score = { "filter" },
  function_score = { "query", "field_value_factor" }, match_all = {},
  geo_distance = { "field_name", "center_point", "distance" },
  geo_bounding_box = { "field_name", "top_left", "bottom_right" }, geo_polygon = { "field_name", "points" } }) do
  BODY[kind] = set(ks)
end
local FVF = set{ "field_name" }
sq.BODY = BODY

-- kind <-> QueryType and message
local KINDS = {
  match = { "MATCH_QUERY", "MatchQuery" }, match_phrase = { "MATCH_PHRASE_QUERY", "MatchPhraseQuery" },
  term = { "TERM_QUERY", "TermQuery" }, range = { "RANGE_QUERY", "RangeQuery" },
  prefix = { "PREFIX_QUERY", "PrefixQuery" }, bool = { "BOOL_QUERY", "BoolQuery" },
  const_score = { "CONST_SCORE_QUERY", "ConstScoreQuery" }, nested = { "NESTED_QUERY", "NestedQuery" },
  wildcard = { "WILDCARD_QUERY", "WildcardQuery" }, match_all = { "MATCH_ALL_QUERY", "MatchAllQuery" },
  geo_bounding_box = { "GEO_BOUNDING_BOX_QUERY", "GeoBoundingBoxQuery" },
  geo_distance = { "GEO_DISTANCE_QUERY", "GeoDistanceQuery" }, geo_polygon = { "GEO_POLYGON_QUERY", "GeoPolygonQuery" },
  terms = { "TERMS_QUERY", "TermsQuery" }, exists = { "EXISTS_QUERY", "ExistsQuery" },
  function_score = { "FUNCTION_SCORE_QUERY", "FunctionScoreQuery" },
}
local BY_TYPE = {}
for kind, v in pairs(KINDS) do BY_TYPE[v[1]] = kind end

--- sq.decode_message(name, bytes) -> m | nil, msg, code (an unknown field
-- is refused: otskit cannot honour it)
local function dec(name, bytes)
  local m, unknown = core.proto_decode(name, bytes or "")
  if not m then return invalid(name .. ": " .. tostring(unknown)) end
  if unknown then return invalid(name .. ": unsupported field number " .. unknown) end
  return m
end
sq.decode_message = dec

local function enc(name, m)
  local b, msg = core.proto_encode(name, m)
  if not b then return invalid(name .. ": " .. tostring(msg)) end
  return b
end
sq.encode_message = enc

--- variants: a value <-> bytes
function sq.encode_variant(v, what)
  if v == nil then return nil end
  local b, msg, code = pb.encode_value(v)
  if not b then return nil, what .. ": " .. tostring(msg), code or "OTSParameterInvalid" end
  return b
end

function sq.decode_variant(b, what)
  if b == nil then return nil end
  local v, msg = pb.decode_value(b)
  if v == nil then return invalid(what .. ": not a value: " .. tostring(msg)) end
  -- typed (binary) values carry the bytes; an INTEGER stays typed (LuaJIT:
  -- one beyond 2^53, whose value is decimal text, not a STRING)
  if type(v) == "table" and v.value ~= nil and v.type ~= "INTEGER" then v = v.value end
  return v
end

local encode_query, decode_query

-- the body of each kind: store body <-> message fields
local function enc_list(list, what)
  if list == nil then return nil end
  if type(list) ~= "table" then return invalid(what .. " must be a list of queries") end
  if list[1] == nil and next(list) ~= nil then list = { list } end
  local out = {}
  for i, q in ipairs(list) do
    local m, msg, code = encode_query(q)
    if not m then return nil, msg, code end
    out[i] = m
  end
  return out
end

local function dec_list(list, depth)
  local out = {}
  for i, m in ipairs(list or {}) do
    local q, msg, code = decode_query(m, depth + 1)
    if not q then return nil, msg, code end
    out[i] = q
  end
  return out
end

local SCORE_MODES = { NONE = true, AVG = true, MAX = true, TOTAL = true, MIN = true }

local ENC, DEC = {}, {}

function ENC.term(b)
  local t, msg, code = sq.encode_variant(b.term, "term")
  if msg then return nil, msg, code end
  return { field_name = b.field_name, term = t }
end
function DEC.term(m)
  local v, msg, code = sq.decode_variant(m.term, "TermQuery.term")
  if msg then return nil, msg, code end
  return { field_name = m.field_name, term = v }
end
function ENC.terms(b)
  local out = {}
  for i, v in ipairs(type(b.terms) == "table" and b.terms or {}) do
    local t, msg, code = sq.encode_variant(v, "terms")
    if not t then return nil, msg, code end
    out[i] = t
  end
  return { field_name = b.field_name, terms = out }
end
function DEC.terms(m)
  local out = {}
  for i, t in ipairs(m.terms or {}) do
    local v, msg, code = sq.decode_variant(t, "TermsQuery.terms")
    if v == nil then return nil, msg or "TermsQuery.terms: empty", code or "OTSParameterInvalid" end
    out[i] = v
  end
  return { field_name = m.field_name, terms = out }
end
function ENC.range(b)
  local f, m1, c1 = sq.encode_variant(b.from, "range.from")
  if m1 then return nil, m1, c1 end
  local t, m2, c2 = sq.encode_variant(b.to, "range.to")
  if m2 then return nil, m2, c2 end
  return { field_name = b.field_name, range_from = f, range_to = t, include_lower = b.include_lower,
    include_upper = b.include_upper }
end
function DEC.range(m)
  local f, m1, c1 = sq.decode_variant(m.range_from, "RangeQuery.range_from")
  if m1 then return nil, m1, c1 end
  local t, m2, c2 = sq.decode_variant(m.range_to, "RangeQuery.range_to")
  if m2 then return nil, m2, c2 end
  return { field_name = m.field_name, from = f, to = t, include_lower = m.include_lower, include_upper = m.include_upper }
end
function ENC.match(b)
  local msm = b.minimum_should_match
  if msm ~= nil and type(msm) ~= "number" then return invalid("match: minimum_should_match travels as an integer") end
  return { field_name = b.field_name, text = b.text, minimum_should_match = msm, operator = b.operator }
end
function DEC.match(m)
  return { field_name = m.field_name, text = m.text or "", minimum_should_match = m.minimum_should_match, operator = m.operator }
end
function ENC.bool(b)
  local out = {}
  for _, k in ipairs({ "must", "must_not", "filter", "should" }) do
    local l, msg, code = enc_list(b[k], "bool." .. k)
    if msg then return nil, msg, code end
    out[k .. "_queries"] = l
  end
  local msm = b.minimum_should_match
  if msm ~= nil and type(msm) ~= "number" then return invalid("bool: minimum_should_match travels as an integer") end
  out.minimum_should_match = msm
  return out
end
function DEC.bool(m, depth)
  local out = { minimum_should_match = m.minimum_should_match }
  for _, k in ipairs({ "must", "must_not", "filter", "should" }) do
    local l, msg, code = dec_list(m[k .. "_queries"], depth)
    if not l then return nil, msg, code end
    out[k] = l
  end
  return out
end
function ENC.nested(b)
  local q, msg, code = encode_query(b.query)
  if not q then return nil, msg, code end
  if b.score_mode ~= nil and not SCORE_MODES[b.score_mode] then return invalid("nested: bad score_mode") end
  local ih
  if b.inner_hits ~= nil then -- otskit.wire.search_highlight
    local m2, c2
    ih, m2, c2 = sq.inner_hits.enc(b.inner_hits)
    if not ih then return nil, m2, c2 end
  end
  return { path = b.path, query = q, score_mode = b.score_mode and "SCORE_MODE_" .. b.score_mode or nil, inner_hits = ih }
end
function DEC.nested(m, depth)
  if m.query == nil then return invalid("NestedQuery: query is missing") end
  local q, msg, code = decode_query(m.query, depth + 1)
  if not q then return nil, msg, code end
  local ih
  if m.inner_hits then
    local m2, c2
    ih, m2, c2 = sq.inner_hits.dec(m.inner_hits)
    if not ih then return nil, m2, c2 end
  end
  return { path = m.path, query = q, score_mode = sq.strip(m.score_mode, "SCORE_MODE_"), inner_hits = ih }
end
function ENC.const_score(b)
  local q, msg, code = encode_query(b.filter)
  if not q then return nil, msg, code end
  return { filter = q }
end
function DEC.const_score(m, depth)
  if m.filter == nil then return invalid("ConstScoreQuery: filter is missing") end
  local q, msg, code = decode_query(m.filter, depth + 1)
  if not q then return nil, msg, code end
  return { filter = q }
end
function ENC.function_score(b)
  local q, msg, code = encode_query(b.query)
  if not q then return nil, msg, code end
  if b.field_value_factor ~= nil then
    local ok, m2, c2 = known(b.field_value_factor, FVF, "function_score.field_value_factor")
    if not ok then return nil, m2, c2 end
  end
  return { query = q, field_value_factor = b.field_value_factor }
end
function DEC.function_score(m, depth)
  if m.query == nil then return invalid("FunctionScoreQuery: query is missing") end
  local q, msg, code = decode_query(m.query, depth + 1)
  if not q then return nil, msg, code end
  return { query = q, field_value_factor = m.field_value_factor }
end
-- kinds whose fields are the message's
for _, k in ipairs({ "match_phrase", "prefix", "wildcard", "exists", "geo_distance", "geo_bounding_box", "geo_polygon",
    "match_all" }) do
  ENC[k] = function(b) return b end
  DEC[k] = function(m) return m end
end

--- sq.encode_query(q) -> Query message table | nil, msg, code
function encode_query(q)
  if type(q) ~= "table" then return invalid("a query must be a table { kind = {...} }") end
  local kind, body = next(q)
  if kind == nil or next(q, kind) ~= nil then return invalid("a query names exactly one kind") end
  local k = KINDS[kind]
  if not k then return invalid("query kind " .. tostring(kind) .. " does not travel on the wire") end
  if type(body) ~= "table" then return invalid(kind .. ": the query body must be a table") end
  local ok, km, kc = known(body, BODY[kind], kind)
  if not ok then return nil, km, kc end
  local m, msg, code = ENC[kind](body)
  if not m then return nil, msg, code end
  if body.weight ~= nil and m.weight == nil then m.weight = body.weight end -- a query's weight
  local b, m2, c2 = enc(k[2], m)
  if not b then return nil, m2, c2 end
  return { type = k[1], query = b }
end
sq.encode_query = encode_query

--- sq.decode_query(m) -> the store's query | nil, msg, code
function decode_query(m, depth)
  depth = depth or 0
  if depth > 64 then return invalid("the query nests deeper than 64 levels") end
  local kind = BY_TYPE[m.type]
  if not kind then return invalid("query type " .. tostring(m.type) .. " is not supported by otskit") end
  local body, msg, code = dec(KINDS[kind][2], m.query)
  if not body then return nil, msg, code end
  local q, m2, c2 = DEC[kind](body, depth)
  if not q then return nil, m2, c2 end
  if body.weight ~= nil and q.weight == nil then q.weight = body.weight end -- a query's weight
  return { [kind] = q }
end
sq.decode_query = decode_query

--- sq.register(kind, query_type, message, enc, dec, keys): a query kind
-- another module carries (otskit.wire.search_score); keys: its body's
-- keys that travel
function sq.register(kind, qtype, message, e, d, keys)
  BODY[kind] = set(keys)
  KINDS[kind] = { qtype, message }
  BY_TYPE[qtype] = kind
  ENC[kind], DEC[kind] = e, d
end

----------------------------------------------------------------------
-- sort

local function order_enc(o) return o and "SORT_ORDER_" .. o or nil end

-- the keys of each sorter's body that travel
local SORTER = { field_sort = set{ "field_name", "order", "mode", "missing_value", "missing_field" },
  geo_distance_sort = set{ "field_name", "points", "order", "mode", "distance_type" }, score_sort = set{ "order" },
  pk_sort = set{ "order" }, doc_sort = set{ "order" } }

--- sq.strip(v, prefix) -> an enum value's name without prefix (nil stays
-- nil; a value the message does not define stays a number: the store
-- refuses it)
local function strip(v, prefix)
  if type(v) ~= "string" then return v end
  return (v:gsub("^" .. prefix, ""))
end
sq.strip = strip
local function order_dec(o) return strip(o, "SORT_ORDER_") end

--- sq.encode_sort(list) -> Sort message table | nil, msg, code
function sq.encode_sort(list)
  if list == nil then return nil end
  if type(list) ~= "table" then return invalid("sort must be a list of sorters") end
  local out = {}
  for i, s in ipairs(list) do
    if type(s) ~= "table" then return invalid("sort must be a list of sorters") end
    local kind, body = next(s)
    if not SORTER[kind] or next(s, kind) ~= nil then
      return invalid("sorter " .. i .. ": one of field_sort, geo_distance_sort, score_sort, pk_sort and doc_sort")
    end
    local ok, km, kc = known(body, SORTER[kind], kind)
    if not ok then return nil, km, kc end
    local m = {}
    if s.field_sort then
      local f = s.field_sort
      local mv, msg, code = sq.encode_variant(f.missing_value, "field_sort.missing_value")
      if msg then return nil, msg, code end
      m.field_sort = { field_name = f.field_name, order = order_enc(f.order), mode = f.mode and "SORT_MODE_" .. f.mode or nil,
        missing_value = mv, missing_field = f.missing_field }
    elseif s.geo_distance_sort then
      local g = s.geo_distance_sort
      m.geo_distance_sort = { field_name = g.field_name, points = g.points, order = order_enc(g.order),
        mode = g.mode and "SORT_MODE_" .. g.mode or nil, distance_type = g.distance_type and "GEO_DISTANCE_" .. g.distance_type or nil }
    elseif s.score_sort then m.score_sort = { order = order_enc(s.score_sort.order) }
    elseif s.pk_sort then m.pk_sort = { order = order_enc(s.pk_sort.order) }
    elseif s.doc_sort then m.doc_sort = { order = order_enc(s.doc_sort.order) }
    else return invalid("sorter " .. i .. ": field_sort, geo_distance_sort, score_sort, pk_sort or doc_sort") end
    out[i] = m
  end
  return { sorter = out }
end

--- sq.decode_sort(m) -> list of sorters | nil, msg, code
function sq.decode_sort(m)
  if m == nil then return nil end
  local out = {}
  for i, s in ipairs(m.sorter or {}) do
    if s.field_sort then
      local f = s.field_sort
      if f.nested_filter then return invalid("field_sort.nested_filter is not supported by otskit") end
      local mv, msg, code = sq.decode_variant(f.missing_value, "FieldSort.missing_value")
      if msg then return nil, msg, code end
      out[i] = { field_sort = { field_name = f.field_name, order = order_dec(f.order),
        mode = strip(f.mode, "SORT_MODE_"), missing_value = mv, missing_field = f.missing_field } }
    elseif s.geo_distance_sort then
      local g = s.geo_distance_sort
      if g.nested_filter then return invalid("geo_distance_sort.nested_filter is not supported by otskit") end
      out[i] = { geo_distance_sort = { field_name = g.field_name, points = g.points or {}, order = order_dec(g.order),
        mode = strip(g.mode, "SORT_MODE_"), distance_type = strip(g.distance_type, "GEO_DISTANCE_") } }
    elseif s.score_sort then out[i] = { score_sort = { order = order_dec(s.score_sort.order) } }
    elseif s.pk_sort then out[i] = { pk_sort = { order = order_dec(s.pk_sort.order) } }
    elseif s.doc_sort then out[i] = { doc_sort = { order = order_dec(s.doc_sort.order) } }
    else return invalid("an empty sorter") end
  end
  return out
end

return sq
