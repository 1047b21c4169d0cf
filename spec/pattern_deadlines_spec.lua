-- Deadlines bound whole pattern reads: a store whose reads advance a fake
-- clock (otskit.backoff.now) by one second each; a read with deadline D
-- (absolute, backoff.now() scale) stops with "RequestTimeout" once the
-- clock passed D, after exactly the floor(D) + 1 reads that began before
-- it (not earlier), and a deadline after the last read returns the same
-- rows as no deadline.
local helper = require "helper"
local store = require "otskit.store"
local backoff = require "otskit.backoff"
local timeseries = require "otskit.patterns.timeseries"
local spliced = require "otskit.patterns.spliced"
local hotcold = require "otskit.patterns.hotcold"
local chunked = require "otskit.patterns.chunked"
local hashprefix = require "otskit.patterns.hashprefix"
local colsplit = require "otskit.patterns.colsplit"

local SECRET = "spec secret, 16+ bytes"

-- the store behind a proxy: every get_range / get_row is one tick of the
-- fake clock and pages hold at most 3 rows (many reads per page)
local function ticking(db, clock)
  local function tick() clock.t = clock.t + 1; clock.reads = clock.reads + 1 end
  return setmetatable({
    get_range = function(_, req)
      tick()
      local r = {}
      for k, v in pairs(req) do r[k] = v end
      r.limit = math.min(req.limit or 3, 3)
      return db:get_range(r)
    end,
    get_row = function(_, req) tick(); return db:get_row(req) end,
    batch_get_row = function(_, req) tick(); return db:batch_get_row(req) end,
  }, { __index = function(_, name)
    local f = db[name]
    if type(f) == "function" then return function(_, ...) return f(db, ...) end end
    return f
  end })
end

-- runs read(deadline) under the fake clock from 0: its results, the reads made
local function timed(clock, read, deadline)
  local saved = backoff.now
  clock.t, clock.reads = 0, 0
  backoff.now = function() return clock.t end
  local r = { pcall(read, deadline) }
  backoff.now = saved
  assert(r[1], r[2])
  return r[2], r[3], r[4], clock.reads
end

-- every deadline below the reads it takes stops with RequestTimeout, in
-- time; one past them reads it all
local function check(clock, read)
  local want, m0, c0, n = timed(clock, read, nil)
  assert(want, tostring(m0) .. " " .. tostring(c0))
  assert.is_true(n >= 3, n)
  local r = helper.rng(n)
  for _ = 1, helper.trials(12) do
    local d = r.int(0, n - 2) + 0.5
    local got, msg, code, reads = timed(clock, read, d)
    assert.is_nil(got); assert.equal("RequestTimeout", code); assert.matches("deadline", msg)
    -- every read that began before the deadline, none after it
    assert.equal(math.floor(d) + 1, reads)
  end
  local got, msg, code, reads = timed(clock, read, n + 0.5)
  assert.truthy(got, tostring(msg) .. " " .. tostring(code))
  assert.same(want, got); assert.equal(n, reads)
  local bad, bm, bc = read("soon")
  assert.is_nil(bad); assert.equal("OTSParameterInvalid", bc); assert.matches("deadline", bm)
end

describe("pattern read deadlines", function()
  it("timeseries: read", function()
    local clock = { t = 0, reads = 0 }
    local db = assert(store.open{})
    local s = timeseries.new{ store = ticking(db, clock), table = "m", buckets = 4, secret = SECRET }
    assert(s:create())
    for i = 1, 40 do assert(s:put(1000 + i, "id" .. i, { v = i })) end
    check(clock, function(d) return s:read{ limit = 30, deadline = d } end)
  end)

  it("spliced: range", function()
    local clock = { t = 0, reads = 0 }
    local db = assert(store.open{})
    local p = spliced.new{ store = ticking(db, clock), table = "p", secret = SECRET,
      splice = { sep = ",", { "DeviceID", "int", width = 6 }, { "SellerID", "string", charset = "alnum" } },
      rest = { { "Seq", "INTEGER" } } }
    assert(p:create())
    local rows = {}
    for i = 1, 30 do rows[i] = { { i, "s" .. (i % 3) }, { i }, { v = i } } end
    assert(p:put_many(rows))
    check(clock, function(d) return p:range{ from = { 0 }, to = { 100 }, limit = 25, deadline = d } end)
  end)

  it("hotcold: read", function()
    local clock = { t = 0, reads = 0 }
    local db = assert(store.open{})
    local p = hotcold.new{ store = ticking(db, clock), prefix = "ev", first = "2026-01", last = "2026-04", secret = SECRET }
    assert(p:create())
    local t0, t1 = hotcold.month_start("2026-01"), hotcold.month_start("2026-05")
    local r = helper.rng(7)
    for i = 1, 40 do assert(p:put("dev", r.int(t0, t1 - 1), tostring(i), { v = i })) end
    check(clock, function(d) return p:read{ key = "dev", limit = 30, deadline = d } end)
  end)

  it("chunked: get and read_range", function()
    local clock = { t = 0, reads = 0 }
    local db = assert(store.open{})
    local p = chunked.new{ store = ticking(db, clock), table = "docs", chunk_size = 1000 }
    assert(p:create())
    local r = helper.rng(9)
    local t = {}
    for i = 1, 12000 do t[i] = string.char(r.int(97, 122)) end
    assert(p:put("a", table.concat(t)))
    check(clock, function(d) return p:get("a", d ~= nil and { deadline = d } or nil) end)
    check(clock, function(d) return p:read_range("a", 500, 9500, d ~= nil and { deadline = d } or nil) end)
    local v, _, code = p:get("a", { until_ = 1 })
    assert.is_nil(v); assert.equal("OTSParameterInvalid", code)
  end)

  it("hashprefix: get_many (one read per batch of 100) and get", function()
    local clock = { t = 0, reads = 0 }
    local db = assert(store.open{})
    local p = hashprefix.new{ store = ticking(db, clock), table = "orders" }
    assert(p:create())
    local list, ids = {}, {}
    for i = 1, 450 do list[i] = { i, { v = i } }; ids[i] = i end
    assert(p:put_many(list))
    check(clock, function(d) return p:get_many(ids, nil, d ~= nil and { deadline = d } or nil) end)
    local v, _, code = p:get(1, nil, { deadline = -1 })
    assert.is_nil(v); assert.equal("RequestTimeout", code)
    assert.same({ v = 1 }, p:get(1, nil, { deadline = math.huge }))
  end)

  it("colsplit: get (hot row, then cold row)", function()
    local clock = { t = 0, reads = 0 }
    local db = assert(store.open{})
    local p = colsplit.new{ store = ticking(db, clock), table = "users",
      primary_key = { { "id", "STRING" } }, hot = { "status" } }
    assert(p:create())
    assert(p:put({ "u1" }, { status = "ok", bio = "long text" }))
    local saved = backoff.now
    for _, case in ipairs { { 0.5, 1 }, { 5, 2 } } do
      clock.t, clock.reads = 0, 0
      backoff.now = function() return clock.t end
      local v, _, code = p:get({ "u1" }, { "status", "bio" }, { deadline = case[1] })
      backoff.now = saved
      assert.equal(case[2], clock.reads)
      if case[2] == 1 then assert.is_nil(v); assert.equal("RequestTimeout", code)
      else assert.same({ status = "ok", bio = "long text" }, v) end
    end
    local v, _, code = p:get({ "u1" }, nil, { deadline = "later" })
    assert.is_nil(v); assert.equal("OTSParameterInvalid", code)
  end)
end)
