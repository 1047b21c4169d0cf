-- otskit.patterns.chunked: compressed chunks, manifest last; a failed
-- write leaves the previous value readable.
local helper = require "helper"
local store = require "otskit.store"
local chunked = require "otskit.patterns.chunked"

local quiet = { sleep = function() end, budget = false, backoff = { base = 0.001, cap = 0.001, max_attempts = 3 } }

local function new(db, opts)
  local o = { store = db, table = "docs", chunk_size = 1000, retry = quiet }
  for k, v in pairs(opts or {}) do o[k] = v end
  local p = chunked.new(o)
  assert(p:create())
  return p
end

-- every row of the table (all keys, all generations)
local function rows(db)
  local out, start = {}, { store.INF_MIN, store.INF_MIN, store.INF_MIN }
  repeat
    local page = assert(db:get_range { table = "docs", start = start,
      stop = { store.INF_MAX, store.INF_MAX, store.INF_MAX } })
    for _, r in ipairs(page.rows) do out[#out + 1] = r end
    start = page.next_start_primary_key
  until start == nil
  return out
end

local function text(r, n) -- compressible but not trivial
  local t = {}
  for i = 1, n do t[i] = string.char(97 + (r.int(0, 5) + i % 3)) end
  return table.concat(t)
end

describe("patterns.chunked", function()
  it("gets back what it put, and any range of it (random sizes)", function()
    local r = helper.rng(3)
    local db = assert(store.open {})
    local p = new(db)
    for t = 1, helper.trials(30) do
      local n = ({ 0, 1, 999, 1000, 1001, r.int(0, 8000) })[r.int(1, 6)]
      local v = r.int(0, 1) == 0 and text(r, n) or r.bytes(n)
      local info = assert(p:put("k" .. (t % 4), v))
      assert.are.equal(#v, info.length)
      assert.are.equal(math.ceil(#v / 1000), info.count)
      assert.are.equal(v, p:get("k" .. (t % 4)))
      for _ = 1, 5 do
        local a = r.int(0, #v)
        local b = r.int(a, #v)
        assert.are.equal(v:sub(a + 1, b), p:read_range("k" .. (t % 4), a, b))
      end
    end
    -- the chunks of replaced values are gone: one generation per key left
    local gens = {}
    for _, row in ipairs(rows(db)) do
      local k, g = row.primary_key[1][2], row.primary_key[2][2]
      if g ~= "" then gens[k] = gens[k] or {}; gens[k][g] = true end
    end
    for _, set in pairs(gens) do
      local n = 0
      for _ in pairs(set) do n = n + 1 end
      assert.are.equal(1, n)
    end
  end)

  it("reads and sweeps exactly through pages with 0 rows and a next key", function()
    -- the store as the service may answer (`otskit serve --faults
    -- empty=F` does): half the range pages carry no rows and a next key
    -- at the first row the page would have held
    local r = helper.rng(21)
    local db = assert(store.open {})
    local proxy, empties = helper.empty_store(db, r)
    local p = new(proxy)
    for t = 1, 6 do
      local v = text(r, r.int(2500, 9000))
      assert(p:put("k" .. t % 2, v))
      assert.are.equal(v, p:get("k" .. t % 2))
      assert.are.equal(v:sub(501, 2500), p:read_range("k" .. t % 2, 500, 2500))
    end
    assert.are.equal(0, p:sweep("k0"))   -- nothing left over, nothing live taken
    assert.are.equal("string", type(p:get("k0")))
    assert.is_true(empties() > 0)
  end)

  it("compresses, and reads only the chunks a range needs", function()
    local db = assert(store.open {})
    local p = new(db, { chunk_size = 64 * 1024 })
    local v = ('{"id":1,"name":"alice","tags":["a","b"]}\n'):rep(20000)
    local info = assert(p:put("doc", v))
    assert.is_true(info.stored < #v / 5)
    p.acc:reset()
    assert.are.equal(v:sub(200001, 200010), p:read_range("doc", 200000, 200010))
    assert.are.equal(2, p.stats.requests) -- the manifest and one chunk
  end)

  it("rewrites shorter and deletes, leaving no stale chunks", function()
    local db = assert(store.open {})
    local p = new(db)
    assert(p:put("a", ("x"):rep(5500)))
    assert.are.equal(7, #rows(db))
    assert(p:put("a", "short"))
    assert.are.equal("short", p:get("a"))
    assert.are.equal(2, #rows(db))
    assert.are.equal(0, p:sweep("a"))
    assert(p:delete("a"))
    assert.is_false(p:get("a"))
    assert.is_false(p:read_range("a", 0, 1))
    assert.are.equal(1, #rows(db)) -- the tombstone: a manifest row naming no value
    assert.is_nil(rows(db)[1].columns.manifest)
    assert(p:delete("a")) -- deleting nothing is fine
  end)

  it("keeps the previous value readable when a write fails half-way (random faults)", function()
    local r = helper.rng(9)
    local failures = 0
    for t = 1, helper.trials(12) do
      local db = assert(store.open {})
      local p = new(db)
      local old = text(r, r.int(0, 6000))
      assert(p:put("doc", old))
      local before = #rows(db)
      -- row-level failures: some chunk batches land, then the write gives up
      db:inject { row_rate = 0.5, rate = 0.1, code = "OTSServerBusy", seed = t, ops = { "batch_write_row" } }
      local ok, msg, code = p:put("doc", text(r, r.int(2000, 9000)))
      db:inject(nil)
      if not ok then
        failures = failures + 1
        assert.is_string(msg)
        assert.are.equal("OTSServerBusy", code)
        assert.are.equal(old, p:get("doc"))
        local left = assert(p:sweep("doc"))
        assert.is_true(left >= 0)
        assert.are.equal(before, #rows(db))
        assert.are.equal(old, p:get("doc"))
      end
    end
    assert.is_true(failures > 0)
  end)

  it("keeps the previous value when the commit fails, and cleans up", function()
    local db = assert(store.open {})
    local p = new(db)
    assert(p:put("doc", ("a"):rep(3000)))
    db:inject { rate = 1, code = "OTSServerBusy", ops = { "put_row" } }
    local ok, _, code = p:put("doc", ("b"):rep(4000))
    db:inject(nil)
    assert.is_nil(ok)
    assert.are.equal("OTSServerBusy", code)
    assert.are.equal(("a"):rep(3000), p:get("doc"))
    assert.are.equal(4, #rows(db))
  end)

  it("commits once when a commit timed out after it was applied", function()
    local db = assert(store.open {})
    local p = new(db)
    assert(p:put("doc", ("a"):rep(3000)))
    db:inject { rate = 1, code = "OTSTimeout", applied = true, ops = { "put_row" } }
    local info = p:put("doc", ("b"):rep(2500))
    db:inject(nil)
    assert.is_table(info)
    assert.are.equal(("b"):rep(2500), p:get("doc"))
    assert.are.equal(0, p:sweep("doc"))
    assert.are.equal(4, #rows(db))
  end)

  it("lets one of two concurrent writers win; the other gets Conflict", function()
    local db = assert(store.open {})
    -- a store that yields before each request: the writers interleave
    local ys = setmetatable({}, { __index = function(_, k)
      local f = db[k]
      if type(f) ~= "function" then return f end
      return function(_, ...) coroutine.yield(); return f(db, ...) end
    end })
    new(db)
    local a = chunked.new { store = ys, table = "docs", chunk_size = 1000, retry = quiet }
    local b = chunked.new { store = ys, table = "docs", chunk_size = 1000, retry = quiet }
    local res = {}
    local ca = coroutine.create(function() res.a = { a:put("doc", ("A"):rep(2500)) } end)
    local cb = coroutine.create(function() res.b = { b:put("doc", ("B"):rep(3500)) } end)
    while coroutine.status(ca) ~= "dead" or coroutine.status(cb) ~= "dead" do
      if coroutine.status(ca) ~= "dead" then assert(coroutine.resume(ca)) end
      if coroutine.status(cb) ~= "dead" then assert(coroutine.resume(cb)) end
    end
    local won = res.a[1] and "A" or "B"
    local lost = won == "A" and res.b or res.a
    assert.is_nil(lost[1])
    assert.are.equal("Conflict", lost[3])
    local reader = chunked.new { store = db, table = "docs", chunk_size = 1000, retry = quiet }
    assert.are.equal(won == "A" and ("A"):rep(2500) or ("B"):rep(3500), reader:get("doc"))
    assert.are.equal(0, reader:sweep("doc"))
  end)

  it("refuses bad input with nil, message, code and writes nothing", function()
    local db = assert(store.open {})
    local p = new(db, { max_value = 5000 })
    local cases = {
      { function() return p:put("doc", ("x"):rep(5001)) end, "TooLarge" },
      { function() return p:put("", "v") end, "BadKey" },
      { function() return p:put(("k"):rep(1001), "v") end, "BadKey" },
      { function() return p:put(42, "v") end, "BadKey" },
      { function() return p:put("doc", 42) end, "BadValue" },
      { function() return p:get({}) end, "BadKey" },
    }
    for _, c in ipairs(cases) do
      local ok, msg, code = c[1]()
      assert.is_nil(ok)
      assert.are.equal(c[2], code)
      assert.matches("otskit.patterns.chunked", msg)
    end
    assert.are.equal(0, #rows(db))
    assert(p:put("doc", "12345"))
    assert.are.equal("BadRange", select(3, p:read_range("doc", 2, 6)))
    assert.are.equal("BadRange", select(3, p:read_range("doc", 3, 2)))
    assert.are.equal("BadRange", select(3, p:read_range("doc", 0.5, 2)))
  end)

  it("reports a damaged chunk as an error, never as a value", function()
    local db = assert(store.open {})
    local p = new(db)
    local info = assert(p:put("doc", ("z"):rep(2500)))
    assert(db:put_row { table = "docs", primary_key = { "doc", info.gen, 1 },
      columns = { data = store.binary("not a frame at all, not at all") } })
    local v, msg, code = p:get("doc")
    assert.is_nil(v)
    assert.is_string(msg)
    assert.is_string(code)
    assert.is_nil((p:read_range("doc", 1500, 1600)))
    assert.are.equal(("z"):rep(100), p:read_range("doc", 0, 100)) -- chunk 0 is intact
  end)

  it("raises on bad configuration", function()
    assert.has_error(function() chunked.new { table = "d" } end)
    assert.has_error(function() chunked.new { store = {}, table = "d", chunk_size = 3 * 1024 * 1024 } end)
    assert.has_error(function() chunked.new { store = {}, table = "d", codec = "gzip" } end)
  end)
end)
