-- The index and local-transaction messages on the wire, fuzzed: valid
-- bodies of every new or extended API, with random bytes flipped,
-- truncated or appended, go through the server's dispatch (decode, store
-- call, encode) against a store holding an indexed table. Every one gets
-- an answer or an error code, never a Lua error; the store stays
-- consistent (every index equals the index recomputed from the table).
local wire = require "otskit.wire"
local store = require "otskit.store"
local dispatch = require "otskit.server.dispatch"
local helper = require "helper"

local INF_MIN, INF_MAX = store.INF_MIN, store.INF_MAX

local function setup_db()
  local db = assert(store.open{})
  assert(db:create_table{ name = "t", primary_key = { { "pk1", "INTEGER" }, { "pk2", "STRING" } },
    defined_columns = { { "c1", "INTEGER" }, { "c2", "STRING" } },
    index_metas = { { name = "g", primary_key = { "c1" }, defined_columns = { "c2" } } } })
  return db
end

local VALID = {
  { "CreateTable", { name = "n", primary_key = { { "k", "STRING" } }, defined_columns = { { "d", "STRING" } },
    index_metas = { { name = "ni", primary_key = { "d" } } }, options = { allow_update = false },
    reserved = { read = 0, write = 0 } } },
  { "CreateIndex", { table = "t", include_base_data = true, index_meta = { name = "h", primary_key = { "c2" },
    defined_columns = { "c1" } } } },
  { "DropIndex", { table = "t", index_name = "h" } },
  { "AddDefinedColumn", { table = "t", columns = { { "c3", "DOUBLE" } } } },
  { "DeleteDefinedColumn", { table = "t", columns = { "c3" } } },
  { "UpdateTable", { name = "t", options = { allow_update = true } } },
  { "DescribeTable", { name = "t" } },
  { "StartLocalTransaction", { table = "t", key = { { "pk1", 1 } } } },
  { "CommitTransaction", { transaction_id = "1" } },
  { "AbortTransaction", { transaction_id = "1" } },
  { "PutRow", { table = "t", primary_key = { { "pk1", 1 }, { "pk2", "a" } }, columns = { c1 = 1, c2 = "x" } } },
  { "PutRow", { table = "t", primary_key = { { "pk1", 1 }, { "pk2", "b" } }, columns = { c1 = 2 }, transaction_id = "1" } },
  { "UpdateRow", { table = "t", primary_key = { { "pk1", 2 }, { "pk2", "a" } }, update = { PUT = { c1 = 5 } } } },
  { "DeleteRow", { table = "t", primary_key = { { "pk1", 1 }, { "pk2", "a" } } } },
  { "GetRange", { table = "g", start = { { "c1", INF_MIN }, { "pk1", INF_MIN }, { "pk2", INF_MIN } },
    stop = { { "c1", INF_MAX }, { "pk1", INF_MAX }, { "pk2", INF_MAX } } } },
  { "BatchWriteRow", { tables = { { table = "t", rows = {
    { type = "PUT", primary_key = { { "pk1", 3 }, { "pk2", "c" } }, columns = { c1 = 3 } },
    { type = "PUT", primary_key = { { "pk1", 3 }, { "pk2", "c" } }, columns = { c1 = 4 } } } } } } },
}

local function index_ok(db)
  local base = assert(db:get_range{ table = "t", start = { INF_MIN, INF_MIN }, stop = { INF_MAX, INF_MAX } })
  local want = {}
  for _, r in ipairs(base.rows) do
    if type(r.columns.c1) == "number" then
      want[#want + 1] = ("%s/%s/%s=%s"):format(r.columns.c1, r.primary_key[1][2], r.primary_key[2][2], tostring(r.columns.c2))
    end
  end
  table.sort(want)
  local d = db:describe_table{ name = "t" }
  if not d or not d.index_metas[1] or d.index_metas[1].name ~= "g" then return true end
  local ix = assert(db:get_range{ table = "g", start = { INF_MIN, INF_MIN, INF_MIN }, stop = { INF_MAX, INF_MAX, INF_MAX } })
  local got = {}
  for _, r in ipairs(ix.rows) do
    got[#got + 1] = ("%s/%s/%s=%s"):format(r.primary_key[1][2], r.primary_key[2][2], r.primary_key[3][2], tostring(r.columns.c2))
  end
  table.sort(got)
  assert.same(want, got)
  return true
end

describe("index and transaction messages under fuzzing", function()
  it("every valid body round-trips through dispatch", function()
    local db = setup_db()
    for _, case in ipairs(VALID) do
      local body = assert(wire.encode_request(case[1], case[2]))
      local out, code = dispatch.call(db, case[1], body)
      assert.is_true(out ~= nil or type(code) == "string", case[1])
    end
    index_ok(db)
  end)

  it("mutated bodies get an answer or an error code, never a Lua error, and indexes stay right", function()
    local r = helper.rng(4242)
    local db = setup_db()
    for i = 1, helper.trials(4000) do
      local case = VALID[r.int(1, #VALID)]
      local body = assert(wire.encode_request(case[1], case[2]))
      local k = r.int(1, 4)
      if k == 1 and #body > 0 then
        local p = r.int(1, #body)
        body = body:sub(1, p - 1) .. string.char(r.int(0, 255)) .. body:sub(p + 1)
      elseif k == 2 then
        body = body:sub(1, r.int(0, #body))
      elseif k == 3 then
        body = body .. r.bytes(r.int(1, 8))
      end
      local ok, out, code = pcall(dispatch.call, db, case[1], body)
      assert.is_true(ok, tostring(out))
      assert.is_true(out ~= nil or type(code) == "string", case[1])
      if i % 200 == 0 then index_ok(db) end
    end
    index_ok(db)
  end)
end)
