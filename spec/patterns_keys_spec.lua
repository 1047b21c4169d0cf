-- otskit.patterns.spliced and otskit.patterns.hashprefix: key shapes,
-- range reads in tuple order, point reads, spread, bad input.
local helper = require "helper"
local store = require "otskit.store"
local key = require "otskit.key"
local spliced = require "otskit.patterns.spliced"
local hashprefix = require "otskit.patterns.hashprefix"
local timeseries = require "otskit.patterns.timeseries"

local SECRET = "spec secret, 16+ bytes"
local quiet = { sleep = function() end, budget = false, backoff = { base = 0.001, cap = 0.001, max_attempts = 20 } }

local SPLICE = { sep = ",", { "DeviceID", "int", width = 6 }, { "SellerID", "string", charset = "alnum" } }

local function purchases(db, opts)
  local o = { store = db, table = "purchases", secret = SECRET, retry = quiet, splice = SPLICE,
              rest = { { "CardID", "INTEGER" }, { "OrderNumber", "STRING" } } }
  for k, v in pairs(opts or {}) do o[k] = v end
  local p = spliced.new(o)
  assert(p:create())
  return p
end

-- -1, 0, 1 comparing tuple t's first #pre elements with pre
local function cmp_prefix(t, pre)
  for i = 1, #pre do
    local a, b = t[i], pre[i]
    if a ~= b then
      if type(a) == "number" then return a < b and -1 or 1 end
      return key.compare(a, b)
    end
  end
  return 0
end

local function tuple_lt(a, b)
  for i = 1, 4 do
    if a[i] ~= b[i] then
      if type(a[i]) == "number" then return a[i] < b[i] end
      return key.compare(a[i], b[i]) < 0
    end
  end
  return false
end

local function read_all(p, q)
  local out, c = {}, nil
  repeat
    local rows, cur, code = p:range { from = q.from, to = q.to, limit = q.limit, cursor = c }
    assert(rows, tostring(cur) .. " " .. tostring(code))
    for _, r in ipairs(rows) do out[#out + 1] = r end
    c = cur
  until not c
  return out
end

describe("patterns.spliced", function()
  it("range reads return exactly the tuples in [from, to), in tuple order (random)", function()
    local r = helper.rng(21)
    for _ = 1, helper.trials(10) do
      local db = assert(store.open {})
      local p = purchases(db)
      local data, seen = {}, {}
      for _ = 1, r.int(0, 300) do
        local t = { r.int(0, 200), r.bytes(r.int(1, 3), "ab01"), r.int(1, 5), r.bytes(r.int(0, 2), "xy") }
        local k = table.concat({ t[1], t[2], t[3], t[4] }, "|")
        if not seen[k] then seen[k] = true; data[#data + 1] = t end
      end
      local rows = {}
      for i, t in ipairs(data) do rows[i] = { { t[1], t[2] }, { t[3], t[4] }, { n = i } } end
      assert(p:put_many(rows))
      local function bound()
        local n = r.int(0, 2)
        if n == 0 then return nil end
        local b = { r.int(0, 200) }
        if n == 2 then b[2] = r.bytes(r.int(1, 3), "ab01") end
        return b
      end
      local from, to = bound(), bound()
      if from and to and cmp_prefix(from, to) >= 0 and cmp_prefix(to, from) <= 0 then to = nil end
      local want = {}
      for _, t in ipairs(data) do
        if (not from or cmp_prefix(t, from) >= 0) and (not to or cmp_prefix(t, to) < 0) then want[#want + 1] = t end
      end
      table.sort(want, tuple_lt)
      local ok_range = true
      if from and to then
        local ef, et = p:_prefix_enc(#from):encode(from), p:_prefix_enc(#to):encode(to)
        ok_range = key.compare(ef, et) < 0
      end
      if ok_range then
        local got = read_all(p, { from = from, to = to, limit = r.int(1, 50) })
        assert.are.equal(#want, #got)
        for i, t in ipairs(want) do
          assert.are.same({ t[1], t[2] }, got[i].fields)
          assert.are.same({ t[3], t[4] }, got[i].rest)
        end
      else
        assert.are.equal("BadRange", select(3, p:range { from = from, to = to }))
      end
      db:close()
    end
  end)

  it("reads DeviceID in [15, 100) in one range, retried under faults", function()
    local db = assert(store.open {})
    local p = purchases(db)
    local rows = {}
    for d = 0, 199 do
      for s = 1, 3 do rows[#rows + 1] = { { d, "a10" .. s }, { d * 7, "o" .. s }, { amount = d } } end
    end
    assert(p:put_many(rows))
    db:inject { rate = 0.3, code = "OTSServerBusy", seed = 4, ops = { "get_range" } }
    p.acc:reset()
    local got = read_all(p, { from = { 15 }, to = { 100 }, limit = 5000 })
    db:inject(nil)
    assert.are.equal(85 * 3, #got)
    assert.are.equal(15, got[1].fields[1])
    assert.are.equal(99, got[#got].fields[1])
    assert.is_true(p.stats.retries > 0)
    assert.are.equal(255, p.stats.rows_read)
    local row = assert(p:get({ 54, "a102" }, { 378, "o2" }))
    assert.are.equal(54, row.columns.amount)
    assert.is_false(p:get({ 54, "a109" }, { 1, "o" }))
  end)

  it("refuses wrong key shapes and foreign cursors, writing nothing", function()
    local db = assert(store.open {})
    local p = purchases(db)
    local cases = {
      { { 1234567, "a1" }, { 1, "o" }, "IntTooWide" },
      { { 1, "a-1" }, { 1, "o" }, "OutOfCharset" },
      { { 1 }, { 1, "o" }, "BadKey" },
      { { 1, 5 }, { 1, "o" }, "BadKey" },
      { { 1, "a1" }, { 1 }, "BadKey" },
      { { 1, "a1" }, { 1.5, "o" }, "BadKey" },
      { { 1.5, "a1" }, { 1, "o" }, "NotInteger" },
    }
    for _, c in ipairs(cases) do
      local ok, msg, code = p:put(c[1], c[2], {})
      assert.is_nil(ok)
      assert.are.equal(c[3], code)
      assert.matches("otskit.patterns.spliced", msg)
    end
    local ok, _, code = p:put_many { { { 1, "a1" }, { 1, "o" } }, { { -1, "a1" }, { 1, "o" } } }
    assert.is_nil(ok)
    assert.are.equal("IntTooWide", code)
    assert.are.equal(0, #read_all(p, {}))
    assert.are.equal("BadRange", select(3, p:range { from = { 1, "a", 3 } }))
    assert.are.equal("BadRange", select(3, p:range { from = { 5 }, to = { 5 } }))
    local ts = timeseries.new { store = db, table = "m", secret = SECRET, retry = quiet }
    assert(ts:create())
    for t = 1, 5 do assert(ts:put(t, "", {})) end
    local _, tc = ts:read { limit = 2 }
    assert.are.equal("BadCursor", select(3, p:range { cursor = tc }))
    for d = 1, 5 do assert(p:put({ d, "a1" }, { 1, "o" }, {})) end
    local _, pc = p:range { limit = 2 }
    assert.are.equal("BadCursor", select(3, ts:read { cursor = pc }))
    local other = purchases(db, { table = "purchases2" })
    assert.are.equal("BadCursor", select(3, other:range { cursor = pc }))
    -- a cursor is for the range it was made for
    local _, rc = p:range { from = { 2 }, to = { 5 }, limit = 1 }
    assert.are.equal("BadCursor", select(3, p:range { from = { 2 }, to = { 4 }, limit = 1, cursor = rc }))
    assert.are.equal("BadCursor", select(3, p:range { from = { 1 }, to = { 5 }, limit = 1, cursor = rc }))
    assert.are.equal("BadCursor", select(3, p:range { limit = 1, cursor = rc }))
    local rows = assert(p:range { from = { 2 }, to = { 5 }, limit = 1, cursor = rc })
    assert.are.equal(3, rows[1].fields[1])
  end)
end)

describe("patterns.hashprefix", function()
  local function orders(db, opts)
    local o = { store = db, table = "orders", retry = quiet }
    for k, v in pairs(opts or {}) do o[k] = v end
    local p = hashprefix.new(o)
    local sp = {}
    for k = 1, 15 do sp[k] = ("%x"):format(k) end
    assert(p:create(sp))
    return p
  end

  it("point reads find every row; sequential ids spread over all partitions", function()
    local now = 0
    local db = assert(store.open { clock = function() return now end, partition = { window = 10 } })
    local p = orders(db)
    for n = 1, 1600 do
      if n % 160 == 0 then now = now + 10 end
      assert(p:put(90000000 + n, { total = n }))
    end
    local hs = db:hotspots("orders")
    for _, w in ipairs(hs.windows) do
      if w.writes >= 100 then assert.is_true(w.share < 0.2) end
    end
    assert.are.equal(16, hs.partitions)
    local r = helper.rng(5)
    for _ = 1, 100 do
      local n = r.int(1, 1600)
      assert.are.equal(n, p:get(90000000 + n).total)
    end
    assert.is_false(p:get(90009999))
    local k = p:key(90000005)
    assert.are.equal(key.hash_prefix { algo = "md5", len = 4 }:encode("0090000005"), k)
  end)

  it("get_many reads in batches of 100, in order, retrying failed rows", function()
    local db = assert(store.open {})
    local p = orders(db)
    local list = {}
    for n = 1, 300 do list[n] = { n, { total = n * 2 } } end
    assert(p:put_many(list))
    local ids = {}
    for i = 1, 250 do ids[i] = (i * 7) % 320 end -- some missing (0, > 300), some twice
    db:inject { row_rate = 0.3, code = "OTSServerBusy", seed = 8, ops = { "batch_get_row" } }
    p.acc:reset()
    local got = assert(p:get_many(ids))
    db:inject(nil)
    assert.is_true(p.stats.retries > 0)
    for i, id in ipairs(ids) do
      if id >= 1 and id <= 300 then assert.are.equal(id * 2, got[i].total)
      else assert.is_false(got[i]) end
    end
  end)

  it("refuses bad ids with nil, message, code", function()
    local db = assert(store.open {})
    local p = orders(db)
    for _, c in ipairs { { -1, "BadKey" }, { 1.5, "BadKey" }, { 12345678901, "IntTooWide" },
                         { "a b", "BadKey" }, { "", "BadKey" }, { {}, "BadKey" } } do
      local ok, msg, code = p:put(c[1], {})
      assert.is_nil(ok)
      assert.are.equal(c[2], code)
      assert.matches("otskit.patterns.hashprefix", msg)
    end
    assert.are.equal("BadKey", select(3, p:put_many { { 1 }, { -2 } }))
    assert.is_false(p:get(1))
    assert.are.equal("BadKey", select(3, p:get_many { 1, "x y" }))
  end)
end)
