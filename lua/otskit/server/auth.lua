--- otskit.server.auth -- request authentication as the service does it.
--
-- V2 signatures: the client signs "/" .. api, "POST", an empty query and
-- its x-ots-* headers (sorted, lower-case, trimmed) with HMAC-SHA1 of the
-- access key secret. The checks and their answers, in the service's order:
-- a missing header is 400 OTSParameterInvalid "Missing header: <name>";
-- an unknown access key id, an unknown instance, an x-ots-date more than
-- 15 minutes from the server's clock, a body whose MD5 differs from
-- x-ots-contentmd5, or a signature that does not match are 403
-- OTSAuthFailed. x-ots-date may carry any fraction of 1+ digits (the Go
-- SDK writes month/day/hour digits there; the service ignores them).
local wire = require "otskit.wire"
local errors = require "otskit.errors"
local list_key = require("otskit.core").wire.list_key

local auth = {}

--- The headers every request must carry.
auth.REQUIRED = {
  "x-ots-date", "x-ots-apiversion", "x-ots-accesskeyid",
  "x-ots-instancename", "x-ots-contentmd5", "x-ots-signature",
}

auth.SKEW_MS = 15 * 60 * 1000

--- auth.verify(cfg, api, headers, body, now_ms) -> true | nil, message,
-- code. cfg: { access_key_id, secret, instance }; headers: lower-case
-- name -> value (a header sent twice, a list, is refused).
-- the message for required header name with value v, or nil when it is one string
local function bad(v, name)
  if v == nil then return "Missing header: " .. name end
  if type(v) ~= "string" then return "Duplicated header: " .. name end
  return nil
end

function auth.verify(cfg, api, headers, body, now_ms)
  -- auth.REQUIRED in order, unrolled: no loop for LuaJIT to abort a
  -- trace on (every request passes here)
  local why = bad(headers["x-ots-date"], "x-ots-date") or bad(headers["x-ots-apiversion"], "x-ots-apiversion")
    or bad(headers["x-ots-accesskeyid"], "x-ots-accesskeyid")
    or bad(headers["x-ots-instancename"], "x-ots-instancename")
    or bad(headers["x-ots-contentmd5"], "x-ots-contentmd5") or bad(headers["x-ots-signature"], "x-ots-signature")
  if why then return nil, why, "OTSParameterInvalid" end
  local dup = list_key(headers, "x-ots-") -- (the loop over the headers in C)
  if dup then return nil, "Duplicated header: " .. dup, "OTSParameterInvalid" end
  if headers["x-ots-apiversion"] ~= "2015-12-31" then
    return nil, "Unsupported API version: " .. headers["x-ots-apiversion"], "OTSParameterInvalid"
  end
  local date = wire.parse_date(headers["x-ots-date"])
  if not date then return nil, "Invalid date format: " .. headers["x-ots-date"], "OTSParameterInvalid" end
  if not wire.equal(headers["x-ots-accesskeyid"], cfg.access_key_id) then
    return nil, "The AccessKeyID does not exist.", "OTSAuthFailed"
  end
  if headers["x-ots-instancename"] ~= cfg.instance then
    return nil, "The instance is not found: " .. headers["x-ots-instancename"] .. ".", "OTSAuthFailed"
  end
  if math.abs(date - now_ms) > auth.SKEW_MS then
    return nil, "Mismatch between system time and x-ots-date.", "OTSAuthFailed"
  end
  if not wire.equal(wire.content_md5(body), headers["x-ots-contentmd5"]) then
    return nil, "Mismatch between MD5 value of request body and x-ots-contentmd5 in header.", "OTSAuthFailed"
  end
  local want = wire.sign_request(cfg.secret, api, headers)
  if not wire.equal(want, headers["x-ots-signature"]) then
    return errors.fail("OTSAuthFailed") -- "Signature mismatch."
  end
  return true
end

return auth
