--- otskit.wire.rows_ffi -- LuaJIT: a response's rows (decode_rows without
-- typed) built by JIT-compiled Lua from the cells core.so reads
-- (otskit_pb_* of csrc/ffi/otskit_ffi.h) rather than through the Lua C API,
-- whose calls LuaJIT never compiles: the same rows as core.decode_rows
-- builds (spec/wire_lazy_rows_spec.lua checks it), `cells` built when
-- first read alike, and the same errors (a buffer this reader refuses is
-- handed to core.decode_rows, which says why).
--   rows_ffi.decode_rows(bytes [, max]) -> rows | nil, msg, code; nil
--   (the module's field) when FFI is off (not LuaJIT, OTSKIT_NO_FFI).
local F = require "otskit.ffi"
local M = {}
if not F.lib then
  M.why = F.why
  return M
end

local lib, ffi = F.lib, F.ffi
local core = require("otskit.core").wire
local values = require "otskit.values"
local ffistring = ffi.string
local setmetatable, rawset, rawget, type, error, min, floor = setmetatable, rawset, rawget, type, error, math.min, math.floor
local okt, tnew = pcall(require, "table.new")
if not okt then tnew = function() return {} end end

local INF_MIN, INF_MAX, AUTO = values.INF_MIN, values.INF_MAX, values.AUTO_INCREMENT
local TYPE = { [0] = "INTEGER", [1] = "DOUBLE", [2] = "BOOLEAN", [3] = "STRING", [7] = "BINARY" }
local OPS = { [1] = "DELETE_ALL", [3] = "DELETE", [4] = "INCREMENT" }
local WEAK_KEYS = { __mode = "k" }
local COPIED = "otskit.wire: row.cells of a table that is not a decoded row (its metatable was copied)"
local CHANGED = "otskit.wire: a decoded row's bytes changed"

-- readers: one per decode or cells build in progress (a finalizer that
-- runs during one and decodes takes another), kept for the next
local pool_d, pool_o, npool = {}, {}, 0
local function take()
  if npool > 0 then
    local d, o = pool_d[npool], pool_o[npool]
    pool_d[npool], pool_o[npool], npool = nil, nil, npool - 1
    return d, o
  end
  local d = lib.otskit_pb_new()
  if d == nil then error("not enough memory", 0) end
  return ffi.gc(d, lib.otskit_pb_free), ffi.new("otskit_pb_row")
end
local function give(d, o)
  npool = npool + 1
  pool_d[npool], pool_o[npool] = d, o
end

local text = ffi.new("char[24]")
local function int64_text(v) return ffistring(text, lib.otskit_int64_text(v, text)) end

-- a cell's value as core.decode_rows pushes it (untyped): BINARY a string,
-- an int64 past 2^53 its decimal text
local function value(c, vt)
  if vt == 3 or vt == 7 then return ffistring(c.s, c.n) end
  if vt == 0 then
    if c.big ~= 0 then return int64_text(c.i) end
    return c.num
  end
  if vt == 1 then return c.num end
  if vt == 2 then return c.num ~= 0 end
  if vt == 9 then return INF_MIN end
  if vt == 10 then return INF_MAX end
  if vt == 11 then return AUTO end
  return nil
end

local function timestamp(c)
  local h = c.has_ts
  if h == 1 then return c.ts end
  if h == 2 then return int64_text(c.ts64) end
  return nil
end

-- The __index of the rows of one decode: builds row.cells from the bytes
-- at offsets[row] (its attribute cells), sets it, drops the offset and
-- the metatable. names / nm: the decode's names by slot, read only here.
local function cells_of(bytes, base, n, offsets, nm, names)
  return function(row, k)
    if k ~= "cells" then return nil end
    local off = offsets[row]
    if off == nil then error(COPIED, 0) end
    local d, o = take()
    -- base: bytes, or a pointer into bytes (which this closure keeps alive)
    if lib.otskit_pb_cells(d, base or bytes, n, off, nm, o) ~= 1 then
      give(d, o)
      error(CHANGED, 0)
    end
    local cells, nc = o.cells, o.ncells
    local cols = rawget(row, "columns")
    if type(cols) ~= "table" then cols = nil end
    local list = tnew(nc, 0)
    for j = 0, nc - 1 do
      local c = cells[j]
      local name
      if c.fresh ~= 0 then name = ffistring(c.name, c.name_len) else name = names[c.slot + 1] end
      local vt, op = c.vt, c.op
      local v
      -- a newest STRING / BINARY from row.columns when that still holds
      -- the same bytes: no second lookup in the VM's string table
      if cols and c.newest ~= 0 and (vt == 3 or vt == 7) then
        v = rawget(cols, name)
        if type(v) ~= "string" or lib.otskit_pb_is(c, v, #v) == 0 then v = value(c, vt) end
      else
        v = value(c, vt)
      end
      if op ~= 0 then
        list[j + 1] = { name, v, timestamp(c), TYPE[vt], op = OPS[op] or "INCREMENT" }
      else
        list[j + 1] = { name, v, timestamp(c), TYPE[vt] }
      end
    end
    give(d, o)
    rawset(row, "cells", list)
    offsets[row] = nil
    setmetatable(row, nil)
    return list
  end
end

local charp = ffi.typeof("const char *")

--- rows_ffi.decode_rows(bytes [, max [, off, len]]) -> rows | nil, msg,
-- code: as core.decode_rows(bytes, max) (untyped); with off and len, as
-- core.decode_rows(bytes, max, false, false, off, len): the rows are the
-- len bytes at off (0-based) of bytes, and a second value is their order.
function M.decode_rows(bytes, max, off, len)
  if type(bytes) ~= "string" then return core.decode_rows(bytes, max) end
  local n, base = #bytes, nil
  max = max or 0
  if off ~= nil then
    if type(off) ~= "number" or type(len) ~= "number" or off < 0 or len < 0 or off + len > n
      or off ~= floor(off) or len ~= floor(len) then
      return core.decode_rows(bytes, max, false, false, off, len) -- says why
    end
    base, n = ffi.cast(charp, bytes) + off, len
  end
  local d, o = take()
  if lib.otskit_pb_open(d, base or bytes, n) ~= 1 then
    give(d, o)
    return core.decode_rows(bytes, max, false, false, off, len)
  end
  local rows = tnew(min(floor(n / 64), 4096), 0)
  if n == 0 then
    give(d, o)
    if off ~= nil then return rows, 3 end
    return rows
  end
  local offsets = setmetatable(tnew(0, min(floor(n / 128), 4096)), WEAK_KEYS)
  local nm = ffi.new("otskit_pb_names")
  local names = tnew(32, 0)
  local mt = { __index = cells_of(bytes, base, n, offsets, nm, names) }
  local nrows = 0
  while true do
    local rc = lib.otskit_pb_next(d, nm, o)
    if rc ~= 1 or (max > 0 and nrows == max) then
      if rc == 0 then
        local order = lib.otskit_pb_order(d)
        give(d, o)
        if off ~= nil then return rows, order end
        return rows
      end
      give(d, o)
      return core.decode_rows(bytes, max, false, false, off, len) -- says why
    end
    local cells, npk, nc = o.cells, o.npk, o.ncells
    local pk = tnew(npk, 0)
    for j = 0, npk - 1 do
      local c = cells[j]
      local name, slot = nil, c.slot
      if c.fresh ~= 0 then
        name = ffistring(c.name, c.name_len)
        if slot >= 0 then names[slot + 1] = name; nm.s[slot] = c.name; nm.n[slot] = c.name_len end
      else
        name = names[slot + 1]
      end
      local vt = c.vt
      -- the type when the value alone does not say it
      if vt == 7 or (vt == 0 and c.big ~= 0) then
        pk[j + 1] = { name, value(c, vt), TYPE[vt] }
      else
        pk[j + 1] = { name, value(c, vt) }
      end
    end
    local cols = tnew(0, nc - npk)
    for j = npk, nc - 1 do
      local c = cells[j]
      if c.newest ~= 0 then
        local name, slot = nil, c.slot
        if c.fresh ~= 0 then
          name = ffistring(c.name, c.name_len)
          if slot >= 0 then names[slot + 1] = name; nm.s[slot] = c.name; nm.n[slot] = c.name_len end
        else
          name = names[slot + 1]
        end
        cols[name] = value(c, c.vt)
      end
    end
    -- constructors: LuaJIT copies a template (no key inserted one by one),
    -- whose nil fields keep room for cells (pairs lists no nil field)
    local row
    if o.deleted ~= 0 then
      row = { primary_key = pk, columns = cols, deleted = true, cells = nil }
    else
      row = { primary_key = pk, columns = cols, deleted = nil, cells = nil }
    end
    setmetatable(row, mt)
    offsets[row] = tonumber(o.attr_at)
    nrows = nrows + 1
    rows[nrows] = row
  end
end

return M
