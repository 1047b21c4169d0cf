--- otskit.server.dispatch -- one API call: protobuf request -> store ->
-- protobuf response.
--
-- The request body decodes (otskit.wire) to exactly the request table of
-- the store method of that API, and the method's answer encodes back, so
-- every operation the store has is served the same way. The one API the
-- store has no method for, ComputeSplitPointsBySize, is answered from the
-- table's partition bounds (describe_table's shard_splits): one split point
-- per bound, its partition-key value alone (the service omits the trailing
-- INF_MIN columns).
local wire = require "otskit.wire"

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
  ComputeSplitPointsBySize = { method = "compute_split_points" },
}

local function compute_split_points(db, req)
  local d, msg, code = db:describe_table{ table = req.table }
  if not d then return nil, msg, code end
  local pk = d.table_meta.primary_key
  local points = {}
  for i, v in ipairs(d.shard_splits or {}) do
    points[i] = { { pk[1][1], v } }
  end
  local locations = { { location = "otskit-local", ["repeat"] = #points + 1 } }
  return { schema = pk, split_points = points, locations = locations,
           consumed = { capacity_unit = { read = 1, write = 0 } } }
end

--- dispatch.call(db, api, body) -> response body | nil, code, message.
-- api must be a key of dispatch.APIS. A method missing from this store
-- (an older store) is "Unsupported operation", never a crash.
function dispatch.call(db, api, body)
  local spec = dispatch.APIS[api]
  local req, msg, code = wire.decode_request(api, body)
  if req == nil then return nil, code or "OTSParameterInvalid", msg end
  local res
  if spec.method == "compute_split_points" then
    res, msg, code = compute_split_points(db, req)
  elseif db[spec.method] then
    res, msg, code = db[spec.method](db, req)
  else
    return nil, "OTSParameterInvalid", "Unsupported operation: '" .. api .. "'."
  end
  if res == nil then return nil, code or "OTSInternalServerError", msg end
  return wire.encode_response(api, res)
end

return dispatch
