--- otskit.key -- primary-key designs from the Tablestore best practices:
-- order-preserving binary tuples (FoundationDB tuple layer), spliced keys,
-- hash prefixes, buckets and key checks. Hot paths are in C (csrc/tuple.c,
-- csrc/splice.c); this module adds the validation and the small helpers.
local core = require "otskit.core"
local C = core.key

local key = {}

---------------------------------------------------------------------------
-- Tuples
---------------------------------------------------------------------------

--- key.null: the nil element of a tuple (Lua arrays cannot hold nil).
-- key.unpack returns it for every nil element; key.pack also accepts real
-- nils when the tuple has an explicit length t.n.
key.null = C.null

--- key.text(s) -> a text-string element (type code 0x02). Plain Lua
-- strings pack as byte strings (0x01); unpack returns text elements as
-- key.text objects, so the two stay distinct. tostring(t) is the string.
key.text = C.text

--- key.int(v) -> an integer element from a number or a decimal string
-- ("-9223372036854775808"): the way to give LuaJIT a 64-bit integer that
-- a double cannot hold. Raises unless v is an int64.
key.int = C.int

--- key.double(x) -> a double element, even when x is integral (3.0).
key.double = C.double

--- key.pack(t) -> bytes. t is an array of elements (t.n, when given, is
-- the length and nils inside count as key.null):
--   string -> byte string     key.text(s) -> text string
--   number -> integer if it is one exactly (a 5.4 integer, or an integral
--             float within int64 other than -0.0), else double; the same
--             rule on 5.4 and LuaJIT, so both give the same bytes
--   key.int(v), key.double(x) -> force the type
--   boolean, key.null
-- Comparing packed tuples as byte strings gives the tuple order: types
-- nil < bytes < text < integers < doubles < false < true, then values
-- (doubles by their IEEE bits: -inf < -0.0 < 0.0 < inf < NaN; every NaN
-- packs as the one quiet NaN 0x7FF8000000000000, because LuaJIT keeps no
-- NaN sign, so NaN sorts after +inf on both interpreters).
-- Raises for any other value.
key.pack = C.pack

--- key.unpack(bytes) -> t | nil, message, "BadTuple". The inverse of
-- key.pack for canonical encodings (pack(unpack(b)) == b): integers as
-- numbers (LuaJIT: key.int("<decimal>") beyond +-2^53), doubles as numbers
-- (key.double(x) when integral, so they stay doubles), text as key.text.
key.unpack = C.unpack

--- key.pack_desc(t) / key.unpack_desc(bytes): the descending variant; byte
-- order is the reverse tuple order (use for newest-first BINARY columns).
-- Not FoundationDB-compatible: nil is 00 01, an end mark 00 00 is added,
-- then every byte is inverted.
key.pack_desc = C.pack_desc
key.unpack_desc = C.unpack_desc

local kinds = {}

--- key.kind(v) -> how key.pack would encode v: "nil", "bytes", "text",
-- "int", "double", "bool", or nil for values it refuses.
function key.kind(v)
  local t = type(v)
  if t == "string" then return "bytes" end
  if t == "boolean" then return "bool" end
  if v == nil or v == C.null then return "nil" end
  if t == "table" then return kinds[getmetatable(v)] end
  if t == "number" then
    local b = C.pack({ v }):byte(1)
    return b == 0x21 and "double" or "int"
  end
  return nil
end
kinds[getmetatable(C.text(""))] = "text"
kinds[getmetatable(C.int(0))] = "int"
kinds[getmetatable(C.double(0))] = "double"

return key
