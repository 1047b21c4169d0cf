--- otskit.key -- primary-key designs from the Tablestore best practices:
-- order-preserving binary tuples (FoundationDB tuple layer), spliced keys,
-- hash prefixes, buckets and key checks. Hot paths are in C (csrc/core/tuple.c,
-- csrc/core/splice.c); this module adds the validation and the small helpers.
local core = require "otskit.core"
local C = core.key

local key = {}
local fast   -- the FFI functions (otskit.key_ffi) when installed, below

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

--- key.int(v) -> an integer element from a number, a decimal string
-- ("-9223372036854775808") or a LuaJIT int64 cdata (123LL): the way to
-- give LuaJIT a 64-bit integer that a double cannot hold. Raises unless v
-- is an int64.
function key.int(v)
  if type(v) == "cdata" then v = tostring(v):gsub("U?LL$", "") end
  return C.int(v)
end

--- key.double(x) -> a double element, even when x is integral (3.0).
key.double = C.double

--- key.pack(t) -> bytes. t is an array of elements (t.n, when given, is
-- the length, at most 1 000 000 -- more raises at once -- and nils inside
-- count as key.null):
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
-- key.pack for canonical encodings (pack(unpack(b)) == b, NaNs aside: pack
-- writes the one canonical NaN): integers as
-- numbers (LuaJIT: key.int("<decimal>") beyond +-2^53), doubles as numbers
-- (key.double(x) when integral, so they stay doubles), text as key.text.
-- More than 1 000 000 elements is BadTuple (memory stays bounded).
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

local function raise(fmt, ...)
  error("otskit.key: " .. fmt:format(...), 3)
end

local function is_int(v)
  return (type(v) == "number" or type(v) == "string") and pcall(C.int, v)
end

local function show(b)
  if b:match("^[%g ]$") then return ("'%s'"):format(b) end
  return ("0x%02X"):format(b:byte())
end

---------------------------------------------------------------------------
-- Spliced keys
---------------------------------------------------------------------------

--- key.splice{ sep = ",", {name, "int", width = 6 [, min = 0]},
--              {name, "string" [, charset = "alnum"]}, ... } -> encoder
-- A compiled encoder of spliced STRING keys whose byte order equals the
-- tuple order. Int fields: v - min as width zero-padded digits (min may be
-- negative). String fields: bytes of charset "alnum" (default), "digits",
-- "hex" (0-9a-f), "lower", "upper", or any other string = that set of
-- bytes. Raises when sep is not lower than every byte a string field
-- allows (naming the field), or is a digit with an int field.
--   enc:encode(t) -> key | nil, msg, code   t = {v1, v2, ...} or {name = v}
--   enc:encode_many(ts) -> {keys} | nil, "tuple <i>: msg", code
--   enc:decode(key) -> {v1, v2, ...} | nil, msg, "BadKey"
-- codes: OutOfCharset, IntTooWide (below min, too many digits, beyond
-- int64), NotInteger, KeyTooLong (over 1024 bytes). A value of the wrong
-- Lua type (nil, a table, a number for a string field) raises.
function key.splice(spec)
  if type(spec) ~= "table" then raise("splice: expected a table, got %s", type(spec)) end
  local sep = spec.sep
  if sep == nil then sep = "," end
  if type(sep) ~= "string" or #sep ~= 1 then raise("splice: sep must be one byte") end
  local fields, seen = {}, {}
  if #spec < 1 or #spec > 16 then raise("splice: 1..16 fields, got %d", #spec) end
  for i, f in ipairs(spec) do
    if type(f) ~= "table" then raise("splice: field %d must be a table", i) end
    local name, kind = f[1] or f.name, f[2] or f.type
    if type(name) ~= "string" or name == "" or #name > 255 or name:find("\0", 1, true) then
      raise("splice: field %d needs a name (1..255 bytes, no NUL)", i)
    end
    if seen[name] then raise("splice: field '%s' appears twice", name) end
    seen[name] = true
    if kind == "int" then
      local w = f.width
      if type(w) ~= "number" or w ~= math.floor(w) or w < 1 or w > 19 then
        raise("splice: field '%s': width must be 1..19", name)
      end
      local min = f.min
      if kinds[getmetatable(min)] == "int" then min = tostring(min) end
      if min ~= nil and not is_int(min) then
        raise("splice: field '%s': min must be an int64", name)
      end
      fields[i] = { name = name, kind = "int", width = w, min = min }
    elseif kind == "string" then
      local cs = f.charset
      if cs == nil then cs = "alnum" end
      if type(cs) ~= "string" or cs == "" then
        raise("splice: field '%s': charset must be a non-empty string", name)
      end
      fields[i] = { name = name, kind = "string", charset = cs }
    else
      raise("splice: field '%s': type must be \"int\" or \"string\"", name)
    end
  end
  local enc, at, bad = C.splice_new(sep, fields)
  if not enc then
    local f = fields[at]
    if f.kind == "int" then
      raise("splice: sep %s is a digit, which int field '%s' writes", show(sep), f.name)
    end
    raise("splice: sep %s is not lower than %s, which field '%s' (charset '%s') allows: " ..
          "keys would not sort like the tuples ('a100' .. sep must sort before 'a1001'); " ..
          "choose a sep below every allowed byte, such as ','",
          show(sep), show(bad), f.name, f.charset)
  end
  if fast then fast.register_splice(enc, fields) end
  return enc
end

---------------------------------------------------------------------------
-- Hash prefixes and buckets
---------------------------------------------------------------------------

--- key.hash_prefix{ algo = "md5" | "xxh3" | "crc32c", len = 4 } -> encoder
-- that scatters sequential keys: len lowercase hex digits of the digest
-- (1..32 md5, 1..16 xxh3, 1..8 crc32c) are prepended. Keys are byte
-- strings; integers are hashed and appended as their decimal text.
--   hp:prefix(v) -> the len hex digits       hp:encode(v) -> prefix .. v
--   hp:encode_many(vs) -> {prefix .. v, ...}
--   hp:decode(s) -> v (as a string) | nil, msg, "BadPrefix"
function key.hash_prefix(spec)
  spec = spec or {}
  if type(spec) ~= "table" then raise("hash_prefix: expected a table") end
  local algo = spec.algo or "md5"
  if algo ~= "md5" and algo ~= "xxh3" and algo ~= "crc32c" then
    raise("hash_prefix: algo must be md5, xxh3 or crc32c")
  end
  local hp = C.hash_prefix_new(algo, spec.len or 4)
  if fast then fast.register_prefix(hp, algo, spec.len or 4) end
  return hp
end

local Buckets = {}
Buckets.__index = Buckets

--- key.buckets{ n = 16, by = "mod" | "hash" [, width] [, algo = "md5"] }
-- -> b, to spread time-ordered writes over n buckets (the first key column).
--   b:of(v) -> bucket 0..n-1: "mod": v mod n for an int64 v (never
--             negative); "hash": the first 8 digest bytes of v (4 for
--             crc32c; integers as decimal text), big-endian, mod n
--   b:all() -> {0, 1, ..., n-1}, for fan-out reads (n <= 2^20, else raises)
--   b:label(i) -> i zero-padded to width digits (default: the digits of
--             n-1), for a bucket inside a STRING key
function key.buckets(spec)
  if type(spec) ~= "table" then raise("buckets: expected a table") end
  local n, by, algo = spec.n or 16, spec.by or "mod", spec.algo or "md5"
  if type(n) ~= "number" or n ~= math.floor(n) or n < 1 or n > 2147483647 then
    raise("buckets: n must be 1..2147483647")
  end
  if by ~= "mod" and by ~= "hash" then raise("buckets: by must be \"mod\" or \"hash\"") end
  if algo ~= "md5" and algo ~= "xxh3" and algo ~= "crc32c" then
    raise("buckets: algo must be md5, xxh3 or crc32c")
  end
  local need = #("%d"):format(n - 1)
  local width = spec.width or need
  if type(width) ~= "number" or width ~= math.floor(width) or width < need or width > 19 then
    raise("buckets: width must be %d..19 for n = %d", need, n)
  end
  return setmetatable({ n = n, by = by, algo = algo, width = width,
                        fmt = "%0" .. ("%d"):format(width) .. "d" }, Buckets)
end

function Buckets:of(v) return C.bucket(self.by, self.algo, self.n, v) end

function Buckets:all()
  -- a list of every bucket is for fan-out reads (merge.read takes 1024
  -- sources): past 2^20 buckets it is refused at once, not built
  if self.n > 1048576 then raise("buckets: all() lists at most 1048576 buckets, n is %d", self.n) end
  local t = {}
  for i = 0, self.n - 1 do t[i + 1] = i end
  return t
end

function Buckets:label(i)
  if type(i) ~= "number" or i ~= math.floor(i) or i < 0 or i >= self.n then
    raise("buckets: label of a bucket 0..%d", self.n - 1)
  end
  return self.fmt:format(i)
end

---------------------------------------------------------------------------
-- Helpers
---------------------------------------------------------------------------

--- key.reverse_ts(ts [, max]) -> max - ts (max defaults to 2^63-1), so the
-- newest rows sort first. An int64 (a decimal string on LuaJIT when it
-- exceeds 2^53: pass e.g. max = 9999999999999 for millisecond timestamps
-- to keep numbers exact and 13 digits wide). Raises unless 0 <= ts <= max.
key.reverse_ts = C.reverse_ts

--- key.prefix_range(p) -> start, stop: the range [start, stop) of every
-- key that begins with the bytes p (p itself included). stop is nil when
-- no key bound exists (p empty or all 0xFF): read to INF_MAX.
function key.prefix_range(p)
  if type(p) ~= "string" then raise("prefix_range: expected a string, got %s", type(p)) end
  local s = p:gsub("\255+$", "")
  if s == "" then return p, nil end
  return p, s:sub(1, -2) .. string.char(s:byte(-1) + 1)
end

--- key.compare(a, b) -> -1, 0 or 1: the byte order Tablestore uses for
-- STRING and BINARY keys (memcmp; a prefix sorts first). Lua 5.4's string
-- < follows the C locale, so compare keys with this instead.
key.compare = C.compare

--- key.sort(keys) -> keys, sorted in place in byte order.
function key.sort(keys)
  local cmp = C.compare
  table.sort(keys, function(a, b) return cmp(a, b) < 0 end)
  return keys
end

local function bad_pk(fmt, ...) return nil, fmt:format(...), "BadPrimaryKey" end

--- key.check_pk(pk) -> true | nil, msg, code. pk in the SDK form
-- {{name, value}, ...}: 1..4 columns; names 1..255 bytes of [A-Za-z0-9_]
-- starting with a letter or '_', no repeats; values STRING/BINARY (a Lua
-- string or key.text) of at most 1024 bytes, or INTEGER (an integral
-- number within int64, or key.int). codes: BadPrimaryKey, KeyTooLong.
function key.check_pk(pk)
  if type(pk) ~= "table" then return bad_pk("primary key must be an array of {name, value}") end
  local n = #pk
  if n < 1 or n > 4 then return bad_pk("primary key has %d columns, must have 1..4", n) end
  local seen = {}
  for i = 1, n do
    local col = pk[i]
    if type(col) ~= "table" then return bad_pk("column %d must be {name, value}", i) end
    local name, v = col[1], col[2]
    if type(name) ~= "string" or #name > 255 or not name:match("^[%a_][%w_]*$") then
      return bad_pk("column %d: bad name %s (1..255 bytes of [A-Za-z0-9_], first a letter or '_')",
                    i, type(name) == "string" and ("%q"):format(name) or type(name))
    end
    if seen[name] then return bad_pk("column '%s' appears twice", name) end
    seen[name] = true
    local k = key.kind(v)
    if k == "bytes" or k == "text" then
      local len = #tostring(v)
      if len > 1024 then
        return nil, ("column '%s': %d bytes, over the 1024-byte key limit"):format(name, len), "KeyTooLong"
      end
    elseif k ~= "int" then
      if v == nil then return bad_pk("column '%s' has no value", name) end
      return bad_pk("column '%s': %s is not a key type (STRING, BINARY or INTEGER within int64)",
                    name, k == "double" and "a non-integral or out-of-range number" or (k or type(v)))
    end
  end
  return true
end

---------------------------------------------------------------------------
-- FFI fast paths
---------------------------------------------------------------------------

-- The C API functions the FFI paths replace (kept for the specs and the
-- benches, and called by the FFI paths for input they do not handle).
local function methods_of(ud) return getmetatable(ud).__index end
local prefix_methods = methods_of(C.hash_prefix_new("md5", 4))
local splice_methods = methods_of(C.splice_new(",", { { name = "x", kind = "int", width = 1 } }))
key._capi = {
  pack = C.pack, pack_desc = C.pack_desc, of = Buckets.of,
  prefix = { prefix = prefix_methods.prefix, encode = prefix_methods.encode,
             encode_many = prefix_methods.encode_many },
  splice = { encode = splice_methods.encode, encode_many = splice_methods.encode_many },
}

--- key.path: "ffi" when key.pack, key.pack_desc, hp:prefix / hp:encode /
-- hp:encode_many, enc:encode / enc:encode_many and b:of call the C core
-- through LuaJIT's FFI (compiled by the JIT), else "capi" (Lua 5.4, no
-- FFI, or OTSKIT_NO_FFI=1). Both give identical results and errors.
-- key.ffi_why says why the FFI path is off.
key.path = "capi"
do
  local kf = require "otskit.key_ffi"
  if kf.available then
    fast = kf.install(C, key._capi)
    key._ffi = fast
    key.path = "ffi"
    key.pack, key.pack_desc, Buckets.of = fast.pack, fast.pack_desc, fast.of
    for k, fn in pairs(fast.prefix) do prefix_methods[k] = fn end
    for k, fn in pairs(fast.splice) do splice_methods[k] = fn end
  else
    key.ffi_why = kf.why
  end
end

return key
