-- spec/support/fake_wire.lua -- a stand-in for otskit.wire with the same
-- API, for testing the client's plumbing (transports, retries, batches,
-- parallel) without protobuf: messages are Lua source, signatures and
-- MD5s are plain checksums. Also a fake server: fake.server(db, opts)
-- -> a transport function that checks the signing headers, decodes,
-- calls the store and encodes, with scripted failures.
local store = require "otskit.store"

local fake = {}

local SENT = { [store.INF_MIN] = "INF_MIN", [store.INF_MAX] = "INF_MAX" }
if store.AUTO_INCREMENT then SENT[store.AUTO_INCREMENT] = "AUTO_INCREMENT" end

local function ser(v, out)
  local t = type(v)
  if t == "table" then
    if SENT[v] then out[#out + 1] = "S." .. SENT[v]; return end
    out[#out + 1] = "{"
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b)
      if type(a) == type(b) and (type(a) == "number" or type(a) == "string") then return a < b end
      return type(a) < type(b)
    end)
    for _, k in ipairs(keys) do
      out[#out + 1] = "["; ser(k, out); out[#out + 1] = "]="; ser(v[k], out); out[#out + 1] = ","
    end
    out[#out + 1] = "}"
  elseif t == "string" then
    out[#out + 1] = ("%q"):format(v)
  elseif t == "number" then
    if math.type and math.type(v) == "float" then out[#out + 1] = ("(%.17g+0.0)"):format(v)
    else out[#out + 1] = ("%.17g"):format(v) end
  else
    out[#out + 1] = tostring(v)
  end
end

function fake.encode(v) local out = {}; ser(v, out); return table.concat(out) end
function fake.decode(s)
  local env = { S = { INF_MIN = store.INF_MIN, INF_MAX = store.INF_MAX, AUTO_INCREMENT = store.AUTO_INCREMENT } }
  local f = assert((loadstring or load)("return " .. s, "msg", "t", env))
  if setfenv then setfenv(f, env) end
  return f()
end

fake.calls = 0
function fake.encode_request(api, req)
  if type(req) ~= "table" then return nil, "request must be a table", "OTSParameterInvalid" end
  if req.table == "__unencodable" then return nil, "cannot encode", "OTSParameterInvalid" end
  fake.calls = fake.calls + 1
  return fake.encode({ api = api, req = req })
end
function fake.decode_request(api, body)
  local m = fake.decode(body)
  if m.api ~= api then return nil, "api mismatch", "OTSParameterInvalid" end
  return m.req
end
function fake.encode_response(_, res) return fake.encode(res) end
function fake.decode_response(_, body)
  if body == "garbage" then return nil, "bad protobuf", "OTSResponseInvalid" end
  return fake.decode(body)
end
function fake.encode_error(code, msg) return fake.encode({ code = code, message = msg }) end
function fake.decode_error(body)
  local ok, m = pcall(fake.decode, body)
  if not ok or type(m) ~= "table" then return nil, nil end
  return m.code, m.message
end

local function sum(s)
  local h = 0
  for i = 1, #s do h = (h * 31 + s:byte(i)) % 4294967291 end
  return h
end
function fake.content_md5(body) return "md5-" .. sum(body) end
local function canon(prefix, headers, suffix)
  local names = {}
  for k in pairs(headers) do
    local l = k:lower()
    if l:sub(1, 6) == "x-ots-" and l ~= "x-ots-signature" then names[#names + 1] = l end
  end
  table.sort(names)
  local parts = { prefix }
  for _, n in ipairs(names) do parts[#parts + 1] = n .. ":" .. headers[n] end
  parts[#parts + 1] = suffix
  return table.concat(parts, "\n")
end
function fake.sign_request(secret, api, h) return "sig-" .. sum(secret .. canon("/" .. api, h, "")) end
function fake.sign_response(secret, api, h) return "rsig-" .. sum(secret .. canon("", h, "/" .. api)) end
function fake.date(ms) return ("D%d"):format(ms) end
function fake.parse_date(d) return tonumber(type(d) == "string" and d:match("^D(%d+)$")) end
function fake.equal(a, b) return a == b end

--- fake.server(db, opts) -> transport function, log. opts.secret (the
-- access key secret), opts.script = function(api, req, n) -> nil or an
-- action: { status, code, message } (an error response), { failure =
-- "connect" | "timeout" } (no response), { apply_then = action } (apply,
-- then answer with action), { corrupt = true } (bad MD5), { badsig = true },
-- { strip = {header names} } (removed from the answer), { date = "D<ms>" }
-- (the answer dated so, or undated for "", signed), { rows = function(res) -> res' } (the
-- answer replaced by a signed res').
-- The log records every request: { api, date, req }.
function fake.server(db, opts)
  opts = opts or {}
  local secret = opts.secret or "SK"
  local log, n = {}, 0
  local date = "D0"
  local function reply(api, status, body, extra)
    local h = { ["x-ots-requestid"] = "rid-" .. n, ["x-ots-contentmd5"] = fake.content_md5(body),
                ["x-ots-date"] = date }
    for k, v in pairs(extra or {}) do h[k] = v end
    h["authorization"] = "OTS AK:" .. fake.sign_response(secret, api, h)
    return { status = status, headers = h, body = body }
  end
  local function transport(r)
    n = n + 1
    local api = r.url:match("/(%w+)$")
    local h = r.headers
    assert(h["x-ots-signature"] == fake.sign_request(secret, api, h), "bad request signature")
    assert(h["x-ots-contentmd5"] == fake.content_md5(r.body), "bad request md5")
    local req = assert(fake.decode_request(api, r.body))
    log[#log + 1] = { api = api, date = h["x-ots-date"], req = req }
    date = h["x-ots-date"] -- answered at the time it was asked
    local act = opts.script and opts.script(api, req, n)
    local apply_first = false
    if act and act.apply_then then apply_first, act = true, act.apply_then end
    local function run()
      local method = api:gsub("(%l)(%u)", "%1_%2"):lower()
      local res, msg, code = db[method](db, req)
      if res then res.latency = nil end
      return res, msg, code
    end
    if act and act.failure then
      if apply_first then run() end
      return nil, "scripted " .. act.failure, act.failure
    end
    if act and act.status then
      if apply_first then run() end
      return reply(api, act.status, act.code and fake.encode_error(act.code, act.message or act.code) or "")
    end
    local res, msg, code = run()
    if not res then
      local status = (code == "OTSObjectNotExist") and 404 or (code == "OTSConditionCheckFail") and 403 or 400
      return reply(api, status, fake.encode_error(code, msg))
    end
    local body = fake.encode_response(api, res)
    local out = reply(api, 200, body)
    if act and act.corrupt then out.headers["x-ots-contentmd5"] = "md5-0" end
    if act and act.badsig then out.headers.authorization = "OTS AK:nope" end
    if act and act.garbage then out = reply(api, 200, "garbage") end
    if act and act.strip then for _, k in ipairs(act.strip) do out.headers[k] = nil end end
    if act and act.date then
      out.headers["x-ots-date"] = act.date ~= "" and act.date or nil
      out.headers.authorization = "OTS AK:" .. fake.sign_response(secret, api, (function()
        local hh = {}; for k, v in pairs(out.headers) do if k ~= "authorization" then hh[k] = v end end; return hh end)())
    end
    if act and act.rows then out = reply(api, 200, fake.encode_response(api, act.rows(res))) end
    return out
  end
  return transport, log
end

return fake
