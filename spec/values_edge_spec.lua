-- Sizes taken from input are bounded (key.pack's t.n), and -0.0 keeps its
-- sign as a DOUBLE through the store and the wire codec on both VMs (an
-- INTEGER 0 would lose it; LuaJIT has no integer subtype to tell them).
local key = require "otskit.key"
local store = require "otskit.store"
local wire = require "otskit.wire"

local function negzero(v)
  if type(v) == "table" then v = v.value end
  return v == 0 and 1 / v < 0
end

describe("bounds and -0.0", function()
  it("refuses key.pack{n = huge} at once, and still packs explicit lengths", function()
    local t0 = os.clock()
    for _, n in ipairs { 1e9, 1e6 + 1, 2 ^ 53, -1, 0.5, 0 / 0 } do
      assert.has_error(function() key.pack { n = n } end, "otskit.key: tuple.n must be an integer 0..1000000")
    end
    assert.is_true(os.clock() - t0 < 1)
    assert.equal(3, #key.pack { n = 3 })
    -- a bucket list for fan-out: bounded too
    local t1 = os.clock()
    assert.has_error(function() key.buckets { n = 1e9 }:all() end)
    assert.is_true(os.clock() - t1 < 1)
    assert.equal(1024, #key.buckets { n = 1024 }:all())
    assert.same({ key.null, 1, key.null }, key.unpack(key.pack { n = 3, [2] = 1 }))
  end)

  it("writes -0.0 as a DOUBLE and reads it back with its sign (store)", function()
    local db = assert(store.open {})
    assert(db:create_table { name = "t", primary_key = { { "id", "INTEGER" } } })
    assert(db:put_row { table = "t", primary_key = { 1 }, columns = { z = -0.0, p = 0 } })
    local row = assert(db:get_row { table = "t", primary_key = { 1 } }).row
    assert.is_true(negzero(row.columns.z))
    for _, c in ipairs(row.cells) do
      if c[1] == "z" then assert.equal("DOUBLE", c[4]) end
      if c[1] == "p" then assert.equal("INTEGER", c[4]) end
    end
    -- written back as it was read: still -0.0
    assert(db:put_row { table = "t", primary_key = { 2 }, columns = { z = row.columns.z } })
    assert.is_true(negzero(db:get_row { table = "t", primary_key = { 2 } }.row.columns.z))
    -- and a filter on it compares as the DOUBLE it is
    local res = assert(db:get_row { table = "t", primary_key = { 1 },
      filter = { column = "z", comparator = "EQUAL", value = -0.0 } })
    assert.truthy(res.row)
  end)

  it("carries -0.0 as a DOUBLE through the wire codec, request and response", function()
    local body = assert(wire.encode_request("PutRow", { table = "t", primary_key = { { "id", 1 } },
      columns = { z = -0.0 } }))
    local req = assert(wire.decode_request("PutRow", body))
    local db = assert(store.open {})
    assert(db:create_table { name = "t", primary_key = { { "id", "INTEGER" } } })
    assert(db:put_row(req))
    local greq = { table = "t", primary_key = { { "id", 1 } } }
    local res = assert(db:get_row(greq))
    local out = assert(wire.decode_response("GetRow", assert(wire.encode_response("GetRow", res)), greq))
    assert.is_true(negzero(out.row.columns.z))
    for _, c in ipairs(out.row.cells or {}) do
      if c[1] == "z" then assert.equal("DOUBLE", c[4]) end
    end
  end)
end)
