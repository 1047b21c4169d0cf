-- spec/sql_client_spec.lua -- SQL through `otskit serve` (2 workers, a data
-- directory) and otskit.client: the same statements give the same type,
-- columns and rows as the embedded store, and the same error codes.
local serve = require "support.serve"
local store = require "otskit.store"
local helper = require "helper"

describe("SQL through otskit serve and otskit.client", function()
  local srv, cl, db
  setup(function()
    srv = assert(serve.start{ workers = 2, data = true })
    cl = serve.client(srv)
    db = assert(store.open{})
  end)
  teardown(function()
    if srv then srv.stop() end
    if db then db:close() end
  end)

  it("answers as the embedded store does", function()
    local r = helper.rng(2829)
    for _, s in ipairs({ cl, db }) do
      assert(s:create_table{ name = "q", primary_key = { { "g", "STRING" }, { "n", "INTEGER" } } })
    end
    for i = 1, 60 do
      local cols = { { "v", r.int(-100, 100) }, { "s", r.bytes(r.int(0, 4), "xy") }, { "f", store.double(r.int(0, 99) / 8) },
        { "b", r.int(0, 1) == 1 }, { "bin", store.binary(r.bytes(r.int(0, 3))) } }
      if i % 7 == 0 then table.remove(cols, 1) end
      for _, s in ipairs({ cl, db }) do
        assert(s:put_row{ table = "q", primary_key = { { "g", i % 3 == 0 and "a" or "b" }, { "n", i } }, columns = cols })
      end
    end
    local statements = {
      "DROP MAPPING TABLE q",
      "CREATE TABLE q (g VARCHAR(8), n BIGINT, v BIGINT, s MEDIUMTEXT, f DOUBLE, b BOOL, bin MEDIUMBLOB, PRIMARY KEY (g, n))",
      "SHOW TABLES",
      "DESCRIBE q",
      "SELECT * FROM q WHERE g = 'a' AND n > 10 ORDER BY n LIMIT 5",
      "SELECT g, COUNT(*), COUNT(v), SUM(v), MIN(f), MAX(s), AVG(v) FROM q GROUP BY g ORDER BY g",
      "SELECT n, v * 2, v / 4, s || 'z', b, bin FROM q WHERE v > 0 && b ORDER BY v DESC, n",
      "SELECT COUNT(*) FROM q WHERE v IS NULL",
      "SELECT * FROM q WHERE n = -1",
      "INSERT INTO q VALUES (1)",
      "SELECT nope FROM q",
      "SELEKT",
      "CREATE TABLE q (g VARCHAR(8), n BIGINT, PRIMARY KEY (g, n))",
    }
    for _, q in ipairs(statements) do
      local a, am, ac = cl:sql(q)
      local b, bm, bc = db:sql(q)
      if not b then
        assert.is_nil(a, q)
        assert.are.equal(bc, ac, q .. ": " .. tostring(am) .. " / " .. tostring(bm))
      else
        assert(a, q .. ": " .. tostring(am) .. " " .. tostring(ac))
        assert.are.equal(b.type, a.type, q)
        assert.are.same(b.columns, a.columns, q)
        assert.are.equal(#b.rows, #a.rows, q)
        for i = 1, #b.rows do
          for j = 1, #b.columns do assert.are.equal(b.rows[i][j], a.rows[i][j], q .. " row " .. i .. " col " .. j) end
        end
      end
    end
    local ok, _, code = cl:sql("SELECT 1", { max_rows = 1 })
    assert.is_nil(ok)
    assert.are.equal("OTSParameterInvalid", code)
  end)
end)
