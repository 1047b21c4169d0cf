-- Request and response signatures: the canonical x-ots-* text built and
-- signed in C (core.wire.sign_headers) equals the Lua definition
-- (otskit.wire.sign's canonical, HMAC-SHA1 of it) on random headers
-- tables: names in any case, x-ots-* and others, x-ots-signature left
-- out, values with white space around and inside, names that are
-- prefixes of others, empty values, non-string keys; and a value that is
-- not a string takes the Lua path with the same result.
local sign = require "otskit.wire.sign"
local core = require("otskit.core").wire
local helper = require "helper"

local N = helper.trials(500)

local function lua_request(secret, api, h)
  return core.hmac_sha1_b64(secret, "/" .. api .. "\nPOST\n\n" .. sign.canonical(h))
end
local function lua_response(secret, api, h)
  return core.hmac_sha1_b64(secret, sign.canonical(h) .. "/" .. api)
end

local NAMES = { "x-ots-date", "X-OTS-Date", "x-ots-a", "x-ots-a-b", "x-ots-ab", "X-Ots-Instancename",
  "x-ots-signature", "X-OTS-SIGNATURE", "content-length", "host", "x-ots-", "x-otsx", "x-ots-contentmd5" }
local WS = { "", " ", "\t", "  \r\n", "\v\f" }

local function random_headers(r)
  local h = {}
  for _ = 1, r.int(0, 12) do
    local name = NAMES[r.int(1, #NAMES)]
    if r.int(1, 4) == 1 then name = name .. r.bytes(r.int(1, 3), "abcXYZ-:") end
    h[name] = WS[r.int(1, #WS)] .. r.bytes(r.int(0, 12), "abc XYZ:09=+/\t") .. WS[r.int(1, #WS)]
  end
  if r.int(1, 5) == 1 then h[1] = "x-ots-list" end
  return h
end

describe("otskit.wire.sign", function()
  it("signs in C exactly as the Lua canonical text is signed", function()
    local r = helper.rng(30)
    for i = 1, N do
      local h = random_headers(r)
      local secret = r.bytes(r.int(0, 40))
      local api = ({ "GetRow", "PutRow", "" })[r.int(1, 3)]
      assert.are.equal(lua_request(secret, api, h), sign.sign_request(secret, api, h), "trial " .. i)
      assert.are.equal(lua_response(secret, api, h), sign.sign_response(secret, api, h), "trial " .. i)
      assert.are.equal(lua_request(secret, api, h), core.sign_headers(secret, "/" .. api .. "\nPOST\n\n", h, ""))
    end
  end)

  it("takes the Lua path for an x-ots-* value that is not a string", function()
    local h = { ["x-ots-date"] = "2024-01-02T03:04:05.000Z", ["x-ots-n"] = 42 }
    assert.is_nil(core.sign_headers("k", "", h, "/GetRow"))
    assert.are.equal(lua_response("k", "GetRow", h), sign.sign_response("k", "GetRow", h))
    -- a non-string value of another header does not matter
    local h2 = { ["x-ots-date"] = "d", ["content-length"] = 10 }
    assert.are.equal(lua_request("k", "PutRow", h2), core.sign_headers("k", "/PutRow\nPOST\n\n", h2, ""))
  end)

  it("computes HMAC-SHA1 and MD5 as their RFCs' test vectors say", function()
    local A = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    local function hex_of_b64(s) -- base64 -> lower-case hex
      local bits = s:gsub("=", ""):gsub(".", function(ch)
        local v, t = A:find(ch, 1, true) - 1, {}
        for i = 5, 0, -1 do t[#t + 1] = math.floor(v / 2 ^ i) % 2 end
        return table.concat(t)
      end)
      bits = bits:sub(1, #bits - #bits % 8) -- (the padding's bits)
      return (bits:gsub("%d%d%d%d%d%d%d%d", function(b) return ("%02x"):format(tonumber(b, 2)) end))
    end
    -- RFC 2202 (keys of 4, 20 and 80 bytes: a key over 64 bytes is hashed first)
    assert.are.equal("effcdf6ae5eb2fa2d27416d5f184df9c259a7c79",
      hex_of_b64(core.hmac_sha1_b64("Jefe", "what do ya want for nothing?")))
    assert.are.equal("b617318655057264e28bc0b6fb378c8ef146be00",
      hex_of_b64(core.hmac_sha1_b64(("\11"):rep(20), "Hi There")))
    assert.are.equal("aa4ae5e15272d00e95705637ce8a3b55ed402112",
      hex_of_b64(core.hmac_sha1_b64(("\170"):rep(80), "Test Using Larger Than Block-Size Key - Hash Key First")))
    -- RFC 1321
    assert.are.equal("d41d8cd98f00b204e9800998ecf8427e", hex_of_b64(core.content_md5("")))
    assert.are.equal("900150983cd24fb0d6963f7d28e17f72", hex_of_b64(core.content_md5("abc")))
  end)
end)
