--- otskit.wire.localtxn -- local transactions on the wire:
-- StartLocalTransaction (its key a PlainBuffer primary key holding the
-- partition-key column, as the SDKs send it), CommitTransaction,
-- AbortTransaction, and the transaction_id of PutRow, UpdateRow,
-- DeleteRow, GetRow, GetRange and BatchWriteRow (EXTEND wraps those
-- operations; otskit.wire's entry points apply it).
local pb = require "otskit.wire.plainbuffer"
local common = require "otskit.wire.common"

local invalid, check_keys, set = common.invalid, common.check_keys, common.set

local OPS, EXTEND = {}, {}

local function copy(t)
  local o = {}
  for k, v in pairs(t) do o[k] = v end
  return o
end

OPS.StartLocalTransaction = {
  req = function(req)
    local ok, msg, code = check_keys(req, set("table", "key"), "StartLocalTransactionRequest")
    if not ok then return nil, msg, code end
    if type(req.key) ~= "table" then return invalid("key must be the partition-key column {{name, value}}") end
    local b, m1, c1 = pb.encode_pk(req.key)
    if not b then return nil, m1, c1 end
    return { table_name = req.table, key = b }
  end,
  from_req = function(m)
    local row, msg, code = pb.decode_row(m.key)
    if not row then return nil, msg or "StartLocalTransaction: an empty key", code or "OTSParameterInvalid" end
    return { table = m.table_name, key = row.primary_key }
  end,
  res = function(res) return { transaction_id = res.transaction_id } end,
  from_res = function(m) return { transaction_id = m.transaction_id } end,
}

local function by_id(api)
  return {
    req = function(req)
      local ok, msg, code = check_keys(req, set("transaction_id"), api .. "Request")
      if not ok then return nil, msg, code end
      return { transaction_id = req.transaction_id }
    end,
    from_req = function(m) return { transaction_id = m.transaction_id } end,
    res = function() return {} end,
    from_res = function() return {} end,
  }
end
OPS.CommitTransaction = by_id("CommitTransaction")
OPS.AbortTransaction = by_id("AbortTransaction")

-- the operation op with a transaction_id (request level)
local function with_id(op)
  return {
    req = function(req)
      if type(req) ~= "table" or req.transaction_id == nil then return op.req(req) end
      if type(req.transaction_id) ~= "string" then return invalid("transaction_id must be a string") end
      local plain = copy(req)
      plain.transaction_id = nil
      local m, msg, code = op.req(plain)
      if not m then return nil, msg, code end
      m.transaction_id = req.transaction_id
      return m
    end,
    from_req = function(m)
      local id = m.transaction_id
      m.transaction_id = nil
      local req, msg, code = op.from_req(m)
      if not req then return nil, msg, code end
      req.transaction_id = id
      return req
    end,
    res = op.res, from_res = op.from_res,
  }
end
for _, api in ipairs({ "PutRow", "UpdateRow", "DeleteRow", "GetRow", "GetRange", "BatchWriteRow" }) do
  EXTEND[api] = with_id
end

--- localtxn.OPS: api name -> operation; EXTEND: api name -> function(op) -> op.
return { OPS = OPS, EXTEND = EXTEND }
