--- otskit.wire.sql -- SQLQuery on the wire: the request's query text and
-- payload version, the answer's statement type, consumed capacity and rows
-- as a FlatBuffers result set (SQL_FLAT_BUFFERS, csrc/core/fbsql.c).
-- Requests take and answers give what otskit.store's db:sql_query takes
-- and gives: { query } -> { type, columns = {{name, type}}, rows, consumed }.
local common = require "otskit.wire.common"
local sqlq = require("otskit.core").sqlq

local invalid, check_keys, set = common.invalid, common.check_keys, common.set

local OPS = {}

local function decode_rows(bytes)
  if bytes == nil or bytes == "" then return {}, {} end
  local cols, rows, n = sqlq.decode(bytes)
  if not cols then return nil, rows, n end
  local columns = {}
  for i, c in ipairs(cols) do columns[i] = { name = c[1], type = c[2] } end
  return columns, rows
end

OPS.SQLQuery = {
  req = function(req)
    local ok, msg, code = check_keys(req, set("query"), "SQLQueryRequest")
    if not ok then return nil, msg, code end
    if type(req.query) ~= "string" then return invalid("query must be a string") end
    return { query = req.query, version = "SQL_FLAT_BUFFERS" }
  end,
  from_req = function(m)
    if m.version ~= nil and m.version ~= "SQL_FLAT_BUFFERS" then
      return invalid("SQL payload version only support: 'SQL_FLAT_BUFFERS' (2)")
    end
    return { query = m.query }
  end,
  res = function(res)
    local cols = {}
    for i, c in ipairs(res.columns) do cols[i] = { c.name, c.type } end
    local read = res.consumed and res.consumed.capacity_unit and res.consumed.capacity_unit.read or 0
    return {
      consumes = { { consumed = { capacity_unit = { read = read, write = 0 } } } },
      rows = sqlq.encode(cols, res.rows, #res.rows),
      version = "SQL_FLAT_BUFFERS",
      type = "SQL_" .. res.type,
    }
  end,
  from_res = function(m)
    if m.version ~= nil and m.version ~= "SQL_FLAT_BUFFERS" then
      return nil, "SQLQuery: rows of payload version " .. tostring(m.version), "CorruptMessage"
    end
    local columns, rows, code = decode_rows(m.rows)
    if not columns then return nil, "SQLQuery: " .. rows, code end
    local read = 0
    for _, c in ipairs(m.consumes or {}) do
      local cu = c.consumed and c.consumed.capacity_unit
      read = read + (cu and cu.read or 0)
    end
    return { type = m.type and m.type:gsub("^SQL_", "") or "SELECT", columns = columns, rows = rows,
             consumed = { capacity_unit = { read = read, write = 0 } } }
  end,
}

return { OPS = OPS }
