--- otskit.key_ffi -- LuaJIT FFI versions of the hot key functions (tuple
-- pack, hash-prefix encode, splice encode, bucket of), over the C ABI in
-- csrc/ffi/otskit_ffi.h: the same C code as the Lua C API binding, but calls
-- the JIT can compile. Each function handles the inputs it can encode and
-- hands everything else to the C API function it replaces, so errors
-- (raised, or nil, msg, code) are the binding's own, word for word.
-- otskit.key installs these under LuaJIT; spec/key_ffi_spec.lua checks
-- both paths give identical results over random inputs.
local F = require "otskit.ffi"

local M = { available = F.lib ~= nil, why = F.why }
if not F.lib then return M end

local ffi, lib = F.ffi, F.lib
local floor, type, rawget, getmetatable, select = math.floor, type, rawget, getmetatable, select
local ffistring = ffi.string

local ALGO = { md5 = 0, xxh3 = 1, crc32c = 2 }
local TWO63 = 9223372036854775808

-- Scratch outputs; none of the functions below can yield or re-enter
-- between filling one and copying it out.
local OUT_KEEP = 4096
local out = ffi.new("char[?]", OUT_KEEP)
local function outbuf(n)
  if n <= OUT_KEEP then return out end
  return ffi.new("char[?]", n)
end
local nbuf = ffi.new("char[24]")
local i64 = ffi.new("int64_t[1]")
local sout = ffi.new("otskit_splice_out")
local bad = ffi.new("size_t[1]")
local lenp = ffi.new("size_t[1]")
local tb = ffi.gc(lib.otskit_tuple_new(), lib.otskit_tuple_free)
assert(tb ~= nil, "otskit.key: out of memory")

-- An int64 the way otsk_toint64 reads one: an integral number within
-- int64, or a decimal string; nil when it is not one.
local function toint64(v)
  local t = type(v)
  if t == "number" then
    if v == floor(v) and v >= -TWO63 and v < TWO63 then return v end
    return nil
  elseif t == "string" then
    if lib.otskit_parse_int64(v, #v, i64) == 1 then return i64[0] end
  end
  return nil
end
M.toint64 = toint64

--- M.install(C, capi) -> the FFI functions: pack, pack_desc,
-- prefix = {prefix, encode, encode_many}, splice = {encode, encode_many},
-- of (Buckets:of), and register_prefix / register_splice, which record
-- what the FFI encoders need about an encoder key.lua just built. capi
-- holds the functions being replaced, called for anything else.
function M.install(C, capi)
  local f = { prefix = {}, splice = {} }
  local NULL = C.null
  local mt_text = getmetatable(C.text(""))
  local mt_int = getmetatable(C.int(0))
  local mt_double = getmetatable(C.double(0))

  ---------------------------------------------------------------- tuples
  -- Appends v; false for anything the C API must handle (or refuse).
  local function put(v, desc)
    local t = type(v)
    if t == "string" then
      return lib.otskit_tuple_put_bytes(tb, v, #v) == 0
    elseif t == "number" then
      if v == floor(v) and v >= -TWO63 and v < TWO63 and not (v == 0 and 1 / v < 0) then
        return lib.otskit_tuple_put_int(tb, v) == 0
      end
      return lib.otskit_tuple_put_double(tb, v) == 0
    elseif t == "boolean" then
      return lib.otskit_tuple_put_bool(tb, v and 1 or 0) == 0
    elseif t == "nil" or (t == "userdata" and v == NULL) then
      -- (not v == nil: a NULL cdata pointer equals nil in LuaJIT, and the
      -- C API refuses cdata: both paths must agree)
      return lib.otskit_tuple_put_nil(tb, desc) == 0
    elseif t == "table" then
      local mt, x = getmetatable(v), rawget(v, 1)
      if mt == mt_text and type(x) == "string" then
        return lib.otskit_tuple_put_text(tb, x, #x) == 0
      elseif mt == mt_int then
        local iv = toint64(x)
        return iv ~= nil and lib.otskit_tuple_put_int(tb, iv) == 0
      elseif mt == mt_double and type(x) == "number" then
        return lib.otskit_tuple_put_double(tb, x) == 0
      end
    end
    return false
  end

  local function packer(desc, fallback)
    return function(...)
      local t = ...
      if type(t) ~= "table" or getmetatable(t) ~= nil then return fallback(...) end
      local n = rawget(t, "n")
      if type(n) == "number" then
        if not (n >= 0 and n <= 1000000) or n ~= floor(n) then return fallback(t) end
      elseif n ~= nil then
        return fallback(t) -- raises: tuple.n must be a number
      else
        n = #t
      end
      lib.otskit_tuple_reset(tb)
      local ok
      if n <= 4 then
        -- unrolled (a primary key has 1 to 4 columns): a loop that runs once
        -- per call is where LuaJIT starts a trace it then aborts
        ok = (n < 1 or put(rawget(t, 1), desc)) and (n < 2 or put(rawget(t, 2), desc))
          and (n < 3 or put(rawget(t, 3), desc)) and (n < 4 or put(rawget(t, 4), desc))
      else
        ok = true
        for i = 1, n do
          if not put(rawget(t, i), desc) then ok = false; break end
        end
      end
      if not ok then
        lib.otskit_tuple_reset(tb)
        return fallback(t)
      end
      local p = lib.otskit_tuple_finish(tb, desc, lenp)
      if p == nil then lib.otskit_tuple_reset(tb); return fallback(t) end
      local s = ffistring(p, lenp[0])
      lib.otskit_tuple_reset(tb)
      return s
    end
  end
  f.pack = packer(0, capi.pack)
  f.pack_desc = packer(1, capi.pack_desc)

  ---------------------------------------------------------- hash prefixes
  local pinfo = setmetatable({}, { __mode = "k" })   -- encoder -> {algo, len}
  function f.register_prefix(hp, algo, len) pinfo[hp] = { ALGO[algo], len } end

  -- The bytes of key v (a string, or an integer as decimal text) as
  -- pointer/string and length; nil when the C API must handle v.
  local function keybytes(v)
    if type(v) == "string" then return v, #v end
    local iv = type(v) == "number" and toint64(v)
    if not iv then return nil end
    return nbuf, lib.otskit_int64_text(iv, nbuf)
  end

  local cp = capi.prefix
  function f.prefix.encode(self, ...)
    local info, v = pinfo[self], ...
    local p, n
    if info and select("#", ...) > 0 then p, n = keybytes(v) end
    if not p then return cp.encode(self, ...) end
    local len = info[2]
    local total = len + n
    local buf = outbuf(total)
    lib.otskit_prefix_encode(info[1], len, p, n, buf)
    return ffistring(buf, total)
  end

  function f.prefix.prefix(self, ...)
    local info, v = pinfo[self], ...
    local p, n
    if info and select("#", ...) > 0 then p, n = keybytes(v) end
    if not p then return cp.prefix(self, ...) end
    local buf = outbuf(info[2] + n)
    lib.otskit_prefix_encode(info[1], info[2], p, n, buf)
    return ffistring(buf, info[2])
  end

  function f.prefix.encode_many(self, ...)
    local info, vs = pinfo[self], ...
    if not info or type(vs) ~= "table" then return cp.encode_many(self, ...) end
    local algo, len = info[1], info[2]
    local r = {}
    for k = 1, #vs do
      local p, n = keybytes(rawget(vs, k))
      if not p then return cp.encode_many(self, ...) end
      local total = len + n
      local buf = outbuf(total)
      lib.otskit_prefix_encode(algo, len, p, n, buf)
      r[k] = ffistring(buf, total)
    end
    return r
  end

  ---------------------------------------------------------- spliced keys
  local sinfo = setmetatable({}, { __mode = "k" })  -- encoder -> compiled fields

  -- Each encoder gets straight-line Lua generated for its fields: a loop of
  -- 2-4 iterations per key sometimes became a root trace of its own
  -- (depending on where hot counters land), and every key then left that
  -- trace through a side exit: 34 or 190 ns per key from run to run.
  local function compile_splice(fields)
    local src = { "local rawget, toint64, lib, sout, bad = ...\n",
                  "return function(sp, t)\n  local v, iv\n  sout.len = 0\n" }
    for i, fd in ipairs(fields) do
      src[#src + 1] = ("  v = rawget(t, %d); if v == nil then v = t[%q] end\n"):format(i, fd.name)
      if fd.kind == "int" then
        src[#src + 1] = "  iv = toint64(v); if iv == nil then return false end\n"
        src[#src + 1] = ("  if lib.otskit_splice_put_int(sp, %d, iv, sout) ~= 0 then return false end\n"):format(i - 1)
      else
        src[#src + 1] = "  if type(v) ~= \"string\" then return false end\n"
        src[#src + 1] = ("  if lib.otskit_splice_put_string(sp, %d, v, #v, sout, bad) ~= 0 then return false end\n"):format(i - 1)
      end
    end
    src[#src + 1] = "  return true\nend\n"
    return assert(load(table.concat(src), "=otskit.key_ffi.splice"))(rawget, toint64, lib, sout, bad)
  end

  function f.register_splice(enc, fields)
    sinfo[enc] = { ptr = ffi.cast("const otskit_splice *", enc:_ptr()), put = compile_splice(fields) }
  end

  -- Encodes tuple t into sout; false when the C API must handle it.
  local function encode_one(s, t)
    if type(t) ~= "table" then return false end
    return s.put(s.ptr, t)
  end

  local cs = capi.splice
  function f.splice.encode(self, ...)
    local s = sinfo[self]
    if not s or not encode_one(s, (...)) then return cs.encode(self, ...) end
    return ffistring(sout.buf, sout.len)
  end

  function f.splice.encode_many(self, ...)
    local s, ts = sinfo[self], ...
    if not s or type(ts) ~= "table" then return cs.encode_many(self, ...) end
    local r = {}
    for k = 1, #ts do
      if not encode_one(s, rawget(ts, k)) then return cs.encode_many(self, ...) end
      r[k] = ffistring(sout.buf, sout.len)
    end
    return r
  end

  --------------------------------------------------------------- buckets
  local of = capi.of
  function f.of(self, v)
    local n = self.n
    if self.by == "mod" then
      local iv = toint64(v)
      if iv == nil then return of(self, v) end
      return lib.otskit_bucket_mod(iv, n)
    end
    local algo = ALGO[self.algo]
    local p, len
    if algo then p, len = keybytes(v) end
    if not p then return of(self, v) end
    return lib.otskit_bucket_hash(algo, p, len, n)
  end

  return f
end

return M
