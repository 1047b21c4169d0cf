local blob = require "otskit.blob"
local hash = require "otskit.hash"
local helper = require "spec.helper"

local H = blob.HEADER_SIZE

-- little-endian bytes of a non-negative integer
local function le(n, width)
  local t = {}
  for i = 1, width do
    t[i] = string.char(n % 256)
    n = math.floor(n / 256)
  end
  return table.concat(t)
end

-- a forged but well-sealed frame header: fields replaced, header check
-- recomputed (as an attacker who knows the format would)
local function reseal_frame(f)
  return f:sub(1, 32) .. hash.xxh3(f:sub(1, 32)):sub(5, 8):reverse() .. f:sub(H + 1)
end
local function reseal_manifest(m)
  return m:sub(1, 56) .. hash.xxh3(m:sub(1, 56)):reverse()
end

local function json_like(r, n)
  local words = { '{"id":', '"name":"', "alice", '",', "42", '"tags":[', "]}", "true", "bob", "," }
  local t, len = {}, 0
  while len < n do
    local w = words[r.int(1, #words)]
    t[#t + 1] = w
    len = len + #w
  end
  return table.concat(t):sub(1, n)
end

local function value(r, n)
  if r.int(0, 1) == 0 then return json_like(r, n) end
  return r.bytes(n)
end

local CODECS = { "auto", "zstd", "lz4", "zlib", "raw" }

describe("otskit.blob frames", function()
  it("round-trips random values over every codec, level and checksum", function()
    local r = helper.rng(1)
    for _ = 1, helper.trials(300) do
      local n = ({ 0, 1, 5, 35, 36, 37 })[r.int(1, 6)] or 0
      if r.int(0, 1) == 1 then n = r.int(0, 70000) end
      local v = value(r, n)
      local codec = CODECS[r.int(1, #CODECS)]
      local opts = { codec = codec, checksum = r.int(0, 1) == 1 and "xxh64" or "xxh3" }
      if codec == "zstd" or codec == "auto" then opts.level = r.int(-5, 9) end
      if codec == "zlib" then opts.level = r.int(0, 9) end
      local f = assert(blob.pack(v, opts))
      assert.equal(v, blob.unpack(f))
      assert.equal(v, blob.unpack(f, {}))
      if r.int(1, 4) == 1 then -- no options: the same frame as the defaults spelled out
        assert.equal(blob.pack(v, { codec = "auto", level = 3, checksum = "xxh3" }), blob.pack(v))
      end
      local info = blob.info(f)
      assert.equal(n, info.length)
      assert.equal(#f - H, info.payload_length)
      assert.equal(opts.checksum, info.checksum)
      if codec == "auto" then
        assert.is_true(#f <= n + H)
        assert.is_true(info.codec == "zstd" or info.codec == "raw")
      else
        assert.equal(codec, info.codec)
      end
    end
  end)

  it("auto stores tiny and incompressible values raw, compressible ones compressed", function()
    local r = helper.rng(2)
    assert.equal("raw", blob.info(blob.pack("hello")).codec)
    assert.equal(5 + H, #blob.pack("hello"))
    assert.equal("raw", blob.info(blob.pack(r.bytes(5000))).codec)
    local f = blob.pack(json_like(r, 5000))
    assert.equal("zstd", blob.info(f).codec)
    assert.is_true(#f < 2500)
  end)

  it("detects every single-bit flip of a small frame, for every codec", function()
    local r = helper.rng(3)
    local v = json_like(r, 120)
    for _, codec in ipairs({ "zstd", "lz4", "zlib", "raw" }) do
      local f = blob.pack(v, { codec = codec })
      for i = 1, #f do
        local b = f:byte(i)
        for bit = 0, 7 do
          local p = 2 ^ bit
          local nb = (math.floor(b / p) % 2 == 1) and (b - p) or (b + p)
          local g = f:sub(1, i - 1) .. string.char(nb) .. f:sub(i + 1)
          local out, _, code = blob.unpack(g)
          assert.is_nil(out)
          assert.equal("CorruptFrame", code)
        end
      end
    end
  end)

  it("catches a forged raw payload behind consistent payload and header checks", function()
    -- raw frames are verified in place: the checksum of the original alone
    -- must catch this, for both checksum kinds
    for _, sum in ipairs({ "xxh3", "xxh64" }) do
      local v = ("raw value %s "):format(sum):rep(50)
      local f = blob.pack(v, { codec = "raw", checksum = sum })
      assert.equal(v, blob.unpack(f))
      local forged = "R" .. v:sub(2)
      local g = f:sub(1, 28) .. hash.xxh3(forged):sub(5, 8):reverse() .. f:sub(33, H) .. forged
      g = reseal_frame(g)
      assert.equal("raw", blob.info(g).codec) -- the header and payload checks pass
      local out, msg, code = blob.unpack(g)
      assert.is_nil(out)
      assert.equal("CorruptFrame", code, msg)
    end
  end)

  it("never returns a changed compressed payload as good, even with the payload check forged", function()
    -- unpack relies on the checksum of the original, not on the payload
    -- check: a payload edited behind a recomputed payload check and header
    -- check must still fail; blob.info alone catches an edit the payload
    -- check was not updated for
    local r = helper.rng(41)
    for _, codec in ipairs({ "zstd", "lz4", "zlib" }) do
      local v = json_like(r, 2000)
      local f = blob.pack(v, { codec = codec })
      for _ = 1, helper.trials(200) do
        local i = H + 1 + r.int(0, #f - H - 1)
        local payload = f:sub(H + 1, i - 1) .. string.char((f:byte(i) + r.int(1, 255)) % 256) .. f:sub(i + 1)
        local stale = f:sub(1, H) .. payload
        local out, _, code = blob.info(stale)
        assert.is_nil(out)
        assert.equal("CorruptFrame", code)
        local g = reseal_frame(f:sub(1, 28) .. hash.xxh3(payload):sub(5, 8):reverse() .. f:sub(33, H) .. payload)
        assert.equal(codec, blob.info(g).codec)
        local got, msg, code2 = blob.unpack(g)
        assert.is_nil(got)
        assert.equal("CorruptFrame", code2, msg)
      end
    end
  end)

  it("reports every truncation as TruncatedFrame and extra bytes as CorruptFrame", function()
    local r = helper.rng(4)
    for _, codec in ipairs({ "zstd", "lz4", "zlib", "raw" }) do
      local f = blob.pack(json_like(r, 300), { codec = codec })
      for k = 0, #f - 1 do
        local out, msg, code = blob.unpack(f:sub(1, k))
        assert.is_nil(out)
        assert.equal("TruncatedFrame", code, msg)
      end
      local out, _, code = blob.unpack(f .. "x")
      assert.is_nil(out)
      assert.equal("CorruptFrame", code)
    end
  end)

  it("refuses a well-sealed header claiming 4 GB without allocating it", function()
    local f = blob.pack("", { codec = "lz4" }) -- payload: one byte
    local forged = reseal_frame(f:sub(1, 12) .. le(4294967295, 4) .. f:sub(17))
    local out, msg, code = blob.unpack(forged)
    assert.is_nil(out)
    assert.equal("TooLarge", code, msg)
    local out2, _, code2 = blob.unpack(blob.pack(("a"):rep(1000)), { max_size = 999 })
    assert.is_nil(out2)
    assert.equal("TooLarge", code2)
    assert.equal(("a"):rep(1000), blob.unpack(blob.pack(("a"):rep(1000)), { max_size = 1000 }))
  end)

  it("names an unknown codec and an unknown version behind a valid header", function()
    local f = blob.pack("some value", { codec = "raw" })
    local _, _, code = blob.unpack(reseal_frame(f:sub(1, 5) .. "\9" .. f:sub(7)))
    assert.equal("UnknownCodec", code)
    local _, _, code2 = blob.unpack(reseal_frame(f:sub(1, 4) .. "\2" .. f:sub(6)))
    assert.equal("UnknownVersion", code2)
  end)

  it("never returns random bytes as a value", function()
    local r = helper.rng(5)
    for _ = 1, helper.trials(2000) do
      local junk = r.bytes(r.int(0, 80))
      if r.int(0, 1) == 1 then junk = "OTKF\1" .. junk end
      local out, _, code = blob.unpack(junk)
      assert.is_nil(out)
      assert.is_true(code == "CorruptFrame" or code == "TruncatedFrame")
    end
  end)

  it("compresses 1 KB records better with a trained dictionary, which frames require", function()
    local r = helper.rng(6)
    local samples = {}
    for i = 1, 1500 do
      samples[i] = ('{"id":%d,"user":"user-%d","email":"u%d@example.com","plan":"%s","score":%d,"tags":["alpha","beta"],"note":"%s"}')
        :format(i, r.int(1, 99999), r.int(1, 99999), r.int(0, 1) == 1 and "free" or "pro",
          r.int(0, 1000), json_like(r, r.int(600, 800)))
    end
    local d = assert(blob.train(samples, { size = 16 * 1024 }))
    local with, without = 0, 0
    for i = 1, 200 do
      local v = samples[i]
      local f1, f2 = blob.pack(v), blob.pack(v, { dict = d })
      with, without = with + #f2, without + #f1
      assert.equal(v, blob.unpack(f2, { dict = d }))
      assert.equal(v, blob.unpack(f2, { dict = { blob.dictionary("other"), d } }))
    end
    assert.is_true(with < without)
    local f = blob.pack(samples[1], { dict = d })
    assert.equal(d:id(), blob.info(f).dict_id)
    local out, _, code = blob.unpack(f)
    assert.is_nil(out)
    assert.equal("UnknownDictionary", code)
    local _, _, code2 = blob.unpack(f, { dict = blob.dictionary("other") })
    assert.equal("UnknownDictionary", code2)
    -- the same dictionary rebuilt from its bytes decodes
    local d2 = blob.dictionary(d:bytes())
    assert.equal(d:id(), d2:id())
    assert.equal(samples[1], blob.unpack(f, { dict = d2 }))
    -- a zstd dictionary with damaged tables is refused, not half-loaded
    local bytes = d:bytes()
    local broken = bytes:sub(1, 8) .. ("\255"):rep(64) .. bytes:sub(73)
    local bd, _, bcode = blob.dictionary(broken)
    if bd then -- zstd may accept some damage: then frames made with it must still round-trip
      local bf = assert(blob.pack(samples[2], { dict = bd }))
      assert.equal(samples[2], blob.unpack(bf, { dict = bd }))
    else
      assert.equal("CorruptDictionary", bcode)
    end
    local no, _, tcode = blob.train({ "a", "b" }, { size = 1024 })
    assert.is_nil(no)
    assert.equal("TrainingFailed", tcode)
  end)

  it("contexts and dictionaries close explicitly, idempotently, and refuse use after", function()
    local ctx = blob.context()
    local f = blob.pack("abc abc abc", { context = ctx })
    assert.equal("abc abc abc", blob.unpack(f, { context = ctx }))
    ctx:close()
    ctx:close()
    assert.has_error(function() blob.pack("x", { context = ctx }) end, "otskit.blob: context is closed")
    local d = blob.dictionary("dictionary content")
    d:close()
    d:close()
    assert.has_error(function() blob.pack("x", { dict = d }) end, "otskit.blob: dictionary is closed")
    if _VERSION == "Lua 5.4" and not jit then
      local run = load([[
        local blob = ...
        local c
        do local ctx <close> = blob.context(); c = ctx end
        return pcall(blob.pack, "x", { context = c })
      ]])
      local ok, err = run(blob)
      assert.is_false(ok)
      assert.matches("context is closed", err)
    end
  end)

  it("raises on programming mistakes", function()
    assert.has_error(function() blob.pack(42) end)
    assert.has_error(function() blob.pack("x", { codec = "gzip" }) end, 'otskit.blob: unknown codec "gzip"')
    assert.has_error(function() blob.pack("x", { codec = "zlib", level = 11 }) end)
    assert.has_error(function() blob.pack("x", { codec = "lz4", dict = blob.dictionary("d") }) end)
    assert.has_error(function() blob.unpack("x", { max_size = -1 }) end)
    assert.has_error(function() blob.pack("x", "zstd") end)
  end)
end)

describe("otskit.blob chunks", function()
  local function shuffled(r, t)
    local c = {}
    for i, v in ipairs(t) do c[i] = v end
    return r.shuffle(c)
  end

  it("split and join round-trip over random sizes, chunk sizes, layouts and orders", function()
    local r = helper.rng(10)
    for _ = 1, helper.trials(200) do
      local n = r.int(0, 5000)
      local v = value(r, n)
      local cs = r.int(1, 700)
      local layout = r.int(0, 1) == 1 and "rows" or "columns"
      local p = blob.split(v, { chunk_size = cs, layout = layout, name = "body" })
      assert.equal(math.ceil(n / cs), p.count)
      assert.equal(p.count, #p.chunks)
      assert.equal(n, p.length)
      assert.equal(32, #p.generation)
      assert.equal(v, blob.join(p.manifest, shuffled(r, p.chunks)))
      local m = blob.manifest(p.manifest)
      assert.equal(layout, m.layout)
      assert.equal(cs, m.chunk_size)
    end
  end)

  it("gives every write a fresh generation", function()
    local a, b = blob.split("same"), blob.split("same")
    assert.are_not.equal(a.generation, b.generation)
  end)

  it("names missing, duplicate, stale, corrupt and truncated chunks", function()
    local r = helper.rng(11)
    local v = json_like(r, 3000)
    local p = blob.split(v, { chunk_size = 500 })
    local q = blob.split(v, { chunk_size = 500 }) -- the same value, another write
    local function try(chunks) return select(3, blob.join(p.manifest, chunks)) end
    local c = p.chunks
    assert.equal("MissingChunk", try({ c[1], c[2], c[3], c[5], c[6] }))
    assert.equal("DuplicateChunk", try({ c[1], c[2], c[3], c[4], c[5], c[6], c[2] }))
    assert.equal("StaleGeneration", try({ c[1], c[2], q.chunks[3], c[4], c[5], c[6] }))
    local bad = c[4]:sub(1, 100) .. string.char((c[4]:byte(101) + 1) % 256) .. c[4]:sub(102)
    assert.equal("CorruptChunk", try({ c[1], c[2], c[3], bad, c[5], c[6] }))
    assert.equal("TruncatedChunk", try({ c[1], c[2], c[3], c[4]:sub(1, 300), c[5], c[6] }))
    assert.equal("CorruptChunk", try({ c[1], c[2], c[3], c[4] .. "x", c[5], c[6] }))
    assert.equal("CorruptChunk", try({ c[1], c[2], c[3], "not a chunk at all, just text", c[5], c[6] }))
    -- a manifest of the other write refuses all of this write's chunks
    local _, _, code = blob.join(q.manifest, c)
    assert.equal("StaleGeneration", code)
  end)

  it("never joins chunks of two writes, whatever mix is given", function()
    local r = helper.rng(12)
    for _ = 1, helper.trials(100) do
      local v1 = json_like(r, r.int(1, 3000))
      local v2 = r.int(0, 1) == 1 and v1 or json_like(r, r.int(1, 3000))
      local cs = r.int(50, 400)
      local a, b = blob.split(v1, { chunk_size = cs }), blob.split(v2, { chunk_size = cs })
      local mix = {}
      for i = 1, math.max(a.count, b.count) do
        local pick = r.int(0, 1) == 1 and a.chunks[i] or b.chunks[i]
        mix[#mix + 1] = pick or a.chunks[i] or b.chunks[i]
      end
      local out, _, code = blob.join(a.manifest, mix)
      if out ~= nil then
        assert.equal(v1, out) -- only when every chunk happened to be a's
      else
        assert.is_true(code == "StaleGeneration" or code == "MissingChunk" or code == "CorruptChunk"
          or code == "DuplicateChunk", code)
      end
    end
  end)

  it("refuses lying manifests: flipped bits, forged counts, lengths and digests", function()
    local r = helper.rng(13)
    local v = json_like(r, 2000)
    local p = blob.split(v, { chunk_size = 300 })
    local m = p.manifest
    for i = 1, #m do
      for bit = 0, 7 do
        local b, pw = m:byte(i), 2 ^ bit
        local nb = (math.floor(b / pw) % 2 == 1) and (b - pw) or (b + pw)
        local out, _, code = blob.join(m:sub(1, i - 1) .. string.char(nb) .. m:sub(i + 1), p.chunks)
        assert.is_nil(out)
        assert.equal("CorruptManifest", code)
      end
    end
    -- forged count only: inconsistent with length and chunk size
    local forged = reseal_manifest(m:sub(1, 36) .. le(p.count + 1, 4) .. m:sub(41))
    assert.equal("CorruptManifest", select(3, blob.join(forged, p.chunks)))
    -- forged length and count, consistent with each other
    local short = reseal_manifest(m:sub(1, 24) .. le(1500, 8) .. m:sub(33, 36) .. le(5, 4) .. m:sub(41))
    assert.is_nil(blob.join(short, p.chunks))
    local longer = reseal_manifest(m:sub(1, 24) .. le(2400, 8) .. m:sub(33, 36) .. le(8, 4) .. m:sub(41))
    assert.equal("TruncatedChunk", select(3, blob.join(longer, p.chunks))) -- chunk 6 is 200, not 300
    assert.equal("MissingChunk", select(3, blob.join(longer, { p.chunks[1] })))
    -- forged digest: every chunk fine, the whole is not what the manifest says
    local dg = reseal_manifest(m:sub(1, 40) .. ("\0"):rep(16) .. m:sub(57))
    assert.equal("DigestMismatch", select(3, blob.join(dg, p.chunks)))
    -- a claim over max_size, before any allocation
    local huge = reseal_manifest(m:sub(1, 24) .. le(2 ^ 40, 8) .. le(2 ^ 20, 4) .. le(2 ^ 20, 4) .. m:sub(41))
    assert.equal("TooLarge", select(3, blob.join(huge, p.chunks)))
    assert.equal("TooLarge", select(3, blob.join(m, p.chunks, { max_size = 1999 })))
    assert.equal("TruncatedManifest", select(3, blob.join(m:sub(1, 63), p.chunks)))
  end)

  it("read_range fetches only the covering chunks and returns exactly [start, stop)", function()
    local r = helper.rng(14)
    for _ = 1, helper.trials(200) do
      local n = r.int(1, 4000)
      local v = value(r, n)
      local p = blob.split(v, { chunk_size = r.int(1, 600), layout = "rows" })
      local a = r.int(0, n)
      local b = r.int(a, n)
      local fetched = {}
      local out = assert(blob.read_range(p.manifest, function(i)
        fetched[#fetched + 1] = i
        return p.chunks[i + 1]
      end, a, b))
      assert.equal(v:sub(a + 1, b), out)
      local cs = p.chunk_size
      local want = (a == b) and 0 or (math.floor((b - 1) / cs) - math.floor(a / cs) + 1)
      assert.equal(want, #fetched)
    end
  end)

  it("read_range reports stale, missing and failed fetches", function()
    local v = ("0123456789"):rep(100)
    local p, q = blob.split(v, { chunk_size = 100 }), blob.split(v, { chunk_size = 100 })
    local function rr(f) return select(3, blob.read_range(p.manifest, f, 150, 350)) end
    assert.equal("StaleGeneration", rr(function(i) return (i == 2 and q or p).chunks[i + 1] end))
    assert.equal("MissingChunk", rr(function(i) if i ~= 2 then return p.chunks[i + 1] end end))
    assert.equal("MissingChunk", rr(function(i) return p.chunks[i + 2] end))
    assert.equal("Timeout", rr(function() return nil, "network", "Timeout" end))
    assert.has_error(function() blob.read_range(p.manifest, function() end, 10, 2000) end)
  end)

  it("streams: the splitter makes the same chunks as split and holds at most one", function()
    local r = helper.rng(15)
    for _ = 1, helper.trials(60) do
      local n = r.int(0, 20000)
      local v = value(r, n)
      local cs = r.int(1, 3000)
      local gen = r.bytes(16)
      local p = blob.split(v, { chunk_size = cs, generation = gen })
      local got = {}
      local s = blob.splitter({ chunk_size = cs, generation = gen }, function(chunk, i)
        assert.equal(#got, i)
        got[#got + 1] = chunk
      end)
      local pos = 0
      while pos < n do
        local k = r.int(0, 2 * cs)
        s:write(v:sub(pos + 1, pos + k))
        pos = math.min(n, pos + k)
        -- every full chunk has been handed out: nothing beyond one buffer
        assert.equal(math.floor(pos / cs), #got)
      end
      local m = s:finish()
      assert.equal(p.manifest, m)
      assert.same(p.chunks, got)
      -- the joiner gives the bytes back chunk by chunk
      local j = assert(blob.joiner(m))
      local parts = {}
      for i, c in ipairs(got) do parts[i] = assert(j:write(c)) end
      assert.is_true(j:finish())
      assert.equal(v, table.concat(parts))
      j:close()
    end
  end)

  it("the streaming joiner names out-of-order, missing and stale chunks", function()
    local v = ("abcdefghij"):rep(50)
    local p, q = blob.split(v, { chunk_size = 100 }), blob.split(v, { chunk_size = 100 })
    local j = assert(blob.joiner(p.manifest))
    assert.truthy(j:write(p.chunks[1]))
    assert.equal("DuplicateChunk", select(3, j:write(p.chunks[1])))
    assert.equal("MissingChunk", select(3, j:write(p.chunks[3])))
    assert.equal("StaleGeneration", select(3, j:write(q.chunks[2])))
    assert.truthy(j:write(p.chunks[2]))
    assert.equal("MissingChunk", select(3, j:finish()))
    local none, _, code = blob.joiner("not a manifest")
    assert.is_nil(none)
    assert.equal("CorruptManifest", code)
  end)

  it("column layout names chunk columns after the attribute and reads them back", function()
    local v = ("x"):rep(2500)
    local p = blob.split(v, { chunk_size = 1000, name = "body", key = "k1" })
    assert.equal(2, #p.rows)
    local row = {}
    for _, w in ipairs(p.rows) do
      for _, col in ipairs(w.columns) do row[col[1]] = col[2] end
    end
    assert.truthy(row["body"] and row["body_0"] and row["body_1"] and row["body_2"])
    assert.is_nil(row["body_3"])
    local m, chunks = blob.from_columns(row, "body")
    assert.equal(v, blob.join(m, chunks))
    row["body_1"] = nil
    m, chunks = blob.from_columns(row, "body")
    assert.equal("MissingChunk", select(3, blob.join(m, chunks)))
    assert.equal("MissingManifest", select(3, blob.from_columns({}, "body")))
  end)
end)

describe("otskit.blob plan", function()
  local function check_plan(pl, rows, o)
    local seen_commit = false
    local cells = {}
    for _, req in ipairs(pl.requests) do
      assert.is_true(#req.rows >= 1 and #req.rows <= o.max_rows)
      assert.is_true(req.bytes <= o.max_bytes)
      if req.commit then seen_commit = true else assert.is_false(seen_commit) end
      local ids = {}
      for _, w in ipairs(req.rows) do
        local id = tostring(w.key) .. "/" .. tostring(w.suffix)
        assert.is_nil(ids[id]) -- a row at most once per request
        ids[id] = true
        assert.is_true(#w.columns <= o.max_columns)
        for _, c in ipairs(w.columns) do cells[#cells + 1] = id .. ":" .. c[1] end
      end
    end
    -- every cell written exactly once, commits last
    local want = {}
    for pass = 1, 2 do
      for _, row in ipairs(rows) do
        if (pass == 2) == (row.commit == true) then
          for _, c in ipairs(row.columns) do
            want[#want + 1] = tostring(row.key) .. "/" .. tostring(row.suffix) .. ":" .. c[1]
          end
        end
      end
    end
    assert.same(want, cells)
  end

  it("keeps every request within rows, bytes and columns, the manifests last", function()
    local r = helper.rng(20)
    for _ = 1, helper.trials(60) do
      local values = {}
      local rows = {}
      for k = 1, r.int(1, 6) do
        local p = blob.split(r.bytes(r.int(0, 3000)), {
          chunk_size = r.int(1, 200), layout = r.int(0, 1) == 1 and "rows" or "columns",
          name = "v", key = "key" .. k })
        values[k] = p
        for _, w in ipairs(p.rows) do rows[#rows + 1] = w end
      end
      local o = { max_rows = r.int(1, 10), max_bytes = r.int(400, 3000), max_columns = r.int(1, 20) }
      local pl = blob.plan(values, o)
      check_plan(pl, rows, o)
      assert.same({}, pl.cleanup)
    end
  end)

  it("defaults to 200 rows and 4 MB per request", function()
    local p = blob.split(("z"):rep(1000), { chunk_size = 1, layout = "rows", key = "k" })
    local pl = blob.plan(p)
    assert.equal(6, #pl.requests) -- 1000 chunk rows in 5 batches, then the manifest
    assert.equal(200, #pl.requests[1].rows)
    assert.is_true(pl.requests[6].commit)
    local big = blob.split(("z"):rep(10 * 1024 * 1024), { name = "b" })
    local plb = blob.plan(big)
    for _, req in ipairs(plb.requests) do assert.is_true(req.bytes <= 4 * 1024 * 1024) end
    assert.has_error(function() blob.plan(big, { max_bytes = 1000 }) end)
    assert.has_error(function() blob.plan({ { key = "k", columns = { { "c", 42 } } } }) end,
      "otskit.blob: a column write must be {name, bytes}")
  end)

  it("lists the stale chunks of a longer previous write for cleanup", function()
    local old = blob.split(("o"):rep(1000), { chunk_size = 100, name = "body", key = "k" })
    local new = blob.split(("n"):rep(350), { chunk_size = 100, name = "body", key = "k" })
    local pl = blob.plan(new, { previous = old.manifest })
    local cols = {}
    for i, c in ipairs(pl.cleanup) do cols[i] = c.column end
    assert.same({ "body_4", "body_5", "body_6", "body_7", "body_8", "body_9" }, cols)
    -- layout change: every old chunk row is stale
    local oldrows = blob.split(("o"):rep(300), { chunk_size = 100, layout = "rows", name = "body", key = "k" })
    local pl2 = blob.plan(new, { previous = oldrows.manifest })
    assert.equal(3, #pl2.cleanup)
    assert.equal(0, pl2.cleanup[1].suffix)
    -- a rewrite of the same generation has nothing to clean
    assert.same({}, blob.plan(new, { previous = new.manifest }).cleanup)
    assert.equal("CorruptManifest", select(3, blob.plan(new, { previous = "junk" })))
  end)
end)

describe("otskit.blob column layout and Tablestore names", function()
  local blob = require "otskit.blob"
  local store = require "otskit.store"

  it("names chunk columns so the embedded store (Tablestore's rules) accepts the write", function()
    local value = ("0123456789abcdef"):rep(4096) -- 64 KiB, 5 chunks of 16 KiB
    local parts = assert(blob.split(value, { chunk_size = 16 * 1024, name = "body" }))
    local db = assert(store.open { path = ":memory:" })
    assert(db:create_table { name = "docs", primary_key = { { "id", "STRING" } } })
    for _, row in ipairs(parts.rows) do
      local put = {}
      for _, c in ipairs(row.columns) do
        assert.truthy(c[1]:match("^[A-Za-z_][A-Za-z0-9_]*$"), c[1])
        put[c[1]] = store.binary(c[2])
      end
      -- several writes to one row: UpdateRow adds columns, PutRow would replace
      assert(db:update_row { table = "docs", primary_key = { "d1" }, update = { PUT = put } })
    end
    local got = assert(db:get_row { table = "docs", primary_key = { "d1" } })
    local manifest, chunks = assert(blob.from_columns(got.row.columns, "body"))
    assert.equal(value, assert(blob.join(manifest, chunks)))
    db:close()
  end)

  it("refuses an attribute name that cannot form column names", function()
    for _, bad in ipairs { "body.x", "1body", "", "bo dy", ("a"):rep(245) } do
      assert.has_error(function() blob.split("x", { name = bad }) end)
    end
    assert.truthy(blob.split("x", { name = ("a"):rep(244) }))
  end)
end)
