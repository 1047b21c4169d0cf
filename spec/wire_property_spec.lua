-- otskit.wire PlainBuffer properties on random rows: encode -> decode gives
-- back every key, value (with its type), timestamp and op; any single-byte
-- corruption or truncation is refused with nil, msg, code.
local wire = require "otskit.wire"
local helper = require "helper"

local LUA54 = math.type ~= nil
local N = helper.trials(300)

-- a random value of a random type, and its type name
local function value(r)
  local k = r.int(1, 6)
  if k == 1 then return r.bytes(r.int(0, 40)), "STRING" end
  if k == 2 then
    local v = r.int(-2147483647, 2147483647) * r.int(1, 4000)
    return LUA54 and math.tointeger(v) or v, "INTEGER"
  end
  if k == 3 then return (r.int(-1e6, 1e6) + 0.5) * 2 ^ r.int(-20, 20), "DOUBLE" end
  if k == 4 then return r.int(0, 1) == 1, "BOOLEAN" end
  if k == 5 then return wire.binary(r.bytes(r.int(0, 40))), "BINARY" end
  return wire.double(r.int(-1000, 1000) + 0.0), "DOUBLE"
end

local function kind(v)
  local t = type(v)
  if t == "string" then return "STRING", v end
  if t == "boolean" then return "BOOLEAN", v end
  if t == "table" then return v.type, v.value end
  if LUA54 then return math.type(v) == "integer" and "INTEGER" or "DOUBLE", v end
  return v == math.floor(v) and "INTEGER" or "DOUBLE", v -- LuaJIT: integral DOUBLEs come back typed
end

local function name(r) return r.bytes(r.int(1, 12)) end

local function random_row(r)
  local pk = {}
  for i = 1, r.int(1, 4) do
    local k = r.int(1, 3)
    local v = k == 1 and r.bytes(r.int(0, 20)) or k == 2 and (LUA54 and math.tointeger(r.int(-1e9, 1e9)) or r.int(-1e9, 1e9))
      or wire.binary(r.bytes(r.int(0, 20)))
    pk[i] = { name(r), v }
  end
  local cells = {}
  for i = 1, r.int(0, 20) do
    local v = value(r)
    local ts = r.int(0, 3) > 0 and (LUA54 and math.tointeger(r.int(0, 2e9) * 1000) or r.int(0, 2e9) * 1000) or nil
    cells[i] = { name(r), v, ts }
  end
  return pk, cells
end

local function same_value(a, b)
  local ta, va = kind(a)
  local tb, vb = kind(b)
  return ta == tb and va == vb
end

describe("otskit.wire PlainBuffer round trip (property)", function()
  it("encode_put -> decode_rows gives back every key, value, type and timestamp", function()
    local r = helper.rng(1501)
    for _ = 1, N do
      local pk, cells = random_row(r)
      local b = assert(wire.encode_put(pk, cells))
      local rows = assert(wire.decode_rows(b, { typed = true }))
      assert.equal(1, #rows)
      local got = rows[1]
      assert.equal(#pk, #got.primary_key)
      for i, c in ipairs(pk) do
        assert.equal(c[1], got.primary_key[i][1])
        assert.is_true(same_value(c[2], got.primary_key[i][2]))
      end
      assert.equal(#cells, #got.cells)
      for i, c in ipairs(cells) do
        local g = got.cells[i]
        assert.equal(c[1], g[1])
        assert.is_true(same_value(c[2], g[2]), "cell " .. i)
        assert.equal(c[3], g[3])
      end
      -- the same cells encode to the same bytes again, typed or in the
      -- store's read shape (plain values, the type in cells[i][4])
      assert.equal(b, wire.encode_put(got.primary_key, got.cells))
      local plain = assert(wire.decode_rows(b))[1]
      for i, c in ipairs(cells) do assert.equal((kind(c[2])), plain.cells[i][4]) end
      assert.equal(b, wire.encode_put(plain.primary_key, plain.cells))
    end
  end)

  it("many rows in one buffer, with zero padding, decode in order", function()
    local r = helper.rng(1502)
    for _ = 1, helper.trials(50) do
      local parts, want = { "\117\0\0\0" }, {}
      for i = 1, r.int(1, 30) do
        local pk, cells = random_row(r)
        parts[#parts + 1] = assert(wire.encode_put(pk, cells)):sub(5)
        want[i] = pk
      end
      local rows = assert(wire.decode_rows(table.concat(parts) .. ("\0"):rep(r.int(0, 5))))
      assert.equal(#want, #rows)
      for i, pk in ipairs(want) do assert.equal(pk[1][1], rows[i].primary_key[1][1]) end
    end
  end)

  it("update ops round trip with their op and timestamp", function()
    local r = helper.rng(1503)
    for _ = 1, N do
      local pk = random_row(r)
      local ops = {}
      for i = 1, r.int(1, 10) do
        local k, n = r.int(1, 4), name(r)
        if k == 1 then ops[i] = { "PUT", n, (value(r)) }
        elseif k == 2 then ops[i] = { "DELETE", n, LUA54 and math.tointeger(r.int(1, 2e9)) or r.int(1, 2e9) }
        elseif k == 3 then ops[i] = { "DELETE_ALL", n }
        else ops[i] = { "INCREMENT", n, LUA54 and math.tointeger(r.int(-1e6, 1e6)) or r.int(-1e6, 1e6) } end
      end
      local got = assert(wire.decode_rows(assert(wire.encode_update(pk, ops)), { typed = true }))[1]
      for i, op in ipairs(ops) do
        local c = got.cells[i]
        assert.equal(op[2], c[1])
        if op[1] == "PUT" then assert.is_nil(c.op); assert.is_true(same_value(op[3], c[2]))
        elseif op[1] == "DELETE" then assert.equal("DELETE", c.op); assert.equal(op[3], c[3]); assert.is_nil(c[2])
        elseif op[1] == "DELETE_ALL" then assert.equal("DELETE_ALL", c.op); assert.is_nil(c[2])
        else assert.equal("INCREMENT", c.op); assert.equal(op[3], c[2]) end
      end
    end
  end)

  it("refuses every single-byte change and every truncation of random rows", function()
    local r = helper.rng(1504)
    for _ = 1, helper.trials(40) do
      local pk, cells = random_row(r)
      local b = assert(wire.encode_put(pk, cells))
      for _ = 1, 40 do
        local i = r.int(1, #b)
        local x = string.char((b:byte(i) + r.int(1, 255)) % 256)
        local bad = b:sub(1, i - 1) .. x .. b:sub(i + 1)
        local rows, msg, code = wire.decode_rows(bad)
        if rows then
          -- a change can only pass by hitting the padding-free tail? never:
          -- every byte is a tag, a length, or checksummed content
          error(("byte %d changed and the row still decoded"):format(i))
        end
        assert.equal("CorruptPlainBuffer", code)
        assert.is_string(msg)
      end
      local n = r.int(5, #b - 1)
      local rows, _, code = wire.decode_rows(b:sub(1, n))
      assert.is_nil(rows)
      assert.equal("CorruptPlainBuffer", code)
    end
  end)

  it("random bytes never crash the decoder", function()
    local r = helper.rng(1505)
    for _ = 1, helper.trials(2000) do
      local b = "\117\0\0\0\1\3\4" .. r.bytes(r.int(0, 60), "\0\1\2\3\4\5\6\7\8\9\10\11\117abc")
      local rows, msg, code = wire.decode_rows(b)
      if not rows then
        assert.equal("CorruptPlainBuffer", code)
        assert.is_string(msg)
      end
    end
  end)
end)
