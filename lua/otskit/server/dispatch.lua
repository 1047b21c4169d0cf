--- otskit.server.dispatch -- one API call: protobuf request -> store ->
-- protobuf response.
--
-- The request body decodes (otskit.wire) to exactly the request table of
-- the store method of that API, and the method's answer encodes back, so
-- every operation the store has is served the same way.
local wire = require "otskit.wire"
local values = require "otskit.store.values"
local errors = require "otskit.errors"

local dispatch = {}

--- API name -> store method; `schema`: the call changes table metadata
-- (other workers must reload it); `write`: the call may change data.
dispatch.APIS = {
  CreateTable = { method = "create_table", schema = true, write = true },
  UpdateTable = { method = "update_table", schema = true, write = true },
  DeleteTable = { method = "delete_table", schema = true, write = true },
  ListTable = { method = "list_table" },
  DescribeTable = { method = "describe_table" },
  PutRow = { method = "put_row", write = true },
  UpdateRow = { method = "update_row", write = true },
  DeleteRow = { method = "delete_row", write = true },
  GetRow = { method = "get_row" },
  BatchGetRow = { method = "batch_get_row" },
  BatchWriteRow = { method = "batch_write_row", write = true },
  GetRange = { method = "get_range" },
  ComputeSplitPointsBySize = { method = "compute_split_points_by_size" },
  CreateIndex = { method = "create_index", schema = true, write = true },
  DropIndex = { method = "drop_index", schema = true, write = true },
  AddDefinedColumn = { method = "add_defined_column", schema = true, write = true },
  DeleteDefinedColumn = { method = "delete_defined_column", schema = true, write = true },
  StartLocalTransaction = { method = "start_local_transaction", write = true },
  CommitTransaction = { method = "commit_transaction", write = true },
  AbortTransaction = { method = "abort_transaction", write = true },
}

-- The service's message for a code whose message never varies (an
-- `exact` code of otskit.errors): the store's longer ones say more, but
-- SDK users match these. Any other code keeps the store's message.
local function service_message(code, msg)
  local e = errors.get(code)
  if e and e.exact then return e.message end
  return msg
end

-- per-row errors of batch answers get the service's messages too
local function service_messages(res)
  for _, t in ipairs(res.tables or {}) do
    for _, r in ipairs(t.rows or {}) do
      if r.ok == false then r.message = service_message(r.code, r.message) end
    end
  end
end

-- The store returns key values untyped: a BINARY key column as a plain
-- string, on LuaJIT an INTEGER beyond 2^53 as decimal text; the wire would
-- send both as STRING (and an SDK would page on with the wrong type). The
-- table's key types, cached per store handle, put the types back.
local key_types = setmetatable({}, { __mode = "k" })

local function types_of(db, name)
  local per = key_types[db]
  if not per then per = {}; key_types[db] = per end
  local ty = per[name]
  if ty == nil then
    ty = {}
    local d = db:describe_table{ table = name }
    if d then for i, c in ipairs(d.table_meta.primary_key) do ty[i] = c[2] end end
    per[name] = ty
  end
  return ty
end

local function typed(ty, v)
  if type(v) ~= "string" then return v end
  if ty == "BINARY" then return values.binary(v) end
  if ty == "INTEGER" then return values.integer(v) end
  return v
end

local function retype(ty, pk)
  if type(pk) ~= "table" then return end
  for i, c in ipairs(pk) do
    if type(c) == "table" then c[2] = typed(ty[i], c[2]) end
  end
end

local function retype_rows(db, name, rows)
  local ty = types_of(db, name)
  for _, r in ipairs(rows) do
    local row = r.row == nil and r or r.row
    if type(row) == "table" then retype(ty, row.primary_key) end
  end
end

local RETYPE = {
  GetRow = function(db, req, res) if res.row then retype(types_of(db, req.table), res.row.primary_key) end end,
  GetRange = function(db, req, res)
    retype_rows(db, req.table, res.rows or {})
    retype(types_of(db, req.table), res.next_start_primary_key)
  end,
  BatchGetRow = function(db, _, res)
    for _, t in ipairs(res.tables or {}) do retype_rows(db, t.table, t.rows or {}) end
  end,
  BatchWriteRow = function(db, _, res)
    for _, t in ipairs(res.tables or {}) do retype_rows(db, t.table, t.rows or {}) end
  end,
  ComputeSplitPointsBySize = function(db, req, res)
    local ty = types_of(db, req.table)
    for _, p in ipairs(res.split_points or {}) do retype(ty, p) end
  end,
}
RETYPE.PutRow = RETYPE.GetRow
RETYPE.UpdateRow = RETYPE.GetRow
RETYPE.DeleteRow = RETYPE.GetRow

-- The empty-page fault: the first row the page would have held becomes
-- next_start_primary_key of a page with no rows (a range with no row left
-- is answered as it is: no next key). Legal on the service, which may end
-- a page early; the key is a real row's, so never INF_MIN / INF_MAX.
local function empty_page(db, req)
  local one = {}
  for k, v in pairs(req) do one[k] = v end
  one.limit = 1
  local res, msg, code = db:get_range(one)
  if not res or not res.rows[1] then return res, msg, code end
  return { rows = {}, next_start_primary_key = res.rows[1].primary_key, consumed = res.consumed }
end

--- dispatch.call(db, api, body, empty) -> response body | nil, message,
-- code (otskit's convention; code is an otskit.errors code).
-- api must be a key of dispatch.APIS. A method missing from this store
-- (an older store) is "Unsupported operation", never a crash. empty: a
-- GetRange is answered with the empty-page fault (otskit.server.faults).
function dispatch.call(db, api, body, empty)
  local spec = dispatch.APIS[api]
  local req, msg, code = wire.decode_request(api, body)
  if req == nil then return nil, msg, code or "OTSParameterInvalid" end
  local res
  if empty and api == "GetRange" then
    res, msg, code = empty_page(db, req)
  elseif db[spec.method] then
    res, msg, code = db[spec.method](db, req)
  else
    return errors.fail("OTSParameterInvalid", "Unsupported operation: '" .. api .. "'.")
  end
  if res == nil then
    code = code or "OTSInternalServerError"
    return nil, service_message(code, msg), code
  end
  if api == "BatchWriteRow" or api == "BatchGetRow" then service_messages(res) end
  if spec.schema then key_types[db] = nil end
  if RETYPE[api] then RETYPE[api](db, req, res) end
  local out, emsg = wire.encode_response(api, res)
  if out == nil then return errors.fail("OTSInternalServerError", "cannot encode the answer: " .. tostring(emsg)) end
  return out
end

return dispatch
