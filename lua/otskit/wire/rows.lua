--- otskit.wire.rows -- the single-row operations (PutRow, UpdateRow,
-- DeleteRow, GetRow, GetRange) and the read options they share with
-- BatchGetRow. Each operation has
--   req(req) -> proto table (client), from_req(m) -> req (server),
--   res(res) -> proto table (server), from_res(m, req) -> res (client)
-- where req / res are exactly what the store method of that api takes /
-- returns.
local pb = require "otskit.wire.plainbuffer"
local filter = require "otskit.wire.filter"
local common = require "otskit.wire.common"

local invalid, INVALID = common.invalid, common.INVALID
local check_keys, set, refuse, consumed = common.check_keys, common.set, common.refuse, common.consumed
local encode_filter, decode_filter = filter.encode, filter.decode
local encode_condition, decode_condition = filter.encode_condition, filter.decode_condition
local encode_return, decode_return = filter.encode_return, filter.decode_return
local decode_row, encode_row, decode_key = pb.decode_row, pb.encode_row, pb.decode_key
local unpack_or = table.unpack or unpack

local rows = {}

----------------------------------------------------------------------
-- read options (get_row, get_range, batch_get_row tables)

local READ_OPTS = { "columns", "max_versions", "time_range", "filter", "start_column", "end_column" }

-- v is nil or an integer 1..2^31-1 (an int32 count on the wire): refused
-- here, before anything is sent, as the service would refuse it
local function count32(v, what)
  if v == nil or (type(v) == "number" and v >= 1 and v <= 2147483647 and v == math.floor(v)) then return true end
  return invalid(("%s must be an integer 1..2147483647, got %s"):format(what,
    type(v) == "number" and tostring(v) or type(v) .. " " .. ("%q"):format(tostring(v)):sub(1, 40)))
end

local function encode_read(req, m)
  m.columns_to_get = req.columns
  local ok, msg, code = count32(req.max_versions, "max_versions")
  if not ok then return nil, msg, code end
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


----------------------------------------------------------------------
-- the operations

local OPS = {}

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
  return pb.encode_put(req.primary_key, req.columns or {})
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
  return pb.encode_update(req.primary_key, req.update)
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
  return pb.encode_delete(req.primary_key)
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
OPS.GetRow = {
  req = function(req)
    local ok, msg, code = check_keys(req, set("table", "primary_key", unpack_or(READ_OPTS)), "GetRowRequest")
    if not ok then return nil, msg, code end
    local pk, m1, c1 = pb.encode_pk(req.primary_key)
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
    local row = res.row_pb or "" -- row_pb: already PlainBuffer (otskit.store.stream)
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
    local s, m1, c1 = pb.encode_pk(req.start or req.inclusive_start_primary_key)
    if not s then return nil, "start: " .. m1, c1 end
    local e, m2, c2 = pb.encode_pk(req.stop or req.exclusive_end_primary_key)
    if not e then return nil, "stop: " .. m2, c2 end
    local dir = req.direction or "FORWARD"
    if dir ~= "FORWARD" and dir ~= "BACKWARD" then return invalid("direction must be FORWARD or BACKWARD, got " .. tostring(dir)) end
    local okl, ml, cl = count32(req.limit, "limit")
    if not okl then return nil, ml, cl end
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
    local rows, msg, code = res.rows_pb, nil, nil -- already PlainBuffer (otskit.store.stream)
    if not rows then rows, msg, code = pb.encode_rows(res.rows or {}) end
    if not rows then return nil, msg, code end
    local m = { consumed = consumed(res.consumed), rows = rows }
    if res.next_start_primary_key then
      local b, msg, code = pb.encode_pk(res.next_start_primary_key)
      if not b then return nil, msg, code end
      m.next_start_primary_key = b
    end
    return m
  end,
  from_res = function(m)
    -- rows_at: m.rows is the body, the rows field where it is in it
    -- (otskit.wire.decode_response)
    local rows, msg, code
    if m.rows_at then rows, msg, code = pb.decode_rows_at(m.rows, m.rows_at, m.rows_len)
    else rows, msg, code = pb.decode_rows(m.rows) end
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

--- rows.READ_OPTS: the read options of get_row, get_range and a
-- batch_get_row table (columns, max_versions, time_range, filter,
-- start_column, end_column).
rows.READ_OPTS = READ_OPTS
--- rows.encode_read(req, m) -> true | nil, msg, code: req's read options
-- into the request message m.
rows.encode_read = encode_read
--- rows.decode_read(m, req) -> true | nil, msg, code: the read options of
-- the request message m into req.
rows.decode_read = decode_read
--- rows.OPS: api name -> operation.
rows.OPS = OPS

return rows
