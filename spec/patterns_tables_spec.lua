-- otskit.patterns.hotcold, .import, .colsplit: month tables merged on
-- read, shuffled imports within the request limits, split columns.
local helper = require "helper"
local store = require "otskit.store"
local key = require "otskit.key"
local hotcold = require "otskit.patterns.hotcold"
local import = require "otskit.patterns.import"
local colsplit = require "otskit.patterns.colsplit"
local timeseries = require "otskit.patterns.timeseries"

local SECRET = "spec secret, 16+ bytes"
local quiet = { sleep = function() end, budget = false, backoff = { base = 0.001, cap = 0.001, max_attempts = 20 } }
local JAN = hotcold.month_start("2026-01")

describe("patterns.hotcold", function()
  local function events(db)
    local p = hotcold.new { store = db, prefix = "ev", first = "2026-01", last = "2026-06",
                            secret = SECRET, retry = quiet }
    assert(p:create())
    return p
  end

  it("knows the month of a time as the C library does", function()
    local r = helper.rng(2)
    local db = assert(store.open {})
    local p = events(db)
    for _ = 1, 2000 do
      local ts = r.int(0, 4102444800) -- 1970 .. 2100
      local d = os.date("!*t", ts)
      assert.are.equal(("%04d-%02d"):format(d.year, d.month), p:month(ts))
    end
    assert.are.equal("2026-01", p:month(JAN))
    assert.are.equal("2025-12", p:month(JAN - 1))
    assert.are.equal(JAN, hotcold.month_start("2026-01"))
    assert.are.equal(hotcold.month_start("2026-03") - 1, JAN + 59 * 86400 - 1)
  end)

  it("reads one key across month tables, merged and paged (random)", function()
    local r = helper.rng(13)
    for _ = 1, helper.trials(8) do
      local db = assert(store.open {})
      local p = events(db)
      local data = {}
      for i = 1, r.int(0, 400) do
        data[i] = { "k" .. r.int(1, 3), JAN + r.int(0, 180 * 86400), tostring(i), { v = i } }
      end
      assert(p:put_many(data))
      local from = r.int(0, 1) == 0 and JAN + r.int(0, 90 * 86400) or nil
      local to = r.int(0, 1) == 0 and JAN + r.int(91 * 86400, 180 * 86400) or nil
      local order = r.int(0, 1) == 0 and "asc" or "desc"
      local k = "k" .. r.int(1, 3)
      local want = {}
      for _, e in ipairs(data) do
        if e[1] == k and (not from or e[2] >= from) and (not to or e[2] < to) then want[#want + 1] = e end
      end
      table.sort(want, function(a, b)
        local x, y = key.pack { a[2], a[3] }, key.pack { b[2], b[3] }
        if order == "asc" then return key.compare(x, y) < 0 end
        return key.compare(x, y) > 0
      end)
      local got, c = {}, nil
      local limit = r.int(1, 30)
      repeat
        local rows, cur = assert(p:read { key = k, from = from, to = to, order = order, limit = limit, cursor = c })
        for _, row in ipairs(rows) do got[#got + 1] = row end
        c = cur
      until not c
      assert.are.equal(#want, #got)
      for i, e in ipairs(want) do
        assert.are.equal(e[2], got[i].ts)
        assert.are.equal(e[4].v, got[i].columns.v)
        assert.are.equal(p:month(e[2]), got[i].month)
      end
      db:close()
    end
  end)

  it("writes only to the month table of each row", function()
    local db = assert(store.open {})
    local p = events(db)
    assert(p:put("a", JAN + 5, "", {}))
    assert(p:put("a", hotcold.month_start("2026-04") + 5, "", {}))
    assert.are.equal(1, #db:get_range { table = "ev_202601", start = { store.INF_MIN, store.INF_MIN, store.INF_MIN },
      stop = { store.INF_MAX, store.INF_MAX, store.INF_MAX } }.rows)
    assert.are.equal(1, #db:get_range { table = "ev_202604", start = { store.INF_MIN, store.INF_MIN, store.INF_MIN },
      stop = { store.INF_MAX, store.INF_MAX, store.INF_MAX } }.rows)
    assert.are.equal("ev_202604", p:table_of(hotcold.month_start("2026-04")))
  end)

  it("refuses out-of-range months, bad keys and foreign cursors; writes nothing", function()
    local db = assert(store.open {})
    local p = events(db)
    local ok, msg, code = p:put("a", JAN - 1, "", {})
    assert.is_nil(ok); assert.are.equal("BadMonth", code); assert.matches("2025%-12", msg)
    assert.are.equal("BadMonth", select(3, p:put("a", hotcold.month_start("2026-07"), "", {})))
    assert.are.equal("BadMonth", select(3, p:table_of(JAN - 1)))
    assert.are.equal("BadMonth", select(3, p:put_many { { "a", JAN + 1, "1" }, { "a", JAN - 1, "2" } }))
    assert.are.same({}, (p:read { key = "a" }))
    assert.are.equal("BadMonth", select(3, p:read { key = "a", from = JAN - 86400 }))
    assert.are.equal("BadKey", select(3, p:put("", JAN, "", {})))
    assert.are.equal("BadKey", select(3, p:put("a", JAN + 0.5, "", {})))
    assert.are.equal("BadRange", select(3, p:read { key = "a", from = JAN + 10, to = JAN + 10 }))
    for i = 1, 5 do assert(p:put("a", JAN + i, "", {})) end
    local _, c = p:read { key = "a", limit = 2 }
    assert.is_string(c)
    local ts = timeseries.new { store = db, table = "m", secret = SECRET, retry = quiet }
    assert.are.equal("BadCursor", select(3, ts:read { cursor = c }))
    -- another range spans other months: the cursor does not fit it
    assert.are.equal("BadCursor", select(3, p:read { key = "a", to = hotcold.month_start("2026-03"), cursor = c }))
    -- another key or a range within the same months: refused too, never
    -- a silent read of another window
    for i = 1, 5 do assert(p:put("b", JAN + i, "", {})) end
    assert.are.equal("BadCursor", select(3, p:read { key = "b", limit = 2, cursor = c }))
    assert.are.equal("BadCursor", select(3, p:read { key = "a", from = JAN + 1, limit = 2, cursor = c }))
    local rows = assert(p:read { key = "a", limit = 2, cursor = c })
    assert.are.equal(JAN + 3, rows[1].ts)
    assert.has_error(function() hotcold.new { store = db, prefix = "x", first = "2026-13", last = "2026-12" } end)
    assert.has_error(function() hotcold.new { store = db, prefix = "x", first = "2026-05", last = "2026-01" } end)
  end)
end)

describe("patterns.import", function()
  local function users(db)
    local sp = {}
    for k = 1, 15 do sp[k] = ("u%05d"):format(math.floor(k * 1000 / 16)) end
    assert(db:create_table { name = "users", primary_key = { { "id", "STRING" } }, splits = sp })
  end
  local function data(n, size)
    local rows = {}
    for i = 1, n do rows[i] = { { ("u%05d"):format(i) }, { v = size and ("x"):rep(size) or i } } end
    return rows
  end
  local function count(db)
    local n, start = 0, { store.INF_MIN }
    repeat
      local page = assert(db:get_range { table = "users", start = start, stop = { store.INF_MAX } })
      n = n + #page.rows
      start = page.next_start_primary_key
    until start == nil
    return n
  end
  -- a store that records each batch: rows, and the 1/16 key ranges they touch
  local function recording(db, log)
    return setmetatable({ batch_write_row = function(_, req)
      local ranges, n = {}, 0
      for _, r in ipairs(req.tables[1].rows) do
        n = n + 1
        ranges[math.floor(tonumber(r.primary_key[1][2]:sub(2)) / (1000 / 16))] = true
      end
      local k = 0
      for _ in pairs(ranges) do k = k + 1 end
      log[#log + 1] = { rows = n, ranges = k }
      return db:batch_write_row(req)
    end }, { __index = function(_, name)
      local f = db[name]
      if type(f) == "function" then return function(_, ...) return f(db, ...) end end
      return f
    end })
  end

  it("shuffles deterministically into a permutation", function()
    local a, b = {}, {}
    for i = 1, 500 do a[i] = i; b[i] = i end
    import.shuffle(a, 7); import.shuffle(b, 7)
    assert.are.same(a, b)
    local seen, moved = {}, 0
    for i, v in ipairs(a) do seen[v] = true; if v ~= i then moved = moved + 1 end end
    for i = 1, 500 do assert.is_true(seen[i]) end
    assert.is_true(moved > 450)
  end)

  it("writes every row, in batches within the limits, spread over the key space", function()
    local db = assert(store.open {})
    users(db)
    local log = {}
    local rep = assert(import.run { store = recording(db, log), table = "users", rows = data(1000), seed = 3, retry = quiet })
    assert.are.equal(1000, rep.written)
    assert.are.equal(0, rep.failed)
    assert.are.equal(5, rep.batches)
    assert.are.equal(1000, count(db))
    local spread = 0
    for _, b in ipairs(log) do assert.is_true(b.rows <= 200); spread = spread + b.ranges end
    assert.is_true(spread / #log >= 14) -- each batch touches nearly all 16 ranges
    -- in key order instead: each batch stays in one or two ranges
    local db2 = assert(store.open {})
    users(db2)
    local log2 = {}
    assert(import.run { store = recording(db2, log2), table = "users", rows = data(1000), shuffle = false, retry = quiet })
    for _, b in ipairs(log2) do assert.is_true(b.ranges <= 5) end
  end)

  it("keeps each batch under 4 MB and retries failed rows", function()
    local db = assert(store.open {})
    users(db)
    local log = {}
    db:inject { row_rate = 0.2, rate = 0.1, code = "OTSServerBusy", seed = 5, ops = { "batch_write_row" } }
    local done = 0
    local rep = assert(import.run { store = recording(db, log), table = "users", rows = data(120, 100 * 1024),
      retry = quiet, workers = 3, progress = function(n) done = n end })
    db:inject(nil)
    assert.are.equal(120, rep.written)
    assert.are.equal(120, done)
    assert.is_true(rep.retries > 0)
    for _, b in ipairs(log) do assert.is_true(b.rows * 100 * 1024 < 4 * 1024 * 1024) end
    assert.are.equal(120, count(db))
  end)

  it("runs workers through a caller's runner (coroutines)", function()
    local db = assert(store.open {})
    users(db)
    local ys = setmetatable({}, { __index = function(_, k)
      local f = db[k]
      if type(f) ~= "function" then return f end
      return function(_, ...) if coroutine.isyieldable() then coroutine.yield() end return f(db, ...) end
    end })
    local ran = 0
    local rep = assert(import.run { store = ys, table = "users", rows = data(900), workers = 4, retry = quiet,
      parallel = function(jobs)
        local cos = {}
        for i, j in ipairs(jobs) do cos[i] = coroutine.create(j) end
        local live = #cos
        while live > 0 do
          live = 0
          for _, co in ipairs(cos) do
            if coroutine.status(co) ~= "dead" then assert(coroutine.resume(co)); ran = ran + 1 end
            if coroutine.status(co) ~= "dead" then live = live + 1 end
          end
        end
      end })
    assert.are.equal(900, rep.written)
    assert.are.equal(900, count(db))
    assert.is_true(ran > 4)
  end)

  it("refuses a row of the wrong shape before writing anything", function()
    local db = assert(store.open {})
    users(db)
    local rows = data(300)
    rows[250] = { { 250 }, { v = 1 } }
    local rep, msg, code = import.run { store = db, table = "users", rows = rows, retry = quiet }
    assert.is_nil(rep); assert.are.equal("BadKey", code); assert.matches("row 250", msg)
    rows[250] = { { "u1", "extra" } }
    assert.are.equal("BadKey", select(3, import.run { store = db, table = "users", rows = rows, retry = quiet }))
    rows[250] = { { ("x"):rep(1025) } }
    assert.are.equal("KeyTooLong", select(3, import.run { store = db, table = "users", rows = rows, retry = quiet }))
    assert.are.equal(0, count(db))
    assert.are.equal("OTSObjectNotExist", select(3, import.run { store = db, table = "nope", rows = rows, retry = quiet }))
  end)
end)

describe("patterns.colsplit", function()
  local function profiles(db)
    local p = colsplit.new { store = db, table = "users", primary_key = { { "id", "STRING" }, { "n", "INTEGER" } },
                             hot = { "status", "balance" }, retry = quiet }
    assert(p:create())
    return p
  end

  it("behaves like one table (random operations against a model)", function()
    local r = helper.rng(17)
    local db = assert(store.open {})
    local p = profiles(db)
    local model = {}
    for _ = 1, helper.trials(400) do
      local id, n = "u" .. r.int(1, 20), r.int(1, 3)
      local mk = id .. "/" .. n
      local op = r.int(1, 5)
      if op == 1 then
        local cols = { status = r.int(0, 1) == 0 and "x" or "active", balance = r.int(0, 100), bio = r.bytes(r.int(0, 50), "abc") }
        assert(p:put({ id, n }, cols))
        model[mk] = { status = cols.status, balance = cols.balance, bio = cols.bio }
      elseif op == 2 then
        local cols = r.int(0, 1) == 0 and { balance = r.int(0, 100) } or { bio = "b" .. r.int(1, 9), status = "s" }
        local ok, _, code = p:update({ id, n }, cols)
        if model[mk] then
          assert(ok)
          for k, v in pairs(cols) do model[mk][k] = v end
        else
          assert.are.equal("OTSConditionCheckFail", code)
        end
      elseif op == 3 then
        assert(p:delete({ id, n }))
        model[mk] = nil
      else
        local names = ({ nil, { "balance" }, { "bio" }, { "status", "bio" } })[r.int(1, 4)]
        local got = p:get({ id, n }, names)
        if not model[mk] then
          assert.is_false(got)
        else
          local want = {}
          for k, v in pairs(model[mk]) do
            local asked = names == nil
            for _, nm in ipairs(names or {}) do if nm == k then asked = true end end
            if asked then want[k] = v end
          end
          assert.are.same(want, got)
        end
      end
    end
  end)

  it("reads hot columns from the hot table alone", function()
    local db = assert(store.open {})
    local p = profiles(db)
    assert(p:put({ "u1", 1 }, { status = "active", balance = 5, bio = ("b"):rep(3000) }))
    p.acc:reset()
    local got = assert(p:get({ "u1", 1 }, { "status", "balance" }))
    assert.are.same({ status = "active", balance = 5 }, got)
    assert.are.equal(1, p.stats.requests)
    p.acc:reset()
    assert(p:update({ "u1", 1 }, { balance = 6 }))
    assert.are.equal(1, p.stats.requests)
    local hot = db:get_row { table = "users_hot", primary_key = { "u1", 1 } }.row.columns
    assert.is_nil(hot.bio)
    assert.are.equal(6, hot.balance)
  end)

  it("refuses bad keys and values", function()
    local db = assert(store.open {})
    local p = profiles(db)
    assert.are.equal("BadKey", select(3, p:put({ "u1" }, {})))
    assert.are.equal("BadKey", select(3, p:put({ "u1", 1.5 }, {})))
    assert.are.equal("BadKey", select(3, p:get({ 1, 1 })))
    assert.are.equal("BadValue", select(3, p:put({ "u1", 1 }, { "positional" })))
    assert.are.equal("BadValue", select(3, p:get({ "u1", 1 }, {})))
    assert.is_false(p:get({ "u1", 1 }))
  end)
end)
