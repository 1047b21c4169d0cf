-- The FFI fast paths of otskit.key (LuaJIT) give exactly what the Lua C
-- API binding gives: the same bytes, the same nil, msg, code and the same
-- raised messages, over random inputs both good and bad.
local key = require "otskit.key"
local helper = require "spec.helper"

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a") or f:read("*a")
  f:close()
  return s
end

-- every return value of fn(...), or false and the raised message
local function outcome(fn, ...)
  local r = { pcall(fn, ...) }
  r.n = select("#", pcall(fn, ...))
  return r
end

local function same(a, b)
  if type(a) == "table" and type(b) == "table" then
    for k, v in pairs(a) do if not same(v, b[k]) then return false end end
    for k in pairs(b) do if a[k] == nil then return false end end
    return true
  end
  if a ~= a and b ~= b then return true end
  return a == b
end

local function show(r)
  local t = {}
  for i = 1, r.n do
    local v = r[i]
    if type(v) == "table" then
      local u = {}
      for j = 1, #v do u[j] = ("%q"):format(tostring(v[j])) end
      v = "{" .. table.concat(u, ",") .. "}"
    end
    t[i] = ("%q"):format(tostring(v))
  end
  return table.concat(t, ", ")
end

local function agree(what, capi, ffi, ...)
  local a, b = outcome(capi, ...), outcome(ffi, ...)
  if not same(a, b) then
    error(("%s: C API gave %s; FFI gave %s"):format(what, show(a), show(b)), 2)
  end
  return a
end

-- random values of every kind, good and bad
local ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
local function rand_value(r)
  local k = r.int(1, 24)
  if k <= 5 then return r.bytes(r.int(0, 12), r.int(1, 3) == 1 and nil or ALNUM) end
  if k == 6 then return r.bytes(r.int(1000, 1100), ALNUM) end
  if k == 7 then return r.bytes(r.int(4000, 5000)) end
  if k <= 10 then return r.int(-1e6, 1e6) end
  if k == 11 then
    local e = { 2 ^ 53, -2 ^ 53, 2 ^ 63, -2 ^ 63, 2 ^ 62, 0, -0.0, 1 / 0, -1 / 0, 0 / 0 }
    return e[r.int(1, #e)]
  end
  if k == 12 then return r.int(-1e6, 1e6) + 0.5 end
  if k == 13 then
    local e = { "9223372036854775807", "-9223372036854775808", "9223372036854775808",
                "12a", "", "-", " 12", "12 ", "0x10", "+5", "007", "12\0" .. "3" }
    return e[r.int(1, #e)]
  end
  if k == 14 then return tostring(r.int(-1e9, 1e9)) end
  if k == 15 then return r.int(1, 2) == 1 end
  if k == 16 then return nil end
  if k == 17 then return key.null end
  if k == 18 then return key.text(r.bytes(r.int(0, 8))) end
  if k == 19 then return key.int(tostring(r.int(-1e9, 1e9)) .. (r.int(1, 2) == 1 and "000000000" or "")) end
  if k == 20 then return key.double(r.int(-100, 100) / 4) end
  if k == 21 then return {} end
  if k == 22 then return setmetatable({ "x1" }, getmetatable(key.int(0))) end
  if k == 23 then return print end
  return r.bytes(r.int(0, 3), "\0\255a")
end

describe("otskit.key FFI fast paths", function()
  it("the cdef in otskit.ffi mirrors csrc/ffi/otskit_ffi.h", function()
    local F = require "otskit.ffi"
    local h = read("csrc/ffi/otskit_ffi.h")
    local block = assert(h:match("/%* BEGIN CDEF[^\n]*\n(.-)/%* END CDEF"))
    local function norm(s)
      s = s:gsub("/%*.-%*/", ""):gsub("OTSKIT_API", "")
      return (s:gsub("%s+", " "):gsub(" ?([%(%),;%*{}=]) ?", "%1"):gsub("^ ", ""):gsub(" $", ""))
    end
    assert.equal(norm(block), norm(F.cdef))
    -- every exported function and constant of the header is declared
    for name in block:gmatch("OTSKIT_[%u_]+") do
      if name ~= "OTSKIT_API" then assert.truthy(F.cdef:find(name, 1, true), name) end
    end
  end)

  it("otskit.ffi holds the only cdef of the Lua code", function()
    local p = assert(io.popen("grep -rlw 'cdef' lua"))
    local files = {}
    for f in p:lines() do files[#files + 1] = f end
    p:close()
    assert.same({ "lua/otskit/ffi.lua" }, files)
  end)

  it("OTSKIT_NO_FFI=1 turns off every FFI path (key and merge)", function()
    if not jit then return end
    local code = [[
      local key, merge = require "otskit.key", require "otskit.merge"
      io.write(key.path, " ", type(merge.new { sources = 2, key = "k" }), " ",
               tostring(require("otskit.ffi").why))]]
    local function run(env)
      local p = assert(io.popen(env .. " luajit -e '" .. code .. "' 2>&1"))
      local out = p:read("*a")
      p:close()
      return out
    end
    assert.equal("capi userdata OTSKIT_NO_FFI is set", run("OTSKIT_NO_FFI=1"))
    assert.equal("ffi table nil", run("OTSKIT_NO_FFI="))
  end)

  it("is on under LuaJIT (unless OTSKIT_NO_FFI) and off elsewhere", function()
    if jit and not os.getenv("OTSKIT_NO_FFI") then
      assert.equal("ffi", key.path, key.ffi_why)
    else
      assert.equal("capi", key.path)
      assert.is_nil(key._ffi)
    end
  end)

  if not key._ffi then return end
  local capi, ffi = key._capi, key._ffi
  local r = helper.rng(81)

  it("tuple pack and pack_desc: same bytes and errors", function()
    local raised = 0
    for _ = 1, helper.trials(3000) do
      local n = r.int(0, 6)
      local t = {}
      for i = 1, n do t[i] = rand_value(r) end
      local m = r.int(1, 10)
      if m == 1 then t.n = n elseif m == 2 then t.n = ({ 1.5, -1, 2e9, n + 2 })[r.int(1, 4)] end
      if r.int(1, 4) == 1 then
        -- mostly-good tuples, so most trials compare bytes, not errors
        for i = 1, n do if type(t[i]) == "function" or type(t[i]) == "table" then t[i] = i end end
      end
      local a = agree("pack", capi.pack, ffi.pack, t)
      agree("pack_desc", capi.pack_desc, ffi.pack_desc, t)
      if not a[1] then raised = raised + 1 end
    end
    assert.is_true(raised > 0)
    assert.has_error(function() key.pack { print } end,
      "otskit.key: tuple element 1: unsupported value (use a string, number, boolean, key.null, key.text, key.int or key.double)")
    assert.equal(capi.pack { "a", 1, 2.5, true, key.null }, key.pack { "a", 1, 2.5, true, key.null })
    agree("pack (not a table)", capi.pack, ffi.pack, "x")
    agree("pack (no arg)", capi.pack, ffi.pack)
  end)

  it("hash prefix prefix, encode, encode_many: same keys and errors", function()
    local algos = { { "md5", 32 }, { "xxh3", 16 }, { "crc32c", 8 } }
    for _ = 1, helper.trials(300) do
      local a = algos[r.int(1, 3)]
      local hp = key.hash_prefix { algo = a[1], len = r.int(1, a[2]) }
      for _ = 1, 10 do
        local v = rand_value(r)
        agree("encode", capi.prefix.encode, ffi.prefix.encode, hp, v)
        agree("prefix", capi.prefix.prefix, ffi.prefix.prefix, hp, v)
      end
      local vs = {}
      for i = 1, r.int(0, 5) do
        local v = rand_value(r)
        if r.int(1, 2) == 1 then v = tostring(i) .. r.bytes(r.int(0, 9), ALNUM) end
        vs[i] = v
      end
      agree("encode_many", capi.prefix.encode_many, ffi.prefix.encode_many, hp, vs)
    end
    local hp = key.hash_prefix {}
    agree("encode (no value)", capi.prefix.encode, ffi.prefix.encode, hp)
    agree("encode (bad self)", capi.prefix.encode, ffi.prefix.encode, {}, "x")
    agree("encode_many (not a table)", capi.prefix.encode_many, ffi.prefix.encode_many, hp, "x")
    assert.equal(capi.prefix.encode(hp, ("k"):rep(70000)), hp:encode(("k"):rep(70000)))
  end)

  it("splice encode and encode_many: same keys and nil, msg, code", function()
    local charsets = { "alnum", "digits", "hex", "lower", "upper", "abc-_" }
    local codes = {}
    local expected = { "OutOfCharset", "IntTooWide", "NotInteger", "KeyTooLong" }
    local function all_drawn()
      for _, c in ipairs(expected) do if not codes[c] then return false end end
      return true
    end
    -- quick mode (OTSKIT_QUICK) runs fewer trials, but keeps drawing (up to
    -- the full count) until every expected failure has occurred at least once
    for trial = 1, 300 do
      if trial > helper.trials(300) and all_drawn() then break end
      local spec = { sep = "," }
      for i = 1, r.int(1, 4) do
        -- the FFI path generates Lua source naming each field: names with
        -- any bytes but NUL (quotes, newlines, "]]", high bytes) must work
        local name = ({ "f" .. i, "a\"b\n]]--'" .. i, r.bytes(r.int(1, 10), "ab\"'\\\n]=[-\255\1") .. "#" .. i })[r.int(1, 3)]
        if r.int(1, 2) == 1 then
          spec[i] = { name, "int", width = r.int(1, 19), min = r.int(1, 3) == 1 and -r.int(0, 1000) or nil }
        else
          spec[i] = { name, "string", charset = charsets[r.int(1, #charsets)] }
        end
      end
      local enc = key.splice(spec)
      for _ = 1, 10 do
        local t = {}
        for i, f in ipairs(spec) do
          local v
          local m = r.int(1, 6)
          if m <= 3 then
            if f[2] == "int" then v = r.int(0, 10 ^ math.min(f.width, 9) - 1)
            else v = r.bytes(r.int(0, 8), f.charset == "digits" and "0123" or "abc") end
          else
            v = rand_value(r)
          end
          if r.int(1, 5) == 1 then t[f[1]] = v else t[i] = v end
        end
        local o = agree("splice encode", capi.splice.encode, ffi.splice.encode, enc, t)
        if o[1] and o[2] == nil and o[4] then codes[o[4]] = true end
      end
      local ts = {}
      for k = 1, r.int(0, 4) do
        local t = {}
        for i, f in ipairs(spec) do
          t[i] = f[2] == "int" and r.int(0, 9) or r.bytes(r.int(1, 4), "abc")
        end
        if r.int(1, 6) == 1 then t[1] = rand_value(r) end
        ts[k] = t
      end
      agree("splice encode_many", capi.splice.encode_many, ffi.splice.encode_many, enc, ts)
    end
    -- the expected failures all occurred, and agreed
    for _, c in ipairs(expected) do
      assert.is_true(codes[c], c)
    end
    assert.has_error(function() key.splice { { "a\0b", "string" } } end,
      "otskit.key: splice: field 1 needs a name (1..255 bytes, no NUL)")
    local enc = key.splice { { "a", "string" } }
    agree("splice (not a table)", capi.splice.encode, ffi.splice.encode, enc, 5)
    agree("splice (bad self)", capi.splice.encode, ffi.splice.encode, {}, {})
  end)

  it("bucket of: same bucket and errors", function()
    for _ = 1, helper.trials(300) do
      local n = r.int(1, 6) == 1 and 2147483647 or r.int(1, 1000)
      local b = key.buckets { n = n, by = r.int(1, 2) == 1 and "mod" or "hash",
                              algo = ({ "md5", "xxh3", "crc32c" })[r.int(1, 3)] }
      for _ = 1, 10 do
        local v = rand_value(r)
        local o = agree("of", capi.of, ffi.of, b, v)
        if o[1] then assert.is_true(o[2] >= 0 and o[2] < n) end
      end
    end
  end)

  it("runs the FFI code: results differ when the C ABI is bypassed", function()
    -- a guard that the FFI functions are not silently the C API ones
    assert.are_not.equal(capi.pack, ffi.pack)
    assert.equal(ffi.pack, key.pack)
    local hp = key.hash_prefix {}
    assert.equal(ffi.prefix.encode, getmetatable(hp).__index.encode)
  end)
end)
