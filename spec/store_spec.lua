local store = require "otskit.store"
local kv = require("otskit.core").kv
local helper = require "helper"

local INF_MIN, INF_MAX = store.INF_MIN, store.INF_MAX

local function open(opts)
  return assert(store.open(opts))
end

local function mk(db, name, pk, extra)
  local req = { name = name, primary_key = pk }
  for k, v in pairs(extra or {}) do req[k] = v end
  return assert(db:create_table(req))
end

-- every row of a table as "pk1|pk2|col=val,..." strings, in order
local function dump(db, t)
  local out, start = {}, nil
  local meta = db:describe_table{ name = t }.table_meta.primary_key
  local lo, hi = {}, {}
  for i = 1, #meta do lo[i], hi[i] = INF_MIN, INF_MAX end
  start = lo
  repeat
    local res = assert(db:get_range{ table = t, start = start, stop = hi })
    for _, r in ipairs(res.rows) do
      local parts = {}
      for _, p in ipairs(r.primary_key) do parts[#parts + 1] = tostring(p[2]) end
      local cols = {}
      for k, v in pairs(r.columns) do cols[#cols + 1] = k .. "=" .. tostring(v) end
      table.sort(cols)
      out[#out + 1] = table.concat(parts, "|") .. "|" .. table.concat(cols, ",")
    end
    start = res.next_start_primary_key
  until start == nil
  return out
end

local function fails_with(code, ok, msg, got)
  assert.is_nil(ok)
  assert.is_string(msg)
  assert.equal(code, got)
end

describe("otskit.store", function()
  describe("get_range against an in-memory model", function()
    -- the model: rows keyed by (int, bytes), ordered int first then bytes
    local function less(a, b)
      if a[1] ~= b[1] then return a[1] < b[1] end
      return kv.cmp(a[2], b[2]) < 0
    end

    it("pages forward and backward over random keys exactly like a sorted list", function()
      local r = helper.rng(7)
      for trial = 1, helper.trials(30) do
        local db = open()
        mk(db, "t", {{"a", "INTEGER"}, {"b", "BINARY"}})
        local model, keys = {}, {}
        for _ = 1, r.int(0, 300) do
          local a = r.int(-5, 5) * (r.int(0, 3) == 0 and 1000000007 or 1)
          local b = r.bytes(r.int(0, 3), "\0\1a\255")
          local id = a .. "|" .. b
          if r.int(0, 4) == 0 and model[id] then
            assert(db:delete_row{ table = "t", primary_key = {a, b} })
            model[id] = nil
          else
            local v = r.int(0, 1000)
            assert(db:put_row{ table = "t", primary_key = {{"a", a}, {"b", b}}, columns = { v = v } })
            model[id] = { a, b, v }
          end
        end
        for _, row in pairs(model) do keys[#keys + 1] = row end
        table.sort(keys, less)
        -- a random bound: a full key, or a prefix closed by INF_MIN/INF_MAX
        local function bound()
          local k = r.int(0, 4)
          if k == 0 then return { INF_MIN, INF_MIN } end
          if k == 1 then return { INF_MAX, INF_MAX } end
          local a = r.int(-6, 6)
          if k == 2 then return { a, r.int(0, 1) == 0 and INF_MIN or INF_MAX } end
          return { a, r.bytes(r.int(0, 3), "\0\1a\255") }
        end
        -- where a bound sits: the model rows >= it (as a key with INF
        -- columns: INF_MIN below, INF_MAX above every value)
        local function cmp_bound(row, b)
          for i = 1, 2 do
            local v = b[i]
            if v == INF_MIN then return 1 end
            if v == INF_MAX then return -1 end
            local c
            if i == 1 then c = row[1] < v and -1 or (row[1] > v and 1 or 0)
            else c = kv.cmp(row[2], v) end
            if c ~= 0 then return c end
          end
          return 0
        end
        for _ = 1, 25 do
          local s, e = bound(), bound()
          local backward = r.int(0, 1) == 1
          local want = {}
          for _, row in ipairs(keys) do
            local cs, ce = cmp_bound(row, s), cmp_bound(row, e)
            if backward then
              if cs <= 0 and ce > 0 then table.insert(want, 1, row) end
            elseif cs >= 0 and ce < 0 then want[#want + 1] = row end
          end
          local limit = r.int(0, 2) == 0 and nil or r.int(1, 40)
          local got, start, pages = {}, s, 0
          local res, msg, code = db:get_range{ table = "t", start = s, stop = e, limit = limit,
                                               direction = backward and "BACKWARD" or "FORWARD" }
          -- the model decides whether the range is legal: start must lie
          -- before stop in the scan direction
          local function key_cmp(x, y)
            for i = 1, 2 do
              local u, v = x[i], y[i]
              local ru = u == INF_MIN and 0 or (u == INF_MAX and 2 or 1)
              local rv = v == INF_MIN and 0 or (v == INF_MAX and 2 or 1)
              if ru ~= rv then return ru < rv and -1 or 1 end
              if ru ~= 1 then return 0 end -- both the same INF: the rest is irrelevant
              local c = i == 1 and (u < v and -1 or (u > v and 1 or 0)) or kv.cmp(u, v)
              if c ~= 0 then return c end
            end
            return 0
          end
          local order = key_cmp(s, e)
          if (backward and order <= 0) or (not backward and order >= 0) then
            fails_with("OTSParameterInvalid", res, msg, code)
          else
            while res do
              pages = pages + 1
              assert.is_true(#res.rows <= (limit or 5000))
              if res.next_start_primary_key then assert.equal(limit, #res.rows) end
              for _, row in ipairs(res.rows) do
                got[#got + 1] = { row.primary_key[1][2], row.primary_key[2][2], row.columns.v }
              end
              start = res.next_start_primary_key
              if not start then break end
              res = assert(db:get_range{ table = "t", start = start, stop = e, limit = limit,
                                         direction = backward and "BACKWARD" or "FORWARD" })
            end
            assert.equal(#want, #got)
            for i = 1, #want do
              assert.same(want[i], got[i], "trial " .. trial .. " row " .. i)
            end
            if limit then assert.equal(math.max(1, math.ceil(#want / limit)), pages) end
          end
        end
        db:close()
      end
    end)

    it("orders INTEGER keys as signed int64 and STRING keys byte by byte", function()
      local db = open()
      mk(db, "t", {{"i", "INTEGER"}, {"s", "STRING"}})
      local ints = { store.integer("-9223372036854775808"), -2^40, -1, 0, 1, 255, 256, 2^40,
                     store.integer("9223372036854775807") }
      local strs = { "", "\0", "a", "a\0", "ab", "b", "\127", "\195\169", "\244\143\191\191" }
      local rows = {}
      for _, i in ipairs(ints) do for _, s in ipairs(strs) do rows[#rows + 1] = { i, s } end end
      helper.rng(3).shuffle(rows)
      for _, k in ipairs(rows) do assert(db:put_row{ table = "t", primary_key = k }) end
      local res = assert(db:get_range{ table = "t", start = {INF_MIN, INF_MIN}, stop = {INF_MAX, INF_MAX} })
      assert.equal(#ints * #strs, #res.rows)
      local n = 0
      for _, i in ipairs(ints) do
        for _, s in ipairs(strs) do
          n = n + 1
          local want = type(i) == "table" and tostring(i.value) or ("%.0f"):format(i)
          local got = res.rows[n].primary_key[1][2]
          assert.equal(want, tostring(got))
          assert.equal(s, res.rows[n].primary_key[2][2])
        end
      end
    end)

    it("stops a page at 5000 rows and at 4 MB, and continues from next_start_primary_key", function()
      local db = open{ partitions = false }
      mk(db, "t", {{"k", "INTEGER"}})
      local rows = {}
      for i = 1, 5003 do rows[#rows + 1] = { type = "PUT", primary_key = { i } } end
      for i = 1, #rows, 200 do
        local batch = {}
        for j = i, math.min(i + 199, #rows) do batch[#batch + 1] = rows[j] end
        assert(db:batch_write_row{ tables = {{ table = "t", rows = batch }} })
      end
      local full = {INF_MIN}
      local res = assert(db:get_range{ table = "t", start = full, stop = {INF_MAX} })
      assert.equal(5000, #res.rows)
      assert.same({{"k", 5001}}, res.next_start_primary_key)
      res = assert(db:get_range{ table = "t", start = res.next_start_primary_key, stop = {INF_MAX}, limit = 10000 })
      assert.equal(3, #res.rows)
      assert.is_nil(res.next_start_primary_key)

      mk(db, "big", {{"k", "INTEGER"}})
      local mb = string.rep("x", 1048576)
      for i = 1, 9 do assert(db:put_row{ table = "big", primary_key = { i }, columns = { v = mb } }) end
      local seen, start, pages = 0, {INF_MIN}, 0
      repeat
        res = assert(db:get_range{ table = "big", start = start, stop = {INF_MAX} })
        local bytes = 0
        for _, r in ipairs(res.rows) do bytes = bytes + #r.columns.v + 1 + 1 + 8 end
        assert.is_true(bytes <= 4194304)
        if res.next_start_primary_key then
          -- the next row would not have fit
          assert.is_true(bytes + 1048576 + 10 > 4194304)
        end
        seen, pages = seen + #res.rows, pages + 1
        start = res.next_start_primary_key
      until not start
      assert.equal(9, seen)
      assert.equal(3, pages)
    end)
  end)

  describe("writes against an in-memory model", function()
    it("random puts, updates and deletes, single and batched, with conditions", function()
      local r = helper.rng(21)
      for _ = 1, helper.trials(20) do
        local db = open{ partition = { split_rows = 8 } }
        mk(db, "t", {{"p", "INTEGER"}, {"q", "STRING"}})
        local model = {} -- "p|q" -> { cols }
        local function id(pk) return pk[1] .. "|" .. pk[2] end
        local function rand_pk() return { r.int(0, 6), ({ "", "a", "b\0", "\244\143\191\191" })[r.int(1, 4)] } end
        local EX = { "IGNORE", "EXPECT_EXIST", "EXPECT_NOT_EXIST" }
        -- one random row operation and the model's verdict on it
        local function op()
          local pk, kind = rand_pk(), ({ "PUT", "UPDATE", "DELETE" })[r.int(1, 3)]
          local ex = EX[r.int(1, kind == "DELETE" and 2 or 3)]
          local cur = model[id(pk)]
          local cc, ccok = nil, true
          if r.int(0, 2) == 0 then
            local want = r.int(0, 3)
            cc = { column = "n", comparator = "LESS_EQUAL", value = want }
            ccok = cur == nil or cur.n == nil or cur.n <= want
          end
          local ok = ccok and not (ex == "EXPECT_EXIST" and not cur) and not (ex == "EXPECT_NOT_EXIST" and cur)
          local row = { type = kind, primary_key = pk, condition = { row_existence = ex, column_condition = cc } }
          local after = cur
          if kind == "PUT" then
            local sv = r.bytes(r.int(0, 3))
            row.columns = { n = r.int(0, 3), s = store.binary(sv) }
            after = { n = row.columns.n, s = sv }
          elseif kind == "UPDATE" then
            local up, nxt = {}, {}
            for k, v in pairs(cur or {}) do nxt[k] = v end
            local c = r.int(1, 3)
            if c == 1 then up.PUT = { s = "u" }; nxt.s = "u"
            elseif c == 2 then
              up.DELETE_ALL = { "s" }; nxt.s = nil
              if cur == nil then nxt = nil end -- only deletes on a missing row: nothing is created
            else up.INCREMENT = { n = 1 }; nxt.n = (nxt.n or 0) + 1 end
            row.update = up
            after = nxt
          else
            after = nil
          end
          return row, ok, pk, after
        end
        for _ = 1, 60 do
          if r.int(0, 1) == 0 then
            local row, ok, pk, after = op()
            local fn = ({ PUT = db.put_row, UPDATE = db.update_row, DELETE = db.delete_row })[row.type]
            row.table, row.type = "t", nil
            local res, _, code = fn(db, row)
            assert.equal(ok, res ~= nil, tostring(_) .. " " .. tostring(code))
            if ok then model[id(pk)] = after else assert.equal("OTSConditionCheckFail", code) end
          else
            local rows, verdicts, seen = {}, {}, {}
            for _ = 1, r.int(1, 8) do
              local row, ok, pk, after = op()
              if not seen[id(pk)] then
                seen[id(pk)] = true
                rows[#rows + 1] = row
                verdicts[#verdicts + 1] = { ok, pk, after }
              end
            end
            local res = assert(db:batch_write_row{ tables = {{ table = "t", rows = rows }} })
            for i, v in ipairs(verdicts) do
              assert.equal(v[1], res.tables[1].rows[i].ok)
              if v[1] then model[id(v[2])] = v[3] end
            end
          end
          -- the store holds exactly the model's rows
          local want = {}
          for k, cols in pairs(model) do
            local c = {}
            for n, v in pairs(cols) do c[#c + 1] = n .. "=" .. tostring(v) end
            table.sort(c)
            want[#want + 1] = { k, table.concat(c, ",") }
          end
          local got = {}
          for _, line in ipairs(dump(db, "t")) do
            local a, b, rest = line:match("^(.-)|(.-)|(.*)$")
            got[a .. "|" .. b] = rest
          end
          local n = 0
          for _ in pairs(got) do n = n + 1 end
          assert.equal(#want, n)
          for _, w in ipairs(want) do assert.equal(w[2], got[w[1]], w[1]) end
          local total = 0
          for _, p in ipairs(db:partitions("t")) do total = total + p.rows end
          assert.equal(#want, total)
        end
        db:close()
      end
    end)
  end)

  describe("rows and columns", function()
    it("round-trips every attribute type", function()
      local db = open()
      mk(db, "t", {{"id", "STRING"}})
      local cols = { s = "text\0bytes", b = store.binary("\255\0"), i = -42, big = store.integer("9223372036854775807"),
                     d = 2.5, dd = store.double(3), t = true, f = false, e = "" }
      assert(db:put_row{ table = "t", primary_key = {"r"}, columns = cols })
      local row = assert(db:get_row{ table = "t", primary_key = {{"id", "r"}} }).row
      assert.same({{"id", "r"}}, row.primary_key)
      local c = row.columns
      assert.equal("text\0bytes", c.s)
      assert.equal("\255\0", c.b)
      assert.equal(-42, c.i)
      assert.equal(tostring(math.type and math.maxinteger or "9223372036854775807"), tostring(c.big))
      assert.equal(2.5, c.d)
      assert.equal(3, c.dd)
      if math.type then assert.equal("float", math.type(c.dd)) end
      assert.is_true(c.t)
      assert.is_false(c.f)
      assert.equal("", c.e)
      -- columns to get
      local r2 = assert(db:get_row{ table = "t", primary_key = {"r"}, columns = {"i", "t", "nope"} }).row
      assert.same({ i = -42, t = true }, r2.columns)
      -- missing row
      assert.is_nil(assert(db:get_row{ table = "t", primary_key = {"none"} }).row)
      -- put replaces the whole row
      assert(db:put_row{ table = "t", primary_key = {"r"}, columns = {{"only", 1}} })
      assert.same({ only = 1 }, assert(db:get_row{ table = "t", primary_key = {"r"} }).row.columns)
    end)

    it("update_row puts, deletes and increments; a failure changes nothing", function()
      local db = open()
      mk(db, "t", {{"id", "INTEGER"}})
      assert(db:update_row{ table = "t", primary_key = {1}, update = { PUT = { a = 1, b = "x" }, INCREMENT = { n = 5 } } })
      assert.same({ a = 1, b = "x", n = 5 }, db:get_row{ table = "t", primary_key = {1} }.row.columns)
      assert(db:update_row{ table = "t", primary_key = {1}, update = { DELETE_ALL = {"a", "zz"}, INCREMENT = { n = -7 } } })
      assert.same({ b = "x", n = -2 }, db:get_row{ table = "t", primary_key = {1} }.row.columns)
      fails_with("OTSParameterInvalid", db:update_row{ table = "t", primary_key = {1}, update = { INCREMENT = { b = 1 } } })
      fails_with("OTSParameterInvalid", db:update_row{ table = "t", primary_key = {1}, update = { INCREMENT = { n = 1.5 } } })
      fails_with("OTSParameterInvalid", db:update_row{ table = "t", primary_key = {1}, update = { PUT = { n = 1 }, DELETE_ALL = {"n"} } })
      fails_with("OTSParameterInvalid", db:update_row{ table = "t", primary_key = {1}, update = { RENAME = {"n"} } })
      if math.type then
        assert(db:update_row{ table = "t", primary_key = {1}, update = { PUT = { m = math.maxinteger } } })
        fails_with("OTSParameterInvalid", db:update_row{ table = "t", primary_key = {1}, update = { INCREMENT = { m = 1, n = 1 } } })
      else
        assert(db:update_row{ table = "t", primary_key = {1}, update = { PUT = { m = 2^53 } } })
        fails_with("OTSParameterInvalid", db:update_row{ table = "t", primary_key = {1}, update = { INCREMENT = { m = 1, n = 1 } } })
      end
      -- the failed increments left n alone
      assert.equal(-2, db:get_row{ table = "t", primary_key = {1} }.row.columns.n)
      fails_with("OTSConditionCheckFail", db:update_row{ table = "t", primary_key = {2}, update = { PUT = { a = 1 } }, condition = "EXPECT_EXIST" })
      assert.is_nil(db:get_row{ table = "t", primary_key = {2} }.row)
    end)

    it("delete_row honours its condition and refuses EXPECT_NOT_EXIST", function()
      local db = open()
      mk(db, "t", {{"id", "INTEGER"}})
      assert(db:put_row{ table = "t", primary_key = {1}, columns = { v = 1 } })
      fails_with("OTSParameterInvalid", db:delete_row{ table = "t", primary_key = {1}, condition = "EXPECT_NOT_EXIST" })
      fails_with("OTSConditionCheckFail", db:delete_row{ table = "t", primary_key = {1},
        condition = { row_existence = "EXPECT_EXIST", column_condition = { column = "v", comparator = "EQUAL", value = 2 } } })
      assert.is_table(db:get_row{ table = "t", primary_key = {1} }.row)
      assert(db:delete_row{ table = "t", primary_key = {1}, condition = "EXPECT_EXIST" })
      assert.is_nil(db:get_row{ table = "t", primary_key = {1} }.row)
      assert(db:delete_row{ table = "t", primary_key = {1} })
      fails_with("OTSConditionCheckFail", db:delete_row{ table = "t", primary_key = {1}, condition = "EXPECT_EXIST" })
    end)
  end)

  describe("conditions", function()
    it("row existence: put under each expectation, on present and missing rows", function()
      local db = open()
      mk(db, "t", {{"id", "INTEGER"}})
      assert(db:put_row{ table = "t", primary_key = {1}, columns = { v = 1 } })
      local cases = {
        { "IGNORE", 1, true }, { "IGNORE", 2, true },
        { "EXPECT_EXIST", 1, true }, { "EXPECT_EXIST", 3, false },
        { "EXPECT_NOT_EXIST", 1, false }, { "EXPECT_NOT_EXIST", 4, true },
      }
      for _, c in ipairs(cases) do
        local before = dump(db, "t")
        local ok, msg, code = db:put_row{ table = "t", primary_key = { c[2] }, columns = { v = 9 }, condition = { row_existence = c[1] } }
        if c[3] then
          assert.is_table(ok)
          assert.equal(9, db:get_row{ table = "t", primary_key = { c[2] } }.row.columns.v)
        else
          fails_with("OTSConditionCheckFail", ok, msg, code)
          assert.same(before, dump(db, "t"))
        end
      end
    end)

    it("single column conditions follow the comparators on random values", function()
      local r = helper.rng(11)
      local db = open()
      mk(db, "t", {{"id", "INTEGER"}})
      local ops = {
        EQUAL = function(a, b) return a == b end, NOT_EQUAL = function(a, b) return a ~= b end,
        GREATER_THAN = function(a, b) return a > b end, GREATER_EQUAL = function(a, b) return a >= b end,
        LESS_THAN = function(a, b) return a < b end, LESS_EQUAL = function(a, b) return a <= b end,
      }
      local names = {}
      for k in pairs(ops) do names[#names + 1] = k end
      table.sort(names)
      for _ = 1, helper.trials(300) do
        local stored, given = r.int(-3, 3), r.int(-3, 3)
        local strs = r.int(0, 1) == 1
        local sv, gv = stored, given
        local sc, gc = sv, gv
        if strs then
          sv, gv = ("\255a\0"):sub(1, stored + 3), ("\255a\0"):sub(1, given + 3)
          sc, gc = store.binary(sv), store.binary(gv)
        end
        assert(db:put_row{ table = "t", primary_key = {1}, columns = { c = sc, n = 0 } })
        local op = names[r.int(1, #names)]
        local res = db:update_row{ table = "t", primary_key = {1}, update = { INCREMENT = { n = 1 } },
          condition = { row_existence = "EXPECT_EXIST", column_condition = { column = "c", comparator = op, value = gc } } }
        local want
        if strs then want = ops[op](kv.cmp(sv, gv), 0) else want = ops[op](sv, gv) end
        assert.equal(want, res ~= nil, op .. " " .. tostring(sv) .. " " .. tostring(gv))
        assert.equal(want and 1 or 0, db:get_row{ table = "t", primary_key = {1} }.row.columns.n)
      end
    end)

    it("composite conditions, pass_if_missing and type mismatches", function()
      local db = open()
      mk(db, "t", {{"id", "INTEGER"}})
      assert(db:put_row{ table = "t", primary_key = {1}, columns = { a = 1, s = "x" } })
      local function check(cc)
        return db:put_row{ table = "t", primary_key = {1}, columns = { a = 1, s = "x" },
                           condition = { row_existence = "IGNORE", column_condition = cc } } ~= nil
      end
      local a1 = { column = "a", comparator = "EQUAL", value = 1 }
      local a2 = { column = "a", comparator = "EQUAL", value = 2 }
      assert.is_true(check({ logical = "OR", conditions = { a1, a2 } }))
      assert.is_false(check({ logical = "AND", conditions = { a1, a2 } }))
      assert.is_true(check({ logical = "NOT", conditions = { a2 } }))
      assert.is_true(check({ logical = "AND", conditions = { a1, { logical = "NOT", conditions = { a2 } } } }))
      assert.is_true(check({ column = "missing", comparator = "EQUAL", value = 1 }))
      assert.is_false(check({ column = "missing", comparator = "EQUAL", value = 1, pass_if_missing = false }))
      assert.is_false(check({ column = "a", comparator = "EQUAL", value = "1" }))
      assert.is_true(check({ column = "a", comparator = "NOT_EQUAL", value = 1.5 }))
      assert.is_false(check({ column = "s", comparator = "GREATER_THAN", value = 0 }))
      -- malformed conditions are parameter errors, not check failures
      local bad = {
        { logical = "AND", conditions = { a1 } }, { logical = "NOT", conditions = { a1, a2 } },
        { logical = "XOR", conditions = { a1, a2 } }, { column = "a", comparator = "LIKE", value = 1 },
        { column = "a", comparator = "EQUAL" }, { comparator = "EQUAL", value = 1 }, "nope",
      }
      for _, cc in ipairs(bad) do
        fails_with("OTSParameterInvalid", db:put_row{ table = "t", primary_key = {1},
          condition = { column_condition = cc } })
      end
      fails_with("OTSParameterInvalid", db:put_row{ table = "t", primary_key = {1}, condition = "MAYBE" })
      assert.same({ "1|a=1,s=x" }, dump(db, "t"))
    end)
  end)

  describe("limits and bad input", function()
    it("answers with Tablestore's error codes and leaves data unchanged", function()
      local db = open()
      mk(db, "t", {{"a", "INTEGER"}, {"b", "STRING"}})
      assert(db:put_row{ table = "t", primary_key = {1, "x"}, columns = { v = 1 } })
      local before = dump(db, "t")
      local P = "OTSParameterInvalid"
      fails_with("OTSObjectNotExist", db:put_row{ table = "nope", primary_key = {1, "x"} })
      fails_with("OTSObjectNotExist", db:get_range{ table = "nope", start = {}, stop = {} })
      fails_with("OTSObjectAlreadyExist", db:create_table{ name = "t", primary_key = {{"a", "INTEGER"}} })
      fails_with(P, db:create_table{ name = "1bad", primary_key = {{"a", "INTEGER"}} })
      fails_with(P, db:create_table{ name = "bad-name", primary_key = {{"a", "INTEGER"}} })
      fails_with(P, db:create_table{ name = ("x"):rep(256), primary_key = {{"a", "INTEGER"}} })
      fails_with(P, db:create_table{ name = "u", primary_key = {} })
      fails_with(P, db:create_table{ name = "u", primary_key = {{"a", "INTEGER"}, {"b", "INTEGER"}, {"c", "INTEGER"}, {"d", "INTEGER"}, {"e", "INTEGER"}} })
      fails_with(P, db:create_table{ name = "u", primary_key = {{"a", "DOUBLE"}} })
      fails_with(P, db:create_table{ name = "u", primary_key = {{"a", "INTEGER"}, {"a", "STRING"}} })
      fails_with("OTSInvalidPK", db:put_row{ table = "t", primary_key = {1} })
      fails_with("OTSInvalidPK", db:put_row{ table = "t", primary_key = {1, "x", 3} })
      fails_with("OTSInvalidPK", db:put_row{ table = "t", primary_key = {"1", "x"} })
      fails_with("OTSInvalidPK", db:put_row{ table = "t", primary_key = {1.5, "x"} })
      fails_with("OTSInvalidPK", db:put_row{ table = "t", primary_key = {1, 2} })
      fails_with("OTSInvalidPK", db:put_row{ table = "t", primary_key = {{"b", 1}, {"a", "x"}} })
      fails_with(P, db:put_row{ table = "t", primary_key = {1, INF_MAX} })
      fails_with(P, db:put_row{ table = "t", primary_key = {1, ("k"):rep(1025)} })
      assert(db:put_row{ table = "t", primary_key = {1, ("k"):rep(1024)} })
      assert(db:delete_row{ table = "t", primary_key = {1, ("k"):rep(1024)} })
      fails_with(P, db:put_row{ table = "t", primary_key = {1, "x"}, columns = { v = ("z"):rep(2097153) } })
      fails_with(P, db:put_row{ table = "t", primary_key = {1, "x"}, columns = { ["bad name"] = 1 } })
      fails_with(P, db:put_row{ table = "t", primary_key = {1, "x"}, columns = { a = 1 } })
      fails_with(P, db:put_row{ table = "t", primary_key = {1, "x"}, columns = { v = 0 / 0 } })
      fails_with(P, db:put_row{ table = "t", primary_key = {1, "x"}, columns = { v = {} } })
      fails_with(P, db:put_row{ table = "t", primary_key = {1, "x"}, columns = {{"v", 1}, {"v", 2}} })
      local wide = {}
      for i = 1, 1025 do wide["c" .. i] = i end
      fails_with(P, db:put_row{ table = "t", primary_key = {1, "x"}, columns = wide })
      local big = {}
      for i = 1, 3 do big["c" .. i] = ("y"):rep(2000000) end
      fails_with(P, db:put_row{ table = "t", primary_key = {1, "x"}, columns = big })
      local many = {}
      for i = 1, 129 do many[i] = "c" .. i end
      fails_with(P, db:get_row{ table = "t", primary_key = {1, "x"}, columns = many })
      fails_with(P, db:get_range{ table = "t", start = {1, INF_MIN}, stop = {1, INF_MIN} })
      fails_with(P, db:get_range{ table = "t", start = {2, INF_MIN}, stop = {1, INF_MIN} })
      fails_with(P, db:get_range{ table = "t", start = {1, INF_MIN}, stop = {2, INF_MIN}, direction = "BACKWARD" })
      fails_with(P, db:get_range{ table = "t", start = {1, INF_MIN}, stop = {2, INF_MIN}, direction = "SIDEWAYS" })
      fails_with(P, db:get_range{ table = "t", start = {1, INF_MIN}, stop = {2, INF_MIN}, limit = 0 })
      fails_with("OTSInvalidPK", db:get_range{ table = "t", start = {1}, stop = {2, INF_MIN} })
      assert.same(before, dump(db, "t"))
      -- programming mistakes raise
      assert.has_error(function() db:put_row("t") end, "otskit.store: put_row takes a request table")
      assert.has_error(function() store.open{ partition = { split_rows = -1 } } end)
      assert.has_error(function() store.binary(1) end)
      assert.has_error(function() store.integer("12x") end)
      assert.has_error(function() store.integer("9223372036854775808") end)
    end)
  end)

  describe("batches", function()
    it("batch_write_row: per-row results, partial failure, all-or-nothing request errors", function()
      local db = open()
      mk(db, "t", {{"id", "INTEGER"}})
      mk(db, "u", {{"k", "STRING"}})
      assert(db:put_row{ table = "t", primary_key = {1}, columns = { v = 1 } })
      local res = assert(db:batch_write_row{ tables = {
        { table = "t", rows = {
          { type = "PUT", primary_key = {2}, columns = { v = 2 } },
          { type = "PUT", primary_key = {5}, columns = { v = 9 }, condition = "EXPECT_EXIST" },
          { type = "UPDATE", primary_key = {1}, update = { INCREMENT = { v = 10 } } },
          { type = "DELETE", primary_key = {3}, condition = "EXPECT_EXIST" },
          { type = "PUT", primary_key = {"bad"} },
          { type = "MERGE", primary_key = {4} },
        } },
        { table = "u", rows = { { type = "PUT", primary_key = {"a"}, columns = { x = true }, return_type = "RT_PK" } } },
      } })
      local oks = {}
      for _, r in ipairs(res.tables[1].rows) do oks[#oks + 1] = r.ok and "ok" or r.code end
      assert.same({ "ok", "OTSConditionCheckFail", "ok", "OTSConditionCheckFail", "OTSInvalidPK", "OTSParameterInvalid" }, oks)
      assert.equal(4, res.failed)
      assert.is_true(res.tables[2].rows[1].ok)
      assert.same({{"k", "a"}}, res.tables[2].rows[1].row.primary_key)
      assert.same({ "1|v=11", "2|v=2" }, dump(db, "t"))
      -- request-level errors write nothing
      local before_t, before_u = dump(db, "t"), dump(db, "u")
      local rows = {}
      for i = 1, 201 do rows[i] = { type = "PUT", primary_key = { 100 + i } } end
      fails_with("OTSParameterInvalid", db:batch_write_row{ tables = {{ table = "t", rows = rows }} })
      fails_with("OTSObjectNotExist", db:batch_write_row{ tables = {
        { table = "t", rows = {{ type = "PUT", primary_key = {8} }} }, { table = "nope", rows = {} } } })
      local big = ("b"):rep(1500000)
      fails_with("OTSParameterInvalid", db:batch_write_row{ tables = {{ table = "u", rows = {
        { type = "PUT", primary_key = {"x"}, columns = { v = big } }, { type = "PUT", primary_key = {"y"}, columns = { v = big } },
        { type = "PUT", primary_key = {"z"}, columns = { v = big } } } }} })
      assert.same(before_t, dump(db, "t"))
      assert.same(before_u, dump(db, "u"))
    end)

    it("batch_get_row returns rows in request order, nil for missing", function()
      local db = open()
      mk(db, "t", {{"id", "INTEGER"}})
      for i = 1, 5 do assert(db:put_row{ table = "t", primary_key = { i }, columns = { v = i * 10, w = 1 } }) end
      local res = assert(db:batch_get_row{ tables = {{ table = "t", primary_keys = {{3}, {9}, {{"id", 1}}}, columns = {"v"} }} })
      local rows = res.tables[1].rows
      assert.equal(3, #rows)
      assert.same({ v = 30 }, rows[1].row.columns)
      assert.is_true(rows[2].ok)
      assert.is_nil(rows[2].row)
      assert.same({{"id", 1}}, rows[3].row.primary_key)
      local pks = {}
      for i = 1, 101 do pks[i] = { i } end
      fails_with("OTSParameterInvalid", db:batch_get_row{ tables = {{ table = "t", primary_keys = pks }} })
      fails_with("OTSParameterInvalid", db:batch_get_row{ tables = {{ table = "t", primary_keys = {{1}, {1}} }} })
      fails_with("OTSObjectNotExist", db:batch_get_row{ tables = {{ table = "x", primary_keys = {{1}} }} })
    end)
  end)

  describe("partitions", function()
    local function rows_by_partition(db, t)
      local total = 0
      for _, p in ipairs(db:partitions(t)) do total = total + p.rows end
      return total
    end

    it("split at partition-key values, never inside one, and keep exact row counts", function()
      local r = helper.rng(5)
      local db = open{ partition = { split_rows = 50 } }
      mk(db, "t", {{"pk", "INTEGER"}, {"seq", "INTEGER"}})
      local n, per = 0, {}
      for i = 1, 2000 do
        local pk = r.int(1, 40)
        per[pk] = (per[pk] or 0) + 1
        assert(db:put_row{ table = "t", primary_key = { pk, i }, columns = { v = i } })
        n = n + 1
      end
      local parts = db:partitions("t")
      assert.is_true(#parts > 10)
      assert.is_nil(parts[1].lo)
      assert.is_nil(parts[#parts].hi)
      local sum = 0
      for i, p in ipairs(parts) do
        if i > 1 then assert.equal(parts[i - 1].hi, p.lo) end
        -- the rows of the partition, counted by partition-key values
        local want = 0
        for pk, c in pairs(per) do
          if (p.lo == nil or pk >= p.lo) and (p.hi == nil or pk < p.hi) then want = want + c end
        end
        assert.equal(want, p.rows)
        sum = sum + p.rows
      end
      assert.equal(n, sum)
      assert.equal(#parts - 1, db:hotspots("t").splits)
      assert.equal(#parts - 1, #db:describe_table{ name = "t" }.shard_splits)
    end)

    it("one partition-key value never splits, however large", function()
      local db = open{ partition = { split_rows = 10 } }
      mk(db, "t", {{"pk", "STRING"}, {"seq", "INTEGER"}})
      for i = 1, 300 do assert(db:put_row{ table = "t", primary_key = { "hot", i } }) end
      local parts = db:partitions("t")
      assert.equal(1, #parts)
      assert.equal(300, parts[1].rows)
      -- a second value lets it split, at that value
      assert(db:put_row{ table = "t", primary_key = { "hou", 1 } })
      for i = 2, 700 do assert(db:put_row{ table = "t", primary_key = { "hou", i } }) end
      parts = db:partitions("t")
      assert.equal(2, #parts)
      assert.equal("hou", parts[2].lo)
      assert.equal(300, parts[1].rows)
      assert.equal(700, parts[2].rows)
    end)

    it("counts reads and writes per window and reports the hot spot", function()
      local now = 1000
      local db = open{ clock = function() return now end, partition = { window = 10 } }
      mk(db, "seq", {{"pk", "INTEGER"}}, { splits = { 100, 200, 300 } })
      mk(db, "spread", {{"pk", "INTEGER"}}, { splits = { 100, 200, 300 } })
      local r = helper.rng(9)
      for i = 1, 400 do
        -- sequential keys: every write of a window lands on one partition
        if i % 100 == 0 and i < 400 then now = now + 10 end
        assert(db:put_row{ table = "seq", primary_key = { i } })
        assert(db:put_row{ table = "spread", primary_key = { r.int(0, 399) } })
      end
      local hs = db:hotspots("seq")
      assert.equal(400, hs.writes)
      assert.equal(4, #hs.windows)
      for _, w in ipairs(hs.windows) do assert.equal(1, w.share) end
      assert.equal(101 / 400, hs.share) -- over the whole run every partition got its turn
      assert.equal(101 / 100, hs.skew)
      local sp = db:hotspots("spread")
      for _, w in ipairs(sp.windows) do assert.is_true(w.share < 0.5) end
      -- reads of a range count on their partitions
      assert(db:get_range{ table = "seq", start = {150}, stop = {250} })
      local parts = db:partitions("seq")
      assert.equal(4, #parts)
      assert.same({ 0, 50, 50, 0 }, { parts[1].window_reads, parts[2].window_reads, parts[3].window_reads, parts[4].window_reads })
      assert.same({ 99, 100, 100, 101 }, { parts[1].writes, parts[2].writes, parts[3].writes, parts[4].writes })
    end)

    it("splits a partition past the load threshold at the median of the keys it served", function()
      local now = 0
      local db = open{ clock = function() return now end, partition = { split_load = 200, window = 60 } }
      mk(db, "t", {{"pk", "INTEGER"}})
      for i = 1, 150 do assert(db:put_row{ table = "t", primary_key = { i } }) end
      assert.equal(1, #db:partitions("t"))
      for i = 1, 100 do assert(db:get_row{ table = "t", primary_key = { i } }) end
      local parts = db:partitions("t")
      assert.equal(2, #parts)
      assert.is_true(parts[2].lo > 20 and parts[2].lo < 130)
      -- a hot single key cannot be split
      local db2 = open{ clock = function() return now end, partition = { split_load = 50 } }
      mk(db2, "t", {{"pk", "INTEGER"}})
      for _ = 1, 500 do assert(db2:update_row{ table = "t", primary_key = { 7 }, update = { INCREMENT = { n = 1 } } }) end
      assert.equal(1, #db2:partitions("t"))
      assert.equal(500, db2:get_row{ table = "t", primary_key = { 7 } }.row.columns.n)
    end)

    it("is off with partitions = false", function()
      local db = open{ partitions = false }
      mk(db, "t", {{"pk", "INTEGER"}})
      fails_with("OTSParameterInvalid", db:partitions("t"))
      fails_with("OTSObjectNotExist", db:partitions("nope"))
    end)
  end)

  describe("fault injection", function()
    it("fails a seeded fraction of calls with the chosen retryable code", function()
      local function run(seed)
        local db = open()
        mk(db, "t", {{"pk", "INTEGER"}})
        db:inject{ rate = 0.3, code = "OTSServerBusy", seed = seed }
        local pattern, fails = {}, 0
        for i = 1, 1000 do
          local ok, msg, code = db:put_row{ table = "t", primary_key = { i } }
          if not ok then
            assert.equal("OTSServerBusy", code)
            assert.is_string(msg)
            fails = fails + 1
            assert.is_nil(db:get_row{ table = "t", primary_key = { i } } and nil) -- get_row may fail too
          end
          pattern[i] = ok and 1 or 0
        end
        db:inject(nil)
        -- a failed write was not applied
        local res = assert(db:get_range{ table = "t", start = {INF_MIN}, stop = {INF_MAX} })
        local applied = 0
        for _, row in ipairs(res.rows) do applied = applied + pattern[row.primary_key[1][2]] end
        assert.equal(#res.rows, applied)
        return table.concat(pattern), fails
      end
      local p1, f1 = run(42)
      local p2 = run(42)
      local p3 = run(43)
      assert.equal(p1, p2)
      assert.not_equal(p1, p3)
      assert.is_true(f1 > 200 and f1 < 400, "failures " .. f1)
      assert.has_error(function() open():inject{ rate = 0.1, code = "OTSConditionCheckFail" } end)
      assert.has_error(function() open():inject{ rate = 2 } end)
      assert.has_error(function() open():inject{ ops = { "nope" } } end)
    end)

    it("accounts injected latency on the simulated clock and calls the sleep hook", function()
      local slept = {}
      local db = open{ clock = function() return 100 end }
      mk(db, "t", {{"pk", "INTEGER"}})
      db:inject{ latency = 0.25, sleep = function(s) slept[#slept + 1] = s end, ops = { "get_row" } }
      assert.equal(100, db:now())
      assert(db:put_row{ table = "t", primary_key = { 1 } })
      local res = assert(db:get_row{ table = "t", primary_key = { 1 } })
      assert.equal(0.25, res.latency)
      assert(db:get_row{ table = "t", primary_key = { 1 } })
      assert.equal(100.5, db:now())
      assert.same({ 0.25, 0.25 }, slept)
      assert.same({ calls = 2, failed = 0, rows_failed = 0, latency = 0.5 }, db:fault_stats())
      db:inject{ latency = { 0.1, 0.2 }, seed = 3 }
      for _ = 1, 20 do
        local lat = assert(db:get_row{ table = "t", primary_key = { 1 } }).latency
        assert.is_true(lat >= 0.1 and lat < 0.2)
      end
    end)

    it("applied = true lands the write yet reports the failure; row_rate fails rows of a batch", function()
      local db = open()
      mk(db, "t", {{"pk", "INTEGER"}})
      db:inject{ rate = 1, code = "OTSTimeout", applied = true }
      fails_with("OTSTimeout", db:put_row{ table = "t", primary_key = { 1 }, columns = { v = 1 } })
      db:inject{ row_rate = 0.5, code = "OTSRowOperationConflict", seed = 5 }
      local rows = {}
      for i = 1, 100 do rows[i] = { type = "PUT", primary_key = { 100 + i } } end
      local res = assert(db:batch_write_row{ tables = {{ table = "t", rows = rows }} })
      db:inject(nil)
      assert.is_table(db:get_row{ table = "t", primary_key = { 1 } }.row)
      local failed = 0
      for i, r in ipairs(res.tables[1].rows) do
        local present = db:get_row{ table = "t", primary_key = { 100 + i } }.row ~= nil
        assert.equal(r.ok, present)
        if not r.ok then failed = failed + 1; assert.equal("OTSRowOperationConflict", r.code) end
      end
      assert.equal(res.failed, failed)
      assert.is_true(failed > 25 and failed < 75)
    end)
  end)

  describe("persistence and handles", function()
    it("reopens a file with its tables, rows and partition bounds", function()
      local path = os.tmpname()
      os.remove(path)
      local db = open{ path = path, partition = { split_rows = 20 } }
      mk(db, "t", {{"pk", "INTEGER"}, {"s", "STRING"}}, { splits = { 5 } })
      for i = 1, 100 do assert(db:put_row{ table = "t", primary_key = { i, "s" .. i }, columns = { v = i } }) end
      local parts = db:partitions("t")
      local rows = dump(db, "t")
      db:close()
      db:close()
      local db2 = open{ path = path }
      assert.same({ "t" }, db2:list_table().table_names)
      assert.same(rows, dump(db2, "t"))
      local parts2 = db2:partitions("t")
      assert.equal(#parts, #parts2)
      for i = 1, #parts do
        assert.equal(parts[i].lo, parts2[i].lo)
        assert.equal(parts[i].rows, parts2[i].rows)
      end
      assert(db2:delete_table{ name = "t" })
      fails_with("OTSObjectNotExist", db2:get_row{ table = "t", primary_key = { 1, "s1" } })
      db2:close()
      assert.has_error(function() db2:get_row{ table = "t", primary_key = { 1 } } end, "otskit.store: db is closed")
      os.remove(path); os.remove(path .. "-wal"); os.remove(path .. "-shm")
    end)

    it("reports a corrupt stored row instead of crashing or guessing", function()
      local db = open()
      mk(db, "t", {{"id", "INTEGER"}})
      assert(db:put_row{ table = "t", primary_key = { 1 }, columns = { v = 1 } })
      assert(db.h:put("t_t", require("otskit.key").pack({ 2 }), "\5abc")) -- truncated cell
      fails_with("OTSInternalServerError", db:get_row{ table = "t", primary_key = { 2 } })
      fails_with("OTSInternalServerError", db:get_range{ table = "t", start = {INF_MIN}, stop = {INF_MAX} })
      fails_with("OTSInternalServerError", db:update_row{ table = "t", primary_key = { 2 }, update = { PUT = { v = 1 } } })
      assert.equal(1, db:get_row{ table = "t", primary_key = { 1 } }.row.columns.v)
      local ok, msg, code = require("otskit.core").row.decode("\1a?")
      assert.is_nil(ok); assert.is_string(msg); assert.equal("CorruptRow", code)
      assert.has_error(function() require("otskit.core").row.encode({ "a" }, { "FLOAT" }, { 1 }) end)
      assert.has_error(function() require("otskit.core").row.encode({ "a" }, { "INTEGER" }, { 1.5 }) end)
      assert.has_error(function() require("otskit.core").row.encode({ 1 }, { "STRING" }, { "x" }) end)
    end)

    it("kv cursors close explicitly, with their db, and on collection", function()
      local h = assert(kv.open())
      assert(h:create("x"))
      for i = 1, 10 do assert(h:put("x", ("k%02d"):format(i), "v")) end
      local c1 = h:scan("x", "k03", "k07", true, 2)
      assert.same({ "k06", "v" }, { c1:next() })
      local c2 = h:scan("x") -- the cached statement is busy: a private one
      local ks, vs, n = c2:fetch(100)
      assert.equal(10, n)
      assert.equal("k01", ks[1])
      assert.equal("v", vs[10])
      c1:close(); c1:close()
      assert.is_nil(c1:next())
      local c3 = h:scan("x", "k05")
      h:close()
      assert.is_nil(c3:next()) -- closed with the db
      assert.has_error(function() h:get("x", "k") end, "otskit.kv: db is closed")
      -- a missing table (another connection may have dropped it) is nil, msg, code
      local none, nmsg, ncode = assert(kv.open()):get("nope", "k")
      assert.is_nil(none); assert.matches("no table 'nope'", nmsg); assert.equal("KVNoTable", ncode)
      local ok, msg, code = kv.open("/nonexistent-dir/a/b.db")
      assert.is_nil(ok); assert.is_string(msg); assert.equal("KVError", code)
      -- cursors and dbs dropped without close are collected cleanly
      for _ = 1, 50 do
        local d = kv.open()
        d:create("y"); d:put("y", "a", "b")
        local c = d:scan("y")
        c:next()
      end
      collectgarbage(); collectgarbage()
      local K = require "otskit.key"
      assert.equal(K.pack({ "a\0b" }), require("otskit.core").key.first(K.pack({ "a\0b", 7 })))
      assert.equal(K.pack({ -300 }), require("otskit.core").key.first(K.pack({ -300, "x" })))
      local none, _, bad = require("otskit.core").key.first("")
      assert.is_nil(none); assert.equal("BadTuple", bad)
      assert.equal(-1, kv.cmp("a", "a\0"))
      assert.equal(1, kv.cmp("\255", "\1\255"))
      assert.equal(2, kv.bsearch({ "b", "d", "f" }, "d\0"))
      assert.equal(0, kv.bsearch({ "b", "d", "f" }, "a"))
      if _VERSION == "Lua 5.4" and not jit then
        local f = assert(load([[
          local kv = ...
          local d <close> = kv.open()
          d:create("z")
          return d
        ]]))
        local d = f(kv)
        assert.has_error(function() d:get("z", "a") end, "otskit.kv: db is closed")
      end
    end)

    -- the names of the entries of directory dir, sorted, as one string
    local function listing(dir)
      local p = assert(io.popen("ls -A '" .. dir .. "'"))
      local out = p:read("*a"); p:close()
      return out
    end

    it("open takes a file name only: never a number, a name cut at a NUL byte, or an SQLite URI", function()
      local dir = os.tmpname(); os.remove(dir); assert(os.execute("mkdir -p '" .. dir .. "'"))
      local r = helper.rng(23)
      local cwd, before = listing("."), listing(dir)
      -- not a string: a programming mistake, raised, nothing created
      for _, bad in ipairs { 5, 0, -1, 2.5, true, {}, function() end } do
        assert.has_error(function() kv.open(bad) end, "otskit.kv: open: path must be a string, got " .. type(bad))
        assert.has_error(function() store.open { path = bad } end)
        local ok, e = pcall(store.open, { path = bad })
        assert.is_false(ok); assert.matches("^otskit%.store: open: path must be a string", e)
      end
      local function refused(path, what)
        local h, msg, code = kv.open(path)
        assert.is_nil(h, path); assert.equal("KVBadPath", code); assert.matches(what, msg, 1, true)
        local db, smsg, scode = store.open { path = path }
        assert.is_nil(db, path); assert.equal("OTSParameterInvalid", scode); assert.matches(what, smsg, 1, true)
      end
      refused("", "empty")
      for _ = 1, helper.trials(200) do
        -- a random name with a NUL byte somewhere: C would see only its head
        local n = r.int(0, 12)
        local name = {}
        for i = 1, n do name[i] = string.char(r.int(32, 126)) end
        table.insert(name, r.int(1, n + 1), "\0")
        refused(dir .. "/" .. table.concat(name), "NUL byte")
        -- "file:" in any case, then anything SQLite would read as a URI
        local prefix = ("file:"):gsub("%a", function(c) return r.int(0, 1) == 1 and c:upper() or c end)
        local tail = ({ ":memory:", ":memory:?cache=shared", dir .. "/x.db", dir .. "/x.db?mode=ro",
                        "x?vfs=unix-none", "" })[r.int(1, 6)]
        refused(prefix .. tail, "URI")
      end
      assert.equal(before, listing(dir)); assert.equal(cwd, listing("."))
      -- a file whose name merely contains "file:" or "?" is a file, opened as one
      for _, name in ipairs { "file:a.db", "x.db?mode=memory", "file:b?cache=shared" } do
        local db = assert(store.open { path = dir .. "/" .. name })
        assert(db:create_table { name = "t", primary_key = { { "id", "STRING" } } })
        db:close()
        local f = io.open(dir .. "/" .. name, "rb")
        assert.truthy(f, name .. " is a file in " .. dir); f:close()
      end
      assert(os.execute("rm -rf '" .. dir .. "'"))
      assert.equal(cwd, listing("."))
    end)
  end)
end)

describe("otskit.store open of a locked file", function()
  it("says OTSServerBusy (retryable), never raises, and opens once the lock is gone", function()
    if not os.execute("command -v python3 >/dev/null 2>&1") then
      pending("needs python3's sqlite3 to hold a lock from another process")
      return
    end
    local store = require "otskit.store"
    local path = os.tmpname()
    os.remove(path)
    local db = assert(store.open { path = path })
    assert(db:create_table { name = "t", primary_key = { { "id", "STRING" } } })
    db:close()
    -- another process holds an exclusive lock for 2 s
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write("import sqlite3, time, sys\n",
            "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n",
            "c.execute('PRAGMA locking_mode=EXCLUSIVE'); c.execute('BEGIN EXCLUSIVE')\n",
            "c.execute('CREATE TABLE IF NOT EXISTS x(a)'); print('locked'); sys.stdout.flush()\n",
            "time.sleep(2); c.execute('COMMIT'); c.close()\n")
    f:close()
    local holder = io.popen(("python3 '%s' '%s'"):format(script, path))
    assert.equal("locked", holder:read("*l"))
    local d, msg, code = store.open { path = path, busy_timeout = 100 }
    assert.is_nil(d)
    assert.equal("OTSServerBusy", code)
    assert.matches("locked", msg)
    -- the default busy timeout (5 s) outlasts the 2 s lock: the open waits
    d = assert(store.open { path = path })
    holder:close()
    assert.truthy(d:describe_table { name = "t" })
    d:close()
    os.remove(script); os.remove(path); os.remove(path .. "-wal"); os.remove(path .. "-shm")
  end)
end)
