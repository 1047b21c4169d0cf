-- Counts and lengths that come from input bound the work and memory, not
-- the claim: forged manifests, huge __len, deep or long inputs. Each case
-- failed (looped, grew without bound, raised or lost precision) before.
local blob = require "otskit.blob"
local hash = require "otskit.hash"

local function le(n, bytes)
  local t = {}
  for i = 1, bytes do t[i] = string.char(math.floor(n / 256 ^ (i - 1)) % 256) end
  return table.concat(t)
end

-- a manifest with its own checksum right, claiming length and count
local function forge(like, length, chunk_size, count)
  local m = like:sub(1, 24) .. le(length, 8) .. le(chunk_size, 4) .. le(count, 4) .. like:sub(41, 56)
  return m .. hash.xxh3(m):reverse() -- xxh3 big-endian -> the manifest's little-endian
end

describe("bounds on forged blob manifests", function()
  local p = blob.split(("payload "):rep(100), { chunk_size = 100 })
  local huge = forge(p.manifest, 2 ^ 31 * 100, 100, 2 ^ 31)

  it("the forged manifest is accepted as well-formed (so the bounds below are what stops it)", function()
    local info = assert(blob.manifest(huge))
    assert.equal(2 ^ 31, info.count)
  end)

  it("from_columns walks the row, not a count of 2^31", function()
    local row = { value = huge }
    for i, c in ipairs(p.chunks) do row["value_" .. (i - 1)] = c end
    row.value_x, row.other_1 = "not a chunk", "nor this"
    local m, chunks = blob.from_columns(row, "value")
    assert.equal(huge, m)
    assert.equal(#p.chunks, #chunks)
    local out, msg, code = blob.join(m, chunks, { max_size = 2 ^ 53 })
    assert.is_nil(out)
    assert.is_string(msg)
    assert.equal("MissingChunk", code)
    assert.is_nil(msg:find("-", 1, true), msg) -- no negative counts
  end)

  it("join of a 2^52-byte claim is MissingChunk or TooLarge, never an allocation or a raise", function()
    local m = forge(p.manifest, 2 ^ 52, 2 ^ 22, 2 ^ 30)
    local out, msg, code = blob.join(m, p.chunks, { max_size = 2 ^ 53 })
    assert.is_nil(out)
    assert.is_true(code == "TruncatedChunk" or code == "MissingChunk", code) -- the chunks do not fit it
    assert.is_string(msg)
    out, msg, code = blob.join(m, {}, { max_size = 2 ^ 53 })
    assert.is_nil(out); assert.equal("MissingChunk", code)
    assert.matches("4503599627370496", msg, 1, true)
    out, msg, code = blob.join(m, p.chunks)
    assert.equal("TooLarge", code)
    -- the streaming joiner reports counts as unsigned decimals
    local j = assert(blob.joiner(huge))
    local _, jm, jc = j:write(p.chunks[2])
    assert.equal("MissingChunk", jc)
    assert.is_nil(jm:find("-", 1, true), jm)
    local _, fm = j:finish()
    assert.matches("2147483648", fm, 1, true)
  end)

  it("plan{ previous = m } with 2^31 stale chunks is TooLarge (bounded by max_cleanup)", function()
    local q = blob.split(("other "):rep(50), { chunk_size = 100 })
    local r, msg, code = blob.plan(q, { previous = huge })
    assert.is_nil(r); assert.equal("TooLarge", code); assert.matches("max_cleanup", msg)
    -- a real previous value still gets its cleanup
    local ok = assert(blob.plan(q, { previous = p.manifest }))
    assert.equal(#p.chunks - #q.chunks, #ok.cleanup)
    assert.has_error(function() blob.plan(q, { previous = p.manifest, max_cleanup = -1 }) end)
  end)
end)

describe("bounds on lengths and counts from input", function()
  it("retry.batch_write with __len = 2^40 refuses the list instead of walking 2^40 rows", function()
    local retry = require "otskit.retry"
    local rows = setmetatable({ "a", "b" }, { __len = function() return 2 ^ 40 end })
    local sent = 0
    local ok, err = pcall(retry.batch_write, function(b) sent = sent + 1; return b end, rows)
    if #rows == 2 then -- LuaJIT ignores __len on tables: the list is what it holds
      assert.is_true(ok, err)
    else
      assert.is_false(ok)
      assert.matches("^otskit%.retry: batch_write: rows%[3%] is nil", err)
      assert.equal(0, sent)
      assert.has_error(function() retry.batch_write(function() end, setmetatable({}, { __len = function() return -1 end })) end)
    end
    -- a real list still goes through
    local res, nfailed = retry.batch_write(function(b) local r = {}; for i = 1, #b do r[i] = true end; return r end, { 1, 2, 3 })
    assert.same({ true, true, true }, res)
    assert.equal(0, nfailed)
  end)

  it("key.unpack of a huge tuple stops at 1 000 000 elements (BadTuple), not 100M", function()
    local key = require "otskit.key"
    local big = ("\0"):rep(3000000) -- 3M nil elements
    local t, msg, code = key.unpack(big)
    assert.is_nil(t); assert.equal("BadTuple", code); assert.matches("more than 1000000 elements", msg)
    local ok = assert(key.unpack(("\0"):rep(1000000)))
    assert.equal(1000000, #ok)
  end)

  it("a typed-key merge whose row __index raises aborts that push; the source stays usable", function()
    local merge = require "otskit.merge"
    local m = merge.new { sources = 2, key = { 1 } }
    local evil = setmetatable({}, { __index = function() error("boom") end })
    local ok, err = pcall(m.push, m, 1, { { primary_key = { { "id", 1 } } }, evil }, false)
    assert.is_false(ok)
    assert.matches("otskit.merge: source 1 row 2: .*boom", err)
    assert.equal("pending", m:state(1))
    m:push(1, { { primary_key = { { "id", 1 } } }, { primary_key = { { "id", 3 } } } }, true)
    m:push(2, { { primary_key = { { "id", 2 } } } }, true)
    local rows = m:pull()
    assert.equal(3, #rows)
    assert.equal(2, rows[2].primary_key[1][2])
  end)

  it("key.pack of a NULL cdata gives the same answer on the FFI and C-API paths (an error)", function()
    if not jit then return end
    local ffi = require "ffi"
    local key = require "otskit.key"
    local C = require("otskit.core").key
    local null = ffi.cast("void*", 0)
    local ok1, e1 = pcall(key.pack, { null })
    local ok2, e2 = pcall(C.pack, { null })
    assert.is_false(ok2)
    assert.is_false(ok1, "FFI path packed a NULL pointer as nil")
    assert.equal((e2:gsub("^.-otskit", "otskit")), (e1:gsub("^.-otskit", "otskit")))
  end)

  it("store.integer keeps decimal strings beyond 2^53 exact on LuaJIT", function()
    local store = require "otskit.store"
    local db = assert(store.open())
    assert(db:create_table { name = "t", primary_key = { { "id", "STRING" } } })
    for _, s in ipairs({ "9007199254740993", "9007199254740992", "-9007199254740993", "9223372036854775807" }) do
      assert(db:put_row { table = "t", primary_key = { s }, columns = { v = store.integer(s) } })
      local v = db:get_row { table = "t", primary_key = { s } }.row.columns.v
      if type(v) == "number" then v = (math.type and math.type(v) == "integer") and tostring(v) or ("%.0f"):format(v) end
      assert.equal(s, v)
    end
    assert.equal(9007199254740992, store.integer("9007199254740992").value)
    db:close()
  end)
end)
