--- bench/key_bench.lua -- otskit.key against the same encodings written
-- with lua-luaossl digests or in plain Lua. Every pair is checked to give
-- identical bytes before it is timed.
local bench = require "lib"
local key = require "otskit.key"
local B = require "otskit_bench" -- bench/cbench.c (make bench)

local N = bench.quick and 10000 or 20000

-- sequential order numbers: the seed's hash-prefix case
local ids = {}
for i = 1, N do ids[i] = ("%010d"):format(1000000 + i) end

-- every timed call stores its result, so no JIT can drop the work; each
-- repetition starts with an empty store (the harness collects before it),
-- so earlier results add no GC work
local out, sink = {}, nil
local function fresh(fn) return function(...) out = {}; return fn(...) end end
-- batch variants: fn() does N keys (per-call ones: fn(i), i = 1..N)
local function batch(label, fn) return { label, fresh(fn) } end
local function ratio(a, b) return ("%.2f×"):format(a / b) end

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

  bench.title(("md5 hash prefix, %d sequential 10-digit keys (ns per key)"):format(N))
  -- per call (fn(i) N times) and batch (one call, N keys) are two measures
  local r1 = bench.run { gc = "stop", name = "md5 prefix per call", unit = "ns/key", calls = N,
    variants = { { "hp:encode", function(i) out[i] = hp:encode(ids[i]) end },
                 { "luaossl", function(i) out[i] = ossl_encode(ids[i]) end } } }
  local r2 = bench.run { gc = "stop", name = "md5 prefix batch", unit = "ns/key", units = N,
    variants = { batch("encode_many", function() out = hp:encode_many(ids) end),
                 batch("C loop", function() sink = B.prefix_loop("md5", 4, ids, 1) end) } }
  local call, ossl, many, c = r1["hp:encode"], r1.luaossl, r2.encode_many, r2["C loop"]
  bench.table { "implementation", "ns/key", "speed-up vs luaossl", "× the C limit" }
  bench.row("lua-luaossl digest + string.format", ossl, "1.0×", ratio(ossl.median, c.median))
  bench.row("otskit hp:encode(v) per call", call, r1.ratio["hp:encode vs luaossl"], ratio(call.median, c.median))
  bench.row("otskit hp:encode_many(keys)", many, ratio(ossl.median, many.median), r2.ratio["encode_many vs C loop"])
  bench.row("C-only loop (otskit_bench.prefix_loop, no Lua strings)", c, ratio(ossl.median, c.median), "1.0×")
  io.write("\nMedian ±half the IQR of interleaved repetitions; ratios with a spread are per round,\n",
    "the others are ratios of medians of different measures. \"× the C limit\" of encode_many:\n",
    "time of the C loop / time of encode_many (below 1: slower than the limit).\n")
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

  bench.title(("spliced key (int,alnum,int), %d tuples (ns per key)"):format(N))
  local r = bench.run { gc = "stop", name = "splice per call", unit = "ns/key", calls = N,
    variants = { { "sp:encode", function(i) out[i] = sp:encode(tuples[i]) end },
                 { "plain Lua", function(i) out[i] = lua_encode(tuples[i]) end },
                 { "string.format only", function(i) out[i] = lua_format(tuples[i]) end } } }
  local many = bench.run { gc = "stop", name = "splice batch", unit = "ns/key", units = N,
    variants = { batch("encode_many", function() out = sp:encode_many(tuples) end) } }.encode_many
  local lua = r["plain Lua"]
  bench.table { "implementation", "ns/key", "speed-up vs plain Lua" }
  bench.row("plain Lua, same checks + string.format", lua, "1.0×")
  bench.row("plain Lua, string.format only (no checks)", r["string.format only"], ratio(lua.median, r["string.format only"].median))
  bench.row("otskit sp:encode(t) per call", r["sp:encode"], r.ratio["sp:encode vs plain Lua"])
  bench.row("otskit sp:encode_many(tuples)", many, ratio(lua.median, many.median))
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

  bench.title(("tuple pack (int, bytes, int), %d tuples (ns per tuple)"):format(N))
  local r = bench.run { gc = "stop", name = "tuple pack", unit = "ns/tuple", calls = N,
    variants = { { "key.pack", function(i) out[i] = key.pack(tuples[i]) end },
                 { "plain Lua", function(i) out[i] = lua_pack(tuples[i]) end } } }
  local un = bench.measure("tuple unpack", "ns/tuple", function(i) out[i] = key.unpack(want[i]) end, { calls = N })
  bench.table { "implementation", "ns/tuple", "speed-up vs plain Lua" }
  bench.row("plain Lua FoundationDB encoding", r["plain Lua"], "1.0×")
  bench.row("otskit key.pack(t)", r["key.pack"], r.ratio["key.pack vs plain Lua"])
  bench.row("otskit key.unpack(bytes) (for reference)", un, "")
end
