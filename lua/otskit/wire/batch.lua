--- otskit.wire.batch -- the batch operations, BatchGetRow and
-- BatchWriteRow (each row of a write batch goes through the single-row
-- operation of its type), with the per-row results of their responses.
-- Operations have the shape of otskit.wire.rows's.
local pb = require "otskit.wire.plainbuffer"
local filter = require "otskit.wire.filter"
local rows_ops = require "otskit.wire.rows"
local common = require "otskit.wire.common"

local invalid, EMPTY = common.invalid, common.EMPTY
local check_keys, set, refuse, consumed = common.check_keys, common.set, common.refuse, common.consumed
local encode_condition, encode_return = filter.encode_condition, filter.encode_return
local decode_row, encode_row, decode_key = pb.decode_row, pb.encode_row, pb.decode_key
local READ_OPTS, encode_read, decode_read = rows_ops.READ_OPTS, rows_ops.encode_read, rows_ops.decode_read
local unpack_or = table.unpack or unpack

local OPS = {}


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
        local b, m2, c2 = pb.encode_pk(pk)
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

local ROW_TYPES = { PUT = rows_ops.OPS.PutRow, UPDATE = rows_ops.OPS.UpdateRow, DELETE = rows_ops.OPS.DeleteRow }
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
        if t == "PUT" then b, m2, c2 = pb.encode_put(pk, row.columns or EMPTY)
        elseif t == "UPDATE" then b, m2, c2 = pb.encode_update(pk, row.update)
        else b, m2, c2 = pb.encode_delete(pk) end
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
--- batch.OPS: api name -> operation.
return { OPS = OPS }
