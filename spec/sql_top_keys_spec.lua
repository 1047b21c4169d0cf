-- spec/sql_top_keys_spec.lua -- otskit.core.sql.top_keys (the first max
-- rows of a walk in the order v DESC, key DESC, given back in the order v
-- DESC, key ASC: top_rows by a field descending without SQLite's temporary
-- B-tree) answers as SQLite's own ORDER BY v DESC, key LIMIT max read by
-- sql.keys: random value tables (runs of equal values, INTEGERs and REALs
-- of the same value, TEXT, BLOB; keys of one to three columns of
-- each key type), random conditions and max, with the rows a search
-- returns (names).
local core = require "otskit.core"
local keycodec = require "otskit.key"
local cjson = require "cjson.safe"
local helper = require "helper"
local sql, kv = core.sql, core.kv

local KEYS = { { "i" }, { "s" }, { "b" }, { "i", "s" }, { "s", "i", "b" } }

local function value(r, kind)
  if kind == 1 then return r.int(-4, 4) end -- many equal
  if kind == 2 then
    local x = r.int(-8, 8)
    return r.int(1, 2) == 1 and x / 2 or x -- an INTEGER and a REAL of the same value
  end
  local j = r.int(1, 10)
  if j <= 3 then return r.int(-3, 3) end
  if j <= 5 then return r.int(-6, 6) / 2 end
  if j <= 8 then return ({ "a", "ab", "b", "" })[r.int(1, 4)] end
  if j == 9 then return r.int(-3, 3) + 0.0 end
  return { blob = ({ "a", "\0", "ab" })[r.int(1, 3)] }
end

local function element(r, t)
  if t == "i" then return r.int(-50, 50) end
  local s = {}
  for i = 1, r.int(0, 3) do s[i] = string.char(r.int(0, 3) * 40 + 1) end
  return table.concat(s)
end

describe("otskit.core.sql.top_keys", function()
  it("answers as ORDER BY v DESC, key LIMIT max over random value tables", function()
    local trials = helper.trials(200)
    for trial = 1, trials do
      local r = helper.rng(5100 + trial)
      local h = assert(kv.open(":memory:"))
      assert(sql.exec(h, "CREATE TABLE n (f INTEGER, v, pk BLOB, PRIMARY KEY (f, v, pk)) WITHOUT ROWID"))
      local kt = KEYS[r.int(1, #KEYS)]
      local types, names = table.concat(kt), {}
      for i = 1, #kt do names[i] = "c" .. i end
      local kind = r.int(1, 3)
      local seen = {}
      for _ = 1, r.int(0, 60) do
        local e = {}
        for i, t in ipairs(kt) do e[i] = element(r, t) end
        local k = keycodec.pack(e)
        if not seen[k] then
          seen[k] = true
          local v = value(r, kind)
          if type(v) == "table" then
            assert(sql.rows(h, "INSERT INTO n VALUES (?1, CAST(?2 AS BLOB), CAST(?3 AS BLOB))", { r.int(1, 2), v.blob, k }))
          else
            assert(sql.rows(h, "INSERT INTO n VALUES (?1, ?2, CAST(?3 AS BLOB))", { r.int(1, 2), v, k }))
          end
        end
      end
      for _ = 1, 10 do
        local cond, binds = "f = ?1", { r.int(1, 2) }
        local j = r.int(1, 3)
        if j == 2 then cond, binds[2] = cond .. " AND v >= ?2", r.int(-4, 2) end
        if j == 3 then cond, binds[2] = cond .. " AND v < ?2", ({ 1, 2.5, "b" })[r.int(1, 3)] end
        local max = r.int(1, 12)
        local want, wn = sql.keys(h, ("SELECT pk FROM n WHERE %s ORDER BY v DESC, pk LIMIT %d"):format(cond, max), binds,
          #binds, max, 0, false, types, nil, names)
        assert(want, wn)
        local got, gn = sql.top_keys(h, ("SELECT pk, v FROM n WHERE %s ORDER BY v DESC, pk DESC"):format(cond), binds,
          #binds, max, types, names)
        assert(got, gn)
        local what = ("trial %d: %s %s max %d"):format(trial, cond, cjson.encode(binds), max)
        assert.are.equal(wn, gn, what)
        assert.are.same(want, got, what)
      end
      h:close()
    end
  end)

  it("refuses a max outside 1..4096 and bad key types, and fails a value that is not a key as KVCorrupt", function()
    local h = assert(kv.open(":memory:"))
    assert(sql.exec(h, "CREATE TABLE n (f INTEGER, v, pk BLOB, PRIMARY KEY (f, v, pk)) WITHOUT ROWID"))
    assert(sql.rows(h, "INSERT INTO n VALUES (1, 5, 'not a blob')"))
    local text = "SELECT pk, v FROM n WHERE f = ?1 ORDER BY v DESC, pk DESC"
    assert.has_error(function() sql.top_keys(h, text, { 1 }, 1, 0, "i", { "id" }) end)
    assert.has_error(function() sql.top_keys(h, text, { 1 }, 1, 4097, "i", { "id" }) end)
    assert.has_error(function() sql.top_keys(h, text, { 1 }, 1, 3, "x", { "id" }) end)
    assert.has_error(function() sql.top_keys(h, text, { 1 }, 1, 3, "i", {}) end)
    local rows, msg, code = sql.top_keys(h, text, { 1 }, 1, 3, "i", { "id" })
    assert.is_nil(rows)
    assert.are.equal("KVCorrupt", code, msg)
    local r2, m2, c2 = sql.top_keys(h, "SELECT nope FROM n", {}, 0, 3, "i", { "id" })
    assert.is_nil(r2)
    assert.is_string(m2)
    assert.is_string(c2)
    h:close()
  end)
end)
