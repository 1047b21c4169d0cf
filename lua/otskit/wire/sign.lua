--- otskit.wire.sign -- request and response signatures (V2, HMAC-SHA1 of
-- the canonical x-ots-* headers), the body MD5, a constant-time string
-- compare, and the x-ots-date text.
local core = require("otskit.core").wire

local sign = {}

local function trim(s) return (tostring(s):gsub("^%s+", ""):gsub("%s+$", "")) end

-- "name:value\n" of every x-ots-* header but the signature, by name
local function canonical(headers)
  local hs = {}
  for k, v in pairs(headers) do
    local n = tostring(k):lower()
    if n:sub(1, 6) == "x-ots-" and n ~= "x-ots-signature" then hs[#hs + 1] = n .. ":" .. trim(v) .. "\n" end
  end
  table.sort(hs)
  return table.concat(hs)
end

-- The canonical text is built and signed in C (core.sign_headers: the
-- same lines, names lower-cased, values trimmed, sorted) when every
-- x-ots-* value is a string; canonical() above says what it computes and
-- signs any other headers table.
local sign_headers, hmac = core.sign_headers, core.hmac_sha1_b64

--- sign.sign_request(secret, api, headers) -> x-ots-signature (V2):
-- base64 HMAC-SHA1 of "/<api>\nPOST\n\n" and the canonical x-ots-* headers.
function sign.sign_request(secret, api, headers)
  local head = "/" .. api .. "\nPOST\n\n"
  return sign_headers(secret, head, headers, "") or hmac(secret, head .. canonical(headers))
end

--- sign.sign_response(secret, api, headers) -> the signature of a response
-- (sent as "authorization: OTS <access key id>:<signature>"): base64
-- HMAC-SHA1 of the canonical x-ots-* headers, then "/<api>".
function sign.sign_response(secret, api, headers)
  local tail = "/" .. api
  return sign_headers(secret, "", headers, tail) or hmac(secret, canonical(headers) .. tail)
end

sign.canonical = canonical -- (for the spec that checks the C signer against it)

--- sign.content_md5(body) -> base64 MD5 (x-ots-contentmd5).
sign.content_md5 = core.content_md5

--- sign.equal(a, b) -> true when the strings are equal, in time that does
-- not depend on where they differ (signature checks).
sign.equal = core.equal

--- sign.date([ms]) -> x-ots-date text, "2024-01-02T03:04:05.678Z" (UTC);
-- ms since the epoch, default now (second precision).
local date_s, date_text -- the last second formatted (os.date once a second)
function sign.date(ms)
  ms = ms or os.time() * 1000
  local s = math.floor(ms / 1000)
  if s ~= date_s then date_s, date_text = s, os.date("!%Y-%m-%dT%H:%M:%S", s) end
  return date_text .. (".%03dZ"):format(math.floor(ms - s * 1000))
end

-- days since 1970-01-01 of a civil date (proleptic Gregorian)
local function days(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = math.floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

local MDAYS = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 }

--- sign.parse_date(s) -> ms since the epoch | nil. Takes
-- "YYYY-MM-DDTHH:MM:SS[.f+]Z"; the fraction's first three digits are the
-- milliseconds, further digits are ignored (the Go SDK writes odd ones).
function sign.parse_date(s)
  if type(s) ~= "string" then return nil end
  local y, mo, d, h, mi, se, frac = s:match("^(%d%d%d%d)%-(%d%d)%-(%d%d)T(%d%d):(%d%d):(%d%d)(%.?%d*)Z$")
  if not y then return nil end
  if frac == "." or (frac ~= "" and frac:sub(1, 1) ~= ".") then return nil end
  y, mo, d, h, mi, se = tonumber(y), tonumber(mo), tonumber(d), tonumber(h), tonumber(mi), tonumber(se)
  if mo < 1 or mo > 12 or d < 1 or d > MDAYS[mo] or h > 23 or mi > 59 or se > 60 then return nil end
  if mo == 2 and d == 29 and not (y % 4 == 0 and (y % 100 ~= 0 or y % 400 == 0)) then return nil end
  local ms = 0
  if frac ~= "" then ms = tonumber((frac:sub(2, 4) .. "00"):sub(1, 3)) end
  return ((days(y, mo, d) * 24 + h) * 60 + mi) * 60000 + se * 1000 + ms
end

return sign
