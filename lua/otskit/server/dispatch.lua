--- otskit.server.dispatch -- one API call: protobuf request -> store ->
-- protobuf response.
--
-- The request body decodes (otskit.wire) to exactly the request table of
-- the store method of that API, and the method's answer encodes back, so
-- every operation the store has is served the same way.
local wire = require "otskit.wire"
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
  CreateSearchIndex = { method = "create_search_index", schema = true, write = true },
  UpdateSearchIndex = { method = "update_search_index", schema = true, write = true },
  DeleteSearchIndex = { method = "delete_search_index", schema = true, write = true },
  ListSearchIndex = { method = "list_search_index" },
  DescribeSearchIndex = { method = "describe_search_index" },
  Search = { method = "search" },
  ComputeSplits = { method = "compute_splits" },
  ParallelScan = { method = "parallel_scan" },
  CreateIndex = { method = "create_index", schema = true, write = true },
  DropIndex = { method = "drop_index", schema = true, write = true },
  AddDefinedColumn = { method = "add_defined_column", schema = true, write = true },
  DeleteDefinedColumn = { method = "delete_defined_column", schema = true, write = true },
  StartLocalTransaction = { method = "start_local_transaction", write = true },
  CommitTransaction = { method = "commit_transaction", write = true },
  AbortTransaction = { method = "abort_transaction", write = true },
  SQLQuery = { method = "sql_query", write = true },
}

-- The service's message for a code whose message never varies (an
-- `exact` code of otskit.errors): the store's longer ones say more, but
-- SDK users match these. Any other code keeps the store's message.
local function service_message(code, msg)
  local e = errors.get(code)
  if e and e.exact then return e.message end
  -- it may echo the request's bytes: always encodable (otskit.server.text)
  return require("otskit.server.text").message(msg)
end

-- per-row errors of batch answers get the service's messages too
local function service_messages(res)
  for _, t in ipairs(res.tables or {}) do
    for _, r in ipairs(t.rows or {}) do
      if r.ok == false then r.message = service_message(r.code, r.message) end
    end
  end
end

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

-- a store failure as the service answers it
local function failed(msg, code)
  code = code or "OTSInternalServerError"
  return nil, service_message(code, msg), code
end

local function encode(api, res)
  local out, emsg = wire.encode_response(api, res)
  if out == nil then return errors.fail("OTSInternalServerError", "cannot encode the answer: " .. tostring(emsg)) end
  return out
end

-- the reads answered as PlainBuffer bytes by the store itself
local STREAM = { GetRow = "get_row_pb", GetRange = "get_range_pb" }

--- dispatch.call(db, api, body, empty) -> response body | nil, message,
-- code (otskit's convention; code is an otskit.errors code).
-- api must be a key of dispatch.APIS. A method missing from this store
-- (an older store) is "Unsupported operation", never a crash. empty: a
-- GetRange is answered with the empty-page fault (otskit.server.faults).
function dispatch.call(db, api, body, empty)
  local spec = dispatch.APIS[api]
  local res, msg, code
  if api == "PutRow" and db.put_row_pb then
    -- the row straight from its PlainBuffer into the store (otskit.store.write);
    -- false: a request it does not answer, decoded and answered below
    local m = wire.decode_message(api, body)
    if m then res, msg, code = db:put_row_pb(m) end
    if res then return encode(api, res) end
    if res == nil and m then return failed(msg, code) end
  end
  if api == "GetRow" and db.get_row_answer then
    -- a plain GetRow from its protobuf to the answer's in one C call
    -- (otskit.store.stream); false: decoded and answered below
    local out = db:get_row_answer(body)
    if out then return out end
  end
  local req
  req, msg, code = wire.decode_request(api, body)
  if req == nil then return nil, msg, code or "OTSParameterInvalid" end
  if empty and api == "GetRange" then
    res, msg, code = empty_page(db, req)
  elseif STREAM[api] and db[STREAM[api]] then
    -- stored rows straight into the answer's PlainBuffer (otskit.store.stream);
    -- false: a read it does not stream
    res, msg, code = db[STREAM[api]](db, req)
    if res == false then res, msg, code = db[spec.method](db, req) end
  elseif db[spec.method] then
    res, msg, code = db[spec.method](db, req)
  else
    return errors.fail("OTSParameterInvalid", "Unsupported operation: '" .. api .. "'.")
  end
  if res == nil then return failed(msg, code) end
  if api == "BatchWriteRow" or api == "BatchGetRow" then service_messages(res) end
  return encode(api, res)
end

return dispatch
