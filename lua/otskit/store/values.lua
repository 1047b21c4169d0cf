--- otskit.store.values -- Tablestore cell types, their Lua forms, sizes,
-- comparisons, and the byte encoding of a row's attribute columns.
--
-- Lua forms: a string is STRING; a boolean is BOOLEAN; a number is
-- INTEGER when integral (Lua 5.4: an integer subtype) else DOUBLE.
-- values.binary(s), values.integer(v), values.double(v) force a type
-- (integer(v) takes a decimal string for int64 values LuaJIT cannot hold).
local kv = require("otskit.core").kv

local values = {}

local LUA54 = math.type ~= nil
local TWO53 = 9007199254740992
local Typed = {}
Typed.__index = Typed
Typed.__tostring = function(t) return t.type .. "(" .. tostring(t.value) .. ")" end

values.MAX_CELL = 2097152     -- STRING/BINARY attribute value
values.MAX_PK_CELL = 1024     -- STRING/BINARY key value

local function typed(ty, v) return setmetatable({ type = ty, value = v }, Typed) end
function values.is_typed(v) return getmetatable(v) == Typed end

-- Parses a decimal int64 string: the number if exact in this Lua, else
-- (LuaJIT, beyond 2^53) the canonical decimal string; nil if not int64.
local function decimal(s)
  if not s:match("^%-?%d+$") then return nil end
  local neg = s:sub(1, 1) == "-"
  local digits = s:gsub("^%-?0*", "")
  if digits == "" then return 0 end
  if #digits > 19 or (#digits == 19 and digits > (neg and "9223372036854775808" or "9223372036854775807")) then
    return nil
  end
  if LUA54 then return math.tointeger(tonumber(s)) end
  -- LuaJIT: compare the digits, not the double (9007199254740993 would
  -- round to 2^53 and pass a numeric test)
  if #digits < 16 or (#digits == 16 and digits <= "9007199254740992") then return tonumber(s) end
  return (neg and "-" or "") .. digits
end
values.decimal = decimal

--- values.binary(s): s as a BINARY cell.
function values.binary(s)
  if type(s) ~= "string" then error("otskit.store: binary() takes a string", 2) end
  return typed("BINARY", s)
end

--- values.integer(v): v (integral number or decimal string) as an INTEGER.
function values.integer(v)
  local n
  if type(v) == "string" then n = decimal(v)
  elseif type(v) == "number" and v == math.floor(v) and v >= -2^63 and v < 2^63 then
    n = LUA54 and math.tointeger(v) or v
  end
  if n == nil then error("otskit.store: integer() takes an int64 number or decimal string", 2) end
  return typed("INTEGER", n)
end

--- values.double(v): v as a DOUBLE.
function values.double(v)
  if type(v) ~= "number" then error("otskit.store: double() takes a number", 2) end
  return typed("DOUBLE", v + 0.0)
end

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
    if v == math.floor(v) and v >= -2^63 and v < 2^63 then return "INTEGER", v end
    return "DOUBLE", v
  end
  if t == "table" and getmetatable(v) == Typed then
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
