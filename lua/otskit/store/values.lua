--- otskit.store.values -- Tablestore cell types, their Lua forms, sizes,
-- comparisons, and the byte encoding of a row's attribute columns.
--
-- The Lua forms and the typed values (binary, integer, double) are
-- otskit.values's, re-exported here as the same functions.
local kv = require("otskit.core").kv
local shared = require "otskit.values"

local values = {}

local LUA54 = shared.LUA54
local TWO53 = 9007199254740992

values.MAX_CELL = 2097152     -- STRING/BINARY attribute value
values.MAX_PK_CELL = 1024     -- STRING/BINARY key value

-- the typed values are otskit.values's (the same functions and metatable)
values.is_typed, values.decimal, values.retype = shared.is_typed, shared.decimal, shared.retype
values.key_cell = shared.key_cell
values.binary, values.integer, values.double = shared.binary, shared.integer, shared.double
local is_typed = shared.is_typed

--- values.classify(v) -> type, plain value | nil, reason
function values.classify(v)
  local t = type(v)
  if t == "string" then return "STRING", v end
  if t == "boolean" then return "BOOLEAN", v end
  if t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then return nil, "NaN or infinite number" end
    if LUA54 then
      if math.type(v) == "integer" then return "INTEGER", v end
      return "DOUBLE", v
    end
    -- (-0.0 is a DOUBLE: an INTEGER 0 would lose its sign)
    if v == math.floor(v) and not (v == 0 and 1 / v < 0) and v >= -2^63 and v < 2^63 then return "INTEGER", v end
    return "DOUBLE", v
  end
  if t == "table" and is_typed(v) then
    if v.type == "DOUBLE" and (v.value ~= v.value or v.value == math.huge or v.value == -math.huge) then
      return nil, "NaN or infinite number"
    end
    return v.type, v.value
  end
  return nil, "unsupported value type " .. t
end

--- values.size(type, v) -> bytes the value counts for in Tablestore's limits
function values.size(ty, v)
  if ty == "STRING" or ty == "BINARY" then return #v end
  if ty == "BOOLEAN" then return 1 end
  return 8
end

local function int_text(v)
  if type(v) == "string" then return v end
  if LUA54 then return ("%d"):format(v) end
  return ("%.0f"):format(v)
end
values.int_text = int_text

-- int64 comparison across the number / decimal-string forms (LuaJIT)
local function int_cmp(a, b)
  if type(a) == "number" and type(b) == "number" then
    return a < b and -1 or (a > b and 1 or 0)
  end
  local sa, sb = int_text(a), int_text(b)
  local na, nb = sa:sub(1, 1) == "-", sb:sub(1, 1) == "-"
  if na ~= nb then return na and -1 or 1 end
  local r
  if #sa ~= #sb then r = #sa < #sb and -1 or 1 else r = kv.cmp(sa, sb) end
  return na and -r or r
end
values.int_cmp = int_cmp

--- values.compare(ta, a, tb, b) -> -1, 0, 1, or nil when the types differ
-- (Tablestore's column order: INTEGER as int64, STRING/BINARY by bytes).
function values.compare(ta, a, tb, b)
  if ta ~= tb then return nil end
  if ta == "STRING" or ta == "BINARY" then return kv.cmp(a, b) end
  if ta == "INTEGER" then return int_cmp(a, b) end
  if ta == "BOOLEAN" then
    if a == b then return 0 end
    return a and 1 or -1
  end
  return a < b and -1 or (a > b and 1 or 0)
end

--- values.encode(names, types, vals) -> bytes of the columns (csrc/core/row.h)
values.encode = require("otskit.core").row.encode

--- values.decode(bytes [, want [, with_types]]) -> cols, types, size:
-- map name -> value, map name -> type (when with_types), and the
-- Tablestore size of the kept columns; want: nil (all) or a set of names.
-- nil, msg, "CorruptRow" for bytes that are not a row.
values.decode = require("otskit.core").row.decode

values.TYPES = { STRING = true, BINARY = true, INTEGER = true, DOUBLE = true, BOOLEAN = true }
values.INTEGER_MAX = LUA54 and math.maxinteger or 2^63
values.LUA54 = LUA54
values.TWO53 = TWO53
return values
