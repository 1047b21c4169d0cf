--- otskit.server.respond -- what every response of `otskit serve` carries.
--
-- The service's response headers (x-ots-contentmd5, x-ots-requestid,
-- x-ots-date with a fraction, x-ots-contenttype, authorization: OTS
-- <id>:<sig>): the Java and Python SDKs refuse 2xx responses without them,
-- and Python verifies the signature of errors too. Errors are a protobuf
-- Error{code, message} with the service's HTTP status for the code. Bodies
-- are never compressed and nothing follows them.
local wire = require "otskit.wire"

local respond = {}

--- The service's HTTP status per error code (unknown codes: 400).
respond.STATUS = {
  OTSParameterInvalid = 400, OTSInvalidPK = 400, OTSOutOfColumnCountLimit = 400,
  OTSOutOfRowSizeLimit = 400, OTSAuthFailed = 403, OTSConditionCheckFail = 403,
  OTSNotEnoughCapacityUnit = 403, OTSCapacityUnitExhausted = 403, OTSQuotaExhausted = 403,
  OTSTooFrequentReservedThroughputAdjustment = 403, OTSObjectNotExist = 404,
  OTSTableNotReady = 404, OTSMethodNotAllowed = 405, OTSRequestTimeout = 408,
  OTSObjectAlreadyExist = 409, OTSRowOperationConflict = 409, OTSRequestBodyTooLarge = 413,
  OTSInternalServerError = 500, OTSServerBusy = 503, OTSPartitionUnavailable = 503,
  OTSServerUnavailable = 503, OTSTimeout = 503, OTSQuotaFrequentMsg = 503,
}

function respond.status(code)
  return respond.STATUS[code] or 400
end

-- 8-4-4-4-12 hex like the service's ids, from nginx's per-request id
local function request_id()
  local h = ngx.var.request_id or ("%032x"):format(math.random(0, 2 ^ 31))
  return ("%s-%s-%s-%s-%s"):format(h:sub(1, 8), h:sub(9, 12), h:sub(13, 16), h:sub(17, 20), h:sub(21, 32))
end

--- respond.send(cfg, api, status, body): sets the x-ots-* headers and the
-- response signature (made with cfg.secret over the x-ots-* headers and
-- "/" .. api) and sends body. api may be nil (an unknown path): signed as "".
function respond.send(cfg, api, status, body)
  local h = {
    ["x-ots-contentmd5"] = wire.content_md5(body),
    ["x-ots-requestid"] = request_id(),
    ["x-ots-date"] = wire.date(math.floor(ngx.now() * 1000)),
    ["x-ots-contenttype"] = "protocol buffer",
  }
  local sig = wire.sign_response(cfg.secret, api or "", h)
  ngx.status = status
  for k, v in pairs(h) do ngx.header[k] = v end
  ngx.header["authorization"] = "OTS " .. cfg.access_key_id .. ":" .. sig
  ngx.header["content-length"] = #body
  ngx.print(body)
  return ngx.exit(ngx.OK)
end

--- respond.error(cfg, api, code, message [, status]): an Error{code,
-- message} body with the code's status (or the given one).
function respond.error(cfg, api, code, message, status)
  return respond.send(cfg, api, status or respond.status(code), wire.encode_error(code, message))
end

return respond
