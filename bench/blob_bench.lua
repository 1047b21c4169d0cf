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

local CONFIGS = {
  { "zstd-1", "zstd", 1 }, { "zstd-3", "zstd", 3 }, { "lz4", "lz4", 1 }, { "zlib-6", "zlib", 6 },
}
local SIZES = { { "1 KB", 1024 }, { "64 KB", 64 * 1024 }, { "1 MB", MB } }

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
    local cn = math.max(1, math.floor(4 * MB / slow / #v))
    local dn = math.max(1, math.floor(16 * MB / #v))
    local reps = bench.quick and 3 or 7
    local tp = bench.time(function() blob.pack(v, opts) end, cn, reps)
    local tpc = bench.time_batch(function() B.direct("compress", codec, level, v, cn) end, cn, reps)
    local tu = bench.time(function() blob.unpack(frame) end, dn, reps)
    local tuc = bench.time_batch(function() B.direct("decompress", codec, level, payload, dn, #v) end, dn, reps)
    local tux = bench.time_batch(function() B.direct("decompress_xxh3", codec, level, payload, dn, #v) end, dn, reps)
    local tuf = bench.time_batch(function() B.direct("decompress_floor", codec, level, payload, dn, #v) end, dn, reps)
    bench.row(sz[1], name, #v / #frame, mbps(#v, tp), mbps(#v, tpc), tpc / tp,
      mbps(#v, tu), mbps(#v, tuc), tuc / tu, mbps(#v, tux), tux / tu, mbps(#v, tuf), tuf / tu)
    if codec == "zlib" and ok_zlib then
      bench.same(lzlib.deflate(level)(v, "finish"), payload, "lua-zlib payload")
      bench.same(lzlib.inflate()(payload), v, "lua-zlib value")
      local tlz = bench.time(function() lzlib.deflate(level)(v, "finish") end, cn, reps)
      local tlu = bench.time(function() lzlib.inflate()(payload) end, dn, reps)
      zrows[#zrows + 1] = { sz[1], mbps(#v, tp), mbps(#v, tlz), tlz / tp, mbps(#v, tu), mbps(#v, tlu), tlu / tu }
    end
  end
end

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
  local reps = bench.quick and 3 or 7
  local tp = bench.time_batch(function() for _, r in ipairs(test) do blob.pack(r, { codec = "zstd", level = 3 }) end end, bytes, reps)
  local tpd = bench.time_batch(function() for _, r in ipairs(test) do blob.pack(r, { codec = "zstd", level = 3, dict = d }) end end, bytes, reps)
  local tu = bench.time_batch(function() for _, f in ipairs(plain) do blob.unpack(f) end end, bytes, reps)
  local tud = bench.time_batch(function() for _, f in ipairs(withd) do blob.unpack(f, { dict = d }) end end, bytes, reps)
  bench.table({ "", "ratio (frames)", "ratio (payloads)", "pack MB/s", "unpack MB/s" })
  local n = #test
  bench.row("no dictionary", bytes / plainp, bytes / (plainp - n * H), 1 / tp / 1e6, 1 / tu / 1e6)
  bench.row("32 KB dictionary", bytes / withp, bytes / (withp - n * H), 1 / tpd / 1e6, 1 / tud / 1e6)
  bench.row("gain (target >= 1.5x ratio)", plainp / withp, (plainp - n * H) / (withp - n * H), tp / tpd, tu / tud)
  io.write(("\nTraining on %d records (%.1f MB): %.2f s; %d test records of %.0f bytes on average.\n")
    :format(#train, 3000 * 1024 / 1e6, ttrain, n, bytes / n))
end

-- ---- split + join of 50 MB ---------------------------------------------

bench.title("split + join of a 50 MB value (1 MiB chunks)")
do
  local block = {}
  for i = 1, 4096 do block[i] = string.char(rnd(256)) end
  local v = table.concat(block):rep(50 * 256)
  assert(#v == 50 * MB)
  local p = blob.split(v)
  bench.same(blob.join(p.manifest, p.chunks), v, "joined value")
  -- a naive Lua split/join (string.sub, table.concat; no headers, no checks)
  local function naive_split(s, cs)
    local t = {}
    for i = 1, #s, cs do t[#t + 1] = s:sub(i, i + cs - 1) end
    return t
  end
  bench.same(table.concat(naive_split(v, MB)), v, "naive value")
  local reps = bench.quick and 3 or 7
  local ts = bench.time(function() blob.split(v) end, 1, reps)
  local tj = bench.time(function() blob.join(p.manifest, p.chunks) end, 1, reps)
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
  stream()
  local tst = bench.time(stream, 1, reps)
  local nchunks = naive_split(v, MB)
  local tns = bench.time(function() naive_split(v, MB) end, 1, reps)
  local tnj = bench.time(function() table.concat(nchunks) end, 1, reps)
  local gb = #v / 1e9
  bench.table({ "", "split GB/s", "join GB/s", "split + join GB/s (target >= 1)" })
  bench.row("blob.split / blob.join", gb / ts, gb / tj, gb / (ts + tj))
  bench.row("streaming splitter + joiner (4 MB pieces)", "", "", gb / tst)
  bench.row("naive Lua sub + concat (no checks)", gb / tns, gb / tnj, gb / (tns + tnj))
end
