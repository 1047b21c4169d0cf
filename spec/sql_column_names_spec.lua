-- db:sql names an unaliased result column by the expression's text as the
-- query wrote it, also when the expression uses the MySQL operators otskit
-- rewrites for SQLite (/, DIV, MOD, &&, ||, !): random expressions, random
-- spacing, their names compared with their text.
local store = require "otskit.store"
local helper = require "helper"

local function setup()
  local db = assert(store.open{ path = ":memory:" })
  assert(db:create_table{ name = "t", primary_key = { { "pk", "INTEGER" } } })
  assert(db:put_row{ table = "t", primary_key = { { "pk", 1 } }, columns = { { "a", 6 }, { "b", true }, { "s", "x/y" } } })
  assert(db:sql("create table t (pk bigint, a bigint, b bool, s mediumtext, primary key(pk))"))
  return db
end

describe("otskit.store sql column names", function()
  it("an unaliased column is named by its expression as written", function()
    local db = setup()
    local r = helper.rng(5150)
    local function sp() return ({ "", " ", "  " })[r.int(1, 3)] end
    local ARITH = { "/", "+", "-", "*", " DIV ", " MOD ", " div ", " mod " }
    local LOGIC = { "&&", "||", " AND ", " OR " }
    local function num(d)
      if d <= 0 or r.int(1, 3) == 1 then return ({ "a", "pk", "7", "2" })[r.int(1, 4)] end
      local k = r.int(1, 3)
      if k == 1 then return num(d - 1) .. sp() .. ARITH[r.int(1, #ARITH)] .. sp() .. num(d - 1) end
      if k == 2 then return "(" .. sp() .. num(d - 1) .. sp() .. ")" end
      return "abs(" .. num(d - 1) .. ")"
    end
    local function bool(d)
      if d <= 0 or r.int(1, 3) == 1 then return ({ "b", "true", num(1) .. " > 1" })[r.int(1, 3)] end
      local k = r.int(1, 2)
      if k == 1 then return bool(d - 1) .. sp() .. LOGIC[r.int(1, #LOGIC)] .. sp() .. bool(d - 1) end
      return "!" .. sp() .. bool(d - 1)
    end
    local rewritten = 0
    for _ = 1, helper.trials(300) do
      local e1, e2 = num(3) .. sp() .. "+" .. sp() .. "`a`", bool(2)
      local q = "select " .. e1 .. ", " .. e2 .. ", 'p/q' from t where " .. num(1) .. " > -100"
      local res, msg = db:sql(q)
      assert(res, q .. ": " .. tostring(msg))
      assert.equal(e1, res.columns[1].name, q)
      assert.equal(e2, res.columns[2].name, q)
      assert.equal("'p/q'", res.columns[3].name, q)
      if (e1 .. e2):find("[/!&|]") or (e1 .. e2):lower():find("div") or (e1 .. e2):lower():find("mod") then
        rewritten = rewritten + 1
      end
    end
    assert.is_true(rewritten > 0)
    -- an alias and a plain column keep their names
    local res = assert(db:sql("select a/2 as half, s, a/2 from t"))
    assert.same({ "half", "s", "a/2" }, { res.columns[1].name, res.columns[2].name, res.columns[3].name })
    assert.equal(3, res.rows[1][1])
    db:close()
  end)

  it("MOD before a parenthesis is the operator after an operand, the function elsewhere", function()
    local db = setup()
    local res = assert(db:sql("select pk mod (3), (a) MOD (4), a - mod(a, 4), 7 /* c */ mod (4), mod(7, 4) from t"))
    assert.same({ "pk mod (3)", "(a) MOD (4)", "a - mod(a, 4)", "7 /* c */ mod (4)", "mod(7, 4)" },
      { res.columns[1].name, res.columns[2].name, res.columns[3].name, res.columns[4].name, res.columns[5].name })
    local row = res.rows[1]
    assert.same({ 1, 2, 4, 3, 3 }, { row[1], row[2], row[3], row[4], row[5] })
    db:close()
  end)
end)
