--- bench/blob_bench.lua -- otskit.blob against the compression libraries
-- called directly from C in the same process (otskit_bench.direct: the
-- library call alone, contexts reused, no frame, no checksum, no Lua string
-- per call), against Debian's lua-zlib, dictionaries on 1 KB records, and
-- split + join of a 50 MB value. Outputs are compared equal before timing.
local bench = require "lib"
local blob = require "otskit.blob"
local B = require "otskit_bench" -- bench/cbench.c (make bench)
local ok_zlib, lzlib = pcall(require, "zlib")

local H = blob.HEADER_SIZE
local MB = 1024 * 1024

-- deterministic PRNG (Park-Miller), the same on both interpreters
local seed = 20240611
local function rnd(n)
  seed = (seed * 48271) % 2147483647
  return seed % n
end

local WORDS = { "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
  "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa" }
local PLANS = { "free", "pro", "team", "enterprise" }

local function hex(n)
  local t = {}
  for i = 1, n do t[i] = ("0123456789abcdef"):sub(rnd(16) + 1, rnd(16) + 1) end
  return table.concat(t):sub(1, n)
end

-- one JSON-like record of about `size` bytes: shared keys, varied values
local function record(i, size)
  local t = {
    ('{"id":%d,"user_id":"u-%08d","created_at":"2026-%02d-%02dT%02d:%02d:%02dZ"'):format(
      i, rnd(1e8), 1 + rnd(12), 1 + rnd(28), rnd(24), rnd(60), rnd(60)),
    (',"plan":"%s","active":%s,"score":%d.%02d,"region":"cn-%s-%d"'):format(
      PLANS[rnd(4) + 1], rnd(2) == 1 and "true" or "false", rnd(1000), rnd(100),
      WORDS[rnd(16) + 1], rnd(9)),
    (',"device":{"os":"%s","version":"%d.%d.%d","fingerprint":"%s"}'):format(
      rnd(2) == 1 and "android" or "ios", rnd(20), rnd(10), rnd(100), hex(32)),
    ',"tags":[',
  }
  local len = 0
  for _, s in ipairs(t) do len = len + #s end
  local n = 0
  while len < size - 40 do
    local w = ('%s"%s-%s"'):format(n > 0 and "," or "", WORDS[rnd(16) + 1], WORDS[rnd(16) + 1])
    t[#t + 1] = w
    len = len + #w
    n = n + 1
  end
  t[#t + 1] = ('],"note":"%s"}'):format(hex(8))
  return table.concat(t)
end

local function json_value(size)
  local t, len, i = {}, 0, 0
  while len < size do
    i = i + 1
    local r = record(i, 300 + rnd(900))
    t[#t + 1] = r
    len = len + #r + 1
  end
  return ("[" .. table.concat(t, ",") .. "]"):sub(1, size)
end

local function mbps(bytes, sec) return bytes / sec / 1e6 end

-- ---- codecs: otskit vs the library from C vs lua-zlib ------------------

local CONFIGS = bench.quick and { { "zstd-1", "zstd", 1 }, { "lz4", "lz4", 1 }, { "zlib-6", "zlib", 6 } } or {
  { "zstd-1", "zstd", 1 }, { "zstd-3", "zstd", 3 }, { "lz4", "lz4", 1 }, { "zlib-6", "zlib", 6 },
}
local SIZES = bench.quick and { { "1 KB", 1024 }, { "64 KB", 64 * 1024 } } or { { "1 KB", 1024 }, { "64 KB", 64 * 1024 }, { "1 MB", MB } }

bench.title("blob.pack / blob.unpack vs the library called directly from C")
io.write("MB/s of original bytes; ratio = otskit / direct C (1.00 = no overhead).\n",
  "otskit adds a 36-byte header, XXH3 of the original and of the payload, and one Lua string.\n",
  "\"C+XXH3\": the direct call plus the checksum unpack must verify, to show where the gap goes.\n",
  "\"C floor\": all unpack must do, in C: payload check, decompress, checksum, the value copied\n",
  "to a fresh buffer (a Lua string is one); no implementation with these guarantees beats it.\n\n")
bench.table({ "size", "codec", "comp. ratio", "pack otskit", "pack C", "pack ratio",
  "unpack otskit", "unpack C", "unpack ratio", "unpack C+XXH3", "ratio vs C+XXH3",
  "unpack C floor", "ratio vs C floor" })
local zrows = {}
for _, sz in ipairs(SIZES) do
  local v = json_value(sz[2])
  for _, cfg in ipairs(CONFIGS) do
    local name, codec, level = cfg[1], cfg[2], cfg[3]
    local opts = { codec = codec, level = level }
    local frame = assert(blob.pack(v, opts))
    local payload = frame:sub(H + 1)
    -- equal outputs first: the same payload bytes, the same value back
    bench.same(B.direct("compress", codec, level, v, 1), payload, name .. " payload")
    bench.same(B.direct("decompress", codec, level, payload, 1, #v), v, name .. " direct value")
    bench.same(B.direct("decompress_floor", codec, level, payload, 1, #v), v, name .. " floor value")
    bench.same(blob.unpack(frame), v, name .. " value")
    local slow = (codec == "zlib") and 8 or 1
    local scale = bench.quick and 4 or 1
    local cn = math.max(1, math.floor(4 * MB / slow / scale / #v))
    local dn = math.max(1, math.floor(16 * MB / scale / #v))
    local lz = codec == "zlib" and ok_zlib
    if lz then
      bench.same(lzlib.deflate(level)(v, "finish"), payload, "lua-zlib payload")
      bench.same(lzlib.inflate()(payload), v, "lua-zlib value")
    end
    local name = sz[1] .. " " .. name
    local pv = { { "otskit", function() for _ = 1, cn do blob.pack(v, opts) end end },
                 { "C", function() B.direct("compress", codec, level, v, cn) end } }
    local pr = { { "otskit", "C" } }
    if lz then
      pv[3] = { "lua-zlib", function() for _ = 1, cn do lzlib.deflate(level)(v, "finish") end end }
      pr[2] = { "otskit", "lua-zlib" }
    end
    local P = bench.run { name = name .. " pack", unit = "MB/s", units = cn * #v, variants = pv, ratios = pr }
    local uv = { { "otskit", function() for _ = 1, dn do blob.unpack(frame) end end },
                 { "C", function() B.direct("decompress", codec, level, payload, dn, #v) end },
                 { "C+XXH3", function() B.direct("decompress_xxh3", codec, level, payload, dn, #v) end },
                 { "C floor", function() B.direct("decompress_floor", codec, level, payload, dn, #v) end } }
    local ur = { { "otskit", "C" }, { "otskit", "C+XXH3" }, { "otskit", "C floor" } }
    if lz then
      uv[5] = { "lua-zlib", function() for _ = 1, dn do lzlib.inflate()(payload) end end }
      ur[4] = { "otskit", "lua-zlib" }
    end
    local U = bench.run { name = name .. " unpack", unit = "MB/s", units = dn * #v, variants = uv, ratios = ur }
    bench.value(name .. " compression ratio", "x", "higher", #v / #frame)
    bench.row(sz[1], cfg[1], #v / #frame, P.otskit, P.C, P.ratio["otskit vs C"],
      U.otskit, U.C, U.ratio["otskit vs C"], U["C+XXH3"], U.ratio["otskit vs C+XXH3"],
      U["C floor"], U.ratio["otskit vs C floor"])
    if lz then
      zrows[#zrows + 1] = { sz[1], P.otskit, P["lua-zlib"], P.ratio["otskit vs lua-zlib"],
        U.otskit, U["lua-zlib"], U.ratio["otskit vs lua-zlib"] }
    end
  end
end
io.write("\nMedian ±half the IQR of interleaved repetitions; ratios per round (time of the peer /\n",
  "time of otskit: 1.00 = no overhead).\n")

bench.title("zlib-6: blob.pack / unpack vs Debian lua-zlib (same payload bytes)")
if ok_zlib then
  bench.table({ "size", "pack otskit", "pack lua-zlib", "speedup", "unpack otskit", "unpack lua-zlib", "speedup" })
  for _, r in ipairs(zrows) do bench.row(r[1], r[2], r[3], r[4], r[5], r[6], r[7]) end
else
  io.write("lua-zlib not installed for this interpreter: skipped\n")
end

-- ---- dictionaries on 1 KB records --------------------------------------

bench.title("zstd-3 dictionary on 1 KB records")
do
  local train, test = {}, {}
  for i = 1, 3000 do train[i] = record(i, 1024) end
  for i = 1, 1000 do test[i] = record(10000 + i, 1024) end
  local t0 = os.clock()
  local d = assert(blob.train(train, { size = 32 * 1024 }))
  local ttrain = os.clock() - t0
  local bytes, plain, withd, plainp, withp = 0, {}, {}, 0, 0
  for i, r in ipairs(test) do
    bytes = bytes + #r
    plain[i] = blob.pack(r, { codec = "zstd", level = 3 })
    withd[i] = blob.pack(r, { codec = "zstd", level = 3, dict = d })
    plainp, withp = plainp + #plain[i], withp + #withd[i]
    bench.same(blob.unpack(withd[i], { dict = d }), r, "dict value")
    bench.same(blob.unpack(plain[i]), r, "plain value")
  end
  local P = bench.run { name = "1 KB records zstd-3 pack", unit = "MB/s", units = bytes,
    variants = { { "32 KB dictionary", function() for _, r in ipairs(test) do blob.pack(r, { codec = "zstd", level = 3, dict = d }) end end },
                 { "no dictionary", function() for _, r in ipairs(test) do blob.pack(r, { codec = "zstd", level = 3 }) end end } } }
  local U = bench.run { name = "1 KB records zstd-3 unpack", unit = "MB/s", units = bytes,
    variants = { { "32 KB dictionary", function() for _, f in ipairs(withd) do blob.unpack(f, { dict = d }) end end },
                 { "no dictionary", function() for _, f in ipairs(plain) do blob.unpack(f) end end } } }
  bench.value("1 KB records zstd-3 ratio with a 32 KB dictionary", "x", "higher", bytes / withp)
  bench.value("1 KB records zstd-3 ratio without a dictionary", "x", "higher", bytes / plainp)
  bench.table({ "", "ratio (frames)", "ratio (payloads)", "pack MB/s", "unpack MB/s" })
  local n = #test
  bench.row("no dictionary", bytes / plainp, bytes / (plainp - n * H), P["no dictionary"], U["no dictionary"])
  bench.row("32 KB dictionary", bytes / withp, bytes / (withp - n * H), P["32 KB dictionary"], U["32 KB dictionary"])
  bench.row("gain (target >= 1.5x ratio)", plainp / withp, (plainp - n * H) / (withp - n * H),
    P.ratio["32 KB dictionary vs no dictionary"], U.ratio["32 KB dictionary vs no dictionary"])
  io.write(("\nTraining on %d records (%.1f MB): %.2f s; %d test records of %.0f bytes on average.\n")
    :format(#train, 3000 * 1024 / 1e6, ttrain, n, bytes / n))
end

-- ---- split + join of 50 MB ---------------------------------------------

local SPLIT_MB = bench.quick and 8 or 50
bench.title(("split + join of a %d MB value (1 MiB chunks)"):format(SPLIT_MB))
do
  local block = {}
  for i = 1, 4096 do block[i] = string.char(rnd(256)) end
  local v = table.concat(block):rep(SPLIT_MB * 256)
  assert(#v == SPLIT_MB * MB)
  local p = blob.split(v)
  bench.same(blob.join(p.manifest, p.chunks), v, "joined value")
  -- a naive Lua split/join (string.sub, table.concat; no headers, no checks)
  local function naive_split(s, cs)
    local t = {}
    for i = 1, #s, cs do t[#t + 1] = s:sub(i, i + cs - 1) end
    return t
  end
  bench.same(table.concat(naive_split(v, MB)), v, "naive value")
  local nchunks = naive_split(v, MB)
  -- (no ratio: the naive chunks stay alive in nchunks, so on LuaJIT the
  -- naive split finds its strings interned and measures a lookup)
  local Sp = bench.run { name = "split", unit = "GB/s", units = #v, ratios = false,
    variants = { { "blob.split", function() return blob.split(v) end }, { "naive", function() return naive_split(v, MB) end } } }
  local Jn = bench.run { name = "join", unit = "GB/s", units = #v, ratios = false,
    variants = { { "blob.join", function() return blob.join(p.manifest, p.chunks) end },
                 { "naive", function() return table.concat(nchunks) end } } }
  local function stream()
    local got = {}
    local s = blob.splitter({}, function(c) got[#got + 1] = c end)
    for i = 1, #v, 4 * MB do s:write(v:sub(i, i + 4 * MB - 1)) end
    local m = s:finish()
    local j = blob.joiner(m)
    local n = 0
    for _, c in ipairs(got) do n = n + #j:write(c) end
    assert(j:finish() and n == #v)
  end
  local St = bench.measure("streaming split + join", "GB/s", stream, #v)
  local function both(a, b) return 1 / (1 / a.median + 1 / b.median) end
  bench.table({ "", "split GB/s", "join GB/s", "split + join GB/s (target >= 1)" })
  bench.row("blob.split / blob.join", Sp["blob.split"], Jn["blob.join"], both(Sp["blob.split"], Jn["blob.join"]))
  bench.row("streaming splitter + joiner (4 MB pieces)", "", "", St)
  bench.row("naive Lua sub + concat (no checks)", Sp.naive, Jn.naive, both(Sp.naive, Jn.naive))
end
