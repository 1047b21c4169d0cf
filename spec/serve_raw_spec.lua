-- otskit serve's fast path against its general path: a request's raw
-- header (ngx.req.raw_header()) checked in one C call (core.wire
-- raw_verify) must take exactly the requests otskit.server.auth takes
-- from the headers table nginx makes of the same bytes, and refuse every
-- header text it does not read as nginx does (the general path then
-- answers it); the answer's headers made in one C call (core.wire.answer)
-- must equal those otskit.wire makes (MD5, x-ots-date, signature). Random
-- requests: every API, random bodies, names in any case, extra x-ots-*
-- headers, dates at and past the 15-minute skew, fractions of 0-9 digits,
-- and broken ones (a header missing or sent twice, a wrong key, instance,
-- version, MD5 or signature, spaces, tabs, colons, underscores, bytes
-- outside ASCII, bare LF, other request lines).
local wire = require "otskit.wire"
local auth = require "otskit.server.auth"
local dispatch = require "otskit.server.dispatch"
local core = require("otskit.core").wire
local helper = require "helper"

local N = helper.trials(3000)
local SECRET, AK, INST = "s3cr3t-key", "ak-id", "inst1"
local cfg = { secret = SECRET, access_key_id = AK, instance = INST }

local APIS = {}
for api in pairs(dispatch.APIS) do APIS[#APIS + 1] = api end
table.sort(APIS)

-- the headers table nginx's ngx.req.get_headers() gives for header lines
-- that are letters, digits and '-', ':', printable ASCII, CRLF (the only
-- lines raw_verify reads): names lower-cased, the value without the
-- spaces around it, a name sent twice a list
local function nginx_view(lines)
  local t = {}
  for _, l in ipairs(lines) do
    local name = l[1]:lower()
    local v = l[2]:gsub("^ +", ""):gsub(" +$", "")
    local old = t[name]
    if old == nil then t[name] = v
    elseif type(old) == "table" then old[#old + 1] = v
    else t[name] = { old, v } end
  end
  return t
end

local function clean(l)
  return l[1]:match("^[%w%-]+$") and not l[2]:find("[^\32-\126]") and l.eol == nil
end

local function randcase(r, s)
  return (s:gsub("%a", function(c) return r.int(1, 3) == 1 and c:upper() or c end))
end

local function date_text(r, ms)
  local d = wire.date(ms)
  local k = r.int(1, 8)
  if k == 1 then return d:sub(1, 19) .. "Z" end
  if k == 2 then return d:sub(1, 19) .. "." .. r.bytes(r.int(1, 9), "0123456789") .. "Z" end
  if k == 3 then return d:sub(1, 19) .. ".Z" end
  if k == 4 then return d:sub(1, 19) .. r.bytes(r.int(1, 3), "0123456789") .. "Z" end
  if k == 5 then return d:sub(1, 8) .. ("%02d"):format(r.int(0, 32)) .. d:sub(11) end
  if k == 6 then return d:sub(1, 5) .. ("%02d"):format(r.int(0, 13)) .. d:sub(8) end
  return d
end

local function request(r)
  local api = r.int(1, 20) == 1 and "NoSuchApi" or APIS[r.int(1, #APIS)]
  local body = r.bytes(r.int(0, 60))
  local now = 1764309600000 + r.int(0, 2000000000)
  local skew = ({ 0, r.int(-900000, 900000), 900000, -900000, 900001, -900001, r.int(-2000000, 2000000) })[r.int(1, 7)]
  -- the client's own headers, signed over as it sends them
  local h = {
    { "x-ots-date", date_text(r, now + skew) },
    { "x-ots-apiversion", r.int(1, 30) == 1 and "2014-08-08" or "2015-12-31" },
    { "x-ots-accesskeyid", r.int(1, 30) == 1 and "ak-other" or AK },
    { "x-ots-instancename", r.int(1, 30) == 1 and "inst2" or INST },
    { "x-ots-contentmd5", r.int(1, 30) == 1 and wire.content_md5(body .. "x") or wire.content_md5(body) },
  }
  for _ = 1, r.int(0, 3) do
    h[#h + 1] = { "x-ots-" .. r.bytes(r.int(1, 8), "abcdz-09"), r.bytes(r.int(0, 12), "abc XYZ=+/09") }
  end
  if r.int(1, 4) == 1 then h[#h + 1] = { "x-ots-sdk-client", "otskit/1.0 (spec)" } end
  local sv = {}
  for _, l in ipairs(h) do
    sv[l[1]] = l[2]:gsub("^%s+", ""):gsub("%s+$", "")
  end
  local sig = wire.sign_request(r.int(1, 30) == 1 and "wrong" or SECRET, r.int(1, 40) == 1 and "GetRow" or api, sv)
  h[#h + 1] = { "x-ots-signature", sig }
  -- the lines in a random order with the usual others, names in any case
  local lines = { { "Host", "127.0.0.1:8800" }, { "Content-Length", tostring(#body) } }
  for _, l in ipairs(h) do lines[#lines + 1] = { randcase(r, l[1]), l[2] } end
  if r.int(1, 3) == 1 then lines[#lines + 1] = { "User-Agent", "aliyun-tablestore-sdk-js/5.6.5" } end
  r.shuffle(lines)
  -- breakage
  for _ = 1, (r.int(1, 3) == 1 and r.int(1, 3) or 0) do
    local i = r.int(1, #lines)
    local l = lines[i]
    local k = r.int(1, 12)
    if k == 1 then table.remove(lines, i)
    elseif k == 2 then lines[#lines + 1] = { l[1], l[2] }
    elseif k == 3 then lines[#lines + 1] = { l[1]:upper(), r.bytes(r.int(0, 5), "abc") }
    elseif k == 4 then l[2] = (" "):rep(r.int(1, 3)) .. l[2]
    elseif k == 5 then l[2] = l[2] .. (" "):rep(r.int(1, 2))
    elseif k == 6 then l[2] = l[2] .. ":"
    elseif k == 7 then l[2] = l[2] .. "\t"
    elseif k == 8 then l[1] = l[1]:gsub("%-", "_", 1)
    elseif k == 9 then l[2] = l[2] .. "\195\169"
    elseif k == 10 then l.eol = "\n"
    elseif k == 11 then lines[#lines + 1] = { "x-ots-" .. r.bytes(r.int(1, 4), "abc"), "" }
    else l[1] = l[1] .. r.bytes(1, " ;.") end
  end
  local line = "POST /" .. api .. " HTTP/1.1"
  local k = r.int(1, 30)
  if k == 1 then line = "GET /" .. api .. " HTTP/1.1"
  elseif k == 2 then line = "POST /" .. api .. "?x=1 HTTP/1.1"
  elseif k == 3 then line = "POST /" .. api .. " HTTP/1.0"
  elseif k == 4 then line = "POST //" .. api .. " HTTP/1.1"
  elseif k == 5 then line = "post /" .. api .. " HTTP/1.1"
  elseif k == 6 then line = "POST /" .. api .. " HTTP/2.0" end
  local parts = { line, "\r\n" }
  for _, l in ipairs(lines) do parts[#parts + 1] = l[1] .. ":" .. (r.int(1, 5) == 1 and "" or " ") .. l[2] .. (l.eol or "\r\n") end
  parts[#parts + 1] = "\r\n"
  return table.concat(parts), api, body, now, lines, line
end

describe("otskit serve: the raw-header fast path", function()
  it("takes exactly the requests otskit.server.auth takes, and no header text nginx reads otherwise", function()
    local r = helper.rng(3030)
    local fast, refused, general_ok = 0, 0, 0
    for i = 1, N do
      local raw, api, body, now, lines, line = request(r)
      local got = core.raw_verify(raw, body, SECRET, AK, INST, now)
      local all_clean, colon = true, false
      for _, l in ipairs(lines) do
        if not clean(l) then all_clean = false end
        if l[2]:match("[: ]$") then colon = true end
      end
      local line_ok = line == "POST /" .. api .. " HTTP/1.1" or line == "POST /" .. api .. " HTTP/1.0"
      assert.are.equal(line_ok and api or nil, core.raw_api(raw), "trial " .. i)
      if all_clean and line_ok then
        local ok = auth.verify(cfg, api, nginx_view(lines), body, now) == true
        if ok then general_ok = general_ok + 1 end
        if colon then
          -- (a value ending in ':' or a space is left to the general path)
          assert.is_true(not got or ok, "trial " .. i .. ": " .. raw)
        else
          assert.are.equal(ok, got, "trial " .. i .. ": " .. raw)
        end
      else
        assert.is_false(got, "trial " .. i .. ": " .. raw)
      end
      if got then fast = fast + 1 else refused = refused + 1 end
    end
    -- both outcomes are exercised
    assert.is_true(fast > N / 10 and refused > N / 10, fast .. " taken, " .. refused .. " refused")
    assert.is_true(general_ok >= fast)
  end)

  it("reads the request line as nginx's uri and method checks do", function()
    assert.are.equal("GetRow", core.raw_api("POST /GetRow HTTP/1.1\r\nHost: x\r\n\r\n"))
    assert.are.equal("PutRow", core.raw_api("POST /PutRow HTTP/1.0\r\n\r\n"))
    for _, bad in ipairs({ "GET /GetRow HTTP/1.1\r\n", "POST /Get%52ow HTTP/1.1\r\n", "POST /GetRow/ HTTP/1.1\r\n",
        "POST / HTTP/1.1\r\n", "POST /GetRow\r\n", "POST /GetRow HTTP/1.1\n", "POST http://h/GetRow HTTP/1.1\r\n",
        "POST /Get_Row HTTP/1.1\r\n", "", "POST /GetRow HTTP/1.1" }) do
      assert.is_nil(core.raw_api(bad), bad)
    end
  end)

  it("parses x-ots-date as otskit.wire does", function()
    local r = helper.rng(3031)
    for i = 1, N do
      local s
      if r.int(1, 3) == 1 then
        s = r.bytes(r.int(18, 28), "0123456789-T:.Z")
      else
        s = date_text(r, r.int(0, 253402300799999))
      end
      assert.are.equal(wire.parse_date(s), core.parse_date(s), "trial " .. i .. ": " .. s)
    end
    for _, s in ipairs({ "2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z", "2000-02-29T23:59:60.999999Z",
        "1900-02-29T00:00:00.1Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z", "2024-13-01T00:00:00Z",
        "2024-01-01T24:00:00Z", "2024-01-01T00:00:00.Z", "2024-01-01T00:00:00.0", "2024-01-01 00:00:00Z" }) do
      assert.are.equal(wire.parse_date(s), core.parse_date(s), s)
    end
  end)

  it("makes an answer's headers as otskit.wire does", function()
    local r = helper.rng(3032)
    for i = 1, N do
      local body = r.bytes(r.int(0, 300))
      local api = r.int(1, 10) == 1 and "" or APIS[r.int(1, #APIS)]
      local ms = r.int(1, 10) == 1 and r.int(0, 253402300799999) or 1764309600000 + r.int(0, 2000000000)
      local rid = ("%08x-%04x-%04x-%04x-%012x"):format(r.int(0, 2^31), r.int(0, 65535), r.int(0, 65535),
        r.int(0, 65535), r.int(0, 2^40))
      local secret, ak = r.bytes(r.int(0, 30)), r.bytes(r.int(0, 20))
      local md5, date, authz, got_rid
      if r.int(1, 2) == 1 then
        md5, date, authz, got_rid = core.answer(secret, ak, api, body, ms, rid)
      else
        -- the id as a prefix and a counter: the counter's 8 hex digits appended
        local n = r.int(1, 4) == 1 and ({ 0, 4294967295 })[r.int(1, 2)] or r.int(0, 4294967295)
        md5, date, authz, got_rid = core.answer(secret, ak, api, body, ms, rid:sub(1, 28), n)
        rid = rid:sub(1, 28) .. ("%08x"):format(n)
      end
      assert.are.equal(rid, got_rid, "trial " .. i)
      assert.are.equal(wire.content_md5(body), md5, "trial " .. i)
      assert.are.equal(wire.date(ms), date, "trial " .. i)
      local sig = wire.sign_response(secret, api, { ["x-ots-contentmd5"] = md5, ["x-ots-requestid"] = rid,
        ["x-ots-date"] = date, ["x-ots-contenttype"] = "protocol buffer" })
      assert.are.equal("OTS " .. ak .. ":" .. sig, authz, "trial " .. i)
    end
    -- a clock outside the years 1970-9999, or not a whole ms: the Lua path's
    assert.is_nil(core.answer("s", "a", "GetRow", "", -1, "r"))
    assert.is_nil(core.answer("s", "a", "GetRow", "", 253402300800000, "r"))
    assert.is_nil(core.answer("s", "a", "GetRow", "", 1.5, "r"))
    -- a counter that is not a 32-bit unsigned integer: a programming mistake
    for _, n in ipairs({ -1, 4294967296, 0.5, 0 / 0 }) do
      assert.has_error(function() core.answer("s", "a", "GetRow", "", 0, "r", n) end)
    end
    -- an id over 64 bytes is not signed here: the Lua path's
    assert.is_nil(core.answer("s", "a", "GetRow", "", 0, ("r"):rep(57), 1))
    assert.is_nil(core.answer("s", "a", "GetRow", "", 0, ("r"):rep(65)))
    assert.are.equal(("r"):rep(56) .. "0000000a", select(4, core.answer("s", "a", "GetRow", "", 0, ("r"):rep(56), 10)))
  end)
end)
