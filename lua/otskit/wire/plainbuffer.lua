--- otskit.wire.plainbuffer -- PlainBuffer rows (C, checksums written and
-- verified) in the store's vocabulary: keys, puts, updates, deletes, and
-- the rows a response or a request field carries. Every name here is
-- PlainBuffer; the protobuf messages around these bytes are elsewhere.
local core = require("otskit.core").wire
local values = require "otskit.values"
local common = require "otskit.wire.common"

local invalid, INVALID, sorted_keys = common.invalid, common.INVALID, common.sorted_keys

local pb = {}

--- The sentinels and typed values of otskit.values (the same objects the
-- store uses): open ends of a get_range bound, the value of an
-- auto-increment key column in a put, and binary / integer / double.
pb.INF_MIN, pb.INF_MAX, pb.AUTO_INCREMENT = values.INF_MIN, values.INF_MAX, values.AUTO_INCREMENT
pb.binary, pb.integer, pb.double = values.binary, values.integer, values.double

core.init(getmetatable(values.binary("")), values.INF_MIN, values.INF_MAX, values.AUTO_INCREMENT)
-- LuaJIT: a response's rows built by compiled Lua (otskit.wire.rows_ffi)
local ffi_rows = require("otskit.wire.rows_ffi").decode_rows

--- pb.encode_pk(pk) -> bytes: a primary key {{name, value}, ...};
-- values INTEGER, STRING, BINARY, or INF_MIN / INF_MAX.
pb.encode_pk = core.encode_pk

--- pb.encode_put(pk, columns) -> bytes: columns {{name, value [, ts]}, ...}
-- (order kept) or {name = value} (name order). pk may hold AUTO_INCREMENT.
pb.encode_put = core.encode_put

--- pb.encode_delete(pk) -> bytes: the key and the delete-row marker.
pb.encode_delete = core.encode_delete

--- pb.encode_rows(rows) -> bytes: rows in the store's read shape, one
-- PlainBuffer block (GetRange's rows).
pb.encode_rows = core.encode_rows

--- pb.encode_value(v) -> bytes: one value (type byte and payload), as a
-- filter's column value or a partition range end carries it.
pb.encode_value = core.encode_value

--- pb.decode_value(bytes) -> v | nil, msg, code: the inverse of encode_value.
pb.decode_value = core.decode_value

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

--- pb.encode_update(pk, ops) -> bytes: ops a list of {"PUT", name, value
-- [, ts]}, {"DELETE", name, ts}, {"DELETE_ALL", name}, {"INCREMENT", name,
-- delta}, or the store's update map (PUT, DELETE, DELETE_ALL, INCREMENT).
function pb.encode_update(pk, ops)
  local list, msg, code = update_ops(ops)
  if not list then return nil, msg, code end
  return core.encode_update(pk, list)
end

--- pb.decode_rows(bytes [, { typed = true }]) -> rows | nil, msg,
-- "CorruptPlainBuffer". Each row, in the store's read shape: { primary_key
-- = {{name, value}, ...}, columns = {name = newest value}, cells = {{name,
-- value, ts, type}, ...} } (cells in wire order; an update cell also has
-- op = "DELETE" | "DELETE_ALL" | "INCREMENT"; a row with the delete marker
-- has deleted = true). typed: BINARY values (and on LuaJIT integral
-- DOUBLEs, int64s past 2^53) as binary / double / integer typed values,
-- what the store's writes take. Trailing zero bytes after the last row
-- are accepted.
function pb.decode_rows(bytes, opts)
  local typed = opts ~= nil and opts.typed
  if ffi_rows and not typed then return ffi_rows(bytes, 0) end
  return core.decode_rows(bytes, 0, typed)
end

-- the order of the rows pb.decode_rows_at decoded (pb.rows_order)
local ORDER = setmetatable({}, { __mode = "k" })

--- pb.decode_rows_at(bytes, off, len) -> rows | nil, msg, code: what
-- pb.decode_rows(bytes:sub(off + 1, off + len)) returns, read where the
-- rows are (a response's rows field inside its body: no copy of it).
-- Remembers the rows' order (pb.rows_order).
function pb.decode_rows_at(bytes, off, len)
  local rows, order, code
  if ffi_rows then rows, order, code = ffi_rows(bytes, 0, off, len)
  else rows, order, code = core.decode_rows(bytes, 0, false, false, off, len) end
  if not rows then return nil, order, code end
  ORDER[rows] = order
  return rows
end

--- pb.rows_order(rows) -> flags | nil: for rows pb.decode_rows_at
-- returned, how each row's primary key compares with the one before, as
-- otskit.client.verify.compare would compare them: 1 after it (every
-- row), 2 before it (every row), 3 both (fewer than two rows), 0 neither
-- (or keys compared no such way: other types, other names); nil for
-- other rows.
function pb.rows_order(rows) return ORDER[rows] end

--- pb.decode_row(bytes [, typed]) -> row | nil (no row: nil or "") | false
-- (a header and no row) | nil, msg, code: one row field of a message;
-- typed for a request (the store's input).
function pb.decode_row(bytes, typed)
  if bytes == nil or bytes == "" then return nil end
  local rows, msg, code
  if ffi_rows and not typed then rows, msg, code = ffi_rows(bytes, 1)
  else rows, msg, code = core.decode_rows(bytes, 1, typed) end
  if not rows then return nil, msg, code end
  if rows[1] == nil then return false end
  return rows[1]
end
local decode_row = pb.decode_row

--- pb.encode_row(row) -> bytes: the row of a response, its cells when it
-- has them (with timestamps and types: the store returns BINARY values as
-- strings), else its columns.
function pb.encode_row(row)
  return core.encode_put(row.primary_key, row.cells or row.columns)
end

--- pb.decode_key(bytes, what) -> primary key | nil, msg, code: a primary
-- key field of a request, key cells only (typed, the store's input).
function pb.decode_key(bytes, what)
  local row, msg, code = decode_row(bytes, true)
  if not row then return nil, (msg or (what .. ": no primary key")), (code or INVALID) end
  if #row.cells > 0 or row.deleted then return invalid(what .. ": the key has attribute cells or a delete marker") end
  return row.primary_key
end

return pb
