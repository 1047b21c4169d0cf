--- otskit.wire.tables -- the table operations: CreateTable (with split
-- points), DeleteTable, ListTable, DescribeTable, UpdateTable and
-- ComputeSplitPointsBySize, their options and reserved throughput.
-- Operations have the shape of otskit.wire.rows's.
local pb = require "otskit.wire.plainbuffer"
local common = require "otskit.wire.common"

local invalid, check_keys, set, refuse = common.invalid, common.check_keys, common.set, common.refuse
local consumed, table_name = common.consumed, common.table_name
local decode_row = pb.decode_row
local key_cell = require("otskit.values").key_cell

local OPS = {}

local PK_TYPES = { INTEGER = true, STRING = true, BINARY = true }

local function encode_options(o)
  if o == nil then return nil end
  if type(o) ~= "table" then return invalid("options must be a table") end
  for k in pairs(o) do
    if k ~= "time_to_live" and k ~= "max_versions" and k ~= "max_time_deviation" then
      return invalid("options: unsupported option '" .. tostring(k) .. "'")
    end
  end
  return { time_to_live = o.time_to_live, max_versions = o.max_versions,
           deviation_cell_version_in_sec = o.max_time_deviation }
end

local function decode_options(m)
  if m == nil then return nil end
  return { time_to_live = m.time_to_live, max_versions = m.max_versions,
           max_time_deviation = m.deviation_cell_version_in_sec }
end

local function refuse_options(m, what)
  if m == nil then return true end
  return refuse(m, what .. ".table_options", "bloom_filter_type", "block_size", "allow_update")
end

local function encode_reserved(r)
  if r == nil then return nil end
  if type(r) ~= "table" then return invalid("reserved must be { read =, write = }") end
  for k in pairs(r) do
    if k ~= "read" and k ~= "write" then return invalid("reserved: unsupported option '" .. tostring(k) .. "'") end
  end
  return { capacity_unit = { read = r.read, write = r.write } }
end

local function decode_reserved(m)
  if m == nil then return nil end
  local cu = m.capacity_unit or {}
  return { read = cu.read, write = cu.write }
end

-- Split points (CreateTable `splits`, partition-key values) travel as
-- partition ranges [INF_MIN, p1), [p1, p2), ..., [pn, INF_MAX), each end a
-- PlainBuffer value without its length prefix: the type byte and the
-- payload; INF_MIN and INF_MAX are the bare type bytes 9 and 10.
local PART_MIN, PART_MAX = "\9", "\10"
local SPLIT_VT = { [0] = true, [3] = true, [7] = true }   -- INTEGER, STRING, BINARY

local function encode_splits(splits)
  if splits == nil then return nil end
  if type(splits) ~= "table" then return invalid("splits must be a list of partition-key values") end
  if #splits == 0 then return nil end
  local ends = { PART_MIN }
  for i, v in ipairs(splits) do
    local b = type(v) ~= "boolean" and pb.encode_value(v)
    if not b or not SPLIT_VT[b:byte(1)] then   -- the store's code for a value of no key type
      return nil, "splits[" .. i .. "] must be an INTEGER, STRING or BINARY value", "OTSInvalidPK"
    end
    ends[i + 1] = b
  end
  ends[#ends + 1] = PART_MAX
  local parts = {}
  for i = 1, #ends - 1 do parts[i] = { begin = ends[i], ["end"] = ends[i + 1] } end
  return parts
end

local function decode_splits(parts)
  if parts == nil or #parts == 0 then return nil end
  local function bad(why) return invalid("CreateTable partitions: " .. why) end
  if parts[1].begin ~= PART_MIN then return bad("the first range must begin at INF_MIN") end
  if parts[#parts]["end"] ~= PART_MAX then return bad("the last range must end at INF_MAX") end
  local splits = {}
  for i = 1, #parts - 1 do
    local e = parts[i]["end"]
    if parts[i + 1].begin ~= e then return bad("range " .. (i + 1) .. " must begin where range " .. i .. " ends") end
    if not SPLIT_VT[e:byte(1) or -1] then
      return nil, "CreateTable partitions: split point " .. i .. " must be an INTEGER, STRING or BINARY value", "OTSInvalidPK"
    end
    local v, msg = pb.decode_value(e)
    if v == nil then return bad("split point " .. i .. ": " .. tostring(msg)) end
    splits[i] = v
  end
  return splits
end

OPS.CreateTable = {
  req = function(req)
    local ok, msg, code = check_keys(req, set("name", "table", "primary_key", "options", "reserved", "splits"), "CreateTableRequest")
    if not ok then return nil, msg, code end
    if type(req.primary_key) ~= "table" then return invalid("primary_key must be a list of {name, type}") end
    local pk = {}
    for i, c in ipairs(req.primary_key) do
      if type(c) ~= "table" then return invalid("primary_key[" .. i .. "] must be {name, type [, \"AUTO_INCREMENT\"]}") end
      local n, ty, opt = c[1] or c.name, c[2] or c.type, c[3] or c.option
      if not PK_TYPES[ty] then return invalid("primary_key[" .. i .. "] type must be INTEGER, STRING or BINARY") end
      if opt ~= nil and opt ~= "AUTO_INCREMENT" then return invalid("primary_key[" .. i .. "] option must be AUTO_INCREMENT") end
      pk[i] = { name = n, type = ty, option = opt }
    end
    local opts, m1, c1 = encode_options(req.options)
    if m1 then return nil, m1, c1 end
    local res, m2, c2 = encode_reserved(req.reserved or { read = 0, write = 0 })
    if not res then return nil, m2, c2 end
    local parts, m3, c3 = encode_splits(req.splits)
    if m3 then return nil, m3, c3 end
    return { table_meta = { table_name = table_name(req), primary_key = pk }, reserved_throughput = res,
             table_options = opts, partitions = parts }
  end,
  from_req = function(m)
    local splits, smsg, scode = decode_splits(m.partitions)
    if smsg then return nil, smsg, scode end
    local ok, msg, code = refuse(m, "CreateTable", "stream_spec")
    if ok then ok, msg, code = refuse(m.table_meta, "CreateTable", "defined_column") end
    if ok then ok, msg, code = refuse_options(m.table_options, "CreateTable") end
    if not ok then return nil, msg, code end
    local pk = {}
    for i, c in ipairs(m.table_meta.primary_key or {}) do pk[i] = { c.name, c.type, c.option } end
    return { name = m.table_meta.table_name, primary_key = pk, options = decode_options(m.table_options),
             reserved = decode_reserved(m.reserved_throughput), splits = splits }
  end,
  res = function() return {} end,
  from_res = function(_, req) return { table = req and table_name(req) or nil } end,
}

OPS.DeleteTable = {
  req = function(req)
    local ok, msg, code = check_keys(req, set("name", "table"), "DeleteTableRequest")
    if not ok then return nil, msg, code end
    return { table_name = table_name(req) }
  end,
  from_req = function(m) return { name = m.table_name } end,
  res = function() return {} end,
  from_res = function() return {} end,
}

OPS.ListTable = {
  req = function(req)
    if req ~= nil then
      local ok, msg, code = check_keys(req, {}, "ListTableRequest")
      if not ok then return nil, msg, code end
    end
    return {}
  end,
  from_req = function() return {} end,
  res = function(res) return { table_names = res.table_names } end,
  from_res = function(m) return { table_names = m.table_names or {} } end,
}

OPS.DescribeTable = {
  req = function(req)
    local ok, msg, code = check_keys(req, set("name", "table"), "DescribeTableRequest")
    if not ok then return nil, msg, code end
    return { table_name = table_name(req) }
  end,
  from_req = function(m) return { name = m.table_name } end,
  res = function(res)
    local meta = res.table_meta or {}
    local pk, splits = {}, {}
    for i, c in ipairs(meta.primary_key or {}) do
      pk[i] = { name = c[1] or c.name, type = c[2] or c.type, option = c[3] or c.option }
    end
    local first, ty = pk[1] and pk[1].name, pk[1] and pk[1].type
    for i, v in ipairs(res.shard_splits or {}) do
      -- a BINARY (or LuaJIT int64 text) value goes out as its column's type
      local b, msg, code = pb.encode_pk({ key_cell(first, ty, v) })
      if not b then return nil, "shard_splits: " .. msg, code end
      splits[i] = b
    end
    local r = res.reserved or {}
    return {
      table_meta = { table_name = meta.table or meta.name, primary_key = pk },
      reserved_throughput_details = { capacity_unit = { read = r.read or 0, write = r.write or 0 },
                                      last_increase_time = r.last_increase_time or 0,
                                      last_decrease_time = r.last_decrease_time },
      table_options = encode_options(res.options) or { time_to_live = -1, max_versions = 1 },
      table_status = res.status or "ACTIVE",
      shard_splits = splits,
    }
  end,
  from_res = function(m)
    local pk, splits = {}, {}
    for i, c in ipairs(m.table_meta.primary_key or {}) do pk[i] = { c.name, c.type, c.option } end
    for i, b in ipairs(m.shard_splits or {}) do
      local row, msg, code = decode_row(b)
      if not row then return nil, msg or "shard_splits: empty", code or "CorruptPlainBuffer" end
      splits[i] = row.primary_key[1][2]
    end
    local rd = m.reserved_throughput_details
    local reserved = decode_reserved(rd)
    reserved.last_increase_time, reserved.last_decrease_time = rd.last_increase_time, rd.last_decrease_time
    return { table_meta = { table = m.table_meta.table_name, primary_key = pk }, shard_splits = splits,
             options = decode_options(m.table_options), reserved = reserved, status = m.table_status }
  end,
}

OPS.UpdateTable = {
  req = function(req)
    local ok, msg, code = check_keys(req, set("name", "table", "options", "reserved"), "UpdateTableRequest")
    if not ok then return nil, msg, code end
    local opts, m1, c1 = encode_options(req.options)
    if m1 then return nil, m1, c1 end
    local res, m2, c2 = encode_reserved(req.reserved)
    if m2 then return nil, m2, c2 end
    return { table_name = table_name(req), table_options = opts, reserved_throughput = res }
  end,
  from_req = function(m)
    local ok, msg, code = refuse(m, "UpdateTable", "stream_spec")
    if ok then ok, msg, code = refuse_options(m.table_options, "UpdateTable") end
    if not ok then return nil, msg, code end
    return { name = m.table_name, options = decode_options(m.table_options),
             reserved = decode_reserved(m.reserved_throughput) }
  end,
  res = function(res)
    local r = res.reserved or {}
    return {
      reserved_throughput_details = { capacity_unit = { read = r.read or 0, write = r.write or 0 },
                                      last_increase_time = r.last_increase_time or 0,
                                      last_decrease_time = r.last_decrease_time },
      table_options = encode_options(res.options) or {},
    }
  end,
  from_res = function(m)
    local rd = m.reserved_throughput_details
    local reserved = decode_reserved(rd)
    reserved.last_increase_time, reserved.last_decrease_time = rd.last_increase_time, rd.last_decrease_time
    return { options = decode_options(m.table_options), reserved = reserved }
  end,
}

OPS.ComputeSplitPointsBySize = {
  req = function(req)
    local ok, msg, code = check_keys(req, set("table", "split_size", "split_size_unit_in_byte"), "ComputeSplitPointsBySizeRequest")
    if not ok then return nil, msg, code end
    return { table_name = req.table, split_size = req.split_size, split_size_unit_in_byte = req.split_size_unit_in_byte }
  end,
  from_req = function(m)
    return { table = m.table_name, split_size = m.split_size, split_size_unit_in_byte = m.split_size_unit_in_byte }
  end,
  res = function(res)
    local schema, points, locs = {}, {}, {}
    for i, c in ipairs(res.schema or {}) do schema[i] = { name = c[1] or c.name, type = c[2] or c.type } end
    for i, pk in ipairs(res.split_points or {}) do
      local b, msg, code = pb.encode_pk(pk)
      if not b then return nil, "split_points: " .. msg, code end
      points[i] = b
    end
    for i, l in ipairs(res.locations or {}) do locs[i] = { location = l.location, ["repeat"] = l["repeat"] } end
    return { consumed = consumed(res.consumed), schema = schema, split_points = points, locations = locs }
  end,
  from_res = function(m)
    local schema, points, locs = {}, {}, {}
    for i, c in ipairs(m.schema or {}) do schema[i] = { c.name, c.type } end
    for i, b in ipairs(m.split_points or {}) do
      local row, msg, code = decode_row(b)
      if not row then return nil, msg or "split_points: empty", code or "CorruptPlainBuffer" end
      points[i] = row.primary_key
    end
    for i, l in ipairs(m.locations or {}) do locs[i] = { location = l.location, ["repeat"] = l["repeat"] } end
    return { consumed = consumed(m.consumed), schema = schema, split_points = points, locations = locs }
  end,
}

--- tables.OPS: api name -> operation.
return { OPS = OPS }
