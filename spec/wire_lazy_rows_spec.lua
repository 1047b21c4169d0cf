-- Decoded response rows build row.cells when first read (issue 30): on
-- random buffers of random rows (every value type incl. -0.0, the double
-- limits, BINARY, integers at 2^53 and the int64 limits; several
-- versions of a column, update ops, delete markers, padding), the rows of
-- wire.decode_rows equal, field by field, the rows of `reference` below (a
-- plain Lua PlainBuffer reader building the representation rows had before
-- lazy cells) and the rows the decoder builds eagerly
-- (core.decode_rows(bytes, 0, false, true)), before and after row.cells is
-- read, in random order, and after the bytes were dropped by the caller
-- and collected. On LuaJIT wire.decode_rows builds them in compiled Lua
-- (otskit.wire.rows_ffi): those rows also equal the Lua C API decoder's
-- lazy rows (core.decode_rows(bytes)), and both refuse a corrupt buffer
-- with the same message and code.
local wire = require "otskit.wire"
local core = require("otskit.core").wire
local pb = require "otskit.wire.plainbuffer"
local helper = require "helper"
local rows_ffi = require "otskit.wire.rows_ffi"

local LUA54 = math.type ~= nil
local N = helper.trials(200)

local function int(v) return LUA54 and math.tointeger(v) or v end

local BIG = LUA54 and { math.maxinteger, math.mininteger, 9007199254740992, 9007199254740993, -9007199254740993 }
  or { "9223372036854775807", "-9223372036854775808", "9007199254740993", "-9007199254740993" }
local SPECIAL = { -0.0, 0.0, 2 ^ 53, -(2 ^ 53), 2 ^ 53 + 2, 5e-324, 1.7976931348623157e308 } -- no NaN, no infinity: the encoder refuses them

local function value(r)
  local k = r.int(1, 9)
  if k == 8 then return wire.double(SPECIAL[r.int(1, #SPECIAL)]) end
  if k == 9 then local b = BIG[r.int(1, #BIG)]; return LUA54 and b or wire.integer(b) end
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
  for i = 1, r.int(0, 20) do -- past the 16 names decode caches by position
    cells[i] = { name(r), value(r), r.int(0, 3) > 0 and int(r.int(0, 2e9) * 1000) or nil }
  end
  return assert(wire.encode_put(pk, cells))
end

----------------------------------------------------------------------
-- the reference: PlainBuffer bytes -> the rows as the decoder built them
-- before lazy cells, in plain Lua (no checksums: the decoder checks those)
local ffi = not LUA54 and require "ffi"
local function le32(s, i)
  local a, b, c, d = s:byte(i, i + 3)
  return a + b * 256 + c * 65536 + d * 16777216
end
local TWO53 = ffi and ffi.cast("int64_t", 2 ^ 53)
local function int64(s, i) -- as the decoder pushes it: LuaJIT past 2^53 as decimal text
  if LUA54 then return (string.unpack("<i8", s, i)) end
  local buf = ffi.new("int64_t[1]")
  ffi.copy(buf, s:sub(i, i + 7), 8)
  local v = buf[0]
  if v >= -TWO53 and v <= TWO53 then return tonumber(v) end
  return (tostring(v):gsub("LL$", ""))
end
local function double(s, i)
  if LUA54 then return (string.unpack("<d", s, i)) end
  local buf = ffi.new("double[1]")
  ffi.copy(buf, s:sub(i, i + 7), 8)
  return buf[0]
end
local TYPES = { [0] = "INTEGER", [1] = "DOUBLE", [2] = "BOOLEAN", [3] = "STRING", [7] = "BINARY" }
local OPS = { [1] = "DELETE_ALL", [3] = "DELETE", [4] = "INCREMENT" }

local function reference(s)
  local rows, p = {}, 5
  if #s == 0 then return rows end
  assert(le32(s, 1) == 0x75, "header")
  local function cell() -- at 0x03: name, type, value, op, ts
    assert(s:byte(p) == 3 and s:byte(p + 1) == 4, "cell")
    local n = le32(s, p + 2)
    local name = s:sub(p + 6, p + 5 + n)
    p = p + 6 + n
    local vt, v, op, ts
    if s:byte(p) == 5 then
      local len, q = le32(s, p + 1), p + 6
      vt = s:byte(p + 5)
      if vt == 0 then v = int64(s, q) elseif vt == 1 then v = double(s, q)
      elseif vt == 2 then v = s:byte(q) == 1
      elseif vt == 3 or vt == 7 then v = s:sub(q + 4, q + 3 + le32(s, q))
      elseif vt == 9 then v = wire.INF_MIN elseif vt == 10 then v = wire.INF_MAX else v = wire.AUTO_INCREMENT end
      p = p + 5 + len
    end
    if s:byte(p) == 6 then op = OPS[s:byte(p + 1)]; p = p + 2 end
    if s:byte(p) == 7 then ts = int64(s, p + 1); p = p + 9 end
    assert(s:byte(p) == 0x0A, "cell checksum")
    p = p + 2
    return name, vt, v, op, ts
  end
  while p <= #s and s:byte(p) ~= 0 do
    assert(s:byte(p) == 1, "row")
    p = p + 1
    local row = { primary_key = {}, columns = {}, cells = {} }
    while s:byte(p) == 3 do
      local name, vt, v = cell()
      local c = { name, v }
      if vt == 7 or (vt == 0 and type(v) == "string") then c[3] = TYPES[vt] end
      row.primary_key[#row.primary_key + 1] = c
    end
    if s:byte(p) == 2 then
      p = p + 1
      local prev -- the first cell of a name (not an op) is its newest version
      while s:byte(p) == 3 do
        local name, vt, v, op, ts = cell()
        row.cells[#row.cells + 1] = { name, v, ts, vt and TYPES[vt], op = op }
        if not op and name ~= prev then row.columns[name] = v; prev = name end
      end
    end
    if s:byte(p) == 8 then row.deleted = true; p = p + 1 end
    if s:byte(p) == 0x0B then p = p + 5 + le32(s, p + 1) end
    assert(s:byte(p) == 9, "row checksum")
    p = p + 2
    rows[#rows + 1] = row
  end
  return rows
end

local keys = helper.keys_of
-- deep equality (helper.deep_same), metatables too
local function same(a, b, path) helper.deep_same(a, b, path, true) end

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
      local clazy = assert(core.decode_rows(bytes)) -- the Lua C API's lazy rows
      local ref = reference(bytes)
      assert.equal(#ref, #eager)
      assert.equal(#eager, #lazy)
      for i = 1, #ref do same(ref[i], eager[i], ("trial %d eager row %d"):format(trial, i)) end
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
        if n == 2 and trial % 8 == 0 then bytes = nil; collectgarbage() end -- the rows keep what they need
        -- read: the same cells, set on the row, the metatable gone
        local cells = l.cells
        same(e.cells, cells, where .. ".cells")
        assert.equal(cells, l.cells)
        assert.is_nil(getmetatable(l))
        same(e, l, where)
        same(ref[i], l, where .. " (reference)")
        same(e.cells, clazy[i].cells, where .. " (C API lazy cells)")
        same(e, clazy[i], where .. " (C API lazy rows)")
      end
    end
  end)

  it("LuaJIT: wire.decode_rows builds rows in compiled Lua (FFI) unless OTSKIT_NO_FFI", function()
    if LUA54 then assert.is_nil(rows_ffi.decode_rows); return end
    local F = require "otskit.ffi"
    assert.equal(F.lib ~= nil, rows_ffi.decode_rows ~= nil)
    if not rows_ffi.decode_rows then return end
    local b = assert(wire.encode_put({ { "k", 1 } }, { { "c", "v", 5 } }))
    local row = wire.decode_rows(b)[1]
    assert.equal(debug.getinfo(getmetatable(row).__index, "S").what, "Lua")
  end)

  it("LuaJIT: a corrupt or truncated buffer is refused as the C API decoder refuses it (property)", function()
    if not rows_ffi.decode_rows then return end
    local r = helper.rng(3003)
    for _ = 1, N do
      local parts = {}
      for i = 1, r.int(1, 4) do
        local b = random_row(r)
        parts[i] = i == 1 and b or b:sub(5)
      end
      local bytes = table.concat(parts)
      local k = r.int(1, 3)
      if k == 1 then bytes = bytes:sub(1, r.int(0, #bytes - 1))
      elseif k == 2 then
        local at = r.int(1, #bytes)
        bytes = bytes:sub(1, at - 1) .. string.char(r.int(0, 255)) .. bytes:sub(at + 1)
      end
      for _, max in ipairs({ 0, 1 }) do
        local a = { rows_ffi.decode_rows(bytes, max) }
        local c = { core.decode_rows(bytes, max) }
        assert.equal(c[1] == nil, a[1] == nil)
        if a[1] == nil then
          assert.same({ c[2], c[3] }, { a[2], a[3] })
        else
          assert.equal(#c[1], #a[1])
          for i = 1, #a[1] do same(setmetatable(c[1][i], nil), setmetatable(a[1][i], nil), "row " .. i) end
        end
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

  it("a decoded row's metatable copied to another table is a programming mistake, raised with the module name", function()
    local rows = assert(wire.decode_rows(assert(wire.encode_put({ { "k", "v" } }, { { "c", 1 } }))))
    local other = setmetatable({}, getmetatable(rows[1]))
    assert.has_error(function() return other.cells end,
      "otskit.wire: row.cells of a table that is not a decoded row (its metatable was copied)")
    assert.is_nil(other.columns)
    assert.equal(1, rows[1].cells[1][2])
  end)

  it("cells built while another row's cells are being built (a finalizer) are right", function()
    local bytes = assert(pb.encode_rows({
      { primary_key = { { "k", 1 } }, cells = { { "a", ("x"):rep(100), 5 }, { "b", 2, 6 } } },
      { primary_key = { { "k", 2 } }, cells = { { "a", ("y"):rep(100), 7 } } } }))
    for _ = 1, 50 do
      local rows = assert(wire.decode_rows(bytes))
      local seen
      -- finalizers that read the second row's cells run during allocations
      for _ = 1, 20 do setmetatable({}, { __gc = function() seen = seen or rows[2].cells end }) end
      if not LUA54 then for _ = 1, 20 do local p = newproxy(true); getmetatable(p).__gc = function() seen = seen or rows[2].cells end end end
      collectgarbage("step", 0)
      local c1 = rows[1].cells
      collectgarbage()
      same(reference(bytes)[1], rows[1], "row 1")
      same(reference(bytes)[2], rows[2], "row 2")
      assert.equal(c1, rows[1].cells)
    end
  end)
end)
