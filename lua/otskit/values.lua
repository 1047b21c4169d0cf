--- otskit.values -- the typed values and sentinels every layer of otskit
-- shares (the store, the wire codec, the client, the patterns), with no
-- dependency on any of them: plain Lua, loads nothing.
--
-- Lua forms of Tablestore's cell types: a string is STRING; a boolean is
-- BOOLEAN; a number is INTEGER when integral (Lua 5.4: an integer
-- subtype) else DOUBLE. values.binary(s), values.integer(v),
-- values.double(v) force a type (integer(v) takes a decimal string for
-- int64 values LuaJIT cannot hold). The sentinels INF_MIN / INF_MAX (the
-- open ends of a key column in a range bound) and AUTO_INCREMENT (the
-- value of an auto-increment key column in a put) are compared by
-- identity: otskit.store, otskit.wire and otskit.client re-export these
-- very objects.
local values = {}

local LUA54 = math.type ~= nil

local function sentinel(name)
  return setmetatable({}, { __tostring = function() return name end })
end

--- values.INF_MIN, values.INF_MAX: below / above every value of a key
-- column, in get_range bounds only.
values.INF_MIN = sentinel("INF_MIN")
values.INF_MAX = sentinel("INF_MAX")

--- values.AUTO_INCREMENT: the value of an AUTO_INCREMENT key column in a
-- put; the store (or the service) fills it in.
values.AUTO_INCREMENT = sentinel("AUTO_INCREMENT")

local Typed = {}
Typed.__index = Typed
Typed.__tostring = function(t) return t.type .. "(" .. tostring(t.value) .. ")" end

local function typed(ty, v) return setmetatable({ type = ty, value = v }, Typed) end

--- values.is_typed(v) -> true when v is a value made by binary(),
-- integer() or double() (or decoded as one by otskit.wire).
function values.is_typed(v) return getmetatable(v) == Typed end

--- values.decimal(s) -> the int64 the decimal string s spells: a number
-- when this Lua holds it exactly, else (LuaJIT, beyond 2^53) the
-- canonical decimal string; nil when s is not an int64.
function values.decimal(s)
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
local decimal = values.decimal

--- values.binary(s) -> s as a BINARY value. Raises unless s is a string.
function values.binary(s)
  if type(s) ~= "string" then error("otskit.values: binary() takes a string", 2) end
  return typed("BINARY", s)
end

--- values.integer(v) -> v (an integral number or a decimal string) as an
-- INTEGER value. Raises unless v is an int64.
function values.integer(v)
  local n
  if type(v) == "string" then n = decimal(v)
  elseif type(v) == "number" and v == math.floor(v) and v >= -2^63 and v < 2^63 then
    n = LUA54 and math.tointeger(v) or v
  end
  if n == nil then error("otskit.values: integer() takes an int64 number or decimal string", 2) end
  return typed("INTEGER", n)
end

--- values.double(v) -> v as a DOUBLE value (also when integral: 3.0).
-- Raises unless v is a number.
function values.double(v)
  if type(v) ~= "number" then error("otskit.values: double() takes a number", 2) end
  return typed("DOUBLE", v + 0.0)
end

--- values.key_cell(name, type, v) -> one primary-key cell as a read gives
-- it back (the store's rows and otskit.wire's decoded rows alike):
-- {name, v} when the value says its type, {name, v, type} when v is a
-- string of another type: a BINARY value, or on LuaJIT an INTEGER beyond
-- 2^53 as decimal text. Such a cell passed back (a next key, a row's key)
-- keeps its type on the wire and in the store.
function values.key_cell(name, ty, v)
  if type(v) == "string" and (ty == "BINARY" or ty == "INTEGER") then return { name, v, ty } end
  return { name, v }
end

local function is_int(v)
  if LUA54 then return math.type(v) == "integer" end
  return v == math.floor(v) and v >= -2^63 and v < 2^63
end

--- values.retype(v, type) -> v as a value of the named type (a read
-- cell's type tag, see key_cell) | nil, msg when v does not have it. A
-- string takes STRING, BINARY, or INTEGER when it spells an int64; a
-- number takes DOUBLE, or INTEGER when it is one (5.4: an integer
-- subtype); a boolean BOOLEAN; a typed value its own type. type nil: v.
-- The same rule otskit.wire applies to a tagged cell it encodes.
function values.retype(v, ty)
  if ty == nil then return v end
  local t = type(v)
  if t == "string" then
    if ty == "STRING" then return v end
    if ty == "BINARY" then return typed("BINARY", v) end
    if ty == "INTEGER" then
      local n = decimal(v)
      if n ~= nil then return typed("INTEGER", n) end
      return nil, "an INTEGER cell's text is not an int64"
    end
  elseif t == "number" then
    if ty == "DOUBLE" then return typed("DOUBLE", v + 0.0) end
    if ty == "INTEGER" and is_int(v) then return v end
  elseif t == "boolean" then
    if ty == "BOOLEAN" then return v end
  elseif getmetatable(v) == Typed and v.type == ty then
    return v
  end
  return nil, "a cell's value does not have its type " .. tostring(ty)
end

values.LUA54 = LUA54
return values
