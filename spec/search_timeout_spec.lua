-- spec/search_timeout_spec.lua -- timeout_ms of db:search and
-- db:parallel_scan, as db:sql's: a statement running past it is
-- interrupted (otskit.core.sql.deadline, an SQLite progress handler) and
-- the request fails OTSTimeout; a timeout it keeps changes nothing in the
-- answer; a bad one is refused; the limit is lifted after every request.
local store = require "otskit.store"
local sql = require("otskit.core").sql

local N = 20000
local COUNT = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000000) SELECT count(*) FROM c"

describe("sql.deadline", function()
  it("interrupts a statement running past it, and is lifted after", function()
    local db = assert(store.open{ path = ":memory:" })
    assert.is_true(sql.deadline(db.h, 0))
    local rows, msg, code = sql.rows(db.h, COUNT)
    assert.is_nil(rows)
    assert.equal("KVError", code)
    assert.matches("interrupt", msg)
    assert.equal("interrupted", sql.deadline(db.h))
    assert.is_false(sql.deadline(db.h)) -- lifted: nothing armed
    -- a limit not reached: the statement answers, nothing reported
    assert.is_true(sql.deadline(db.h, 600000))
    assert.equal(3, assert(sql.rows(db.h, "SELECT 1 + 2"))[1][1])
    assert.is_false(sql.deadline(db.h))
    assert.has_error(function() sql.deadline(db.h, -1) end)
    db:close()
  end)
end)

describe("search and parallel_scan timeout_ms", function()
  local db
  setup(function()
    db = assert(store.open{ path = ":memory:" })
    assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
    local list = {}
    for i = 1, N do
      list[#list + 1] = { type = "PUT", primary_key = { { "id", i } }, columns = { n = i % 97, k = "key" .. i } }
      if #list == 200 then
        assert.equal(0, assert(db:batch_write_row{ tables = { { table = "t", rows = list } } }).failed)
        list = {}
      end
    end
    assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = {
      { field_name = "n", field_type = "LONG", enable_sort_and_agg = true },
      { field_name = "k", field_type = "KEYWORD", enable_sort_and_agg = true } } } })
  end)
  teardown(function() db:close() end)

  -- every keyword tested: a statement over all N documents
  local Q = { wildcard = { field_name = "k", value = "*7*" } }
  local function search(extra)
    local req = { table = "t", index = "ix", query = Q, get_total_count = true, limit = 100,
      sort = { { field_sort = { field_name = "n", order = "DESC" } } } }
    for k, v in pairs(extra or {}) do req[k] = v end
    return db:search(req)
  end
  local function scan(extra) -- (2000 rows read)
    local req = { table = "t", index = "ix", query = Q, limit = 2000, columns_to_get = { return_type = "RETURN_ALL" } }
    for k, v in pairs(extra or {}) do req[k] = v end
    return db:parallel_scan(req)
  end

  it("a tiny timeout fails OTSTimeout; the next request runs without it", function()
    local r, msg, code = search{ timeout_ms = 1 }
    assert.is_nil(r)
    assert.equal("OTSTimeout", code)
    assert.equal("The request ran longer than its timeout_ms (1 ms).", msg)
    r, msg, code = scan{ timeout_ms = 1 }
    assert.is_nil(r)
    assert.equal("OTSTimeout", code, msg)
    -- lifted: the same requests without a timeout, and a write, answer
    assert(search())
    assert(scan())
    assert(db:put_row{ table = "t", primary_key = { N + 1 }, columns = { n = 1, k = "x" } })
    assert(db:delete_row{ table = "t", primary_key = { N + 1 } })
  end)

  it("a timeout the request keeps answers what no timeout answers", function()
    local want = assert(search())
    assert.is_true(want.total_count > 100)
    local got = assert(search{ timeout_ms = 600000 })
    assert.same(want, got)
    local page = assert(search{ timeout_ms = 600000, token = want.next_token, sort = nil })
    assert.same(assert(search{ token = want.next_token, sort = nil }), page)
    -- (a scan's token carries the time it expires)
    local s1, s2 = assert(scan()), assert(scan{ timeout_ms = 600000 })
    assert.equal(2000, #s1.rows)
    assert.same(s1.rows, s2.rows)
    assert.equal(s1.next_token ~= nil, s2.next_token ~= nil)
    local a1 = assert(db:parallel_scan{ table = "t", index = "ix", limit = 7, timeout_ms = 600000 })
    local a2 = assert(db:parallel_scan{ table = "t", index = "ix", limit = 7 })
    assert.same(a2.rows, a1.rows)
  end)

  it("refuses a timeout_ms that is not a positive integer number of ms", function()
    for _, v in ipairs({ 0, -1, 1.5, "100", true, 2 ^ 31, 0 / 0 }) do
      local r, msg, code = search{ timeout_ms = v }
      assert.is_nil(r)
      assert.equal("OTSParameterInvalid", code, tostring(v))
      assert.matches("timeout_ms", msg)
      r, msg, code = scan{ timeout_ms = v }
      assert.is_nil(r)
      assert.equal("OTSParameterInvalid", code, tostring(v))
      assert.matches("timeout_ms", msg)
    end
    assert(search{ timeout_ms = 2 ^ 31 - 1 })
  end)
end)
