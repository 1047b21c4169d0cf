-- otskit.key: tuples, spliced keys, hash prefixes, buckets, helpers.
local key = require "otskit.key"
local helper = require "spec.helper"

local function hex(s)
  return (s:gsub(".", function(c) return ("%02x"):format(c:byte()) end))
end

-- Byte-wise comparison in plain Lua (never the locale's string <): -1, 0, 1.
local function bytecmp(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = a:byte(i), b:byte(i)
    if x ~= y then return x < y and -1 or 1 end
  end
  if #a == #b then return 0 end
  return #a < #b and -1 or 1
end

-- Decimal int64 strings compared as integers: -1, 0, 1.
local function deccmp(a, b)
  local na, nb = a:sub(1, 1) == "-", b:sub(1, 1) == "-"
  if na ~= nb then return na and -1 or 1 end
  local ma, mb = na and a:sub(2) or a, nb and b:sub(2) or b
  local c
  if #ma ~= #mb then c = #ma < #mb and -1 or 1 else c = bytecmp(ma, mb) end
  return na and -c or c
end

-- The reference model: the type, and a comparable value, of an element.
local rank = { ["nil"] = 0, bytes = 1, text = 2, int = 3, double = 4, bool = 5 }
local function model(v)
  local k = key.kind(v)
  if k == "int" then
    if type(v) == "number" then return k, ("%d"):format(v) end
    return k, tostring(v)
  elseif k == "double" then
    local x = type(v) == "table" and v[1] or v
    return k, x
  elseif k == "text" then return k, tostring(v)
  elseif k == "bool" then return k, v and 1 or 0
  end
  return k, v
end

local function dblcmp(x, y)
  -- NaN is the greatest double (one canonical NaN); -0.0 < 0.0
  local nx, ny = x ~= x, y ~= y
  if nx or ny then
    if nx and ny then return 0 end
    return nx and 1 or -1
  end
  if x == 0 and y == 0 then
    local sx, sy = 1 / x < 0, 1 / y < 0
    if sx == sy then return 0 end
    return sx and -1 or 1
  end
  if x == y then return 0 end
  return x < y and -1 or 1
end

local function elemcmp(a, b)
  local ka, va = model(a)
  local kb, vb = model(b)
  if ka ~= kb then return rank[ka] < rank[kb] and -1 or 1 end
  if ka == "nil" then return 0 end
  if ka == "int" then return deccmp(va, vb) end
  if ka == "double" then return dblcmp(va, vb) end
  if ka == "bool" then return va == vb and 0 or (va < vb and -1 or 1) end
  return bytecmp(va, vb)
end

local function tuplecmp(a, b)
  for i = 1, math.min(#a, #b) do
    local c = elemcmp(a[i], b[i])
    if c ~= 0 then return c end
  end
  if #a == #b then return 0 end
  return #a < #b and -1 or 1
end

-- Random elements, heavy on the edges.
local int_edges = {
  "0", "1", "-1", "255", "256", "-255", "-256", "65535", "65536", "-65536",
  "9007199254740992", "9007199254740993", "-9007199254740993",
  "9223372036854775807", "-9223372036854775808", "-9223372036854775807",
  "4294967296", "-4294967296", "72057594037927936", "-72057594037927936",
}
local function rand_elem(r)
  local c = r.int(1, 12)
  if c == 1 then return key.null
  elseif c == 2 then return r.bytes(r.int(0, 4), "\0\1\255ab")
  elseif c == 3 then return key.text(r.bytes(r.int(0, 4), "\0ab\255"))
  elseif c == 4 then return key.int(int_edges[r.int(1, #int_edges)])
  elseif c == 5 then
    -- a random int64 as a decimal string
    local digits = r.bytes(r.int(1, 18), "0123456789"):gsub("^0+(%d)", "%1")
    return key.int((r.int(0, 1) == 0 and "-" or "") .. digits)
  elseif c == 6 then return r.int(-70000, 70000)
  elseif c == 7 then
    local specials = { 0 / 0, -(0 / 0), 1 / 0, -1 / 0, -0.0, 5e-324, -5e-324,
                       1.7976931348623157e308, 0.5, -0.5 }
    return specials[r.int(1, #specials)]
  elseif c == 8 then return (r.float() - 0.5) * 10 ^ r.int(-5, 20)
  elseif c == 9 then return key.double(r.int(-3, 3))
  elseif c == 10 then return r.int(0, 1) == 1
  elseif c == 11 then return r.bytes(r.int(0, 3), "ab")
  else return r.int(-3, 3) end
end

local function rand_tuple(r, n)
  local t = {}
  for i = 1, n or r.int(0, 4) do t[i] = rand_elem(r) end
  return t
end

-- A tuple near t: a shared prefix, then a change, a cut or an extension.
local function near(r, t)
  local u = {}
  local keep = r.int(0, #t)
  for i = 1, keep do u[i] = t[i] end
  local c = r.int(1, 3)
  if c == 1 then u[#u + 1] = rand_elem(r)
  elseif c == 2 then for _ = 1, r.int(1, 2) do u[#u + 1] = rand_elem(r) end end
  return u
end

describe("otskit.key tuples", function()
  it("encodes like the FoundationDB tuple layer", function()
    local cases = {
      { { key.null }, "00" },
      { { "foo\0bar" }, "01666f6f00ff62617200" },
      { { key.text("hello") }, "0268656c6c6f00" },
      { { 0 }, "14" }, { { 1 }, "1501" }, { { -1 }, "13fe" },
      { { 255 }, "15ff" }, { { 256 }, "160100" }, { { -255 }, "1300" },
      { { -256 }, "12feff" },
      { { key.int("9223372036854775807") }, "1c7fffffffffffffff" },
      { { key.int("-9223372036854775808") }, "0c7fffffffffffffff" },
      { { 1.5 }, "21bff8000000000000" }, { { -1.5 }, "214007ffffffffffff" },
      { { key.double(0) }, "218000000000000000" }, { { -0.0 }, "217fffffffffffffff" },
      { { 1 / 0 }, "21fff0000000000000" }, { { 0 / 0 }, "21fff8000000000000" },
      { { false, true }, "2627" },
      { { "a", 1, key.null }, "016100150100" },
    }
    for _, c in ipairs(cases) do assert.equal(c[2], hex(key.pack(c[1]))) end
  end)

  it("packs a number as an integer exactly when it is one, on both interpreters", function()
    assert.equal(key.pack { 3 }, key.pack { 3.0 })
    assert.equal(key.pack { key.int(3) }, key.pack { 3.0 })
    assert.equal("int", key.kind(2 ^ 60))
    assert.equal("double", key.kind(2 ^ 63))
    assert.equal("double", key.kind(-0.0))
    assert.equal("double", key.kind(0.25))
    assert.equal("int", key.kind(key.int("9007199254740993")))
    assert.equal("double", key.kind(key.double(7)))
    assert.equal("text", key.kind(key.text("x")))
    assert.is_nil(key.kind({}))
  end)

  it("byte order of packed tuples equals tuple order (random mixed tuples)", function()
    local r = helper.rng(1)
    for _ = 1, helper.trials(4000) do
      local a = rand_tuple(r)
      local b = r.int(1, 2) == 1 and near(r, a) or rand_tuple(r)
      local want = tuplecmp(a, b)
      local pa, pb = key.pack(a), key.pack(b)
      local got = bytecmp(pa, pb)
      if got ~= want then
        error(("order: %s vs %s: want %d got %d"):format(hex(pa), hex(pb), want, got))
      end
      -- descending: exactly reversed
      assert.equal(-want, bytecmp(key.pack_desc(a), key.pack_desc(b)))
    end
  end)

  it("sorting packed keys sorts the tuples", function()
    local r = helper.rng(2)
    for _ = 1, helper.trials(40) do
      local ts = {}
      for i = 1, 30 do ts[i] = rand_tuple(r) end
      local packed = {}
      for i, t in ipairs(ts) do packed[i] = { key.pack(t), t } end
      table.sort(packed, function(x, y) return bytecmp(x[1], y[1]) < 0 end)
      for i = 2, #packed do
        assert.is_true(tuplecmp(packed[i - 1][2], packed[i][2]) <= 0)
      end
    end
  end)

  it("round-trips: unpack(pack(t)) equals t and pack(unpack(b)) == b", function()
    local r = helper.rng(3)
    for _ = 1, helper.trials(3000) do
      local t = rand_tuple(r)
      for _, v in ipairs { { key.pack, key.unpack }, { key.pack_desc, key.unpack_desc } } do
        local b = v[1](t)
        local u, err = v[2](b)
        assert.is_table(u, err)
        assert.equal(#t, #u)
        for i = 1, #t do
          assert.equal(0, elemcmp(t[i], u[i]))
          assert.equal(key.kind(t[i]), key.kind(u[i]))
        end
        assert.equal(b, v[1](u))
      end
    end
  end)

  it("gives the same bytes on Lua 5.4 and LuaJIT (golden digest of 3000 tuples)", function()
    -- the digest below was computed once; both interpreters must match it
    local hash = require "otskit.hash"
    local r = helper.rng(77)
    local parts = {}
    for i = 1, 3000 do
      local t = {}
      for j = 1, r.int(0, 4) do
        local c = r.int(1, 7)
        if c == 1 then t[j] = r.int(-2 ^ 40, 2 ^ 40)
        elseif c == 2 then t[j] = (r.float() - 0.5) * 2 ^ r.int(-30, 70)
        elseif c == 3 then t[j] = r.bytes(r.int(0, 3), "\0a\255")
        elseif c == 4 then t[j] = key.text(r.bytes(r.int(0, 3), "xy"))
        elseif c == 5 then t[j] = r.int(0, 1) == 1
        elseif c == 6 then t[j] = key.null
        else t[j] = key.int(("%d%09d"):format(r.int(-9223372, 9223372), r.int(0, 999999999))) end
      end
      parts[i] = key.pack(t) .. key.pack_desc(t)
    end
    assert.equal("18831334176714663d740c357f6c0d1c", hash.md5(table.concat(parts, "|"), true))
  end)

  it("keeps text and byte strings apart, and nil as key.null", function()
    local u = key.unpack(key.pack { "a", key.text("a"), key.null })
    assert.equal("a", u[1])
    assert.equal("text", key.kind(u[2]))
    assert.equal("a", tostring(u[2]))
    assert.equal(key.text("a"), u[2])
    assert.equal(key.null, u[3])
    -- explicit length: real nils inside
    assert.equal(key.pack { key.null, 1, key.null }, key.pack { n = 3, nil, 1, nil })
    assert.equal("", key.pack {})
    assert.same({}, key.unpack(""))
  end)

  it("gives 64-bit integers exactly on both interpreters", function()
    for _, d in ipairs { "9223372036854775807", "-9223372036854775808", "9007199254740993" } do
      local u = key.unpack(key.pack { key.int(d) })
      assert.equal(d, tostring(u[1]))
      assert.equal("int", key.kind(u[1]))
    end
    if jit then
      local ll = loadstring("return 9223372036854775807LL, -9223372036854775807LL - 1")
      local a, b = ll()
      assert.equal(key.pack { key.int("9223372036854775807"), key.int("-9223372036854775808") },
                   key.pack { key.int(a), key.int(b) })
    else
      assert.equal(math.maxinteger, key.unpack(key.pack { math.maxinteger })[1])
      assert.equal(math.mininteger, key.unpack(key.pack { math.mininteger })[1])
    end
  end)

  it("refuses malformed bytes with nil, message, BadTuple", function()
    local bad = {
      "\1abc", "\2", "\21", "\28\1\2", "\33\0\0", "\3", "\255", "\11\1",
      "\29", "\21\0", "\19\255", "\28\128\0\0\0\0\0\0\0", "\12\127\255\255\255\255\255\255\254",
    }
    for _, b in ipairs(bad) do
      local u, msg, code = key.unpack(b)
      assert.is_nil(u)
      assert.equal("BadTuple", code)
      assert.matches("^bad tuple: .* %(element %d+, at byte %d+%)$", msg)
    end
    -- the descending form needs its end mark, and nothing after it
    local d = key.pack_desc { 1 }
    assert.is_table(key.unpack_desc(d))
    assert.equal("BadTuple", select(3, key.unpack_desc(d:sub(1, -2))))
    assert.equal("BadTuple", select(3, key.unpack_desc(d .. "\255")))
    assert.equal("BadTuple", select(3, key.unpack_desc(d .. d)))
    -- random bytes: a tuple or BadTuple, never an error
    local r = helper.rng(4)
    for _ = 1, helper.trials(3000) do
      local b = r.bytes(r.int(0, 12), "\0\1\2\20\21\19\33\38\39\255a")
      for _, f in ipairs { key.unpack, key.unpack_desc } do
        local u, _, code = f(b)
        local nan = false
        for _, v in ipairs(u or {}) do
          if key.kind(v) == "double" and v ~= v then nan = true end
        end
        -- canonical bytes re-pack identically (Lua packs one NaN only)
        if not u then assert.equal("BadTuple", code)
        elseif not nan then assert.equal(b, (f == key.unpack and key.pack or key.pack_desc)(u)) end
      end
    end
  end)

  it("raises on programming mistakes", function()
    assert.has_error(function() key.pack("x") end)
    assert.has_error(function() key.pack { {} } end,
      "otskit.key: tuple element 1: unsupported value (use a string, number, boolean, key.null, key.text, key.int or key.double)")
    assert.has_error(function() key.pack { 1, print } end)
    assert.has_error(function() key.pack { n = -1 } end)
    assert.has_error(function() key.int("12x") end)
    assert.has_error(function() key.int(1.5) end)
    assert.has_error(function() key.int(2 ^ 63) end)
    assert.has_error(function() key.text(1) end)
    assert.has_error(function() key.double("1") end)
    assert.has_error(function() key.unpack(nil) end)
  end)
end)


describe("otskit.key.splice", function()
  local seed_tuples = { { 16, "a100", 66661 }, { 54, "a100", 6777 },
                        { 54, "a1001", 6777 }, { 167, "a101", 283408 } }

  it("encodes the seed's card purchases in tuple order", function()
    local sp = key.splice { sep = ",", { "card", "int", width = 6 }, { "seller", "string" },
                            { "amount", "int", width = 6 } }
    local want = { "000016,a100,066661", "000054,a100,006777", "000054,a1001,006777",
                   "000167,a101,283408" }
    assert.same(want, sp:encode_many(seed_tuples))
    for i = 2, #want do assert.equal(-1, bytecmp(want[i - 1], want[i])) end
    assert.same(seed_tuples[3], sp:decode(want[3]))
    -- tuples keyed by field name encode the same
    assert.equal(want[1], sp:encode { card = 16, seller = "a100", amount = 66661 })
  end)

  it("refuses a separator that breaks the order, naming the field", function()
    assert.has_error(function()
      key.splice { sep = ":", { "card", "int", width = 6 }, { "seller", "string", charset = "alnum" } }
    end, "otskit.key: splice: sep ':' is not lower than '0', which field 'seller' (charset 'alnum') allows: " ..
         "keys would not sort like the tuples ('a100' .. sep must sort before 'a1001'); " ..
         "choose a sep below every allowed byte, such as ','")
    assert.has_error(function() key.splice { sep = "a", { "x", "string", charset = "lower" } } end)
    assert.has_error(function() key.splice { sep = "-", { "x", "string", charset = "ab-" } } end)
    assert.has_error(function() key.splice { sep = "5", { "n", "int", width = 3 } } end,
      "otskit.key: splice: sep '5' is a digit, which int field 'n' writes")
    -- ':' is fine when no string field allows anything at or below it
    assert.is_userdata(key.splice { sep = ":", { "n", "int", width = 3 }, { "s", "string", charset = "lower" } })
    assert.is_userdata(key.splice { sep = "-", { "s", "string", charset = "hex" } })
  end)

  it("raises on bad configuration", function()
    assert.has_error(function() key.splice { { "n", "int" } } end, "otskit.key: splice: field 'n': width must be 1..19")
    assert.has_error(function() key.splice { { "n", "int", width = 20 } } end)
    assert.has_error(function() key.splice { { "n", "float", width = 2 } } end)
    assert.has_error(function() key.splice { { "n", "int", width = 2 }, { "n", "string" } } end)
    assert.has_error(function() key.splice { { "s", "string", charset = "" } } end)
    assert.has_error(function() key.splice { sep = ",," , { "s", "string" } } end)
    assert.has_error(function() key.splice {} end)
    assert.has_error(function() key.splice { { "n", "int", width = 2, min = 1.5 } } end)
  end)

  it("returns nil, message, code for values that do not fit", function()
    local sp = key.splice { sep = ",", { "id", "int", width = 3, min = -50 }, { "s", "string", charset = "lower" } }
    assert.equal("000,ab", sp:encode { -50, "ab" })
    assert.equal("999,", sp:encode { 949, "" })
    local cases = {
      { { 950, "a" }, "IntTooWide" }, { { -51, "a" }, "IntTooWide" },
      { { 2 ^ 63, "a" }, "IntTooWide" }, { { 1.5, "a" }, "NotInteger" },
      { { "12x", "a" }, "NotInteger" }, { { 0 / 0, "a" }, "NotInteger" },
      { { 1, "aB" }, "OutOfCharset" }, { { 1, "a,b" }, "OutOfCharset" },
      { { 1, "a\0" }, "OutOfCharset" }, { { 1, ("a"):rep(1021) }, "KeyTooLong" },
    }
    for _, c in ipairs(cases) do
      local k, msg, code = sp:encode(c[1])
      assert.is_nil(k)
      assert.equal(c[2], code)
      assert.is_string(msg)
    end
    assert.equal(1024, #sp:encode { 1, ("a"):rep(1020) })
    local ok, msg, code = sp:encode_many { { 1, "a" }, { 2, "B" } }
    assert.is_nil(ok)
    assert.equal("OutOfCharset", code)
    assert.matches("^tuple 2: field 's'", msg)
    -- wrong Lua types are programming mistakes
    assert.has_error(function() sp:encode { 1 } end, "otskit.key: field 's': expected a string, got nil")
    assert.has_error(function() sp:encode { {}, "a" } end)
    assert.has_error(function() sp:encode "x" end)
    assert.has_error(function() sp:encode_many { { 1, "a" }, 5 } end)
  end)

  it("handles the whole int64 range with min", function()
    local sp = key.splice { { "v", "int", width = 19, min = key.int("-9223372036854775808") } }
    assert.equal(("0"):rep(19), sp:encode { "-9223372036854775808" })
    assert.equal("9223372036854775807", sp:encode { "-1" })
    assert.equal("IntTooWide", select(3, sp:encode { "9223372036854775807" }))
    local back = sp:decode(("0"):rep(19))
    assert.equal("-9223372036854775808", tostring(key.int(back[1])))
    local sp2 = key.splice { { "v", "int", width = 19 } }
    assert.equal("9223372036854775807", sp2:encode { "9223372036854775807" })
    assert.equal("9223372036854775807", tostring(key.int(sp2:decode("9223372036854775807")[1])))
    assert.equal("BadKey", select(3, sp2:decode("9223372036854775808")))
  end)

  it("byte order equals tuple order for random specs and tuples", function()
    local r = helper.rng(11)
    local charsets = { "alnum", "digits", "hex", "lower", "upper", "xyz", "QRS09" }
    local lowest = { alnum = "0", digits = "0", hex = "0", lower = "a", upper = "A", xyz = "x", QRS09 = "0" }
    local chars = { alnum = "09AZaz5", digits = "0189", hex = "09af", lower = "amz", upper = "AMZ", xyz = "xyz", QRS09 = "QRS09" }
    for _ = 1, helper.trials(60) do
      local spec, lo = {}, 127
      for i = 1, r.int(1, 4) do
        if r.int(0, 1) == 0 then
          local w = r.int(1, 6)
          spec[i] = { "f" .. i, "int", width = w, min = r.int(-1000, 1000) }
        else
          local cs = charsets[r.int(1, #charsets)]
          spec[i] = { "f" .. i, "string", charset = cs }
          lo = math.min(lo, lowest[cs]:byte())
        end
      end
      local seps = " !#$%+,-./"
      repeat
        local k = r.int(1, #seps)
        spec.sep = seps:sub(k, k)
      until spec.sep:byte() < lo
      local sp = key.splice(spec)
      local function rand_t()
        local t = {}
        for i, f in ipairs(spec) do
          if f[2] == "int" then
            t[i] = f.min + r.int(0, math.min(10 ^ f.width - 1, 30))
            if r.int(0, 3) == 0 then t[i] = f.min + 10 ^ f.width - 1 end
          else
            t[i] = r.bytes(r.int(0, 3), chars[f.charset])
          end
        end
        return t
      end
      for _ = 1, 60 do
        local a, b = rand_t(), rand_t()
        local want = 0
        for i = 1, #spec do
          local x, y = a[i], b[i]
          if x ~= y then
            if type(x) == "number" then want = x < y and -1 or 1 else want = bytecmp(x, y) end
            break
          end
        end
        local ka, kb = assert(sp:encode(a)), assert(sp:encode(b))
        assert.equal(want, bytecmp(ka, kb))
        assert.same(a, sp:decode(ka))
      end
    end
  end)

  it("decodes arbitrary bytes to a tuple or BadKey, never an error", function()
    local sp = key.splice { sep = ",", { "a", "int", width = 2 }, { "b", "string", charset = "ab" } }
    assert.equal("BadKey", select(3, sp:decode("1,a")))
    assert.equal("BadKey", select(3, sp:decode("12")))
    assert.equal("BadKey", select(3, sp:decode("12,a,b")))
    assert.equal("BadKey", select(3, sp:decode("1x,a")))
    assert.equal("BadKey", select(3, sp:decode("12,c")))
    local r = helper.rng(12)
    for _ = 1, helper.trials(2000) do
      local s = r.bytes(r.int(0, 7), "01,abc\0")
      local t, _, code = sp:decode(s)
      if t then assert.equal(s, sp:encode(t)) else assert.equal("BadKey", code) end
    end
  end)
end)

describe("otskit.key.hash_prefix", function()
  local hash = require "otskit.hash"

  it("prepends the first len hex digits of the digest", function()
    for _, algo in ipairs { "md5", "xxh3", "crc32c" } do
      for _, len in ipairs { 1, 4, 8 } do
        local hp = key.hash_prefix { algo = algo, len = len }
        for _, v in ipairs { "", "0000000001", "order-42", "a\0b" } do
          local p = hash.hex_prefix(algo, v, len)
          assert.equal(p, hp:prefix(v))
          assert.equal(p .. v, hp:encode(v))
          assert.equal(v, hp:decode(hp:encode(v)))
        end
      end
    end
    local md5 = key.hash_prefix {}
    assert.equal(hash.md5("abc", true):sub(1, 4) .. "abc", md5:encode("abc"))
    assert.equal("c4ca1", md5:encode(1))      -- integers as decimal text
    assert.equal(md5:encode("12"), md5:encode(12.0))
    local long = ("x"):rep(5000)
    assert.equal(md5:prefix(long) .. long, md5:encode(long))
  end)

  it("encode_many equals encode on each key", function()
    local hp = key.hash_prefix { algo = "xxh3", len = 6 }
    local vs = {}
    for i = 1, 500 do vs[i] = ("%010d"):format(i) end
    vs[501] = 77
    local many = hp:encode_many(vs)
    for i, v in ipairs(vs) do assert.equal(hp:encode(v), many[i]) end
    assert.equal(#vs, #many)
  end)

  it("decode refuses keys whose prefix is not their hash", function()
    local hp = key.hash_prefix { len = 4 }
    assert.equal("BadPrefix", select(3, hp:decode("abc")))
    assert.equal("BadPrefix", select(3, hp:decode("0000x")))
    local r = helper.rng(21)
    for _ = 1, helper.trials(500) do
      local s = r.bytes(r.int(0, 8))
      local v, _, code = hp:decode(s)
      if v then assert.equal(s, hp:encode(v)) else assert.equal("BadPrefix", code) end
    end
  end)

  it("raises on bad configuration and keys", function()
    assert.has_error(function() key.hash_prefix { len = 0 } end, "otskit.key: len must be 1..32 for md5")
    assert.has_error(function() key.hash_prefix { algo = "xxh3", len = 17 } end)
    assert.has_error(function() key.hash_prefix { algo = "crc32c", len = 9 } end)
    assert.has_error(function() key.hash_prefix { algo = "sha1" } end)
    assert.has_error(function() key.hash_prefix {}:encode({}) end)
    assert.has_error(function() key.hash_prefix {}:encode(1.5) end)
    assert.has_error(function() key.hash_prefix {}:encode_many { "a", true } end)
  end)

  it("hash_prefix methods refuse a bad self; core.so ships no bench code", function()
    local hp = key.hash_prefix {}
    for part, t in pairs(require "otskit.core") do
      if type(t) == "table" then
        for name in pairs(t) do assert.is_nil(name:find("bench"), part .. "." .. name) end
      end
    end
    assert.has_error(function() hp.encode({}, "x") end, "otskit.key: bad self (expected otskit.key.hash_prefix; call with a colon)")
    assert.has_error(function() key.splice { { "s", "string" } }.encode(hp, {}) end)
  end)
end)

describe("otskit.key.buckets", function()
  it("mod buckets: v mod n, never negative, on int64", function()
    local b = key.buckets { n = 16 }
    assert.equal(0, b:of(1700000000))
    assert.equal(15, b:of(-1))
    assert.equal(15, b:of("9223372036854775807"))
    assert.equal(7, b:of("9223372036854775799"))
    assert.equal(0, b:of("-9223372036854775808"))
    local r = helper.rng(31)
    for _ = 1, helper.trials(500) do
      local n, v = r.int(1, 100), r.int(-100000, 100000)
      assert.equal(v % n, key.buckets { n = n }:of(v))
    end
    assert.has_error(function() b:of("x") end)
    assert.has_error(function() b:of(1.5) end)
  end)

  it("hash buckets: first digest bytes mod n, spread evenly", function()
    local hash = require "otskit.hash"
    local b = key.buckets { n = 10, by = "hash", algo = "crc32c" }
    local d = hash.crc32c("order-1")
    local x = 0
    for i = 1, 4 do x = x * 256 + d:byte(i) end
    assert.equal(x % 10, b:of("order-1"))
    local counts = {}
    local bm = key.buckets { n = 16, by = "hash" }
    for i = 1, 16000 do
      local k = bm:of(i)
      counts[k] = (counts[k] or 0) + 1
    end
    for i = 0, 15 do assert.is_true(counts[i] > 850 and counts[i] < 1150) end
    assert.equal(bm:of("12"), bm:of(12))
  end)

  it("all and label", function()
    local b = key.buckets { n = 12 }
    assert.same({ 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 }, b:all())
    assert.equal("03", b:label(3))
    assert.equal("0011", key.buckets { n = 12, width = 4 }:label(11))
    assert.equal("7", key.buckets { n = 10 }:label(7))
    assert.has_error(function() b:label(12) end)
    assert.has_error(function() key.buckets { n = 100, width = 1 } end)
    assert.has_error(function() key.buckets { n = 0 } end)
    assert.has_error(function() key.buckets { by = "range" } end)
  end)
end)

describe("otskit.key helpers", function()
  it("compare and sort use byte order", function()
    local r = helper.rng(43)
    for _ = 1, helper.trials(2000) do
      local a, b = r.bytes(r.int(0, 3), "\0a\255"), r.bytes(r.int(0, 3), "\0a\255")
      assert.equal(bytecmp(a, b), key.compare(a, b))
    end
    assert.same({ "", "\0", "a", "a\0", "ab", "\255" }, key.sort { "ab", "\255", "a\0", "", "a", "\0" })
    assert.has_error(function() key.compare("a", {}) end)
  end)

  it("reverse_ts puts newer first", function()
    local r = helper.rng(41)
    for _ = 1, helper.trials(500) do
      local a, b = r.int(0, 2 ^ 41), r.int(0, 2 ^ 41)
      local ra, rb = key.reverse_ts(a), key.reverse_ts(b)
      local want = a == b and 0 or (a < b and 1 or -1)
      assert.equal(want, deccmp(tostring(key.int(ra)), tostring(key.int(rb))))
      assert.equal(9999999999999 - a, key.reverse_ts(a, 9999999999999))
    end
    assert.equal("9223372036854775807", tostring(key.int(key.reverse_ts(0))))
    assert.equal(0, key.reverse_ts(5, 5))
    assert.has_error(function() key.reverse_ts(-1) end)
    assert.has_error(function() key.reverse_ts(6, 5) end)
  end)

  it("prefix_range covers exactly the keys with the prefix", function()
    assert.same({ "ab", "ac" }, { key.prefix_range("ab") })
    assert.same({ "a\255", "b" }, { key.prefix_range("a\255") })
    local s, e = key.prefix_range("\255\255")
    assert.equal("\255\255", s)
    assert.is_nil(e)
    local r = helper.rng(42)
    for _ = 1, helper.trials(3000) do
      local p = r.bytes(r.int(0, 3), "\0\1\254\255")
      local k = r.bytes(r.int(0, 4), "\0\1\254\255")
      local start, stop = key.prefix_range(p)
      local inside = bytecmp(k, start) >= 0 and (stop == nil or bytecmp(k, stop) < 0)
      assert.equal(k:sub(1, #p) == p, inside)
    end
    -- with packed tuples: every tuple that starts with (7, "x")
    local start, stop = key.prefix_range(key.pack { 7, "x" })
    local k = key.pack { 7, "x", 1 }
    assert.is_true(bytecmp(start, k) < 0 and bytecmp(k, stop) < 0)
    assert.is_true(bytecmp(key.pack { 7, "xa" }, stop) >= 0)
  end)

  it("check_pk accepts Tablestore primary keys and explains the rest", function()
    assert.is_true(key.check_pk { { "id", 1 } })
    assert.is_true(key.check_pk { { "_b", "x" }, { "c2", ("z"):rep(1024) }, { "D", key.int("-9223372036854775808") }, { "e", key.text("t") } })
    local bad = {
      { {}, "BadPrimaryKey" },
      { { { "a", 1 }, { "b", 1 }, { "c", 1 }, { "d", 1 }, { "e", 1 } }, "BadPrimaryKey" },
      { { { "1a", 1 } }, "BadPrimaryKey" }, { { { "a-b", 1 } }, "BadPrimaryKey" },
      { { { ("a"):rep(256), 1 } }, "BadPrimaryKey" }, { { { "", 1 } }, "BadPrimaryKey" },
      { { { "a", 1 }, { "a", 2 } }, "BadPrimaryKey" }, { { { "a", 1.5 } }, "BadPrimaryKey" },
      { { { "a", true } }, "BadPrimaryKey" }, { { { "a" } }, "BadPrimaryKey" },
      { { { "a", 2 ^ 63 } }, "BadPrimaryKey" }, { { { "a", ("z"):rep(1025) } }, "KeyTooLong" },
      { { "a", 1 }, "BadPrimaryKey" }, { "x", "BadPrimaryKey" },
    }
    for _, c in ipairs(bad) do
      local ok, msg, code = key.check_pk(c[1])
      assert.is_nil(ok)
      assert.is_string(msg)
      assert.equal(c[2], code)
    end
    assert.is_true(key.check_pk { { ("a"):rep(255), 1 } })
  end)
end)

describe("otskit.key README examples", function()
  it("give the results the README states", function()
    local sp = key.splice { sep = ",", { "CardID", "int", width = 6 },
      { "SellerID", "string", charset = "alnum" }, { "Amount", "int", width = 6, min = 0 } }
    assert.equal("000054,a1001,006777", sp:encode { 54, "a1001", 6777 })
    assert.equal("000054,a1001,006777", sp:encode { CardID = 54, SellerID = "a1001", Amount = 6777 })
    assert.same({ 54, "a1001", 6777 }, sp:decode "000054,a1001,006777")
    assert.same({ nil, "field 'CardID': 1234567 does not fit 6 digits from min 0", "IntTooWide" },
      { sp:encode { 1234567, "a1", 1 } })
    local hp = key.hash_prefix { algo = "md5", len = 4 }
    assert.equal("176a", hp:prefix "0090000005")
    assert.equal("176a0090000005", hp:encode "0090000005")
    assert.equal("0090000005", hp:decode "176a0090000005")
    local b = key.buckets { n = 16, by = "mod" }
    assert.equal(7, b:of(1700000007))
    assert.equal("07", b:label(7))
    assert.equal("\21\54\1a1001\0\22\26\121", key.pack { 54, "a1001", 6777 })
    assert.same({ nil, "bad tuple: truncated integer (element 1, at byte 0)", "BadTuple" }, { key.unpack "\21" })
    assert.equal(8299999999, key.reverse_ts(1700000000, 9999999999))
    assert.is_string(key.pack { "bytes", key.text "text", key.null, true, 1.5, key.int "9223372036854775807" })
  end)
end)
