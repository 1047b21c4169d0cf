-- Decoded response rows build row.cells when first read (issue 30): on
-- random buffers of random rows (every value type, several versions of a
-- column, update ops, delete markers, int64 keys and values), the rows of
-- wire.decode_rows equal, field by field, the rows the decoder builds
-- eagerly (core.decode_rows(bytes, 0, false, true): the representation
-- before lazy cells), before and after row.cells is read, and after the
-- bytes were dropped by the caller and collected.
local wire = require "otskit.wire"
local core = require("otskit.core").wire
local pb = require "otskit.wire.plainbuffer"
local helper = require "helper"

local LUA54 = math.type ~= nil
local N = helper.trials(200)

local function int(v) return LUA54 and math.tointeger(v) or v end

local function value(r)
  local k = r.int(1, 7)
  if k == 1 then return r.bytes(r.int(0, 60)) end
  if k == 2 then return int(r.int(-2147483647, 2147483647) * r.int(1, 4000)) end
  if k == 3 then return (r.int(-1e6, 1e6) + 0.5) * 2 ^ r.int(-20, 20) end
  if k == 4 then return r.int(0, 1) == 1 end
  if k == 5 then return wire.binary(r.bytes(r.int(0, 40))) end
  if k == 6 then return wire.double(r.int(-1000, 1000) + 0.0) end
  return wire.integer(LUA54 and math.tointeger(r.int(1, 1e6)) * 4611686018 or "4611686018427387904")
end

local NAMES = { "a", "b", "c", "d", "e" } -- few names: several versions of a column
local function name(r) return NAMES[r.int(1, #NAMES)] end

local function random_key(r)
  local pk = {}
  for i = 1, r.int(1, 4) do
    local k = r.int(1, 4)
    local v = k == 1 and r.bytes(r.int(0, 20)) or k == 2 and int(r.int(-1e9, 1e9))
      or k == 3 and wire.binary(r.bytes(r.int(0, 20)))
      or wire.integer(LUA54 and -9007199254740993 or "-9007199254740993")
    pk[i] = { "k" .. i, v }
  end
  return pk
end

-- one row's bytes (with the 4-byte header): a put, an update or a delete
local function random_row(r)
  local pk, k = random_key(r), r.int(1, 6)
  if k == 1 then return assert(wire.encode_delete(pk)) end
  if k == 2 then
    local ops = {}
    for i = 1, r.int(1, 8) do
      local o = r.int(1, 4)
      ops[i] = o == 1 and { "PUT", name(r), value(r), int(r.int(1, 1e6) * 1000) }
        or o == 2 and { "DELETE", name(r), int(r.int(1, 1e6) * 1000) }
        or o == 3 and { "DELETE_ALL", name(r) } or { "INCREMENT", name(r), int(r.int(-100, 100)) }
    end
    return assert(wire.encode_update(pk, ops))
  end
  local cells = {}
  for i = 1, r.int(0, 12) do
    cells[i] = { name(r), value(r), r.int(0, 3) > 0 and int(r.int(0, 2e9) * 1000) or nil }
  end
  return assert(wire.encode_put(pk, cells))
end

local function keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = tostring(k) end
  table.sort(ks)
  return table.concat(ks, ",")
end

-- deep equality; LuaJIT int64 cdata compared by value and type
local function same(a, b, path)
  if type(a) == "cdata" or type(b) == "cdata" then
    assert(tostring(a) == tostring(b), path .. ": " .. tostring(a) .. " ~= " .. tostring(b))
    return
  end
  if type(a) ~= "table" or type(b) ~= "table" then
    assert(a == b or (a ~= a and b ~= b), path .. ": " .. tostring(a) .. " ~= " .. tostring(b))
    return
  end
  assert(getmetatable(a) == getmetatable(b), path .. ": metatables differ")
  assert.equal(keys(a), keys(b), path .. ": keys")
  for k, v in pairs(a) do same(v, rawget(b, k), path .. "." .. tostring(k)) end
end

describe("otskit.wire lazy row cells (property)", function()
  it("decoded rows equal the eagerly built rows, before and after row.cells is read", function()
    local r = helper.rng(3001)
    for trial = 1, N do
      local parts = {}
      for i = 1, r.int(1, 12) do
        local b = random_row(r)
        parts[i] = i == 1 and b or b:sub(5) -- one header for the buffer
      end
      local bytes = table.concat(parts)
      if r.int(0, 3) == 0 then bytes = bytes .. ("\0"):rep(r.int(1, 8)) end -- padding accepted
      local lazy = assert(wire.decode_rows(bytes))
      local eager = assert(core.decode_rows(bytes, 0, false, true))
      assert.equal(#eager, #lazy)
      local order = {}
      for i = 1, #lazy do order[i] = i end
      for i = #order, 2, -1 do local j = r.int(1, i); order[i], order[j] = order[j], order[i] end
      for n, i in ipairs(order) do
        local l, e = lazy[i], eager[i]
        local where = ("trial %d row %d"):format(trial, i)
        -- before: every field but cells, which is not built yet
        local ek = {}
        for k in pairs(e) do if k ~= "cells" then ek[#ek + 1] = k end end
        table.sort(ek)
        assert.equal(table.concat(ek, ","), keys(l), where .. ": fields before cells is read")
        assert.is_nil(rawget(l, "cells"))
        same(e.primary_key, l.primary_key, where .. ".primary_key")
        same(e.columns, l.columns, where .. ".columns")
        assert.equal(e.deleted, l.deleted)
        assert.is_nil(l.other); assert.is_nil(l[1])
        if n % 3 == 0 then bytes = nil; collectgarbage() end -- the rows keep what they need
        -- read: the same cells, set on the row, the metatable gone
        local cells = l.cells
        same(e.cells, cells, where .. ".cells")
        assert.equal(cells, l.cells)
        assert.is_nil(getmetatable(l))
        same(e, l, where)
      end
    end
  end)

  it("a single row field (decode_row) is lazy alike and re-encodes to the same bytes", function()
    local r = helper.rng(3002)
    for _ = 1, N do
      local b = random_row(r)
      local row = assert(pb.decode_row(b))
      local e = assert(core.decode_rows(b, 1, false, true))[1]
      same(e.primary_key, row.primary_key, "primary_key")
      same(e.columns, row.columns, "columns")
      same(e.cells, row.cells, "cells")
      local plain = not row.deleted and #row.cells > 0
      for _, c in ipairs(e.cells) do if c.op then plain = false end end
      if plain then
        local again = assert(pb.encode_row(row))
        local e2 = assert(pb.encode_row(e))
        assert.equal(e2, again)
      end
    end
  end)

  it("a changed metatable is a programming mistake, raised with the module name", function()
    local rows = assert(wire.decode_rows(assert(wire.encode_put({ { "k", "v" } }, { { "c", 1 } }))))
    local mt = getmetatable(rows[1])
    mt[2] = -1
    assert.has_error(function() return rows[1].cells end, "otskit.wire: a decoded row's metatable was changed")
  end)
end)
