-- otskit.values: the sentinels and typed values every layer shares, free
-- of the store; the store, wire and client hold the very same objects; a
-- key read back from the store has the shape otskit.wire decodes.
local values = require "otskit.values"
local store = require "otskit.store"
local wire = require "otskit.wire"
local helper = require "helper"

local LUA = jit and "luajit" or "lua5.4"
local LUA54 = math.type ~= nil

-- the otskit.store* modules `lua -e code` loaded, one a line
local function loaded_store_modules(code)
  local script = os.tmpname()
  local f = assert(io.open(script, "w"))
  f:write(code, [[

local out = {}
for name in pairs(package.loaded) do
  if name:sub(1, 12) == "otskit.store" then out[#out + 1] = name end
end
table.sort(out)
io.write("loaded:", table.concat(out, ","), "\n")
]])
  f:close()
  local p = assert(io.popen(LUA .. " " .. script .. " 2>&1"))
  local out = p:read("*a")
  p:close()
  os.remove(script)
  local mods = out:match("loaded:([^\n]*)\n")
  assert(mods, "the interpreter failed: " .. out)
  return mods
end

-- a random int64 as a decimal string (any of the 19-digit range, or small)
local function int64_text(r)
  if r.int(1, 3) == 1 then return tostring(r.int(-1000, 1000)) end
  local digits = { tostring(r.int(1, 9)) }
  for i = 2, r.int(15, 18) do digits[i] = tostring(r.int(0, 9)) end
  return (r.int(1, 2) == 1 and "-" or "") .. table.concat(digits)
end

describe("otskit.values", function()
  it("loads no store: otskit.wire, otskit.client and the patterns in a fresh interpreter", function()
    assert.equal("", loaded_store_modules([[
local values = require "otskit.values"
local wire = require "otskit.wire"
local client = require "otskit.client"
assert(wire.INF_MIN == values.INF_MIN and client.INF_MAX == values.INF_MAX)
]]))
    assert.equal("", loaded_store_modules([[
for _, m in ipairs({ "timeseries", "spliced", "hashprefix", "hotcold", "chunked", "counter", "colsplit", "import" }) do
  require("otskit.patterns." .. m)
end
require "otskit.merge"
]]))
    -- the check can fail: the store itself is seen
    assert.matches("otskit.store", loaded_store_modules([[require "otskit.store"]]))
  end)

  it("is what the store, the wire and the client re-export (the same objects)", function()
    local client = require "otskit.client"
    for _, k in ipairs({ "INF_MIN", "INF_MAX", "AUTO_INCREMENT" }) do
      assert.equal(values[k], store[k])
      assert.equal(values[k], wire[k])
      assert.equal(k, tostring(values[k]))
    end
    assert.equal(values.INF_MIN, client.INF_MIN)
    assert.equal(values.INF_MAX, client.INF_MAX)
    for _, k in ipairs({ "binary", "integer", "double" }) do
      assert.equal(values[k], store[k])
      assert.equal(values[k], wire[k])
    end
    assert.equal(getmetatable(values.binary("x")), getmetatable(store.integer(1)))
  end)

  it("makes typed values and refuses what is not of the type (raises, naming the module)", function()
    assert.same({ "BINARY", "\0a" }, { values.binary("\0a").type, values.binary("\0a").value })
    assert.equal("DOUBLE", values.double(3).type)
    assert.equal("INTEGER(-9223372036854775808)", tostring(values.integer("-9223372036854775808")))
    assert.is_true(values.is_typed(values.integer(7)))
    assert.is_false(values.is_typed({ type = "INTEGER", value = 7 }))
    assert.has_error(function() values.binary(1) end, "otskit.values: binary() takes a string")
    assert.has_error(function() values.integer("9223372036854775808") end,
      "otskit.values: integer() takes an int64 number or decimal string")
    assert.has_error(function() values.integer(1.5) end)
    assert.has_error(function() values.double("1") end, "otskit.values: double() takes a number")
  end)

  it("decimal and retype agree with the wire's rule for tagged cells (property)", function()
    local r = helper.rng(23)
    for _ = 1, 300 do
      local s = int64_text(r)
      local n = values.decimal(s)
      assert.is_not_nil(n, s)
      if LUA54 then assert.equal(s, ("%d"):format(n)) end
      -- a tagged INTEGER text cell encodes as the INTEGER it spells
      local tv = assert(values.retype(s, "INTEGER"))
      assert.equal("INTEGER", tv.type)
      local a = assert(wire.encode_pk({ { "k", s, "INTEGER" } }))
      assert.equal(a, assert(wire.encode_pk({ { "k", tv } })))
      -- and reads back as key_cell says
      local back = assert(wire.decode_rows(a))[1].primary_key[1]
      assert.same(values.key_cell("k", "INTEGER", back[2]), back)
      assert.equal(s, type(back[2]) == "string" and back[2] or (LUA54 and ("%d"):format(back[2]) or ("%.0f"):format(back[2])))
    end
    assert.is_nil(values.decimal("12a"))
    assert.is_nil(values.decimal("9223372036854775808"))
    assert.is_nil((values.retype("x1", "INTEGER")))
    assert.is_nil((values.retype(1.5, "INTEGER")))
    assert.is_nil((values.retype(5, "STRING")))
    assert.is_nil((values.retype(values.binary("a"), "STRING")))
    assert.equal("BINARY", values.retype("a", "BINARY").type)
    assert.equal("DOUBLE", values.retype(2, "DOUBLE").type)
    assert.equal(true, values.retype(true, "BOOLEAN"))
    assert.equal("s", values.retype("s", nil))
  end)

  it("a DescribeTable answer carries split points with the partition key's type", function()
    local proto_decode = require("otskit.core").wire.proto_decode
    local r = helper.rng(5)
    for _ = 1, 50 do
      local ty = ({ "BINARY", "STRING", "INTEGER" })[r.int(1, 3)]
      local v = ty == "INTEGER" and values.decimal(int64_text(r)) or r.bytes(r.int(1, 5))
      local body = assert(wire.encode_response("DescribeTable", {
        table_meta = { table = "t", primary_key = { { "p", ty } } }, shard_splits = { v } }))
      local bytes = assert(proto_decode("DescribeTableResponse", body)).shard_splits[1]
      local typed = assert(wire.decode_rows(bytes, { typed = true }))[1].primary_key[1][2]
      local plain = assert(wire.decode_rows(bytes))[1].primary_key[1]
      if ty == "BINARY" then assert.same(values.binary(v), typed) end
      if ty == "STRING" then assert.equal(v, typed) end
      assert.same(values.key_cell("p", ty, v), plain)
      -- and the client's answer is the store's value
      local res = assert(wire.decode_response("DescribeTable", body))
      assert.same({ v }, res.shard_splits)
    end
  end)

  it("store keys read back have the shape the wire decodes, and pass back (property)", function()
    local r = helper.rng(tonumber(os.getenv("OTSKIT_SEED") or "") or 77)
    local db = assert(store.open{})
    assert(db:create_table{ name = "t", primary_key = {{"n", "INTEGER"}, {"b", "BINARY"}, {"s", "STRING"}} })
    local want = {}
    for i = 1, (os.getenv("OTSKIT_QUICK") and 40 or 200) do
      local n, b = int64_text(r), r.bytes(r.int(0, 6))
      local pk = { { "n", values.integer(n) }, { "b", values.binary(b) }, { "s", "s" .. i } }
      assert(db:put_row{ table = "t", primary_key = pk, columns = { i = i } })
      want[#want + 1] = pk
    end
    local seen, start = 0, { values.INF_MIN, values.INF_MIN, values.INF_MIN }
    repeat
      local page = assert(db:get_range{ table = "t", start = start, stop = { values.INF_MAX, values.INF_MAX, values.INF_MAX },
        limit = r.int(1, 9) })
      for _, row in ipairs(page.rows) do
        seen = seen + 1
        local pk = row.primary_key
        -- the wire's decode of the same key is the store's read-back key
        local decoded = assert(wire.decode_rows(assert(wire.encode_pk(pk))))[1].primary_key
        assert.same(decoded, pk)
        assert.same(values.key_cell("b", "BINARY", pk[2][2]), pk[2])
        assert.same(values.key_cell("n", "INTEGER", pk[1][2]), pk[1])
        assert.is_nil(pk[3][3])
        if LUA54 then assert.is_nil(pk[1][3]) end   -- 5.4 integers are never text
        -- passed back as it is, the key finds its row
        assert.equal(row.columns.i, assert(db:get_row{ table = "t", primary_key = pk }).row.columns.i)
      end
      start = page.next_start_primary_key
    until not start
    assert.equal(#want, seen)
    -- a tag is a promise the value must keep
    local code = select(3, db:get_row{ table = "t", primary_key = { { "n", "12x", "INTEGER" }, { "b", "a", "BINARY" }, { "s", "z" } } })
    assert.equal("OTSParameterInvalid", code)
    code = select(3, db:get_row{ table = "t", primary_key = { { "n", 1 }, { "b", "a", "BINARY" }, { "s", "z", "BINARY" } } })
    assert.equal("OTSInvalidPK", code)
    code = select(3, db:get_row{ table = "t", primary_key = { { "n", 1, "STRING" }, { "b", "a" }, { "s", "z" } } })
    assert.equal("OTSParameterInvalid", code)
    db:close()
  end)

  it("docs/values.md: every lua block runs and prints what it shows", function()
    local f = assert(io.open("docs/values.md", "rb"))
    local text = f:read("*a")
    f:close()
    local n = 0
    for code in text:gmatch("\n```lua\n(.-\n)```") do
      n = n + 1
      helper.run_readme_block(code, "docs/values.md example " .. n)
    end
    assert.is_true(n >= 1)
  end)
end)
