--- otskit.wire -- Tablestore's wire format (API 2015-12-31) in the store's
-- vocabulary: PlainBuffer rows, the protobuf messages of every table, row,
-- batch and range operation, and request/response signatures.
--
-- PlainBuffer (C, checksums written and verified):
--   wire.encode_pk(pk), wire.encode_put(pk, columns),
--   wire.encode_update(pk, ops), wire.encode_delete(pk) -> bytes | nil, msg, code
--   wire.decode_rows(bytes) -> rows | nil, msg, "CorruptPlainBuffer"
-- Messages (api = "PutRow", "GetRange", ...; req/res exactly what the
-- store method of that api takes/returns):
--   client: wire.encode_request(api, req) -> body | nil, msg, code
--           wire.decode_response(api, body [, req]) -> res | nil, msg, code
--   server: wire.decode_request(api, body) -> req | nil, msg, code
--           wire.encode_response(api, res) -> body | nil, msg, code
--   wire.encode_error(code, msg) -> body; wire.decode_error(body) -> code, msg
-- Signatures: wire.sign_request(secret, api, headers),
--   wire.sign_response(secret, api, headers), wire.content_md5(body),
--   wire.date(ms), wire.parse_date(s), wire.equal(a, b).
local core = require("otskit.core").wire
local store = require "otskit.store"
local values = require "otskit.store.values"

local wire = {}

--- The store's sentinels (the same objects): open ends of a get_range
-- bound, and the value of an auto-increment key column in put_row.
store.AUTO_INCREMENT = store.AUTO_INCREMENT
  or setmetatable({}, { __tostring = function() return "AUTO_INCREMENT" end })
wire.INF_MIN, wire.INF_MAX, wire.AUTO_INCREMENT = store.INF_MIN, store.INF_MAX, store.AUTO_INCREMENT
wire.binary, wire.integer, wire.double = values.binary, values.integer, values.double

core.init(getmetatable(values.binary("")), store.INF_MIN, store.INF_MAX, store.AUTO_INCREMENT)

local unpack_or = table.unpack or unpack
local EMPTY = {}
local INVALID = "OTSParameterInvalid"
local function invalid(msg) return nil, msg, INVALID end

----------------------------------------------------------------------
-- PlainBuffer

--- wire.encode_pk(pk) -> bytes: a primary key {{name, value}, ...};
-- values INTEGER, STRING, BINARY, or wire.INF_MIN / wire.INF_MAX.
wire.encode_pk = core.encode_pk

--- wire.encode_put(pk, columns) -> bytes: columns {{name, value [, ts]}, ...}
-- (order kept) or {name = value} (name order). pk may hold AUTO_INCREMENT.
wire.encode_put = core.encode_put

--- wire.encode_delete(pk) -> bytes: the key and the delete-row marker.
wire.encode_delete = core.encode_delete

local function append(dst, src)
  for _, v in ipairs(src) do dst[#dst + 1] = v end
end

local function sorted_keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks)
  return ks
end

-- the store's update map -> the op list (PUT, DELETE, DELETE_ALL, INCREMENT)
local function update_ops(up)
  if type(up) ~= "table" then return invalid("update must be a table") end
  if #up > 0 then return up end
  local ops = {}
  for k in pairs(up) do
    if k ~= "PUT" and k ~= "DELETE" and k ~= "DELETE_ALL" and k ~= "INCREMENT" then
      return invalid("update operation must be PUT, DELETE, DELETE_ALL or INCREMENT, got " .. tostring(k))
    end
  end
  local put = up.PUT
  if put ~= nil then
    if type(put) ~= "table" then return invalid("update.PUT must be a table") end
    if #put > 0 then
      for _, c in ipairs(put) do
        if type(c) ~= "table" then return invalid("update.PUT entries must be {name, value [, ts]}") end
        ops[#ops + 1] = { "PUT", c[1], c[2], c[3] }
      end
    else
      for _, n in ipairs(sorted_keys(put)) do ops[#ops + 1] = { "PUT", n, put[n] } end
    end
  end
  for _, c in ipairs(up.DELETE or {}) do
    if type(c) ~= "table" then return invalid("update.DELETE entries must be {name, timestamp}") end
    ops[#ops + 1] = { "DELETE", c[1], c[2] }
  end
  for _, n in ipairs(up.DELETE_ALL or {}) do ops[#ops + 1] = { "DELETE_ALL", n } end
  local inc = up.INCREMENT
  if inc ~= nil then
    if type(inc) ~= "table" then return invalid("update.INCREMENT must be {name = delta}") end
    for _, n in ipairs(sorted_keys(inc)) do ops[#ops + 1] = { "INCREMENT", n, inc[n] } end
  end
  return ops
end

--- wire.encode_update(pk, ops) -> bytes: ops a list of {"PUT", name, value
-- [, ts]}, {"DELETE", name, ts}, {"DELETE_ALL", name}, {"INCREMENT", name,
-- delta}, or the store's update map (PUT, DELETE, DELETE_ALL, INCREMENT).
function wire.encode_update(pk, ops)
  local list, msg, code = update_ops(ops)
  if not list then return nil, msg, code end
  return core.encode_update(pk, list)
end

--- wire.decode_rows(bytes [, { typed = true }]) -> rows | nil, msg,
-- "CorruptPlainBuffer". Each row, in the store's read shape: { primary_key
-- = {{name, value}, ...}, columns = {name = newest value}, cells = {{name,
-- value, ts, type}, ...} } (cells in wire order; an update cell also has
-- op = "DELETE" | "DELETE_ALL" | "INCREMENT"; a row with the delete marker
-- has deleted = true). typed: BINARY values (and on LuaJIT integral
-- DOUBLEs, int64s past 2^53) as wire.binary / wire.double / wire.integer
-- values, what the store's writes take. Trailing zero bytes after the last
-- row are accepted.
function wire.decode_rows(bytes, opts)
  return core.decode_rows(bytes, 0, opts ~= nil and opts.typed)
end

-- one row field ("" = no row); typed: for a request (the store's input)
local function decode_row(bytes, typed)
  if bytes == nil or bytes == "" then return nil end
  local rows, msg, code = core.decode_rows(bytes, 1, typed)
  if not rows then return nil, msg, code end
  if rows[1] == nil then return false end
  return rows[1]
end

-- the row of a response: its cells when it has them (with timestamps and
-- types: the store returns BINARY values as strings), else its columns
local function encode_row(row)
  return core.encode_put(row.primary_key, row.cells or row.columns)
end

----------------------------------------------------------------------
-- filters and conditions

local CMP = { EQUAL = 1, NOT_EQUAL = 1, GREATER_THAN = 1, GREATER_EQUAL = 1, LESS_THAN = 1, LESS_EQUAL = 1 }
local LOGICAL = { NOT = 1, AND = 1, OR = 1 }

-- a filter / column condition -> the Filter message as a table
local function filter_msg(f, depth)
  depth = depth or 0
  if type(f) ~= "table" then return invalid("filter must be a table") end
  if depth > 32 then return invalid("filter nested too deep") end
  if f.pagination ~= nil then
    local p = f.pagination
    if type(p) ~= "table" then return invalid("filter.pagination must be { offset =, limit = }") end
    local b, msg = core.pb_encode("ColumnPaginationFilter", { offset = p.offset or 0, limit = p.limit })
    if not b then return invalid("filter.pagination: " .. msg) end
    return { type = "FT_COLUMN_PAGINATION", filter = b }
  end
  if f.logical ~= nil then
    if not LOGICAL[f.logical] then return invalid("filter.logical must be NOT, AND or OR, got " .. tostring(f.logical)) end
    if type(f.conditions) ~= "table" then return invalid("a " .. f.logical .. " filter needs conditions") end
    local subs = {}
    for i, c in ipairs(f.conditions) do
      local m, msg, code = filter_msg(c, depth + 1)
      if not m then return nil, msg, code end
      subs[i] = m
    end
    local b, msg = core.pb_encode("CompositeColumnValueFilter", { combinator = "LO_" .. f.logical, sub_filters = subs })
    if not b then return invalid(msg) end
    return { type = "FT_COMPOSITE_COLUMN_VALUE", filter = b }
  end
  if not CMP[f.comparator] then
    return invalid("filter comparator must be EQUAL, NOT_EQUAL, GREATER_THAN, GREATER_EQUAL, LESS_THAN or LESS_EQUAL, got " .. tostring(f.comparator))
  end
  if type(f.column) ~= "string" then return invalid("filter needs a column name") end
  local v, msg, code = core.encode_value(f.value)
  if not v then return nil, msg, code end
  local b, m2 = core.pb_encode("SingleColumnValueFilter", {
    comparator = "CT_" .. f.comparator, column_name = f.column, column_value = v,
    filter_if_missing = f.pass_if_missing == false, latest_version_only = f.latest_version_only ~= false,
  })
  if not b then return invalid(m2) end
  return { type = "FT_SINGLE_COLUMN_VALUE", filter = b }
end

local function encode_filter(f)
  local m, msg, code = filter_msg(f)
  if not m then return nil, msg, code end
  return core.pb_encode("Filter", m)
end

local function filter_from(m, depth)
  if depth > 32 then return invalid("filter nested too deep") end
  local t = m.type
  if t == "FT_SINGLE_COLUMN_VALUE" then
    local s, msg = core.pb_decode("SingleColumnValueFilter", m.filter)
    if not s then return invalid("filter: " .. msg) end
    local v, m2, c2 = core.decode_value(s.column_value)
    if v == nil then return nil, m2, c2 end
    return { column = s.column_name, comparator = s.comparator:sub(4), value = v,
             pass_if_missing = not s.filter_if_missing, latest_version_only = s.latest_version_only }
  elseif t == "FT_COMPOSITE_COLUMN_VALUE" then
    local c, msg = core.pb_decode("CompositeColumnValueFilter", m.filter)
    if not c then return invalid("filter: " .. msg) end
    local conds = {}
    for i, sub in ipairs(c.sub_filters or {}) do
      local f, m2, c2 = filter_from(sub, depth + 1)
      if not f then return nil, m2, c2 end
      conds[i] = f
    end
    return { logical = c.combinator:sub(4), conditions = conds }
  elseif t == "FT_COLUMN_PAGINATION" then
    local p, msg = core.pb_decode("ColumnPaginationFilter", m.filter)
    if not p then return invalid("filter: " .. msg) end
    return { pagination = { offset = p.offset, limit = p.limit } }
  end
  return invalid("unsupported filter type " .. tostring(t))
end

local function decode_filter(bytes)
  local m, msg = core.pb_decode("Filter", bytes)
  if not m then return invalid("filter: " .. msg) end
  return filter_from(m, 0)
end

local EXIST = { IGNORE = true, EXPECT_EXIST = true, EXPECT_NOT_EXIST = true }

-- the messages of the plain conditions, shared (pb_encode only reads them)
local PLAIN_COND = { IGNORE = { row_existence = "IGNORE" }, EXPECT_EXIST = { row_existence = "EXPECT_EXIST" },
                     EXPECT_NOT_EXIST = { row_existence = "EXPECT_NOT_EXIST" } }

local function encode_condition(c)
  if c == nil then return PLAIN_COND.IGNORE end
  if type(c) == "string" then
    if not EXIST[c] then return invalid("condition must be IGNORE, EXPECT_EXIST or EXPECT_NOT_EXIST, got " .. c) end
    return PLAIN_COND[c]
  end
  if type(c) ~= "table" then return invalid("condition must be a string or a table") end
  local re = c.row_existence or "IGNORE"
  if not EXIST[re] then return invalid("condition.row_existence must be IGNORE, EXPECT_EXIST or EXPECT_NOT_EXIST, got " .. tostring(re)) end
  local out = { row_existence = re }
  if c.column_condition ~= nil then
    local b, msg, code = encode_filter(c.column_condition)
    if not b then return nil, msg, code end
    out.column_condition = b
  end
  return out
end

local function decode_condition(m)
  if m.column_condition == nil then return m.row_existence end
  local cc, msg, code = decode_filter(m.column_condition)
  if not cc then return nil, msg, code end
  return { row_existence = m.row_existence, column_condition = cc }
end

local RT = { RT_NONE = true, RT_PK = true, RT_AFTER_MODIFY = true }

local function encode_return(req)
  local rt, names = req.return_type, req.return_column_names
  if rt == nil and names == nil then return nil end
  if rt ~= nil and not RT[rt] then return invalid("return_type must be RT_NONE, RT_PK or RT_AFTER_MODIFY, got " .. tostring(rt)) end
  return { return_type = rt, return_column_names = names }
end

local function decode_return(m, req)
  local rc = m.return_content
  if rc then req.return_type, req.return_column_names = rc.return_type, rc.return_column_names end
end

----------------------------------------------------------------------
-- option checks: an unsupported option is refused, never ignored

local function check_keys(req, allowed, what)
  if type(req) ~= "table" then error("otskit.wire: " .. what .. " takes a request table", 3) end
  for k in pairs(req) do
    if not allowed[k] then return invalid(what .. ": unsupported option '" .. tostring(k) .. "'") end
  end
  return true
end

local function set(...)
  local s = {}
  for _, k in ipairs({ ... }) do s[k] = true end
  return s
end

-- fields a decoded request may not carry (otskit cannot honour them)
local function refuse(m, what, ...)
  for _, k in ipairs({ ... }) do
    if m[k] ~= nil then return invalid(what .. ": unsupported field '" .. k .. "'") end
  end
  return true
end

----------------------------------------------------------------------
-- read options (get_row, get_range, batch_get_row tables)

local READ_OPTS = { "columns", "max_versions", "time_range", "filter", "start_column", "end_column" }

local function encode_read(req, m)
  m.columns_to_get = req.columns
  m.max_versions = req.max_versions or 1 -- always on the wire, as the SDKs do
  local tr = req.time_range
  if tr ~= nil then
    if type(tr) ~= "table" then return invalid("time_range must be {start, stop} or {specific = ts}") end
    if tr.specific ~= nil then m.time_range = { specific_time = tr.specific }
    else m.time_range = { start_time = tr[1] or tr.start, end_time = tr[2] or tr.stop } end
  end
  if req.filter ~= nil then
    local b, msg, code = encode_filter(req.filter)
    if not b then return nil, msg, code end
    m.filter = b
  end
  m.start_column, m.end_column = req.start_column, req.end_column
  return true
end

local function decode_read(m, req)
  req.columns = m.columns_to_get
  req.max_versions = m.max_versions
  local tr = m.time_range
  if tr then
    if tr.specific_time ~= nil then req.time_range = { specific = tr.specific_time }
    else req.time_range = { tr.start_time, tr.end_time } end
  end
  if m.filter ~= nil then
    local f, msg, code = decode_filter(m.filter)
    if not f then return nil, msg, code end
    req.filter = f
  end
  req.start_column, req.end_column = m.start_column, m.end_column
  return true
end

local function consumed(c)
  local cu = c and c.capacity_unit or {}
  return { capacity_unit = { read = cu.read or 0, write = cu.write or 0 } }
end

----------------------------------------------------------------------
-- the operations: each has
--   req(req) -> proto table (client), from_req(m) -> req (server),
--   res(res) -> proto table (server), from_res(m, req) -> res (client)

local OPS = {}

local function table_name(req) return req.table or req.name end

-- single-row writes share their shape
local function write_op(msgname, rowfield, encode, allowed_extra)
  local allowed = set("table", "primary_key", "condition", "return_type", "return_column_names", allowed_extra)
  return {
    req = function(req)
      local ok, msg, code = check_keys(req, allowed, msgname)
      if not ok then return nil, msg, code end
      local row, m1, c1 = encode(req)
      if not row then return nil, m1, c1 end
      local cond, m2, c2 = encode_condition(req.condition)
      if not cond then return nil, m2, c2 end
      local rc, m3, c3 = encode_return(req)
      if m3 then return nil, m3, c3 end
      return { table_name = req.table, [rowfield] = row, condition = cond, return_content = rc }
    end,
    res = function(res)
      local m = { consumed = consumed(res.consumed) }
      if res.row then
        local b, msg, code = encode_row(res.row)
        if not b then return nil, msg, code end
        m.row = b
      end
      return m
    end,
    from_res = function(m)
      local row, msg, code = decode_row(m.row)
      if row == nil and msg then return nil, msg, code end
      return { consumed = consumed(m.consumed), row = row or nil }
    end,
  }
end

OPS.PutRow = write_op("PutRowRequest", "row", function(req)
  return core.encode_put(req.primary_key, req.columns or {})
end, "columns")
OPS.PutRow.from_req = function(m)
  local ok, msg, code = refuse(m, "PutRow", "transaction_id")
  if not ok then return nil, msg, code end
  local row, m1, c1 = decode_row(m.row, true)
  if not row then return nil, m1 or "PutRow: no row", c1 or INVALID end
  for _, c in ipairs(row.cells) do
    if c.op then return invalid("PutRow: the row has an update op") end
  end
  if row.deleted then return invalid("PutRow: the row has the delete marker") end
  local cond, m2, c2 = decode_condition(m.condition)
  if not cond then return nil, m2, c2 end
  local req = { table = m.table_name, primary_key = row.primary_key, columns = row.cells, condition = cond }
  decode_return(m, req)
  return req
end

OPS.UpdateRow = write_op("UpdateRowRequest", "row_change", function(req)
  return wire.encode_update(req.primary_key, req.update)
end, "update")
OPS.UpdateRow.from_req = function(m)
  local ok, msg, code = refuse(m, "UpdateRow", "transaction_id")
  if not ok then return nil, msg, code end
  local row, m1, c1 = decode_row(m.row_change, true)
  if not row then return nil, m1 or "UpdateRow: no row", c1 or INVALID end
  if row.deleted then return invalid("UpdateRow: the row has the delete marker") end
  local up = {}
  for _, c in ipairs(row.cells) do
    local op = c.op or "PUT"
    local list = up[op]
    if op == "INCREMENT" then
      list = list or {}
      list[c[1]] = c[2]
    else
      list = list or {}
      if op == "PUT" then list[#list + 1] = { c[1], c[2], c[3] }
      elseif op == "DELETE" then list[#list + 1] = { c[1], c[3] }
      else list[#list + 1] = c[1] end
    end
    up[op] = list
  end
  local cond, m2, c2 = decode_condition(m.condition)
  if not cond then return nil, m2, c2 end
  local req = { table = m.table_name, primary_key = row.primary_key, update = up, condition = cond }
  decode_return(m, req)
  return req
end

OPS.DeleteRow = write_op("DeleteRowRequest", "primary_key", function(req)
  return core.encode_delete(req.primary_key)
end)
OPS.DeleteRow.from_req = function(m)
  local ok, msg, code = refuse(m, "DeleteRow", "transaction_id")
  if not ok then return nil, msg, code end
  local row, m1, c1 = decode_row(m.primary_key, true)
  if not row then return nil, m1 or "DeleteRow: no primary key", c1 or INVALID end
  if #row.cells > 0 then return invalid("DeleteRow: the key has attribute cells") end
  local cond, m2, c2 = decode_condition(m.condition)
  if not cond then return nil, m2, c2 end
  local req = { table = m.table_name, primary_key = row.primary_key, condition = cond }
  decode_return(m, req)
  return req
end

-- a primary key field of a request: key cells only
local function decode_key(bytes, what)
  local row, msg, code = decode_row(bytes, true)
  if not row then return nil, (msg or (what .. ": no primary key")), (code or INVALID) end
  if #row.cells > 0 or row.deleted then return invalid(what .. ": the key has attribute cells or a delete marker") end
  return row.primary_key
end

-- The per-row results of BatchGetRow / BatchWriteRow -> the response
-- message's tables. no_row: what an ok row without a row carries
-- (BatchGetRow: "", an empty row; BatchWriteRow: nothing).
local function encode_batch_res(res, no_row)
  local tables = {}
  for i, t in ipairs(res.tables or {}) do
    local rows = {}
    for j, r in ipairs(t.rows or {}) do
      local mr = { is_ok = r.ok and true or false }
      if r.ok then
        mr.consumed = consumed(r.consumed)
        mr.row = no_row
        if r.row then
          local b, msg, code = encode_row(r.row)
          if not b then return nil, msg, code end
          mr.row = b
        end
      else
        mr.error = { code = r.code or "OTSInternalServerError", message = r.message }
      end
      rows[j] = mr
    end
    tables[i] = { table_name = t.table, rows = rows }
  end
  return { tables = tables }
end

-- A batch response message's tables -> tables of per-row results, the
-- number of failed rows | nil, nil, msg, code
local function decode_batch_res(m)
  local tables, failed = {}, 0
  for i, t in ipairs(m.tables or {}) do
    local rows = {}
    for j, r in ipairs(t.rows or {}) do
      if r.is_ok then
        local row, msg, code = decode_row(r.row)
        if row == nil and msg then return nil, nil, msg, code end
        rows[j] = { ok = true, row = row or nil, consumed = r.consumed and consumed(r.consumed) }
      else
        local e = r.error or {}
        rows[j] = { ok = false, code = e.code, message = e.message }
        failed = failed + 1
      end
    end
    tables[i] = { table = t.table_name, rows = rows }
  end
  return tables, failed
end

OPS.GetRow = {
  req = function(req)
    local ok, msg, code = check_keys(req, set("table", "primary_key", unpack_or(READ_OPTS)), "GetRowRequest")
    if not ok then return nil, msg, code end
    local pk, m1, c1 = core.encode_pk(req.primary_key)
    if not pk then return nil, m1, c1 end
    local m = { table_name = req.table, primary_key = pk }
    local ok2, m2, c2 = encode_read(req, m)
    if not ok2 then return nil, m2, c2 end
    return m
  end,
  from_req = function(m)
    local ok, msg, code = refuse(m, "GetRow", "token", "transaction_id")
    if not ok then return nil, msg, code end
    local pk, m1, c1 = decode_key(m.primary_key, "GetRow")
    if not pk then return nil, m1, c1 end
    local req = { table = m.table_name, primary_key = pk }
    local ok2, m2, c2 = decode_read(m, req)
    if not ok2 then return nil, m2, c2 end
    return req
  end,
  res = function(res)
    local row = ""
    if res.row then
      local msg, code
      row, msg, code = encode_row(res.row)
      if not row then return nil, msg, code end
    end
    return { consumed = consumed(res.consumed), row = row }
  end,
  from_res = function(m)
    local row, msg, code = decode_row(m.row)
    if row == nil and msg then return nil, msg, code end
    return { consumed = consumed(m.consumed), row = row or nil }
  end,
}

OPS.GetRange = {
  req = function(req)
    local ok, msg, code = check_keys(req, set("table", "start", "stop", "inclusive_start_primary_key",
      "exclusive_end_primary_key", "direction", "limit", unpack_or(READ_OPTS)), "GetRangeRequest")
    if not ok then return nil, msg, code end
    local s, m1, c1 = core.encode_pk(req.start or req.inclusive_start_primary_key)
    if not s then return nil, "start: " .. m1, c1 end
    local e, m2, c2 = core.encode_pk(req.stop or req.exclusive_end_primary_key)
    if not e then return nil, "stop: " .. m2, c2 end
    local dir = req.direction or "FORWARD"
    if dir ~= "FORWARD" and dir ~= "BACKWARD" then return invalid("direction must be FORWARD or BACKWARD, got " .. tostring(dir)) end
    local m = { table_name = req.table, direction = dir, limit = req.limit,
                inclusive_start_primary_key = s, exclusive_end_primary_key = e }
    local ok2, m3, c3 = encode_read(req, m)
    if not ok2 then return nil, m3, c3 end
    return m
  end,
  from_req = function(m)
    local ok, msg, code = refuse(m, "GetRange", "token", "transaction_id", "return_entire_primary_keys")
    if not ok then return nil, msg, code end
    if (m.data_block_type_hint or "DBT_PLAIN_BUFFER") ~= "DBT_PLAIN_BUFFER" then return invalid("GetRange: only PlainBuffer data blocks") end
    if (m.compress_type_hint or "CPT_NONE") ~= "CPT_NONE" then return invalid("GetRange: compression is not supported") end
    local s, m1, c1 = decode_key(m.inclusive_start_primary_key, "GetRange start")
    if not s then return nil, m1, c1 end
    local e, m2, c2 = decode_key(m.exclusive_end_primary_key, "GetRange stop")
    if not e then return nil, m2, c2 end
    local req = { table = m.table_name, start = s, stop = e, direction = m.direction, limit = m.limit }
    local ok2, m3, c3 = decode_read(m, req)
    if not ok2 then return nil, m3, c3 end
    return req
  end,
  res = function(res)
    local rows, msg, code = core.encode_rows(res.rows or {})
    if not rows then return nil, msg, code end
    local m = { consumed = consumed(res.consumed), rows = rows }
    if res.next_start_primary_key then
      local b, msg, code = core.encode_pk(res.next_start_primary_key)
      if not b then return nil, msg, code end
      m.next_start_primary_key = b
    end
    return m
  end,
  from_res = function(m)
    local rows, msg, code = core.decode_rows(m.rows)
    if not rows then return nil, msg, code end
    local res = { rows = rows, consumed = consumed(m.consumed) }
    if m.next_start_primary_key and m.next_start_primary_key ~= "" then
      local row, m2, c2 = decode_row(m.next_start_primary_key)
      if not row then return nil, m2 or "next_start_primary_key: no key", c2 or "CorruptPlainBuffer" end
      res.next_start_primary_key = row.primary_key
    end
    res.next_token = m.next_token
    return res
  end,
}

OPS.BatchGetRow = {
  req = function(req)
    local ok, msg, code = check_keys(req, set("tables"), "BatchGetRowRequest")
    if not ok then return nil, msg, code end
    if type(req.tables) ~= "table" then return invalid("tables must be a list") end
    local tables = {}
    local allowed = set("table", "primary_keys", unpack_or(READ_OPTS))
    for i, spec in ipairs(req.tables) do
      local ok1, m1, c1 = check_keys(spec, allowed, "tables[" .. i .. "]")
      if not ok1 then return nil, m1, c1 end
      local keys = {}
      for j, pk in ipairs(spec.primary_keys or {}) do
        local b, m2, c2 = core.encode_pk(pk)
        if not b then return nil, ("tables[%d].primary_keys[%d]: %s"):format(i, j, m2), c2 end
        keys[j] = b
      end
      local t = { table_name = spec.table, primary_key = keys }
      local ok2, m3, c3 = encode_read(spec, t)
      if not ok2 then return nil, m3, c3 end
      tables[i] = t
    end
    return { tables = tables }
  end,
  from_req = function(m)
    local tables = {}
    for i, t in ipairs(m.tables or {}) do
      local ok, msg, code = refuse(t, "BatchGetRow", "token")
      if not ok then return nil, msg, code end
      local keys = {}
      for j, b in ipairs(t.primary_key or {}) do
        local pk, m1, c1 = decode_key(b, ("tables[%d].primary_keys[%d]"):format(i, j))
        if not pk then return nil, m1, c1 end
        keys[j] = pk
      end
      local spec = { table = t.table_name, primary_keys = keys }
      local ok2, m2, c2 = decode_read(t, spec)
      if not ok2 then return nil, m2, c2 end
      tables[i] = spec
    end
    return { tables = tables }
  end,
  res = function(res) return encode_batch_res(res, "") end,
  from_res = function(m)
    local tables, _, msg, code = decode_batch_res(m)
    if not tables then return nil, msg, code end
    return { tables = tables }
  end,
}

local ROW_TYPES = { PUT = OPS.PutRow, UPDATE = OPS.UpdateRow, DELETE = OPS.DeleteRow }
local ROW_KEYS = {
  PUT = set("type", "primary_key", "columns", "condition", "return_type", "return_column_names"),
  UPDATE = set("type", "primary_key", "update", "condition", "return_type", "return_column_names"),
  DELETE = set("type", "primary_key", "condition", "return_type", "return_column_names"),
}
local ROW_FIELD = { PUT = "row", UPDATE = "row_change", DELETE = "primary_key" }

OPS.BatchWriteRow = {
  req = function(req)
    local ok, msg, code = check_keys(req, set("tables"), "BatchWriteRowRequest")
    if not ok then return nil, msg, code end
    if type(req.tables) ~= "table" then return invalid("tables must be a list") end
    local tables = {}
    for i, spec in ipairs(req.tables) do
      local ok1, m1, c1 = check_keys(spec, set("table", "rows"), "tables[" .. i .. "]")
      if not ok1 then return nil, m1, c1 end
      local rows = {}
      for j, row in ipairs(spec.rows or {}) do
        local op = type(row) == "table" and ROW_TYPES[row.type]
        if not op then return invalid(("tables[%d].rows[%d].type must be PUT, UPDATE or DELETE"):format(i, j)) end
        for k in pairs(row) do
          if not ROW_KEYS[row.type][k] then return invalid(("tables[%d].rows[%d]: unsupported option '%s'"):format(i, j, tostring(k))) end
        end
        local t, pk, b, m2, c2 = row.type, row.primary_key, nil, nil, nil
        if t == "PUT" then b, m2, c2 = core.encode_put(pk, row.columns or EMPTY)
        elseif t == "UPDATE" then b, m2, c2 = wire.encode_update(pk, row.update)
        else b, m2, c2 = core.encode_delete(pk) end
        if not b then return nil, ("tables[%d].rows[%d]: %s"):format(i, j, m2), c2 end
        local cond, m3, c3 = encode_condition(row.condition)
        if not cond then return nil, ("tables[%d].rows[%d]: %s"):format(i, j, m3), c3 end
        local rc, m4, c4 = encode_return(row)
        if m4 then return nil, ("tables[%d].rows[%d]: %s"):format(i, j, m4), c4 end
        rows[j] = { type = t, row_change = b, condition = cond, return_content = rc }
      end
      tables[i] = { table_name = spec.table, rows = rows }
    end
    return { tables = tables }
  end,
  from_req = function(m)
    local ok, msg, code = refuse(m, "BatchWriteRow", "transaction_id")
    if not ok then return nil, msg, code end
    local tables = {}
    for i, t in ipairs(m.tables or {}) do
      local rows = {}
      for j, r in ipairs(t.rows or {}) do
        local op = ROW_TYPES[r.type]
        if not op then return invalid(("tables[%d].rows[%d]: unknown row type %s"):format(i, j, tostring(r.type))) end
        local one, m1, c1 = op.from_req({ table_name = t.table_name, [ROW_FIELD[r.type]] = r.row_change,
                                          condition = r.condition, return_content = r.return_content })
        if not one then return nil, ("tables[%d].rows[%d]: %s"):format(i, j, m1), c1 end
        one.table = nil
        one.type = r.type
        rows[j] = one
      end
      tables[i] = { table = t.table_name, rows = rows }
    end
    return { tables = tables }
  end,
  res = function(res) return encode_batch_res(res, nil) end,
  from_res = function(m)
    local tables, failed, msg, code = decode_batch_res(m)
    if not tables then return nil, msg, code end
    return { tables = tables, failed = failed }
  end,
}

----------------------------------------------------------------------
-- table operations

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
    local b = type(v) ~= "boolean" and core.encode_value(v)
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
    local v, msg = core.decode_value(e)
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
    local first = pk[1] and pk[1].name
    for i, v in ipairs(res.shard_splits or {}) do
      local b, msg, code = core.encode_pk({ { first, v } })
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
      local b, msg, code = core.encode_pk(pk)
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

--- The api names wire knows, sorted.
wire.APIS = sorted_keys(OPS)

local function op_of(api)
  local op = OPS[api]
  if not op then error("otskit.wire: unknown api " .. tostring(api), 3) end
  return op
end

local function pb_error(msg, code)
  return nil, msg, code
end

--- wire.encode_request(api, req) -> body | nil, msg, "OTSParameterInvalid".
-- req is what the store method of api takes (PutRow: db:put_row's table).
function wire.encode_request(api, req)
  local op = op_of(api)
  local m, msg, code = op.req(req)
  if not m then return pb_error(msg, code) end
  return core.pb_encode(api .. "Request", m)
end

--- wire.decode_request(api, body) -> req | nil, msg, "OTSParameterInvalid".
-- A field otskit cannot honour (a transaction, a token, a stream...) is
-- refused, never ignored.
function wire.decode_request(api, body)
  local op = op_of(api)
  if type(body) ~= "string" then error("otskit.wire: decode_request takes the body string", 2) end
  local m, unknown = core.pb_decode(api .. "Request", body)
  if not m then return invalid(api .. ": " .. unknown) end
  if unknown then return invalid(api .. ": unsupported field number " .. unknown) end
  local req, msg, code = op.from_req(m)
  if not req then return nil, msg, code == "CorruptPlainBuffer" and INVALID or code end
  return req
end

--- wire.encode_response(api, res) -> body | nil, msg, code. res is what the
-- store method returned.
function wire.encode_response(api, res)
  local op = op_of(api)
  if type(res) ~= "table" then error("otskit.wire: encode_response takes a response table", 2) end
  local m, msg, code = op.res(res)
  if not m then return nil, msg, code end
  return core.pb_encode(api .. "Response", m)
end

--- wire.decode_response(api, body [, req]) -> res | nil, msg, code (code
-- "CorruptMessage" or "CorruptPlainBuffer" for bytes that do not decode).
-- req: the request, for what the response does not carry (CreateTable's name).
function wire.decode_response(api, body, req)
  local op = op_of(api)
  if type(body) ~= "string" then error("otskit.wire: decode_response takes the body string", 2) end
  local m, unknown = core.pb_decode(api .. "Response", body)
  if not m then return nil, api .. ": " .. unknown, "CorruptMessage" end
  return op.from_res(m, req)
end

--- wire.encode_error(code, msg) -> the body of an error response.
function wire.encode_error(code, msg)
  local b, m = core.pb_encode("Error", { code = code, message = msg })
  if not b then error("otskit.wire: encode_error: " .. m, 2) end
  return b
end

--- wire.decode_error(body) -> code, message | nil, msg, "CorruptMessage".
function wire.decode_error(body)
  local m, msg = core.pb_decode("Error", body)
  if not m then return nil, "not a Tablestore error body: " .. msg, "CorruptMessage" end
  return m.code, m.message
end

----------------------------------------------------------------------
-- signatures

local function trim(s) return (tostring(s):gsub("^%s+", ""):gsub("%s+$", "")) end

-- "name:value\n" of every x-ots-* header but the signature, by name
local function canonical(headers)
  local hs = {}
  for k, v in pairs(headers) do
    local n = tostring(k):lower()
    if n:sub(1, 6) == "x-ots-" and n ~= "x-ots-signature" then hs[#hs + 1] = n .. ":" .. trim(v) .. "\n" end
  end
  table.sort(hs)
  return table.concat(hs)
end

--- wire.sign_request(secret, api, headers) -> x-ots-signature (V2):
-- base64 HMAC-SHA1 of "/<api>\nPOST\n\n" and the canonical x-ots-* headers.
function wire.sign_request(secret, api, headers)
  return core.hmac_sha1_b64(secret, "/" .. api .. "\nPOST\n\n" .. canonical(headers))
end

--- wire.sign_response(secret, api, headers) -> the signature of a response
-- (sent as "authorization: OTS <access key id>:<signature>"): base64
-- HMAC-SHA1 of the canonical x-ots-* headers, then "/<api>".
function wire.sign_response(secret, api, headers)
  return core.hmac_sha1_b64(secret, canonical(headers) .. "/" .. api)
end

--- wire.content_md5(body) -> base64 MD5 (x-ots-contentmd5).
wire.content_md5 = core.content_md5

--- wire.equal(a, b) -> true when the strings are equal, in time that does
-- not depend on where they differ (signature checks).
wire.equal = core.equal

--- wire.date([ms]) -> x-ots-date text, "2024-01-02T03:04:05.678Z" (UTC);
-- ms since the epoch, default now (second precision).
function wire.date(ms)
  ms = ms or os.time() * 1000
  local s = math.floor(ms / 1000)
  return os.date("!%Y-%m-%dT%H:%M:%S", s) .. (".%03dZ"):format(math.floor(ms - s * 1000))
end

-- days since 1970-01-01 of a civil date (proleptic Gregorian)
local function days(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = math.floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

local MDAYS = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 }

--- wire.parse_date(s) -> ms since the epoch | nil. Takes
-- "YYYY-MM-DDTHH:MM:SS[.f+]Z"; the fraction's first three digits are the
-- milliseconds, further digits are ignored (the Go SDK writes odd ones).
function wire.parse_date(s)
  if type(s) ~= "string" then return nil end
  local y, mo, d, h, mi, se, frac = s:match("^(%d%d%d%d)%-(%d%d)%-(%d%d)T(%d%d):(%d%d):(%d%d)(%.?%d*)Z$")
  if not y then return nil end
  if frac == "." or (frac ~= "" and frac:sub(1, 1) ~= ".") then return nil end
  y, mo, d, h, mi, se = tonumber(y), tonumber(mo), tonumber(d), tonumber(h), tonumber(mi), tonumber(se)
  if mo < 1 or mo > 12 or d < 1 or d > MDAYS[mo] or h > 23 or mi > 59 or se > 60 then return nil end
  if mo == 2 and d == 29 and not (y % 4 == 0 and (y % 100 ~= 0 or y % 400 == 0)) then return nil end
  local ms = 0
  if frac ~= "" then ms = tonumber((frac:sub(2, 4) .. "00"):sub(1, 3)) end
  return ((days(y, mo, d) * 24 + h) * 60 + mi) * 60000 + se * 1000 + ms
end

return wire
