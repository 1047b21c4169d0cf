-- otskit.patterns.counter: no lost and no doubled increments, with many
-- interleaved clients (coroutines) and ambiguous timeouts.
local helper = require "helper"
local store = require "otskit.store"
local counter = require "otskit.patterns.counter"

-- a store whose every request yields first: the clients interleave at
-- request granularity, in an order the scheduler picks
local function yielding(db)
  return setmetatable({}, { __index = function(_, k)
    local f = db[k]
    if type(f) ~= "function" then return f end
    return function(_, ...)
      if coroutine.isyieldable() then coroutine.yield() end
      return f(db, ...)
    end
  end })
end

-- runs the clients, resuming a random live one each step (seeded)
local function run(clients, r)
  local cos = {}
  for i, f in ipairs(clients) do cos[i] = coroutine.create(f) end
  while true do
    local live = {}
    for _, co in ipairs(cos) do if coroutine.status(co) ~= "dead" then live[#live + 1] = co end end
    if #live == 0 then return end
    local ok, err = coroutine.resume(live[r.int(1, #live)])
    if not ok then error(err, 0) end
  end
end

-- retry sleeps yield too, so a waiting client lets the others run
local retry_opts = { sleep = function() if coroutine.isyieldable() then coroutine.yield() end end,
                     budget = false, backoff = { base = 0.001, cap = 0.01, max_attempts = 0, deadline = 0 } }

describe("patterns.counter", function()
  it("loses no increment and hands out every value once (30 interleaved clients)", function()
    local r = helper.rng(11)
    for _ = 1, helper.trials(3) do
      local db = assert(store.open {})
      local ys = yielding(db)
      local c = counter.new { store = ys, table = "counters", retry = retry_opts }
      assert(c:create())
      local seen, clients = {}, {}
      for i = 1, 30 do
        clients[i] = function()
          for _ = 1, 10 do
            local v, attempts = c:incr("hits")
            assert(v, attempts)
            assert.is_nil(seen[v])
            seen[v] = true
          end
        end
      end
      run(clients, r)
      assert.are.equal(300, c:get("hits"))
      for v = 1, 300 do assert.is_true(seen[v]) end
      assert.is_true(c.stats.conflicts > 0) -- the clients really raced
      assert.is_true(c.stats.retries >= c.stats.conflicts)
    end
  end)

  it("(the same race without the condition loses increments)", function()
    local r = helper.rng(11)
    local db = assert(store.open {})
    local ys = yielding(db)
    assert(db:create_table { name = "counters", primary_key = { { "name", "STRING" } } })
    local clients = {}
    for i = 1, 30 do
      clients[i] = function()
        for _ = 1, 10 do
          local row = ys:get_row { table = "counters", primary_key = { "hits" } }.row
          local v = row and row.columns.value or 0
          assert(ys:put_row { table = "counters", primary_key = { "hits" }, columns = { value = v + 1 } })
        end
      end
    end
    run(clients, r)
    local final = db:get_row { table = "counters", primary_key = { "hits" } }.row.columns.value
    assert.is_true(final < 300)
  end)

  it("applies an increment once when its write timed out after landing", function()
    local r = helper.rng(5)
    local db = assert(store.open {})
    local ys = yielding(db)
    local c = counter.new { store = ys, table = "counters", retry = retry_opts }
    assert(c:create())
    db:inject { rate = 0.3, code = "OTSTimeout", applied = true, seed = 9, ops = { "update_row" } }
    local clients, seen = {}, {}
    for i = 1, 8 do
      clients[i] = function()
        for _ = 1, 25 do
          local v = assert(c:incr("hits"))
          assert.is_nil(seen[v]); seen[v] = true
        end
      end
    end
    run(clients, r)
    local failed = db:fault_stats().failed
    db:inject(nil)
    assert.are.equal(200, c:get("hits"))
    assert.is_true(failed > 0)
  end)

  it("counts by any integer step, and refuses bad input", function()
    local db = assert(store.open {})
    local c = counter.new { store = db, table = "counters" }
    assert(c:create())
    assert.are.equal(0, c:get("x"))
    assert.are.equal(5, c:incr("x", 5))
    assert.are.equal(2, c:incr("x", -3))
    assert.are.equal(2, c:get("x"))
    assert.are.equal("BadValue", select(3, c:incr("x", 1.5)))
    assert.are.equal("BadValue", select(3, c:incr("x", "1")))
    assert.are.equal("BadKey", select(3, c:incr("", 1)))
    assert.are.equal("BadKey", select(3, c:get(42)))
    assert.are.equal(2, c:get("x"))
  end)

  it("gives up with the store's code when the store keeps failing", function()
    local db = assert(store.open {})
    local c = counter.new { store = db, table = "counters",
      retry = { sleep = function() end, budget = false, backoff = { base = 0.001, cap = 0.001, max_attempts = 3 } } }
    assert(c:create())
    db:inject { rate = 1, code = "OTSServerBusy", ops = { "update_row" } }
    local v, msg, code = c:incr("x")
    assert.is_nil(v)
    assert.are.equal("OTSServerBusy", code)
    assert.matches("gave up after 3 attempts", msg)
    db:inject(nil)
    assert.are.equal(0, c:get("x"))
  end)
end)
