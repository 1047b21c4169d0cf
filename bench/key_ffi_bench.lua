--- bench/key_ffi_bench.lua -- the FFI fast paths of otskit.key against the
-- Lua C API binding they replace, on the same inputs (LuaJIT; under Lua
-- 5.4 only the C API path exists and the bench says so).
local bench = require "lib"
local key = require "otskit.key"

bench.title("otskit.key: FFI path vs Lua C API path")
if not key._ffi then
  io.write("FFI path not available here (", tostring(key.ffi_why), "): key.path = ", key.path, "\n")
  return
end
local capi, ffi = key._capi, key._ffi
local N = bench.quick and 20000 or 200000

local ids, tuples, rows = {}, {}, {}
for i = 1, 1000 do
  ids[i] = ("device-%08d"):format(i * 7919)
  tuples[i] = { ids[i], 1700000000000 + i, i * 0.5, true }
  rows[i] = { i % 999999, "a" .. i, i * 13 }
end
local hp = key.hash_prefix { algo = "md5", len = 4 }
local sp = key.splice { sep = ",", { "dev", "int", width = 6 }, { "name", "string" }, { "n", "int", width = 9 } }
local b = key.buckets { n = 16 }
local bh = key.buckets { n = 16, by = "hash" }

local cases = {
  { "hp:encode (md5, 4)", function(i) return capi.prefix.encode(hp, ids[i % 1000 + 1]) end,
    function(i) return ffi.prefix.encode(hp, ids[i % 1000 + 1]) end },
  { "key.pack (4 elements)", function(i) return capi.pack(tuples[i % 1000 + 1]) end,
    function(i) return ffi.pack(tuples[i % 1000 + 1]) end },
  { "splice encode (3 fields)", function(i) return capi.splice.encode(sp, rows[i % 1000 + 1]) end,
    function(i) return ffi.splice.encode(sp, rows[i % 1000 + 1]) end },
  { "buckets:of (mod 16)", function(i) return capi.of(b, 1700000000000 + i) end,
    function(i) return ffi.of(b, 1700000000000 + i) end },
  { "buckets:of (hash 16)", function(i) return capi.of(bh, ids[i % 1000 + 1]) end,
    function(i) return ffi.of(bh, ids[i % 1000 + 1]) end },
}
bench.table { "function", "C API ns/call", "FFI ns/call", "FFI speedup" }
for _, c in ipairs(cases) do
  for i = 1, 1000 do bench.same(c[2](i), c[3](i), c[1]) end
  local sink
  -- short repetitions that allocate little: the collector is stopped while timed.
  -- buckets:of (mod 16) on the FFI path is one C call, 3-5 ns: processes
  -- differ by about 1 ns (where the machine code lands), so the band
  -- `bench/runs.lua compare` reads from the run's processes is wide (it was
  -- ±270 % in a loaded run): this measure gates only gross changes.
  local r = bench.run { name = c[1], unit = "ns/call", calls = N, gc = "stop",
    variants = { { "FFI", function(i) sink = c[3](i) end }, { "C API", function(i) sink = c[2](i) end } } }
  bench.row(c[1], r["C API"], r.FFI, r.ratio["FFI vs C API"])
end
io.write("\nMedian ±half the IQR of interleaved repetitions; speedup per round (C API time / FFI time).\n")
