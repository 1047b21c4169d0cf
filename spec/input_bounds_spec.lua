-- Sizes taken from input are capped: an oversize count is refused before
-- anything in proportion to it is allocated (memory in use grows by less
-- than a fixed few hundred KiB across the refusal), with nil, msg, code
-- for bad input or a raise naming the module for a programming mistake.
local helper = require "helper"
local blob = require "otskit.blob"
local merge = require "otskit.merge"
local store = require "otskit.store"
local timeseries = require "otskit.patterns.timeseries"
local common = require "otskit.patterns.common"
local key = require "otskit.key"

-- KiB allocated while f runs (a full collection first)
local function grown(f)
  collectgarbage(); collectgarbage()
  collectgarbage("stop")
  local before = collectgarbage("count")
  local r = { pcall(f) }
  local after = collectgarbage("count")
  collectgarbage("restart")
  return after - before, r[1], r[2], r[3], r[4]
end

describe("input bounds", function()
  it("blob.split: more than blob.MAX_CHUNKS chunks is TooLarge, nothing cut (property)", function()
    local r = helper.rng(2402)
    local big = ("x"):rep(blob.MAX_CHUNKS * 4 + 8)
    for _ = 1, helper.trials(20) do
      local cs = r.int(1, 4)
      local len = r.int(blob.MAX_CHUNKS * cs + 1, #big)
      local v = big:sub(1, len)
      local kib, ok, parts, msg, code = grown(function() return blob.split(v, { chunk_size = cs }) end)
      assert.is_true(ok, tostring(parts))
      assert.is_nil(parts); assert.equal("TooLarge", code); assert.matches("MAX_CHUNKS", msg)
      assert.is_true(kib < 256, kib)
    end
    -- at the cap: accepted
    local parts = assert(blob.split(("y"):rep(2000), { chunk_size = 2 }))
    assert.equal(1000, parts.count)
  end)

  it("merge.read: sources over 1024 and limits over 2^31 raise at once (property)", function()
    local r = helper.rng(2403)
    for _ = 1, helper.trials(30) do
      local k = r.int(1025, 2 ^ 30)
      local kib, ok, err = grown(function()
        return merge.read { sources = k, key = "k", limit = 1, fetch = function() return {} end }
      end)
      assert.is_false(ok); assert.matches("otskit.merge", err); assert.is_true(kib < 256, kib)
      local lim = r.int(2 ^ 31 + 1, 2 ^ 52)
      kib, ok, err = grown(function()
        return merge.read { sources = 1, key = "k", limit = lim, fetch = function() return {} end }
      end)
      assert.is_false(ok); assert.matches("otskit.merge", err); assert.is_true(kib < 256, kib)
    end
  end)

  it("patterns: buckets over 1024 raise, page limits over 5000 are BadRange (property)", function()
    local r = helper.rng(2404)
    local db = assert(store.open{})
    for _ = 1, helper.trials(30) do
      local n = r.int(1025, 2 ^ 40)
      local kib, ok, err = grown(function() return timeseries.new{ store = db, table = "m", buckets = n } end)
      assert.is_false(ok); assert.matches("buckets", err); assert.is_true(kib < 256, kib)
      local lim = r.int(5001, 2 ^ 40)
      local v, msg, code = common.check_limit("otskit.patterns.x", lim)
      assert.is_nil(v); assert.equal("BadRange", code); assert.matches("5000", msg)
    end
  end)

  it("key.pack: n over 1,000,000 raises at once (property)", function()
    local r = helper.rng(2405)
    for _ = 1, helper.trials(30) do
      local n = r.int(1000001, 2 ^ 40)
      local kib, ok, err = grown(function() return key.pack { n = n } end)
      assert.is_false(ok); assert.matches("otskit", tostring(err)); assert.is_true(kib < 256, kib)
    end
    assert.equal(key.pack { n = 3 }, key.pack { nil, nil, nil, n = 3 })
  end)
end)
