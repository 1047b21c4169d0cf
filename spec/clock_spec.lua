-- otskit.clock: the one wall clock of the store and of `otskit serve`,
-- read through the FFI under LuaJIT and through the Lua C API elsewhere;
-- both must read the same clock at the same resolution.
local clock = require "otskit.clock"
local core = require "otskit.core"
local f = require "otskit.ffi"

describe("otskit.clock", function()
  it("reads the wall clock row.now reads, in seconds, below the millisecond", function()
    local sub_ms = false
    for _ = 1, 2000 do
      local a = core.row.now()
      local b = clock.now()
      local c = core.row.now()
      -- b was read between a and c (the wall clock may step, never by much here)
      assert.is_true(b >= a - 0.001 and b <= c + 0.001, ("%.6f %.6f %.6f"):format(a, b, c))
      local ms = b * 1000
      if math.abs(ms - math.floor(ms + 0.5)) > 0.01 then sub_ms = true end
    end
    assert.is_true(sub_ms, "every reading a whole millisecond")
    assert.is_true(math.abs(clock.now() - os.time()) < 2)
  end)

  it("is read through the FFI when otskit.ffi is loaded", function()
    if f.lib then
      assert.are_not.equal(core.row.now, clock.now)
      assert.are.equal("number", type(clock.now()))
    else
      assert.are.equal(core.row.now, clock.now)
    end
  end)

  it("is the store's clock unless one is given", function()
    local store = require "otskit.store"
    local db = assert(store.open{ path = ":memory:" })
    assert.are.equal(clock.now, db.clock)
    local fixed = function() return 1000 end
    local db2 = assert(store.open{ path = ":memory:", clock = fixed })
    assert.are.equal(fixed, db2.clock)
    db:close(); db2:close()
  end)
end)
