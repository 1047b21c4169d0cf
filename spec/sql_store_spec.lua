-- spec/sql_store_spec.lua -- db:sql statements, type mapping, errors,
-- mappings kept in the file, the FlatBuffers result-set codec, and the SQL
-- entry under random and garbled input.
local store = require "otskit.store"
local sqlq = require("otskit.core").sqlq
local wire = require "otskit.wire"
local helper = require "helper"

local function scratch(name)
  local dir = os.getenv("TMPDIR") or "/tmp"
  local p = ("%s/otskit-sql-%s-%d.db"):format(dir, name, math.random(1, 1e9))
  os.remove(p)
  return p
end

local function js_sql(db)
  assert(db:create_table{ name = "js_sql", primary_key = { { "pk1", "STRING" } } })
  for i = 0, 29 do
    assert(db:put_row{ table = "js_sql", primary_key = { { "pk1", tostring(i) } }, columns = {
      { "col_keyword", (i % 4) .. "_aaa" }, { "col_long", i }, { "col_bool", i % 2 ~= 0 },
      { "col_double", store.double(i * 0.3) }, { "col_binary", store.binary("binary") } } })
  end
  assert(db:sql("CREATE TABLE js_sql (pk1 VARCHAR(1024), col_long BIGINT, col_keyword MEDIUMTEXT, "
    .. "col_bool BOOL, col_double DOUBLE, col_binary MEDIUMBLOB, PRIMARY KEY(pk1))"))
end

describe("db:sql statements", function()
  local db
  before_each(function() db = assert(store.open{}); js_sql(db) end)
  after_each(function() db:close() end)

  it("SELECT gives the service's column types and the rows", function()
    local r = assert(db:sql("select * from js_sql where col_long > 5 limit 4"))
    assert.are.equal("SELECT", r.type)
    local names, types = {}, {}
    for i, c in ipairs(r.columns) do names[i], types[i] = c.name, c.type end
    assert.are.same({ "pk1", "col_long", "col_keyword", "col_bool", "col_double", "col_binary" }, names)
    assert.are.same({ "STRING", "LONG", "STRING", "BOOLEAN", "DOUBLE", "BINARY" }, types)
    assert.are.equal(4, #r.rows)
    assert.are.same({ "10", 10, "2_aaa", false, 3.0, "binary" }, r.rows[1])
  end)

  it("runs GROUP BY, ORDER BY, aggregates and the MySQL operators", function()
    local r = assert(db:sql("SELECT col_keyword k, COUNT(*) n, SUM(col_long) s, MIN(col_long), MAX(col_long), "
      .. "AVG(col_long) FROM js_sql WHERE col_bool = TRUE && col_long != 3 GROUP BY col_keyword ORDER BY k"))
    assert.are.same({ "k", "n", "s", "MIN(col_long)", "MAX(col_long)", "AVG(col_long)" },
      { r.columns[1].name, r.columns[2].name, r.columns[3].name, r.columns[4].name, r.columns[5].name, r.columns[6].name })
    assert.are.same({ "STRING", "LONG", "LONG", "LONG", "LONG", "DOUBLE" },
      { r.columns[1].type, r.columns[2].type, r.columns[3].type, r.columns[4].type, r.columns[5].type, r.columns[6].type })
    assert.are.same({ { "1_aaa", 8, 120, 1, 29, 15.0 }, { "3_aaa", 6, 102, 7, 27, 17.0 } }, r.rows)
    r = assert(db:sql("SELECT 7 / 2, 7 DIV 2, 7 MOD 4, !(1 = 2), 1 || 0, 'a' LIKE 'A', col_long IN (1, 2) FROM js_sql WHERE pk1 = '2'"))
    assert.are.same({ { 3.5, 3, 3, 1, 1, 1, 1 } }, r.rows)
    r = assert(db:sql("SELECT pk1 FROM js_sql WHERE pk1 BETWEEN '27' AND '3' ORDER BY pk1 DESC"))
    assert.are.same({ { "3" }, { "29" }, { "28" }, { "27" } }, r.rows)
    assert.are.equal(1, r.range_reads)
    r = assert(db:sql("SELECT COUNT(*) FROM js_sql WHERE col_keyword IS NULL OR col_double > 8.5"))
    assert.are.same({ { 1 } }, r.rows)
  end)

  it("SHOW TABLES, DESCRIBE, DROP MAPPING TABLE", function()
    local r = assert(db:sql("show tables"))
    assert.are.equal("SHOW_TABLE", r.type)
    assert.are.same({ { "js_sql" } }, r.rows)
    r = assert(db:sql("DESCRIBE js_sql"))
    assert.are.equal("DESCRIBE_TABLE", r.type)
    assert.are.same({ "pk1", "varchar(1024)", "NO", "PRI", nil, "" }, r.rows[1])
    assert.are.same({ "col_binary", "mediumblob", "YES", "", nil, "" }, r.rows[6])
    r = assert(db:sql("drop MAPPING table  js_sql ;"))
    assert.are.equal("DROP_TABLE", r.type)
    assert.are.same({}, assert(db:sql("SHOW TABLES")).rows)
    local ok, msg, code = db:sql("select * from js_sql")
    assert.is_nil(ok)
    assert.are.equal("OTSParameterInvalid", code, msg)
    assert(db:sql("DROP MAPPING TABLE IF EXISTS js_sql"))
    -- the data is untouched
    assert.are.equal(30, #assert(db:get_range{ table = "js_sql", start = { { "pk1", store.INF_MIN } },
      stop = { { "pk1", store.INF_MAX } } }).rows)
  end)

  it("checks CREATE TABLE against the data table and the type mapping", function()
    local cases = {
      { "CREATE TABLE js_sql (pk1 VARCHAR(1024), PRIMARY KEY(pk1))", "already exists" },
      { "CREATE TABLE nope (pk1 VARCHAR(1024), PRIMARY KEY(pk1))", "does not exist" },
      { "CREATE TABLE t2 (pk1 MEDIUMTEXT, PRIMARY KEY(pk1))", "key columns may be" },
      { "CREATE TABLE t2 (pk1 BIGINT, PRIMARY KEY(pk1))", "is STRING in the table" },
      { "CREATE TABLE t2 (k VARCHAR(10), PRIMARY KEY(k))", "the table's is 'pk1'" },
      { "CREATE TABLE t2 (pk1 VARCHAR(10), x INT, PRIMARY KEY(pk1))", "attribute columns may be" },
      { "CREATE TABLE t2 (pk1 VARCHAR(10), x BIGINT)", "list it in PRIMARY KEY" },
      { "CREATE TABLE t2 (x BIGINT)", "primary key has 0 columns" },
      { "CREATE TABLE t2 (pk1 VARCHAR(10), PRIMARY KEY(pk1)); DROP TABLE x", "one statement" },
      { "CREATE TABLE t2 AS SELECT 1", "not authorized" },
      { "CREATE TABLE t2 (pk1 VARCHAR(10), pk1 BIGINT, PRIMARY KEY(pk1))", "duplicate column" },
      { "CREATE TABLE (", "syntax error" },
    }
    assert(db:create_table{ name = "t2", primary_key = { { "pk1", "STRING" } } })
    for _, c in ipairs(cases) do
      local ok, msg, code = db:sql(c[1])
      assert(ok == nil, c[1])
      assert.are.equal("OTSParameterInvalid", code, c[1] .. ": " .. tostring(msg))
      assert(msg:find(c[2], 1, true), c[1] .. ": " .. msg)
    end
    assert.are.same({ { "js_sql" } }, assert(db:sql("SHOW TABLES")).rows)
  end)

  it("gives the service's errors for bad input", function()
    local cases = {
      { "INSERT INTO js_sql VALUES ('x')", "OTSUnsupportOperation" },
      { "update js_sql set col_long = 1", "OTSUnsupportOperation" },
      { "DELETE FROM js_sql", "OTSUnsupportOperation" },
      { "ALTER TABLE js_sql ADD COLUMN x BIGINT", "OTSUnsupportOperation" },
      { "DROP TABLE js_sql", "OTSUnsupportOperation" },
      { "PRAGMA table_info(js_sql)", "OTSUnsupportOperation" },
      { "select * from meta", "OTSUnsupportOperation" },
      { "select * from sqlite_temp_master", "OTSUnsupportOperation" },
      { "select load_extension('x')", "OTSUnsupportOperation" },
      { "SELECT * FROM nope", "OTSParameterInvalid" },
      { "SELECT nope FROM js_sql", "OTSParameterInvalid" },
      { "SELEC * FROM js_sql", "OTSParameterInvalid" },
      { "SELECT * FROM", "OTSParameterInvalid" },
      { "SELECT 1; SELECT 2", "OTSParameterInvalid" },
      { "select * from js_sql; drop mapping table js_sql", "OTSParameterInvalid" },
      { "", "OTSParameterInvalid" },
      { "   ", "OTSParameterInvalid" },
      { "DESCRIBE nope", "OTSParameterInvalid" },
    }
    for _, c in ipairs(cases) do
      local ok, msg, code = db:sql(c[1])
      assert(ok == nil, c[1])
      assert.are.equal(c[2], code, c[1] .. ": " .. tostring(msg))
      assert.are.equal("string", type(msg))
    end
    local ok, msg, code = db:sql("SELECT * FROM js_sql", { max_scan_rows = 10 })
    assert.is_nil(ok)
    assert.are.equal("OTSQuotaExhausted", code)
    assert(msg:find("^The sql scanned rows of kv exceeds the quota!"), msg)
    ok, _, code = db:sql("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c",
      { timeout_ms = 100 })
    assert.is_nil(ok)
    assert.are.equal("OTSRequestTimeout", code)
    ok, _, code = db:sql("SELECT * FROM js_sql", { max_rows = 5 })
    assert.is_nil(ok)
    assert.are.equal("OTSQuotaExhausted", code)
    ok, _, code = db:sql("SELECT 1", { bogus = 1 })
    assert.is_nil(ok)
    assert.are.equal("OTSParameterInvalid", code)
    -- the failures changed nothing
    assert.are.equal(30, assert(db:sql("SELECT COUNT(*) FROM js_sql")).rows[1][1])
  end)

  it("reads the newest version, not an expired or mistyped cell", function()
    assert(db:put_row{ table = "js_sql", primary_key = { { "pk1", "5" } }, columns = { { "col_long", "text" } } })
    local r = assert(db:sql("SELECT col_long, col_keyword FROM js_sql WHERE pk1 = '5'"))
    assert.are.same({ { nil, nil } }, r.rows)
    assert(db:update_row{ table = "js_sql", primary_key = { { "pk1", "6" } }, update = { PUT = { { "col_long", 66 } } } })
    r = assert(db:sql("SELECT col_long, col_keyword FROM js_sql WHERE pk1 = '6'"))
    assert.are.same({ { 66, "2_aaa" } }, r.rows)
  end)
end)

describe("SQL mappings in the store file", function()
  it("survive reopening and are seen by every connection", function()
    local path = scratch("persist")
    local a = assert(store.open{ path = path })
    local b = assert(store.open{ path = path })
    js_sql(a)
    assert.are.same({ { "js_sql" } }, assert(b:sql("SHOW TABLES")).rows)
    assert.are.equal(30, assert(b:sql("SELECT COUNT(*) FROM js_sql")).rows[1][1])
    assert(a:put_row{ table = "js_sql", primary_key = { { "pk1", "new" } }, columns = { { "col_long", 1 } } })
    assert.are.equal(31, assert(b:sql("SELECT COUNT(*) FROM js_sql")).rows[1][1])
    assert(b:sql("DROP MAPPING TABLE js_sql"))
    local ok, _, code = a:sql("SELECT COUNT(*) FROM js_sql")
    assert.is_nil(ok)
    assert.are.equal("OTSParameterInvalid", code)
    assert(a:sql("CREATE TABLE js_sql (pk1 VARCHAR(1024), col_long BIGINT, PRIMARY KEY(pk1))"))
    a:close()
    b:close()
    local c = assert(store.open{ path = path })
    assert.are.same({ "pk1", "bigint" }, (function()
      local r = assert(c:sql("DESCRIBE js_sql"))
      return { r.rows[1][1], r.rows[2][2] }
    end)())
    assert.are.equal(31, assert(c:sql("SELECT COUNT(col_long) FROM js_sql")).rows[1][1])
    c:close()
    os.remove(path)
  end)
end)

describe("the FlatBuffers result set", function()
  local function random_set(r)
    local types = { "LONG", "BOOLEAN", "DOUBLE", "STRING", "BINARY" }
    local cols, rows = {}, {}
    for i = 1, r.int(0, 6) do cols[i] = { "c" .. i .. r.bytes(r.int(0, 3)), types[r.int(1, 5)] } end
    for j = 1, r.int(0, 20) do
      local row = {}
      for i, c in ipairs(cols) do
        if r.int(1, 5) > 1 then
          local t = c[2]
          if t == "LONG" then row[i] = r.int(-2 ^ 31, 2 ^ 31)
          elseif t == "BOOLEAN" then row[i] = r.int(0, 1) == 1
          elseif t == "DOUBLE" then row[i] = (r.float() - 0.5) * 1e6
          else row[i] = r.bytes(r.int(0, 12)) end
        end
      end
      rows[j] = row
    end
    return cols, rows
  end

  it("round-trips through the reader", function()
    local r = helper.rng(77)
    for _ = 1, helper.trials(300) do
      local cols, rows = random_set(r)
      local bytes = sqlq.encode(cols, rows, #rows)
      local c2, r2, n = sqlq.decode(bytes)
      assert(c2, r2)
      assert.are.same(cols, c2)
      assert.are.equal(#rows, n)
      for j = 1, #rows do
        for i = 1, #cols do assert.are.equal(rows[j][i], r2[j][i]) end
      end
    end
  end)

  it("reads damaged bytes as nil, msg, CorruptMessage, never a crash", function()
    local r = helper.rng(78)
    local seen = 0
    for _ = 1, helper.trials(3000) do
      local cols, rows = random_set(r)
      local b = sqlq.encode(cols, rows, #rows)
      local k = r.int(1, 3)
      if k == 1 then -- flip bytes
        local t = { b:byte(1, -1) }
        for _ = 1, r.int(1, 4) do
          local i = r.int(1, #t)
          t[i] = r.int(0, 255)
        end
        b = string.char((table.unpack or unpack)(t))
      elseif k == 2 then
        b = b:sub(1, r.int(0, #b))
      else
        b = r.bytes(r.int(0, 64))
      end
      local c2, msg, code = sqlq.decode(b)
      if not c2 then
        seen = seen + 1
        assert.are.equal("CorruptMessage", code)
        assert.are.equal("string", type(msg))
      end
    end
    assert(seen > 0)
  end)

  it("is what SQLQuery carries (payload version 2)", function()
    local db = assert(store.open{})
    js_sql(db)
    local res = assert(db:sql("SELECT pk1, col_long, col_bool, col_double, col_binary FROM js_sql LIMIT 3"))
    local body = assert(wire.encode_response("SQLQuery", res))
    local back = assert(wire.decode_response("SQLQuery", body))
    assert.are.same(res.columns, back.columns)
    assert.are.same(res.rows, back.rows)
    assert.are.equal("SELECT", back.type)
    local req = assert(wire.decode_request("SQLQuery", assert(wire.encode_request("SQLQuery", { query = "show tables" }))))
    assert.are.same({ query = "show tables" }, req)
    db:close()
  end)
end)

describe("the SQL entry under random input", function()
  it("never crashes or hangs: a result or nil, msg, code", function()
    local db = assert(store.open{})
    js_sql(db)
    local r = helper.rng(99)
    local words = { "select", "*", "from", "js_sql", "where", "pk1", "col_long", ">", "<", "=", "(", ")", ",",
      "'a'", "1", "2.5", "group", "by", "order", "limit", "count(*)", "sum(col_long)", "and", "or", "not",
      "with", "recursive", "union", "all", "create", "table", "drop", "mapping", "show", "tables", "describe",
      "insert", "into", "values", "primary", "key", "bigint", "varchar(10)", ";", "--", "/*", "*/", "`", "\"",
      "x'00ff'", "null", "is", "in", "like", "between", "desc", "asc", "!", "&&", "||", "div", "mod", "/" }
    local codes = { OTSParameterInvalid = true, OTSUnsupportOperation = true, OTSQuotaExhausted = true,
      OTSRequestTimeout = true, OTSObjectNotExist = true }
    for _ = 1, helper.trials(1000) do
      local q
      if r.int(1, 4) == 1 then
        q = r.bytes(r.int(0, 40))
      else
        local t = {}
        for i = 1, r.int(1, 14) do t[i] = words[r.int(1, #words)] end
        q = table.concat(t, " ")
      end
      local res, msg, code = db:sql(q, { timeout_ms = 50, max_scan_rows = 1000 })
      if res then
        assert.are.equal("table", type(res.rows))
        assert.are.equal("table", type(res.columns))
      else
        assert(codes[code], q .. " -> " .. tostring(code) .. " " .. tostring(msg))
        assert.are.equal("string", type(msg))
      end
    end
    -- the data table and the store still answer
    assert(db:sql("DROP MAPPING TABLE IF EXISTS js_sql"))
    assert.are.equal(30, #assert(db:get_range{ table = "js_sql", start = { { "pk1", store.INF_MIN } },
      stop = { { "pk1", store.INF_MAX } } }).rows)
    db:close()
  end)
end)
