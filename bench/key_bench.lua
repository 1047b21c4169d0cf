--- bench/key_bench.lua -- otskit.key against the same encodings written
-- with lua-luaossl digests or in plain Lua. Every pair is checked to give
-- identical bytes before it is timed.
local bench = require "lib"
local key = require "otskit.key"
local B = require "otskit_bench" -- bench/cbench.c (make bench)

local N = bench.quick and 2000 or 5000

-- sequential order numbers: the seed's hash-prefix case
local ids = {}
for i = 1, N do ids[i] = ("%010d"):format(1000000 + i) end

-- every timed call stores its result, so no JIT can drop the work; each
-- timing starts with an empty store, so earlier results add no GC work
local out = {}
local function per_call(fn)
  out = {}
  collectgarbage("collect")
  return bench.time(fn, N, bench.quick and 3 or 15)
end
local function batch(fn, units)
  out = {}
  collectgarbage("collect")
  return bench.time_batch(fn, units, bench.quick and 3 or 15)
end

local function ratio(a, b) return ("%.1f×"):format(a / b) end

---------------------------------------------------------------------------
-- md5 hash prefix (4 hex digits) .. key
---------------------------------------------------------------------------
do
  local digest = require "openssl.digest"
  local fmt = string.format
  local function ossl_encode(v)
    local d = digest.new("md5"):final(v)
    return fmt("%02x%02x", d:byte(1, 2)) .. v
  end
  local hp = key.hash_prefix { algo = "md5", len = 4 }

  local want = {}
  for i = 1, N do want[i] = ossl_encode(ids[i]) end
  local many = hp:encode_many(ids)
  bench.same(want, many, "md5 prefix: luaossl vs encode_many")
  local one = {}
  for i = 1, N do one[i] = hp:encode(ids[i]) end
  bench.same(want, one, "md5 prefix: luaossl vs encode")
  bench.same(B.fnv(many), B.prefix_check("md5", 4, ids), "md5 prefix: C loop")

  local t_ossl = per_call(function(i) out[i] = ossl_encode(ids[i]) end)
  local t_call = per_call(function(i) out[i] = hp:encode(ids[i]) end)
  local t_many = batch(function() out = hp:encode_many(ids) end, N)
  local t_c = batch(function() out = B.prefix_loop("md5", 4, ids, 5) end, 5 * N)

  bench.title(("md5 hash prefix, %d sequential 10-digit keys (ns per key)"):format(N))
  bench.table { "implementation", "ns/key", "speed-up vs luaossl", "× the C limit" }
  bench.row("lua-luaossl digest + string.format", bench.ns(t_ossl), "1.0×", ratio(t_ossl, t_c))
  bench.row("otskit hp:encode(v) per call", bench.ns(t_call), ratio(t_ossl, t_call), ratio(t_call, t_c))
  bench.row("otskit hp:encode_many(keys)", bench.ns(t_many), ratio(t_ossl, t_many), ratio(t_many, t_c))
  bench.row("C-only loop (otskit_bench.prefix_loop, no Lua strings)", bench.ns(t_c), ratio(t_ossl, t_c), "1.0×")
end

---------------------------------------------------------------------------
-- spliced key: (card int width 6, seller alnum, amount int width 6)
---------------------------------------------------------------------------
local tuples = {}
do
  local sellers = { "a100", "a1001", "a101", "b7", "zz9000" }
  for i = 1, N do
    tuples[i] = { (i * 7919) % 1000000, sellers[i % #sellers + 1], (i * 104729) % 1000000 }
  end
end

do
  local sp = key.splice { sep = ",", { "card", "int", width = 6 }, { "seller", "string", charset = "alnum" },
                          { "amount", "int", width = 6 } }
  local fmt, floor, find = string.format, math.floor, string.find
  -- the same encoding and checks in plain Lua
  local function lua_encode(t)
    local a, s, c = t[1], t[2], t[3]
    if type(a) ~= "number" or a ~= floor(a) or type(c) ~= "number" or c ~= floor(c) then
      return nil, "not an integer", "NotInteger"
    end
    if a < 0 or a > 999999 or c < 0 or c > 999999 then return nil, "too wide", "IntTooWide" end
    if type(s) ~= "string" then error("expected a string") end
    if find(s, "[^%w]") then return nil, "outside charset", "OutOfCharset" end
    return fmt("%06d,%s,%06d", a, s, c)
  end
  -- only the formatting, no checks: the floor of any Lua version
  local function lua_format(t) return fmt("%06d,%s,%06d", t[1], t[2], t[3]) end

  local want, got, fmtd = {}, sp:encode_many(tuples), {}
  for i = 1, N do want[i] = lua_encode(tuples[i]); fmtd[i] = lua_format(tuples[i]) end
  bench.same(want, got, "splice: plain Lua vs encode_many")
  bench.same(fmtd, got, "splice: string.format vs encode_many")
  for i = 1, N do got[i] = sp:encode(tuples[i]) end
  bench.same(want, got, "splice: plain Lua vs encode")

  local t_lua = per_call(function(i) out[i] = lua_encode(tuples[i]) end)
  local t_fmt = per_call(function(i) out[i] = lua_format(tuples[i]) end)
  local t_call = per_call(function(i) out[i] = sp:encode(tuples[i]) end)
  local t_many = batch(function() out = sp:encode_many(tuples) end, N)

  bench.title(("spliced key (int,alnum,int), %d tuples (ns per key)"):format(N))
  bench.table { "implementation", "ns/key", "speed-up vs plain Lua" }
  bench.row("plain Lua, same checks + string.format", bench.ns(t_lua), "1.0×")
  bench.row("plain Lua, string.format only (no checks)", bench.ns(t_fmt), ratio(t_lua, t_fmt))
  bench.row("otskit sp:encode(t) per call", bench.ns(t_call), ratio(t_lua, t_call))
  bench.row("otskit sp:encode_many(tuples)", bench.ns(t_many), ratio(t_lua, t_many))
end

---------------------------------------------------------------------------
-- tuple pack: the FoundationDB encoding of (int, bytes, int)
---------------------------------------------------------------------------
do
  local char, floor, gsub = string.char, math.floor, string.gsub
  -- plain-Lua FoundationDB tuple encoding of integers (|v| < 2^53) and
  -- byte strings: the straightforward version a user would write
  local function lua_int(v)
    if v == 0 then return "\20" end
    local m = v < 0 and -v or v
    local bytes = {}
    while m > 0 do
      bytes[#bytes + 1] = m % 256
      m = floor(m / 256)
    end
    local n = #bytes
    local out = {}
    for i = n, 1, -1 do
      local b = bytes[i]
      if v < 0 then b = 255 - b end
      out[#out + 1] = char(b)
    end
    return char(v < 0 and 20 - n or 20 + n) .. table.concat(out)
  end
  local function lua_pack(t)
    local parts = {}
    for i = 1, #t do
      local v = t[i]
      if type(v) == "string" then
        parts[i] = "\1" .. gsub(v, "%z", "\0\255") .. "\0"
      else
        parts[i] = lua_int(v)
      end
    end
    return table.concat(parts)
  end

  local want, got = {}, {}
  for i = 1, N do want[i] = lua_pack(tuples[i]); got[i] = key.pack(tuples[i]) end
  bench.same(want, got, "pack: plain Lua vs key.pack")

  local t_lua = per_call(function(i) out[i] = lua_pack(tuples[i]) end)
  local t_c = per_call(function(i) out[i] = key.pack(tuples[i]) end)
  local t_un = per_call(function(i) out[i] = key.unpack(want[i]) end)

  bench.title(("tuple pack (int, bytes, int), %d tuples (ns per tuple)"):format(N))
  bench.table { "implementation", "ns/tuple", "speed-up vs plain Lua" }
  bench.row("plain Lua FoundationDB encoding", bench.ns(t_lua), "1.0×")
  bench.row("otskit key.pack(t)", bench.ns(t_c), ratio(t_lua, t_c))
  bench.row("otskit key.unpack(bytes) (for reference)", bench.ns(t_un), "")
end
