--- otskit.server.respond -- what every response of `otskit serve` carries.
--
-- The service's response headers (x-ots-contentmd5, x-ots-requestid,
-- x-ots-date with a fraction, x-ots-contenttype, authorization: OTS
-- <id>:<sig>): the Java and Python SDKs refuse 2xx responses without them,
-- and Python verifies the signature of errors too. Errors are a protobuf
-- Error{code, message} with the service's HTTP status for the code
-- (otskit.errors). Bodies
-- are never compressed and nothing follows them.
local wire = require "otskit.wire"
local errors = require "otskit.errors"
-- the wall clock (seconds): not resty.core's ngx.now(), whose FFI call
-- aborts LuaJIT traces on the request path ("leaving loop in root trace"
-- in its time.lua)
local clock = require("otskit.clock").now
-- the answer's MD5, date and signature in one C call (sign.c sign_answer)
local answer = require("otskit.core").wire.answer

local respond = {}

--- respond.status(code) -> the HTTP status the service answers `code`
-- with (otskit.errors); 500 for a code otskit does not know (a bug: every
-- code the store and the server produce is in otskit.errors).
function respond.status(code)
  return errors.status(code) or 500
end

-- 8-4-4-4-12 hex like the service's ids: this worker's random prefix
-- (from nginx's random $request_id, read once) and a counter of its
-- answers, formatted by the C call that signs the answer, so a request
-- reads no nginx variable and formats nothing in Lua (resty.core's ngx.var
-- and string.format of five pieces abort LuaJIT traces on the request path)
local rid_prefix, rid_n = nil, 0
local function prefix()
  local h = ngx.var.request_id or ("%08x%08x%08x"):format(math.random(0, 2 ^ 31), math.random(0, 2 ^ 31),
    math.random(0, 2 ^ 31))
  return h:sub(1, 8) .. "-" .. h:sub(9, 12) .. "-" .. h:sub(13, 16) .. "-" .. h:sub(17, 20) .. "-" .. h:sub(21, 24)
end

--- respond.send(cfg, api, status, body): sets the x-ots-* headers and the
-- response signature (made with cfg.secret over the x-ots-* headers and
-- "/" .. api) and sends body. api may be nil (an unknown path): signed as "".
function respond.send(cfg, api, status, body)
  if rid_prefix == nil then rid_prefix = prefix() end
  rid_n = rid_n < 4294967295 and rid_n + 1 or 0
  local ms = math.floor(clock() * 1000)
  local md5, date, authz, rid = answer(cfg.secret, cfg.access_key_id, api or "", body, ms, rid_prefix, rid_n)
  if md5 == nil then -- (a clock outside years 1970-9999: the same headers, made in Lua)
    rid = rid_prefix .. ("%08x"):format(rid_n)
    md5, date = wire.content_md5(body), wire.date(ms)
    authz = "OTS " .. cfg.access_key_id .. ":" .. wire.sign_response(cfg.secret, api or "", {
      ["x-ots-contentmd5"] = md5, ["x-ots-requestid"] = rid, ["x-ots-date"] = date,
      ["x-ots-contenttype"] = "protocol buffer" })
  end
  ngx.status = status
  -- set one by one (no pairs loop: LuaJIT compiles this path)
  local out = ngx.header
  out["x-ots-contentmd5"] = md5
  out["x-ots-requestid"] = rid
  out["x-ots-date"] = date
  out["x-ots-contenttype"] = "protocol buffer"
  out["authorization"] = authz
  out["content-length"] = #body
  -- the content handler returns and nginx finishes the request: no
  -- ngx.exit (its coroutine yield aborts the trace recording through
  -- here), and a tail call: no Lua code left to trace back into the
  -- caller's pcall (otskit.server.handle)
  return ngx.print(body)
end

--- respond.error(cfg, api, code [, message [, status]]): an Error{code,
-- message} body with the code's status (or the given one); message nil:
-- the code's own (otskit.errors).
function respond.error(cfg, api, code, message, status)
  if message == nil then message = errors.message(code) or code end
  -- it may echo the request's bytes: always encodable (otskit.server.text)
  message = require("otskit.server.text").message(message)
  return respond.send(cfg, api, status or respond.status(code), wire.encode_error(code, message))
end

return respond
