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
--
-- The package: plainbuffer (rows), filter (filters and conditions), rows
-- (row operations), batch, tables (table operations), sign (signatures
-- and dates), common (option checks); this file holds the entry points.
-- A new operation lives in its own file returning { OPS = {api = op} } and
-- is listed in OP_MODULES below.
local core = require("otskit.core").wire
local pb = require "otskit.wire.plainbuffer"
local sign = require "otskit.wire.sign"
local common = require "otskit.wire.common"

local invalid, INVALID = common.invalid, common.INVALID

local wire = {}

--- otskit.values's sentinels (the same objects the store uses): open ends
-- of a get_range bound, and the value of an auto-increment key column in
-- put_row; and the typed values (binary, integer, double).
wire.INF_MIN, wire.INF_MAX, wire.AUTO_INCREMENT = pb.INF_MIN, pb.INF_MAX, pb.AUTO_INCREMENT
wire.binary, wire.integer, wire.double = pb.binary, pb.integer, pb.double

--- PlainBuffer: see otskit.wire.plainbuffer.
wire.encode_pk, wire.encode_put, wire.encode_delete = pb.encode_pk, pb.encode_put, pb.encode_delete
wire.encode_update, wire.decode_rows = pb.encode_update, pb.decode_rows
--- wire.rows_order(rows) -> flags | nil: the order of a GetRange
-- response's rows as decode_response found them (pb.rows_order), for
-- otskit.client.verify.
wire.rows_order = pb.rows_order

--- Signatures and dates: see otskit.wire.sign.
wire.sign_request, wire.sign_response = sign.sign_request, sign.sign_response
wire.content_md5, wire.equal = sign.content_md5, sign.equal
wire.date, wire.parse_date = sign.date, sign.parse_date

-- the modules whose OPS make up the operations wire knows
local OP_MODULES = { "otskit.wire.rows", "otskit.wire.batch", "otskit.wire.tables", "otskit.wire.indexes",
  "otskit.wire.localtxn", "otskit.wire.search", "otskit.wire.sql" }

local OPS = {}
for _, name in ipairs(OP_MODULES) do
  for api, op in pairs(require(name).OPS) do
    if OPS[api] then error("otskit.wire: api " .. api .. " defined twice (" .. name .. ")") end
    OPS[api] = op
  end
end
-- a module's EXTEND[api](op) -> op: fields it adds to another module's operation
for _, name in ipairs(OP_MODULES) do
  for api, extend in pairs(require(name).EXTEND or {}) do OPS[api] = extend(OPS[api]) end
end

--- The api names wire knows, sorted.
wire.APIS = common.sorted_keys(OPS)

local function op_of(api)
  local op = OPS[api]
  if not op then error("otskit.wire: unknown api " .. tostring(api), 3) end
  return op
end

--- wire.encode_request(api, req) -> body | nil, msg, "OTSParameterInvalid".
-- req is what the store method of api takes (PutRow: db:put_row's table).
function wire.encode_request(api, req)
  local op = op_of(api)
  local m, msg, code = op.req(req)
  if not m then return nil, msg, code end
  return core.proto_encode(api .. "Request", m)
end

--- wire.decode_request(api, body) -> req | nil, msg, "OTSParameterInvalid".
-- A field otskit cannot honour (a transaction, a token, a stream...) is
-- refused, never ignored.
function wire.decode_request(api, body)
  local op = op_of(api)
  if type(body) ~= "string" then error("otskit.wire: decode_request takes the body string", 2) end
  local m, unknown = core.proto_decode(api .. "Request", body)
  if not m then return invalid(api .. ": " .. unknown) end
  if unknown then return invalid(api .. ": unsupported field number " .. unknown) end
  local req, msg, code = op.from_req(m)
  if not req then return nil, msg, code == "CorruptPlainBuffer" and INVALID or code end
  return req
end

--- wire.decode_message(api, body) -> m | nil: the request's protobuf
-- message as a table (bytes fields as strings, nothing more decoded); nil
-- when it does not decode or has a field otskit does not know (then
-- wire.decode_request says why). For a server's paths that take the
-- message itself (otskit.store's db:put_row_pb).
function wire.decode_message(api, body)
  op_of(api)
  if type(body) ~= "string" then error("otskit.wire: decode_message takes the body string", 2) end
  local m, unknown = core.proto_decode(api .. "Request", body)
  if not m or unknown then return nil end
  return m
end

--- wire.encode_response(api, res) -> body | nil, msg, code. res is what the
-- store method returned.
function wire.encode_response(api, res)
  local op = op_of(api)
  if type(res) ~= "table" then error("otskit.wire: encode_response takes a response table", 2) end
  local m, msg, code = op.res(res)
  if not m then return nil, msg, code end
  return core.proto_encode(api .. "Response", m)
end

-- responses whose large bytes field is decoded where it is in the body
-- (no copy of it): api -> { message, field number }
local SPAN = { GetRange = { "GetRangeResponse", 2 } }

--- wire.decode_response(api, body [, req]) -> res | nil, msg, code (code
-- "CorruptMessage" or "CorruptPlainBuffer" for bytes that do not decode).
-- req: the request, for what the response does not carry (CreateTable's name).
function wire.decode_response(api, body, req)
  local op = op_of(api)
  if type(body) ~= "string" then error("otskit.wire: decode_response takes the body string", 2) end
  local span = SPAN[api]
  if span then
    -- m.rows = "" there; nil: proto_decode below says what it finds
    local m, _, at, len = core.proto_decode_span(span[1], body, span[2])
    if m then
      m.rows, m.rows_at, m.rows_len = body, at, len
      return op.from_res(m, req)
    end
  end
  local m, unknown = core.proto_decode(api .. "Response", body)
  if not m then return nil, api .. ": " .. unknown, "CorruptMessage" end
  return op.from_res(m, req)
end

--- wire.encode_error(code, msg) -> the body of an error response.
function wire.encode_error(code, msg)
  local b, m = core.proto_encode("Error", { code = code, message = msg })
  if not b then error("otskit.wire: encode_error: " .. m, 2) end
  return b
end

--- wire.decode_error(body) -> code, message | nil, msg, "CorruptMessage".
function wire.decode_error(body)
  local m, msg = core.proto_decode("Error", body)
  if not m then return nil, "not a Tablestore error body: " .. msg, "CorruptMessage" end
  return m.code, m.message
end

return wire
