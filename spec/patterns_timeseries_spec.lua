-- otskit.patterns.timeseries: bucketed writes, fan-out reads merged
-- newest-first, cursors, retries, bad input.
local helper = require "helper"
local store = require "otskit.store"
local timeseries = require "otskit.patterns.timeseries"

local SECRET = "spec secret, 16+ bytes"
local quiet = { sleep = function() end, budget = false,
                backoff = { base = 0.001, cap = 0.001, max_attempts = 20 } }

local function series(db, opts)
  opts = opts or {}
  local o = { store = db, table = opts.table or "m", buckets = opts.buckets or 16,
              secret = SECRET, retry = quiet }
  for k, v in pairs(opts) do o[k] = v end
  if opts.secret == false then o.secret = nil end   -- unsigned cursors
  local s = timeseries.new(o)
  assert(s:create())
  return s
end

-- every page of a read, concatenated; also the number of pages
local function read_all(s, q)
  local out, pages, c = {}, 0, nil
  repeat
    local rows, cur, code = s:read { from = q.from, to = q.to, limit = q.limit, cursor = c }
    assert(rows, tostring(cur) .. " " .. tostring(code))
    assert(#rows <= (q.limit or 100))
    pages = pages + 1
    for _, r in ipairs(rows) do out[#out + 1] = r end
    c = cur
  until not c
  return out, pages
end

-- newest first, ties by id descending (byte order)
local function model(points, from, to)
  local t = {}
  for _, p in ipairs(points) do
    if (not from or p[1] >= from) and (not to or p[1] < to) then t[#t + 1] = p end
  end
  table.sort(t, function(a, b)
    if a[1] ~= b[1] then return a[1] > b[1] end
    return require("otskit.key").compare(a[2], b[2]) > 0
  end)
  return t
end

describe("patterns.timeseries", function()
  it("pages through exactly the points of a range, newest first (random)", function()
    local r = helper.rng(7)
    for _ = 1, helper.trials(12) do
      local db = assert(store.open {})
      local n = r.int(1, 16)
      local s = series(db, { buckets = n, by = r.int(0, 1) == 0 and "mod" or "hash" })
      local pts, seen = {}, {}
      for _ = 1, r.int(0, 400) do
        local p = { r.int(0, 300), r.bytes(r.int(0, 3), "ab"), {} }
        local k = p[1] .. "/" .. p[2]
        if not seen[k] then seen[k] = true; p[3].v = #pts; pts[#pts + 1] = p end
      end
      assert(s:put_many(pts))
      local from = r.int(0, 1) == 0 and r.int(-5, 300) or nil
      local to = r.int(0, 1) == 0 and r.int((from or 0) + 1, 320) or nil
      local limit = r.int(1, 40)
      local got = read_all(s, { from = from, to = to, limit = limit })
      local want = model(pts, from, to)
      assert.are.equal(#want, #got)
      for i = 1, #want do
        assert.are.equal(want[i][1], got[i].ts)
        assert.are.equal(want[i][2], got[i].id)
        assert.are.equal(want[i][3].v, got[i].columns.v)
        assert.are.equal(s:bucket(got[i].ts, got[i].id), got[i].bucket)
      end
      db:close()
    end
  end)

  it("pages exactly through pages with 0 rows and a next key (random)", function()
    -- as the service may answer (and `otskit serve --faults empty=F` does):
    -- no rows, next_start_primary_key at the first row the page would hold
    local r = helper.rng(17)
    for _ = 1, helper.trials(12) do
      local db = assert(store.open {})
      local get_range, empties = helper.empty_pages(db, r)
      local s = series(db, { buckets = r.int(1, 8), get_range = get_range })
      local pts, seen = {}, {}
      for _ = 1, r.int(1, 300) do
        local p = { r.int(0, 100), r.bytes(r.int(0, 2), "ab"), {} }
        local k = p[1] .. "/" .. p[2]
        if not seen[k] then seen[k] = true; p[3].v = #pts; pts[#pts + 1] = p end
      end
      assert(s:put_many(pts))
      local got = read_all(s, { limit = r.int(1, 20) })
      local want = model(pts)
      assert.are.equal(#want, #got)
      for i = 1, #want do
        assert.are.equal(want[i][1], got[i].ts)
        assert.are.equal(want[i][2], got[i].id)
      end
      assert.is_true(empties() > 0)
      db:close()
    end
  end)

  it("put_many writes a repeated point once, the later columns winning (random)", function()
    local rng = helper.rng(77)
    for _ = 1, helper.trials(20) do
      local db = assert(store.open {})
      local s = series(db)
      local points, last = {}, {}
      for i = 1, rng.int(1, 300) do
        local ts, id = 1700000000 + rng.int(0, 40), rng.bytes(rng.int(0, 2), "ab")
        points[i] = { ts, id, { v = i } }
        last[ts .. "/" .. id] = i
      end
      assert(s:put_many(points))
      local want = {}
      for _, p in ipairs(points) do
        if last[p[1] .. "/" .. p[2]] == p[3].v then want[#want + 1] = p end
      end
      local got = read_all(s, { limit = 50 })
      local m = model(want)
      assert.equal(#m, #got)
      for i, p in ipairs(m) do
        assert.equal(p[1], got[i].ts); assert.equal(p[2], got[i].id)
        assert.equal(p[3].v, got[i].columns.v)
      end
      db:close()
    end
  end)

  it("spreads sequential writes over every bucket's partition", function()
    local now = 0
    local db = assert(store.open { clock = function() return now end, partition = { window = 10 } })
    local s = series(db)
    for t = 1, 1600 do
      if t % 160 == 0 then now = now + 10 end
      assert(s:put(1700000000 + t, "", { v = t }))
    end
    local hs = db:hotspots("m")
    assert.are.equal(16, hs.partitions)
    for _, w in ipairs(hs.windows) do
      if w.writes >= 100 then assert.is_true(w.share <= 2 / 16) end
    end
    assert.is_true(hs.share < 0.07)
  end)

  it("reads each page with about 2 x limit rows and one request per bucket", function()
    local db = assert(store.open {})
    local s = series(db)
    local pts = {}
    for t = 1, 3200 do pts[t] = { t, "", { v = t } } end
    assert(s:put_many(pts))
    s.acc:reset()
    local rows, c = s:read { limit = 100 }
    assert.are.equal(100, #rows)
    assert.are.equal(3200, rows[1].ts)
    assert.are.equal(3101, rows[100].ts)
    assert.is_string(c)
    assert.are.equal(16, s.stats.requests)
    assert.is_true(s.stats.rows_read <= 16 * 32)
  end)

  it("reads buckets through a caller-supplied get_range", function()
    local db = assert(store.open {})
    local s = series(db, { buckets = 4 })
    for t = 1, 50 do assert(s:put(t, "x", { v = t })) end
    local calls = {}
    local via = timeseries.new { table = "m", buckets = 4, secret = SECRET, retry = quiet,
      get_range = function(req, b)
        calls[b] = (calls[b] or 0) + 1
        assert.are.equal("BACKWARD", req.direction)
        assert.are.equal(b, req.start[1])
        return db:get_range(req)
      end }
    local got = read_all(via, { limit = 7 })
    assert.are.equal(50, #got)
    for b = 0, 3 do assert.is_true(calls[b] >= 1) end
    -- the cursor of one is good for the other: same table, same secret
    local _, c = s:read { limit = 5 }
    local rows = assert(via:read { limit = 5, cursor = c })
    assert.are.equal(45, rows[1].ts)
  end)

  it("retries injected failures and still returns exact pages", function()
    local db = assert(store.open {})
    local s = series(db)
    local pts = {}
    for t = 1, 500 do pts[t] = { t * 3, "", { v = t } } end
    assert(s:put_many(pts))
    db:inject { rate = 0.3, code = "OTSServerBusy", seed = 11 }
    s.acc:reset()
    local got = read_all(s, { from = 30, to = 1200, limit = 50 })
    assert.are.equal(#model(pts, 30, 1200), #got)
    assert.is_true(s.stats.retries > 0)
    -- writes too: put_many under row-level and request-level faults
    db:inject { rate = 0.2, row_rate = 0.2, code = "OTSPartitionUnavailable", seed = 3 }
    local more = {}
    for t = 1, 300 do more[t] = { 5000 + t, "", { v = t } } end
    assert(s:put_many(more))
    db:inject(nil)
    assert.are.equal(300, #read_all(s, { from = 5000 }))
  end)

  it("gives up with the store's code when retries run out", function()
    local db = assert(store.open {})
    local s = series(db)
    assert(s:put(1, "", {}))
    db:inject { rate = 1, code = "OTSServerUnavailable" }
    local rows, msg, code = s:read { limit = 10 }
    assert.is_nil(rows)
    assert.are.equal("OTSServerUnavailable", code)
    assert.matches("gave up", msg)
  end)

  it("refuses bad points, ranges and cursors with nil, message, code", function()
    local db = assert(store.open {})
    local s = series(db)
    local other = series(db, { table = "other" })
    assert(s:put(10, "a", { v = 1 }))
    for _, bad in ipairs { { 1.5, "a", "BadKey" }, { "10", "a", "BadKey" }, { 10, 7, "BadKey" },
                           { 10, ("x"):rep(1025), "KeyTooLong" } } do
      local ok, msg, code = s:put(bad[1], bad[2], {})
      assert.is_nil(ok)
      assert.are.equal(bad[3], code)
      assert.matches("otskit.patterns.timeseries", msg)
    end
    -- nothing written when one point of a batch is bad
    local ok, msg, code = s:put_many { { 20, "a" }, { 21, "a" }, { 2.5, "a" } }
    assert.is_nil(ok); assert.are.equal("BadKey", code); assert.matches("point 3", msg)
    assert.are.equal(1, #read_all(s, {}))
    assert.are.equal("BadRange", select(3, s:read { from = 5, to = 5 }))
    assert.are.equal("BadRange", select(3, s:read { limit = 0 }))
    -- cursors: tampered, foreign pattern, other table
    for t = 11, 40 do assert(s:put(t, "a", {})) end
    local _, c = s:read { limit = 3 }
    local _, oc = other:read { limit = 1 }
    assert.is_nil(oc)
    assert(other:put(1, "", {})); assert(other:put(2, "", {}))
    _, oc = other:read { limit = 1 }
    assert.are.equal("BadCursor", select(3, s:read { limit = 3, cursor = oc }))
    assert.are.equal("BadCursor", select(3, s:read { limit = 3, cursor = c:sub(1, -2) .. (c:sub(-1) == "A" and "B" or "A") }))
    assert.are.equal("BadCursor", select(3, s:read { limit = 3, cursor = "hc:orders." .. c:match("%.(.*)$") }))
    assert.are.equal("BadCursor", select(3, s:read { limit = 3, cursor = 42 }))
    assert(s:read { limit = 3, cursor = c })
  end)

  it("by = \"id\": writers sharing a timestamp spread over the buckets; reads stay exact", function()
    local db = assert(store.open {})
    local s = series(db, { by = "id" })
    local pts = {}
    for d = 1, 160 do pts[#pts + 1] = { 1000, ("dev-%03d"):format(d), { v = d } } end
    for d = 1, 160 do pts[#pts + 1] = { 1001, ("dev-%03d"):format(d), { v = d } } end
    assert(s:put_many(pts))
    local per = {}
    for _, p in ipairs(pts) do
      local b = s:bucket(p[1], p[2])
      assert.are.equal(b, s:bucket(p[1] + 7, p[2]))       -- a device keeps its bucket
      per[b] = (per[b] or 0) + 1
    end
    local used, top = 0, 0
    for _, n in pairs(per) do used = used + 1; if n > top then top = n end end
    assert.are.equal(16, used)
    assert.is_true(top < #pts / 4, "hottest bucket took " .. top)
    local mod = series(db, { table = "m2" })
    assert.are.equal(mod:bucket(1000, "dev-001"), mod:bucket(1000, "dev-002"))  -- ts mod N: one bucket
    local got = read_all(s, { limit = 33 })
    assert.are.equal(320, #got)
    assert.are.equal(1001, got[1].ts)
    assert.has_error(function() timeseries.new { store = db, table = "m3", by = "device" } end)
  end)

  it("refuses a cursor made for another from/to (BadCursor), signed or not", function()
    for _, secret in ipairs { SECRET, false } do
      local db = assert(store.open {})
      local s = series(db, secret and {} or { secret = false })
      for t = 1, 100 do assert(s:put(t, "a", {})) end
      local _, c = assert(s:read { from = 10, to = 90, limit = 5 })
      -- the same range resumes
      local rows = assert(s:read { from = 10, to = 90, limit = 5, cursor = c })
      assert.are.equal(84, rows[1].ts)
      -- any other window is refused, naming both ranges, and reads nothing
      for _, q in ipairs { { from = 10, to = 80 }, { from = 11, to = 90 }, { to = 90 }, { from = 10 }, {} } do
        db:inject { rate = 1, code = "OTSServerBusy", ops = { "get_range" } }   -- a read would fail differently
        local got, msg, code = s:read { from = q.from, to = q.to, limit = 5, cursor = c }
        db:inject(nil)
        assert.is_nil(got)
        assert.are.equal("BadCursor", code)
        assert.matches("from=10,to=90", msg, 1, true)
      end
      -- and the cursor of an open read is not one for a bounded read
      local _, open = assert(s:read { limit = 5 })
      assert.are.equal("BadCursor", select(3, s:read { from = 0, limit = 5, cursor = open }))
      assert(s:read { limit = 5, cursor = open })
      if secret then
        -- an edited range does not pass the signature either
        local forged = c:gsub("from=10,to=90", "from=10,to=80")
        assert.are.equal("BadCursor", select(3, s:read { from = 10, to = 80, limit = 5, cursor = forged }))
      end
    end
  end)

  it("refuses random and mutated cursors, never crashing (random)", function()
    local r = helper.rng(77)
    local db = assert(store.open {})
    local s = series(db)
    for t = 1, 50 do assert(s:put(t, "x", {})) end
    local _, good = s:read { limit = 5 }
    for _ = 1, helper.trials(300) do
      local c
      local kind = r.int(1, 3)
      if kind == 1 then
        c = r.bytes(r.int(0, 80))
      elseif kind == 2 then
        c = "ts:m." .. r.bytes(r.int(0, 80), "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
      else -- one byte of a good cursor changed
        local i = r.int(1, #good)
        local b = string.char((good:byte(i) + r.int(1, 255)) % 256)
        c = good:sub(1, i - 1) .. b .. good:sub(i + 1)
      end
      local rows, msg, code = s:read { limit = 5, cursor = c }
      assert.is_nil(rows)
      assert.is_string(msg)
      assert.are.equal("BadCursor", code)
    end
  end)

  it("raises on bad configuration", function()
    assert.has_error(function() timeseries.new { table = "m" } end)
    assert.has_error(function() timeseries.new { store = {}, table = "bad-name" } end)
    assert.has_error(function() timeseries.new { store = {}, table = "m", buckets = 0 } end)
    assert.has_error(function() timeseries.new { store = {}, table = "m", secret = "short" } end)
    assert.has_error(function() timeseries.new { store = {}, table = "m", retry = { nope = 1 } } end)
  end)
end)
