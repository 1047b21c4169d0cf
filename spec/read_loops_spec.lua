-- Every read loop ends: merge.read, the client's range and the patterns'
-- get_range loops stop with "NoProgress" when a source keeps answering
-- with no rows and the next key it was asked from (a page may end before
-- its first row now and then; 32 times in a row is a read that would
-- never end), and merge.read's deadline bounds the whole read.
local merge = require "otskit.merge"
local store = require "otskit.store"
local chunked = require "otskit.patterns.chunked"
local helper = require "helper"

describe("read loops", function()
  it("merge.read: a continuation that does not advance stops with NoProgress (property)", function()
    local r = helper.rng(2401)
    for _ = 1, helper.trials(60) do
      local k = r.int(1, 4)
      local stuck = r.int(1, k)
      local stalls = r.int(0, 40)   -- early-ended pages before the source moves on
      local calls = 0
      local rows, msg, code = merge.read { sources = k, key = "k", limit = 5, fetch = function(_, after, _, i)
        if i ~= stuck then return { { k = "a" .. i } } end
        calls = calls + 1
        if calls == 1 then return {}, { pos = 1 } end
        if calls <= stalls + 1 then return {}, { pos = after.pos } end   -- the same continuation, new table
        return { { k = "b" } }
      end }
      if stalls < 32 then
        assert.truthy(rows, msg)
        assert.equal(math.min(5, k), #rows)
      else
        assert.is_nil(rows); assert.equal("NoProgress", code); assert.matches("does not advance", msg)
        assert.equal(33, calls)
      end
    end
    assert.has_error(function() merge.read { sources = 1, key = "k", limit = 1, max_stall = 0,
      fetch = function() return {} end } end)
  end)

  it("merge.read: the deadline bounds the whole read", function()
    local t = 0
    local rows, msg, code = merge.read { sources = 2, key = "k", limit = 1000, deadline = 1,
      clock = function() return t end,
      fetch = function(_, after, _, i)
        t = t + 0.1
        local n = (after or 0) + 1
        return { { k = ("%d.%06d"):format(i, n) } }, n
      end }
    assert.is_nil(rows); assert.equal("RequestTimeout", code); assert.matches("deadline", msg)
    assert.is_true(t <= 1.4, t)
    assert.has_error(function() merge.read { sources = 1, key = "k", limit = 1, deadline = -1,
      fetch = function() return {} end } end)
  end)

  it("patterns.chunked: a range whose next key does not advance stops with NoProgress", function()
    local db = assert(store.open{})
    local stuck = false
    local proxy = setmetatable({ get_range = function(_, req)
      if stuck then return { rows = {}, next_start_primary_key = req.start } end
      return db:get_range(req)
    end }, { __index = function(_, name)
      local f = db[name]
      if type(f) == "function" then return function(_, ...) return f(db, ...) end end
      return f
    end })
    local p = chunked.new{ store = proxy, table = "docs", chunk_size = 1024 }
    assert(p:create())
    local value = ("0123456789"):rep(500)
    assert(p:put("a", value))
    assert.equal(value, p:get("a"))
    stuck = true
    local v, msg, code = p:get("a")
    assert.is_nil(v); assert.equal("NoProgress", code); assert.matches("did not advance", msg)
    v, msg, code = p:sweep("a")
    assert.is_nil(v); assert.equal("NoProgress", code)
    stuck = false
    assert.equal(0, p:sweep("a"))
  end)
end)
