--- otskit.store.search.schema -- a search index's definition: the
-- create request checked and normalised (field types, analyzers and their
-- parameters, flags and their defaults, nested fields, index sort,
-- routing fields, TTL), and its describe form.
--
-- Defaults when a flag is absent: index = true, store = true,
-- is_array = false, enable_sort_and_agg = false (TEXT, NESTED and VECTOR
-- fields cannot enable it; a NESTED field's index flag is its sub-fields').
-- enable_highlighting (TEXT) is kept and described; highlight queries are
-- not supported. A field name's trailing spaces are
-- trimmed ("col " is "col").
local base = require "otskit.store.base"
local analyzers = require "otskit.store.search.analyzers"

local schema = {}

schema.TYPES = { LONG = true, DOUBLE = true, BOOLEAN = true, KEYWORD = true, TEXT = true, NESTED = true,
  GEO_POINT = true, DATE = true, VECTOR = true }
-- which value table holds a type's values: num (numbers, booleans, dates),
-- kw (keywords), geo (points), fts (text), none (vectors: exists only)
schema.STORE = { LONG = "num", DOUBLE = "num", BOOLEAN = "num", DATE = "num", KEYWORD = "kw", TEXT = "fts",
  GEO_POINT = "geo", VECTOR = "none", NESTED = "none" }
local SORTABLE = { LONG = true, DOUBLE = true, BOOLEAN = true, DATE = true, KEYWORD = true, GEO_POINT = true }
local FIELD_KEYS = { field_name = true, field_type = true, index = true, analyzer = true, analyzer_parameter = true,
  enable_sort_and_agg = true, store = true, is_array = true, field_schemas = true, date_formats = true,
  vector_options = true, index_options = true, enable_highlighting = true }
local VECTOR_KEYS = { dimension = true, metric_type = true, data_type = true }
local METRICS = { EUCLIDEAN = true, COSINE = true, DOT_PRODUCT = true }

schema.LIMITS = { fields = 1000, nested_fields = 100, nested_depth = 5, vector_dimension = 4096, routing_fields = 4 }
local L = schema.LIMITS

local function bad(msg) return nil, msg, "OTSParameterInvalid" end

local function valid_field(s)
  return type(s) == "string" and #s >= 1 and #s <= 255 and s:match("^[A-Za-z_][A-Za-z0-9_]*$") ~= nil
end

-- one field (and its nested children) -> appended to out.fields
local function field(f, prefix, depth, out, parent)
  if type(f) ~= "table" then return bad("field_schemas must be a list of field tables") end
  for k in pairs(f) do
    if not FIELD_KEYS[k] then return bad("field schema: unsupported option '" .. tostring(k) .. "'") end
  end
  local name = type(f.field_name) == "string" and f.field_name:gsub("%s+$", "") or f.field_name
  if not valid_field(name) then return bad("invalid field_name: " .. tostring(f.field_name)) end
  local ty = f.field_type
  if not schema.TYPES[ty] then
    return bad(("field %s: field_type must be LONG, DOUBLE, BOOLEAN, KEYWORD, TEXT, NESTED, GEO_POINT, DATE or VECTOR, got %s")
      :format(name, tostring(ty)))
  end
  for _, k in ipairs({ "index", "enable_sort_and_agg", "store", "is_array", "enable_highlighting" }) do
    if f[k] ~= nil and type(f[k]) ~= "boolean" then return bad(("field %s: %s must be a boolean"):format(name, k)) end
  end
  local path = prefix and (prefix .. "." .. name) or name
  if out.byname[path] then return bad("duplicated field_name: " .. path) end
  local d = { name = path, type = ty, index = f.index ~= false, store = f.store ~= false, array = f.is_array == true,
    sort = f.enable_sort_and_agg == true, parent = parent, highlight = f.enable_highlighting == true }
  if d.highlight and ty ~= "TEXT" then return bad(("field %s: only TEXT fields enable_highlighting"):format(path)) end
  if d.sort and not SORTABLE[ty] then
    return bad(("field %s: a %s field cannot enable_sort_and_agg"):format(path, ty))
  end
  if f.analyzer ~= nil or f.analyzer_parameter ~= nil then
    if ty ~= "TEXT" then return bad(("field %s: only TEXT fields take an analyzer"):format(path)) end
  end
  if ty == "TEXT" then
    d.analyzer = f.analyzer or "single_word"
    local p, why = analyzers.check(d.analyzer, f.analyzer_parameter)
    if not p then return bad("field " .. path .. ": " .. why) end
    d.params = p
  end
  if f.date_formats ~= nil then
    if ty ~= "DATE" then return bad(("field %s: only DATE fields take date_formats"):format(path)) end
    if type(f.date_formats) ~= "table" then return bad("date_formats must be a list of strings") end
    local lok, lm, lc = base.list(f.date_formats, "field " .. path .. ": date_formats")
    if not lok then return nil, lm, lc end
    d.date_formats = {}
    for i, s in ipairs(f.date_formats) do
      if type(s) ~= "string" or s == "" then return bad("date_formats must be a list of strings") end
      d.date_formats[i] = s
    end
  end
  if f.index_options ~= nil then
    return bad(("field %s: index_options is not supported"):format(path))
  end
  if ty == "VECTOR" then
    local v = f.vector_options
    if type(v) ~= "table" then return bad(("field %s: a VECTOR field needs vector_options"):format(path)) end
    for k in pairs(v) do
      if not VECTOR_KEYS[k] then return bad("vector_options: unsupported option '" .. tostring(k) .. "'") end
    end
    local dim = v.dimension
    if type(dim) ~= "number" or dim ~= math.floor(dim) or dim < 1 or dim > L.vector_dimension then
      return bad(("field %s: vector_options.dimension must be an integer in 1..%d"):format(path, L.vector_dimension))
    end
    local m = v.metric_type or "EUCLIDEAN"
    if not METRICS[m] then return bad("vector_options.metric_type must be EUCLIDEAN, COSINE or DOT_PRODUCT") end
    if v.data_type ~= nil and v.data_type ~= "FLOAT_32" then return bad("vector_options.data_type must be FLOAT_32") end
    if d.array then return bad(("field %s: a VECTOR field cannot be an array"):format(path)) end
    d.vector = { dimension = dim, metric_type = m, data_type = "FLOAT_32" }
  elseif f.vector_options ~= nil then
    return bad(("field %s: only VECTOR fields take vector_options"):format(path))
  end
  out.n = out.n + 1
  if out.n > L.fields then return bad("an index has at most " .. L.fields .. " fields") end
  d.id = out.n
  out.fields[out.n] = d
  out.byname[path] = d
  if ty == "NESTED" then
    if depth >= L.nested_depth then return bad(("field %s: nested fields nest at most %d levels"):format(path, L.nested_depth)) end
    local kids = f.field_schemas
    if type(kids) ~= "table" or #kids == 0 then return bad(("field %s: a NESTED field needs field_schemas"):format(path)) end
    if #kids > L.nested_fields then return bad(("field %s: at most %d sub-fields"):format(path, L.nested_fields)) end
    local lok, lm, lc = base.list(kids, "field " .. path .. ": field_schemas")
    if not lok then return nil, lm, lc end
    d.kids = {}
    for i, k in ipairs(kids) do
      local ok, m, c = field(k, path, depth + 1, out, d)
      if not ok then return nil, m, c end
      d.kids[i] = ok
    end
  elseif f.field_schemas ~= nil then
    return bad(("field %s: only NESTED fields take field_schemas"):format(path))
  end
  return d
end

local ORDERS = { ASC = true, DESC = true }
local MODES = { MIN = true, MAX = true, AVG = true }
-- the keys of an index_sort sorter's body (another is refused, never ignored)
local SORT_KEYS = { pk_sort = base.set{ "order" }, field_sort = base.set{ "field_name", "order", "mode" } }

--- schema.check(req_schema, t, stored) -> def | nil, msg, code. t: the
-- base table (its primary key names the routing fields); stored: the
-- schema is a stored index's (read back, not a request). def = { fields
-- = { {name, type, id, ...} }, byname, top (top-level fields in order),
-- index_sort, routing, ttl, schema (the request's schema, normalised) }
function schema.check(s, t, stored)
  if type(s) ~= "table" then return bad("schema must be a table { field_schemas, index_setting, index_sort }") end
  for k in pairs(s) do
    if k ~= "field_schemas" and k ~= "index_setting" and k ~= "index_sort" then
      return bad("schema: unsupported option '" .. tostring(k) .. "'")
    end
  end
  local fs = s.field_schemas
  if type(fs) ~= "table" or #fs == 0 then return bad("schema.field_schemas must be a non-empty list") end
  local lok, lm, lc = base.list(fs, "schema.field_schemas")
  if not lok then return nil, lm, lc end
  local out = { fields = {}, byname = {}, n = 0, top = {} }
  local has_nested = false
  for i, f in ipairs(fs) do
    local d, m, c = field(f, nil, 1, out, nil)
    if not d then return nil, m, c end
    out.top[i] = d
    if d.type == "NESTED" then has_nested = true end
  end
  local set = s.index_setting or {}
  if type(set) ~= "table" then return bad("index_setting must be a table") end
  for k in pairs(set) do
    if k ~= "routing_fields" and k ~= "number_of_shards" and k ~= "routing_partition_size" then
      return bad("index_setting: unsupported option '" .. tostring(k) .. "'")
    end
  end
  if set.number_of_shards ~= nil and set.number_of_shards ~= 1 then return bad("index_setting.number_of_shards must be 1") end
  if set.routing_partition_size ~= nil and set.routing_partition_size ~= 1 then
    return bad("index_setting.routing_partition_size must be 1")
  end
  out.routing = {}
  if set.routing_fields ~= nil then
    if type(set.routing_fields) ~= "table" or #set.routing_fields > L.routing_fields then
      return bad("index_setting.routing_fields must be a list of at most " .. L.routing_fields .. " primary key columns")
    end
    local lok, lm, lc = base.list(set.routing_fields, "index_setting.routing_fields")
    if not lok then return nil, lm, lc end
    for i, name in ipairs(set.routing_fields) do
      local pos
      for j, c in ipairs(t.pk) do if c.name == name then pos = j end end
      if not pos then return bad("routing field " .. tostring(name) .. " is not a primary key column of " .. t.name) end
      out.routing[i] = { name = name, pos = pos }
    end
  end
  local sorters = s.index_sort
  out.index_sort = {}
  if sorters ~= nil then
    if has_nested then return bad("index_sort is not supported on an index with NESTED fields") end
    if type(sorters) ~= "table" then return bad("index_sort must be a list of sorters") end
    if not stored then
      local lok, lm, lc = base.list(sorters, "index_sort")
      if not lok then return nil, lm, lc end
    end
    for i, so in ipairs(sorters) do
      if type(so) ~= "table" then return bad("index_sort must be a list of sorters") end
      if not stored then -- (an index made before these checks still opens)
        local kind, b = next(so)
        if not SORT_KEYS[kind] or next(so, kind) ~= nil then
          return bad("index_sort: each sorter is one of pk_sort and field_sort (only these sort an index)")
        end
        if type(b) ~= "table" then return bad("index_sort: " .. kind .. " must be a table") end
        local ok, km, kc = base.known(b, SORT_KEYS[kind], "index_sort " .. kind)
        if not ok then return nil, km, kc end
      end
      if so.pk_sort then
        local o = so.pk_sort.order or "ASC"
        if not ORDERS[o] then return bad("pk_sort.order must be ASC or DESC") end
        out.index_sort[i] = { pk_sort = { order = o } }
      elseif so.field_sort then
        local f = so.field_sort
        local d = out.byname[f.field_name]
        if not d then return bad("index_sort: unknown field " .. tostring(f.field_name)) end
        if not d.sort then return bad("index_sort: field " .. d.name .. " does not enable_sort_and_agg") end
        if d.parent then return bad("index_sort: nested field " .. d.name .. " cannot sort the index") end
        local o = f.order or "ASC"
        if not ORDERS[o] then return bad("field_sort.order must be ASC or DESC") end
        if f.mode ~= nil and not MODES[f.mode] then return bad("field_sort.mode must be MIN, MAX or AVG") end
        if f.mode == "AVG" and d.type == "KEYWORD" and not stored then
          return bad(("index_sort: field_sort.mode AVG: field [%s] is KEYWORD (MIN or MAX)"):format(d.name))
        end
        out.index_sort[i] = { field_sort = { field_name = d.name, order = o, mode = f.mode } }
      else
        return bad("index_sort supports only pk_sort and field_sort")
      end
    end
  end
  if #out.index_sort == 0 then out.index_sort = { { pk_sort = { order = "ASC" } } } end
  out.n = nil
  return out
end

-- a field as describe shows it
local function show(d)
  local f = { field_name = d.name:match("([^.]+)$"), field_type = d.type, index = d.index, store = d.store,
    is_array = d.array, enable_sort_and_agg = d.sort }
  if d.analyzer then f.analyzer, f.analyzer_parameter = d.analyzer, d.params end
  if d.highlight then f.enable_highlighting = true end
  if d.date_formats then f.date_formats = d.date_formats end
  if d.vector then f.vector_options = d.vector end
  if d.kids then
    f.field_schemas = {}
    for i, k in ipairs(d.kids) do f.field_schemas[i] = show(k) end
  end
  return f
end

--- schema.describe(def) -> { field_schemas, index_setting, index_sort }
function schema.describe(def)
  local fs = {}
  for i, d in ipairs(def.top) do fs[i] = show(d) end
  local rf = {}
  for i, r in ipairs(def.routing) do rf[i] = r.name end
  return { field_schemas = fs, index_setting = { number_of_shards = 1, routing_fields = rf },
    index_sort = def.index_sort }
end

--- schema.rebuild(req_schema, t) -> def: a stored definition read back
function schema.rebuild(s, t)
  local def, msg = schema.check(s, t, true)
  if not def then error("otskit.store.search: a stored index definition no longer checks: " .. tostring(msg)) end
  return def
end

return schema
