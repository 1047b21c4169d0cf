-- otskit.store's index and local-transaction management operations take
-- any request without raising: random requests (a base table, an index
-- table, a missing table; fields of every type) answer a result or nil,
-- message, code, and the store's indexes stay what they were when an
-- operation is refused. Also the service's rule that an index cannot
-- start with the table's AUTO_INCREMENT column.
local store = require "otskit.store"
local helper = require "helper"

local function setup()
  local db = assert(store.open{ path = ":memory:" })
  assert(db:create_table{ name = "t", primary_key = { { "pk", "STRING" }, { "id", "INTEGER" } },
    defined_columns = { { "n", "STRING" }, { "m", "INTEGER" }, { "x", "DOUBLE" } }, enable_local_txn = true })
  assert(db:create_index{ table = "t", index_meta = { name = "g", primary_key = { "n" }, defined_columns = { "x" } } })
  assert(db:create_index{ table = "t", index_meta = { name = "l", primary_key = { "pk", "m" }, index_type = "LOCAL",
    index_update_mode = "SYNC" } })
  return db
end

local function index_names(db)
  local d = assert(db:describe_table{ name = "t" })
  local out = {}
  for _, ix in ipairs(d.index_metas) do out[#out + 1] = ix.name end
  table.sort(out)
  return table.concat(out, ",")
end

describe("otskit.store index and transaction operations", function()
  it("refuses, never raises, on the index table's name or fields of any type", function()
    local db = setup()
    local r = helper.rng(4242)
    local NAMES = { "t", "g", "l", "nope", "", 5, true, {} }
    local VALUES = { "n", "m", "x", "pk", "zz", "", 7, 1.5, false, {}, { "n" }, { { "n", "STRING" } }, { { "q", "STRING" } },
      { { "pk", "a" } }, { "a" }, "ab12", store.INF_MIN }
    local function pick(list) return list[r.int(1, #list)] end
    local OPS = {
      function() return "drop_index", { table = pick(NAMES), index_name = pick(NAMES) } end,
      function() return "delete_defined_column", { table = pick(NAMES), columns = pick(VALUES) } end,
      function() return "add_defined_column", { table = pick(NAMES), columns = pick(VALUES) } end,
      function() return "create_index", { table = pick(NAMES), include_base_data = pick(VALUES), index_meta = {
        name = pick({ "g", "h", "", 3 }), primary_key = pick(VALUES), defined_columns = pick(VALUES) } } end,
      function() return "start_local_transaction", { table = pick(NAMES), key = pick(VALUES) } end,
      function() return "commit_transaction", { transaction_id = pick(VALUES) } end,
      function() return "abort_transaction", { transaction_id = pick(VALUES) } end,
      function() return "describe_table", { name = pick(NAMES) } end,
      function() return "update_table", { name = pick(NAMES), options = { max_versions = pick({ 1, 2, "x" }) } } end,
    }
    local answered = {}
    for _ = 1, helper.trials(600) do
      local before = index_names(db)
      local op, req = pick(OPS)()
      local ok, res, msg, code = pcall(db[op], db, req)
      assert(ok, op .. " raised: " .. tostring(res))
      if res == nil then
        assert.is_string(msg, op)
        assert.is_string(code, op)
        assert.equal(before, index_names(db), op .. " refused but changed the indexes")
      end
      answered[op] = true
      -- an operation that succeeded may have dropped an index or a column: start again
      if res ~= nil and (op == "drop_index" or op == "delete_defined_column" or op == "create_index") then
        db:close()
        db = setup()
      end
    end
    for _, f in ipairs(OPS) do assert.is_true(answered[(f())], (f())) end
    db:close()
  end)

  it("drop_index and delete_defined_column name the index table: OTSParameterInvalid", function()
    local db = setup()
    for _, call in ipairs({
      function() return db:drop_index{ table = "g", index_name = "g" } end,
      function() return db:drop_index{ table = "l", index_name = "g" } end,
      function() return db:delete_defined_column{ table = "g", columns = { "x" } } end,
    }) do
      local res, msg, code = call()
      assert.is_nil(res)
      assert.equal("OTSParameterInvalid", code, msg)
    end
    assert.equal("g,l", index_names(db))
    db:close()
  end)

  it("an index cannot start with the AUTO_INCREMENT column (create_index and create_table)", function()
    local db = assert(store.open{ path = ":memory:" })
    assert(db:create_table{ name = "a", primary_key = { { "pk", "STRING" }, { "id", "INTEGER", "AUTO_INCREMENT" } },
      defined_columns = { { "n", "STRING" } } })
    local res, msg, code = db:create_index{ table = "a", index_meta = { name = "i1", primary_key = { "id" } } }
    assert.is_nil(res)
    assert.equal("OTSParameterInvalid", code, msg)
    assert.matches("AUTO_INCREMENT", msg)
    res, msg, code = db:create_index{ table = "a", index_meta = { name = "i1", primary_key = { "id", "n" } } }
    assert.is_nil(res)
    assert.equal("OTSParameterInvalid", code, msg)
    -- later in the key it is allowed (the base key columns end every index key anyway)
    assert(db:create_index{ table = "a", index_meta = { name = "i2", primary_key = { "n", "id" } } })
    res, msg, code = db:create_table{ name = "b", primary_key = { { "pk", "STRING" }, { "id", "INTEGER", "AUTO_INCREMENT" } },
      defined_columns = { { "n", "STRING" } }, index_metas = { { name = "bi", primary_key = { "id" } } } }
    assert.is_nil(res)
    assert.equal("OTSParameterInvalid", code, msg)
    assert.is_nil(db:describe_table{ name = "b" })
    db:close()
  end)
end)
