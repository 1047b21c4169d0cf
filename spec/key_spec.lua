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
    if not jit then
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
      assert.matches("^bad tuple: .* at byte %d+$", msg)
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
