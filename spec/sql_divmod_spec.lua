-- spec/sql_divmod_spec.lua -- MySQL's DIV, MOD and % in db:sql: integer
-- division truncated toward zero (a BIGINT, also of decimals), the
-- remainder with the dividend's sign (an integer when both operands are),
-- NULL for a zero divisor, MySQL's precedence; against a Lua reference
-- over random integers and decimals. Also: a column mixing reals and text
-- prints each real as the shortest text that reads back as it.
local store = require "otskit.store"
local wire = require "otskit.wire"
local helper = require "helper"

local JIT = math.type == nil

local function open()
  local db = assert(store.open{})
  assert(db:create_table{ name = "t", primary_key = { { "pk", "INTEGER" } } })
  assert(db:put_row{ table = "t", primary_key = { { "pk", 1 } }, columns = { { "a", 7 }, { "d", store.double(7.5) } } })
  assert(db:put_row{ table = "t", primary_key = { { "pk", 2 } }, columns = { { "a", -7 }, { "d", store.double(-0.1) } } })
  assert(db:sql("CREATE TABLE t (pk BIGINT, a BIGINT, d DOUBLE, PRIMARY KEY(pk))"))
  return db
end

-- one row of values and the column types of a SELECT
local function row_of(db, q)
  local r, msg, code = db:sql(q)
  assert(r, q .. ": " .. tostring(msg) .. " " .. tostring(code))
  local types = {}
  for i, c in ipairs(r.columns) do types[i] = c.type end
  return r.rows[1], types, r
end

local function is_int(v) return math.type == nil and type(v) == "number" or math.type(v) == "integer" end

-- the decimal text of an integer-valued number (either VM)
local function int_text(v)
  if math.type and math.type(v) == "integer" then return ("%d"):format(v) end
  return ("%.0f"):format(v)
end

-- trunc(a / b) and the remainder with a's sign, exact for integers (5.4)
-- and for integer-valued doubles below 2^53 (LuaJIT)
local idiv = math.type and load("return function(a, b) return a // b end")()
local function ref_divmod(a, b)
  local r = math.fmod(a, b)
  if idiv then return idiv(a - r, b), r end
  return (a - r) / b, r
end

describe("SQL DIV and MOD (MySQL's)", function()
  local db
  before_each(function() db = open() end)
  after_each(function() db:close() end)

  it("DIV truncates toward zero, decimals too; a zero divisor is NULL", function()
    -- (1e22 and 1e21, past BIGINT, are read exactly at any precision:
    -- SQLite reads 1e300 through a long double, which valgrind computes
    -- in 64 bits -- another double there, and 9 for 1e300 DIV 1e299)
    local row, types = row_of(db, "SELECT 7.5 DIV 2, 7 DIV 2, -7 DIV 2, 7 DIV -2, -7.5 DIV 2, 0.3 DIV 0.1, "
      .. "7 DIV 0, 7 DIV 0.0, NULL DIV 2, 2 DIV 7, 1e22 DIV 1e21, '9' DIV 2")
    assert.same({ 3, 3, -3, -3, -3, 3, nil, nil, nil, 0, 10, 4 }, { row[1], row[2], row[3], row[4], row[5], row[6],
      row[7], row[8], row[9], row[10], row[11], row[12] })
    for _, i in ipairs({ 1, 2, 3, 4, 5, 6, 10, 11, 12 }) do
      assert.equal("LONG", types[i], "column " .. i)
      assert.is_true(is_int(row[i]), "column " .. i)
    end
  end)

  it("MOD, % and mod() keep the dividend's sign; integers stay integers", function()
    local row, types = row_of(db, "SELECT mod(7, 4), 7 MOD 4, 7 % 4, -7 % 4, 7 % -4, MOD(34.5, 3), 7.5 % 2, "
      .. "MOD(-7.5, 2), 7 % 0, MOD(0.3, 0.1), 7 % 2.5, MOD(NULL, 2), 7 mod 0.0")
    assert.same({ 3, 3, 3, -3, 3, 1.5, 1.5, -1.5, nil, 0, 2, nil, nil }, { row[1], row[2], row[3], row[4], row[5],
      row[6], row[7], row[8], row[9], row[10], row[11], row[12], row[13] })
    assert.same({ "LONG", "LONG", "LONG", "LONG", "LONG", "DOUBLE", "DOUBLE", "DOUBLE" },
      { types[1], types[2], types[3], types[4], types[5], types[6], types[7], types[8] })
    for i = 1, 5 do assert.is_true(is_int(row[i]), "column " .. i) end
  end)

  it("at the ends of BIGINT", function()
    local row = row_of(db, "SELECT -9223372036854775808 % -1, 9223372036854775807 DIV 1, "
      .. "-9223372036854775808 DIV 2, 9223372036854775807 % 10, -9223372036854775807 DIV 1.0")
    if JIT then
      assert.same({ 0, "9223372036854775807", "-4611686018427387904", 7, "-9223372036854775807" }, row)
    else
      assert.same({ 0, math.maxinteger, math.tointeger(-2 ^ 62), 7, -math.maxinteger }, row)
    end
    for _, q in ipairs({ "SELECT -9223372036854775808 DIV -1", "SELECT 1e19 DIV 1", "SELECT 1e300 DIV 1e-300" }) do
      local r, msg, code = db:sql(q)
      assert.is_nil(r, q)
      assert.equal("OTSParameterInvalid", code, q)
      assert.matches("BIGINT value is out of range", msg, 1, true)
    end
  end)

  it("binds as * does: signs tighter, + - looser, left to right", function()
    local row = row_of(db, "SELECT 1 + 7 DIV 2 * 2, -7 DIV 2, 7 DIV 2 DIV 2, 2 * 7 DIV 4, 7 DIV (1 + 1), abs(-7) DIV 2, "
      .. "CASE WHEN 1 THEN 7 END DIV 2, 7 DIV -2 - 1, 10 - 7 % 4, 2 * 7 % 4, 7 % 4 % 2, t.a DIV 2, count(*) DIV 2, "
      .. "7 DIV !0, 7/2 DIV 1, ~1 % 5, t.d DIV 2 FROM t WHERE pk = 1")
    assert.same({ 7, -3, 1, 3, 3, 3, 3, -4, 7, 2, 1, 3, 0, 7, 3, -2, 3 }, row)
  end)

  it("columns of DIV and MOD keep their names and their types over the wire", function()
    local _, _, res = row_of(db, "SELECT a DIV 2, a MOD 4, a % 4, mod(a, 4), d MOD 2, d DIV 2 FROM t ORDER BY pk")
    local names, types = {}, {}
    for i, c in ipairs(res.columns) do names[i], types[i] = c.name, c.type end
    assert.same({ "a DIV 2", "a MOD 4", "a % 4", "mod(a, 4)", "d MOD 2", "d DIV 2" }, names)
    assert.same({ "LONG", "LONG", "LONG", "LONG", "DOUBLE", "LONG" }, types)
    assert.same({ { 3, 3, 3, 3, 1.5, 3 }, { -3, -3, -3, -3, -0.1, 0 } }, res.rows)
    local back = assert(wire.decode_response("SQLQuery", assert(wire.encode_response("SQLQuery", res))))
    assert.same(res.columns, back.columns)
    assert.same(res.rows, back.rows)
  end)

  it("agree with a Lua reference over random integers and decimals", function()
    local r = helper.rng(4242)
    -- an integer: small, or wide (int64 on 5.4, below 2^53 on LuaJIT)
    local function rint()
      local k = r.int(1, 4)
      if k == 1 then return r.int(-10, 10) end
      if k == 2 then return r.int(-100000, 100000) end
      local hi = JIT and r.int(-2 ^ 21, 2 ^ 21 - 1) or r.int(-2 ^ 31, 2 ^ 31 - 1)
      return hi * 2 ^ 31 + r.int(0, 2 ^ 31 - 1)
    end
    if not JIT then
      local f = rint
      rint = function() return math.tointeger(f()) end
    end
    -- a decimal m / 10^s (s 1..3) as its text
    local function dec_text(m, s)
      local t = int_text(math.abs(m))
      t = ("0"):rep(s + 1 - #t) .. t
      return (m < 0 and "-" or "") .. t:sub(1, #t - s) .. "." .. t:sub(#t - s + 1)
    end
    local checked, nulls = 0, 0
    for _ = 1, helper.trials(200) do
      local exprs, want, kinds = {}, {}, {}
      for e = 1, 12 do
        local op = ({ " DIV ", " MOD ", " % ", "mod" })[r.int(1, 4)]
        local ta, tb, a, b, sa, sb
        if r.int(1, 2) == 1 then -- integers
          a, b, sa, sb = rint(), rint(), 0, 0
          if r.int(1, 8) == 1 then b = ({ 0, 1, -1 })[r.int(1, 3)] end
          if not JIT and r.int(1, 20) == 1 then a = ({ math.maxinteger, math.mininteger })[r.int(1, 2)] end
          if not JIT and a == math.mininteger and b == -1 and op == " DIV " then b = 1 end
          ta, tb = int_text(a), int_text(b)
        else -- decimals (one side may be an integer)
          a, b = r.int(-10 ^ 6, 10 ^ 6), r.int(-10 ^ 4, 10 ^ 4)
          if r.int(1, 10) == 1 then b = 0 end
          sa, sb = r.int(0, 3), r.int(0, 3)
          if sa + sb == 0 then sb = r.int(1, 3) end
          ta = sa > 0 and dec_text(a, sa) or int_text(a)
          tb = sb > 0 and dec_text(b, sb) or int_text(b)
        end
        exprs[e] = op == "mod" and ("mod(%s, %s)"):format(ta, tb) or ("%s%s%s"):format(ta, op, tb)
        kinds[e] = op == " DIV " and "div" or "mod"
        if b == 0 then
          want[e] = false
        else
          local s = math.max(sa, sb)
          local x, y = a, b
          for _ = sa + 1, s do x = x * 10 end
          for _ = sb + 1, s do y = y * 10 end
          local q, m = ref_divmod(x, y)
          if kinds[e] == "div" then want[e] = q
          elseif s == 0 then want[e] = m
          else want[e] = tonumber(("%se-%d"):format(int_text(m), s)) end
        end
        if kinds[e] == "mod" then kinds[e] = (sa + sb == 0) and "LONG" or "DOUBLE" else kinds[e] = "LONG" end
      end
      local q = "SELECT " .. table.concat(exprs, ", ")
      local row, types = row_of(db, q)
      for e = 1, #exprs do
        local got = row[e]
        if JIT and type(got) == "string" then got = tonumber(got) end
        if want[e] == false then
          assert(got == nil, exprs[e] .. ": " .. tostring(got) .. ", want NULL")
          nulls = nulls + 1
        else
          assert(got == want[e], ("%s: %s, want %s"):format(exprs[e], tostring(got), tostring(want[e])))
          assert(types[e] == kinds[e], ("%s: a %s column, want %s"):format(exprs[e], types[e], kinds[e]))
          if kinds[e] == "LONG" then assert(is_int(row[e]) or type(row[e]) == "string", exprs[e]) end
          checked = checked + 1
        end
      end
    end
    assert.is_true(checked > 0 and nulls > 0)
  end)

  it("agree with a Lua reference in random expressions (MySQL's precedence)", function()
    local r = helper.rng(777)
    local LEVEL = { ["+"] = 1, ["-"] = 1, ["*"] = 2, DIV = 2, MOD = 2, ["%"] = 2 }
    local OPS = { "+", "-", "*", "DIV", "MOD", "%", "DIV", "MOD" }
    -- a random tree -> its text (fewest parentheses, sometimes more), value
    local function gen(d)
      if d == 0 or r.int(1, 4) == 1 then
        local v = r.int(-9, 9)
        if r.int(1, 6) == 1 then return "a", 7, 3 end
        return tostring(v), v, 3
      end
      if r.int(1, 6) == 1 then
        local t, v, l = gen(d - 1)
        if l < 3 or t:find("^%-") then t = "(" .. t .. ")" end
        return "-" .. t, v and -v, 3
      end
      local op = OPS[r.int(1, #OPS)]
      local lt, lv, ll = gen(d - 1)
      local rt, rv, rl = gen(d - 1)
      local lvl = LEVEL[op]
      if ll < lvl or r.int(1, 8) == 1 then lt = "(" .. lt .. ")" end
      if rl <= lvl or r.int(1, 8) == 1 or (op == "-" and rt:find("^%-")) then rt = "(" .. rt .. ")" end
      local v
      if lv ~= nil and rv ~= nil then
        if op == "+" then v = lv + rv elseif op == "-" then v = lv - rv elseif op == "*" then v = lv * rv
        elseif rv ~= 0 then
          local q, m = ref_divmod(lv, rv)
          if op == "DIV" then v = q else v = m end
        end
      end
      local sp = ({ " ", "  ", "" })[r.int(1, 3)]
      if op == "DIV" or op == "MOD" then sp = " " end
      return lt .. sp .. (r.int(1, 2) == 1 and op or op:lower()) .. sp .. rt, v, lvl
    end
    for _ = 1, helper.trials(150) do
      local exprs, want = {}, {}
      for e = 1, 8 do exprs[e], want[e] = gen(4) end
      local row, _, res = row_of(db, "SELECT " .. table.concat(exprs, ", ") .. " FROM t WHERE pk = 1")
      for e = 1, #exprs do
        assert(row[e] == want[e], ("%s: %s, want %s"):format(exprs[e], tostring(row[e]), tostring(want[e])))
        assert.equal(exprs[e], res.columns[e].name)
      end
    end
  end)
end)

describe("SQL: a column of reals and text", function()
  it("prints each real as the shortest text that reads back as it", function()
    local db = open()
    local row = row_of(db, "SELECT CASE WHEN pk = 1 THEN 0.1 ELSE 'x' END, CASE WHEN pk = 1 THEN 1e-7 ELSE 'x' END, "
      .. "CASE WHEN pk = 1 THEN 1e20 ELSE 'x' END, CASE WHEN pk = 1 THEN 0.1 + 0.2 ELSE 'x' END, "
      .. "CASE WHEN pk = 1 THEN 2.5 ELSE 'x' END FROM t ORDER BY pk")
    assert.same({ "0.1", "1e-7", "1e20", "0.30000000000000004", "2.5" }, row)
    local r = helper.rng(99)
    for i = 1, helper.trials(500) do
      local v = (r.float() - 0.5) * 10 ^ r.int(-30, 30)
      if i % 3 == 0 then v = r.int(-99999, 99999) / 10 ^ r.int(1, 6) end
      assert(db:put_row{ table = "t", primary_key = { { "pk", 3 } }, columns = { { "d", store.double(v) } } })
      local got = row_of(db, "SELECT CASE WHEN pk = 3 THEN d ELSE 'x' END FROM t ORDER BY pk DESC")[1]
      assert.equal("string", type(got))
      assert(tonumber(got) == v, got .. " does not read back as " .. ("%.17g"):format(v))
      -- no shorter text would: as many significant digits as the fewest
      -- that read back
      local m = got:gsub("e.*", ""):gsub("%-", "")
      if m:find(".", 1, true) then m = m:gsub("%.", ""):gsub("^0+", "") else m = m:gsub("^0+", ""):gsub("0+$", "") end
      local fewest = 17
      for p = 1, 17 do
        if tonumber(("%." .. p .. "g"):format(v)) == v then fewest = p; break end
      end
      assert(#m == fewest, got .. ": " .. #m .. " digits, " .. fewest .. " read back")
    end
    db:close()
  end)
end)

describe("SQL: DIV, MOD and % beside a hex literal", function()
  it("take x'..' whole as an operand (not the name x, then a string)", function()
    local db = open()
    -- as the same operation with the literal in parentheses
    for _, q in ipairs({ { "x'00ff' DIV 1", "(x'00ff') DIV 1" }, { "7 DIV X'31'", "7 DIV (X'31')" },
      { "x'37' MOD 4", "(x'37') MOD 4" }, { "9 % x'32'", "9 % (x'32')" }, { "-x'37' DIV 2", "-(x'37') DIV 2" },
      { "x'37' DIV x'32'", "(x'37') DIV (x'32')" } }) do
      local a, am = db:sql("SELECT " .. q[1] .. " FROM t WHERE pk = 1")
      assert(a, q[1] .. ": " .. tostring(am))
      local b = assert(db:sql("SELECT " .. q[2] .. " FROM t WHERE pk = 1"))
      assert.same(b.rows, a.rows, q[1])
    end
    assert.same({ "A" }, row_of(db, "SELECT x'41' FROM t WHERE pk = 1"))
    db:close()
  end)
end)
