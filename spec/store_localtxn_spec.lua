-- Local transactions of otskit.store: isolation, commit, abort, the
-- service's errors, timeout and size limits, and a random property:
-- a committed transaction leaves the table as the same writes without a
-- transaction would; an aborted one leaves it untouched.
local store = require "otskit.store"
local helper = require "helper"

local INF_MIN, INF_MAX = store.INF_MIN, store.INF_MAX

local function clocked(path)
  local c = { now = 1700000000 }
  local db = assert(store.open{ path = path, clock = function() return c.now end })
  return db, c
end

local function mk(db, extra)
  local req = { name = "t", primary_key = { { "city", "STRING" }, { "id", "INTEGER" } } }
  for k, v in pairs(extra or {}) do req[k] = v end
  assert(db:create_table(req))
end

local function fails(code, res, msg, c)
  assert.is_nil(res, "expected " .. code)
  assert.equal(code, c, msg)
  assert.is_string(msg)
  return msg
end

local function dump(db, name)
  local r = assert(db:get_range{ table = name or "t", start = { INF_MIN, INF_MIN }, stop = { INF_MAX, INF_MAX } })
  local out = {}
  for _, row in ipairs(r.rows) do
    local cols = {}
    for k, v in pairs(row.columns) do cols[#cols + 1] = k .. "=" .. tostring(v) end
    table.sort(cols)
    out[#out + 1] = row.primary_key[1][2] .. "/" .. tostring(row.primary_key[2][2]) .. ":" .. table.concat(cols, ",")
  end
  return out
end

describe("otskit.store local transactions", function()
  it("reads inside see the transaction's writes; nothing outside sees them before commit", function()
    local db = clocked()
    mk(db)
    assert(db:put_row{ table = "t", primary_key = { "chengdu", 0 }, columns = { v = "before" } })
    local tx = assert(db:start_local_transaction{ table = "t", key = { { "city", "chengdu" } } }).transaction_id
    assert.is_string(tx)
    assert(db:put_row{ table = "t", primary_key = { "chengdu", 1 }, columns = { v = "in" }, transaction_id = tx })
    assert(db:update_row{ table = "t", primary_key = { "chengdu", 0 }, update = { PUT = { w = 1 } }, transaction_id = tx })
    local inside = assert(db:get_row{ table = "t", primary_key = { "chengdu", 1 }, transaction_id = tx }).row
    assert.equal("in", inside.columns.v)
    -- a row written before the transaction is read with its id too
    assert.same({ v = "before", w = 1 }, db:get_row{ table = "t", primary_key = { "chengdu", 0 }, transaction_id = tx }.row.columns)
    assert.is_nil(db:get_row{ table = "t", primary_key = { "chengdu", 1 } }.row)
    assert.same({ "chengdu/0:v=before" }, dump(db))
    local r = assert(db:get_range{ table = "t", start = { "chengdu", INF_MIN }, stop = { "chengdu", INF_MAX }, transaction_id = tx })
    assert.equal(2, #r.rows)
    local b = assert(db:batch_write_row{ transaction_id = tx, tables = { { table = "t", rows = {
      { type = "PUT", primary_key = { "chengdu", 2 }, columns = { v = "b" } },
      { type = "DELETE", primary_key = { "chengdu", 0 } } } } } })
    assert.equal(0, b.failed)
    assert.same({ "chengdu/0:v=before" }, dump(db))
    assert(db:commit_transaction{ transaction_id = tx })
    assert.same({ "chengdu/1:v=in", "chengdu/2:v=b" }, dump(db))
    fails("OTSSessionNotExist", db:commit_transaction{ transaction_id = tx })
    fails("OTSSessionNotExist", db:abort_transaction{ transaction_id = tx })
    fails("OTSSessionNotExist", db:get_row{ table = "t", primary_key = { "chengdu", 1 }, transaction_id = tx })
  end)

  it("abort discards every write", function()
    local db = clocked()
    mk(db)
    assert(db:put_row{ table = "t", primary_key = { "a", 1 }, columns = { v = 1 } })
    local tx = assert(db:start_local_transaction{ table = "t", key = { "a" } }).transaction_id
    assert(db:put_row{ table = "t", primary_key = { "a", 2 }, columns = { v = 2 }, transaction_id = tx })
    assert(db:delete_row{ table = "t", primary_key = { "a", 1 }, transaction_id = tx })
    assert(db:abort_transaction{ transaction_id = tx })
    assert.same({ "a/1:v=1" }, dump(db))
    -- the partition is free again
    assert(db:put_row{ table = "t", primary_key = { "a", 3 }, columns = { v = 3 } })
    assert(db:start_local_transaction{ table = "t", key = { "a" } })
  end)

  it("the service's errors: conflicts, out of range, bad or unknown ids, bad starts", function()
    local db = clocked()
    mk(db)
    local tx = assert(db:start_local_transaction{ table = "t", key = { { "city", "chengdu" } } }).transaction_id
    local msg = fails("OTSRowOperationConflict", db:start_local_transaction{ table = "t", key = { { "city", "chengdu" } } })
    assert.equal("Data is being modified by the other request.", msg)
    fails("OTSRowOperationConflict", db:put_row{ table = "t", primary_key = { "chengdu", 1 }, columns = { v = 1 } })
    fails("OTSRowOperationConflict", db:delete_row{ table = "t", primary_key = { "chengdu", 1 } })
    local b = assert(db:batch_write_row{ tables = { { table = "t", rows = {
      { type = "PUT", primary_key = { "chengdu", 1 }, columns = { v = 1 } },
      { type = "PUT", primary_key = { "beijing", 1 }, columns = { v = 1 } } } } } })
    assert.equal("OTSRowOperationConflict", b.tables[1].rows[1].code)
    assert.is_true(b.tables[1].rows[2].ok)
    -- another partition is free; reads are not blocked
    assert(db:start_local_transaction{ table = "t", key = { "beijing" } })
    assert(db:get_row{ table = "t", primary_key = { "chengdu", 1 } })
    fails("OTSDataOutOfRange", db:put_row{ table = "t", primary_key = { "shanghai", 1 }, columns = { v = 1 }, transaction_id = tx })
    fails("OTSDataOutOfRange", db:get_row{ table = "t", primary_key = { "shanghai", 1 }, transaction_id = tx })
    fails("OTSDataOutOfRange", db:get_range{ table = "t", start = { INF_MIN, INF_MIN }, stop = { INF_MAX, INF_MAX }, transaction_id = tx })
    fails("OTSDataOutOfRange", db:batch_write_row{ transaction_id = tx, tables = { { table = "t", rows = {
      { type = "PUT", primary_key = { "shanghai", 1 }, columns = { v = 1 } } } } } })
    -- a rejected request does not end the transaction
    assert(db:put_row{ table = "t", primary_key = { "chengdu", 9 }, columns = { v = 9 }, transaction_id = tx })
    msg = fails("OTSParameterInvalid", db:commit_transaction{ transaction_id = "" })
    assert.equal("TransactionID is invalid.", msg)
    msg = fails("OTSSessionNotExist", db:commit_transaction{ transaction_id = "abc123" })
    assert.equal("Session not exist or may be timeout.", msg)
    fails("OTSSessionNotExist", db:put_row{ table = "t", primary_key = { "chengdu", 1 }, columns = {}, transaction_id = "ffff" })
    msg = fails("OTSParameterInvalid", db:start_local_transaction{ table = "t", key = { "x", 1 } })
    assert.equal("StartLocalTransaction support only one primary key.", msg)
    msg = fails("OTSParameterInvalid", db:start_local_transaction{ table = "", key = { "x" } })
    assert.equal("Invalid table name: ''.", msg)
    fails("OTSObjectNotExist", db:start_local_transaction{ table = "nope", key = { "x" } })
    fails("OTSInvalidPK", db:start_local_transaction{ table = "t", key = { 5 } })
    assert(db:create_table{ name = "off", primary_key = { { "k", "STRING" } }, enable_local_txn = false })
    msg = fails("OTSParameterInvalid", db:start_local_transaction{ table = "off", key = { "x" } })
    assert.equal("Try to call method using explicit transaction on explicit-transaction-disabled table.", msg)
    assert(db:create_table{ name = "other", primary_key = { { "k", "STRING" } } })
    fails("OTSParameterInvalid", db:put_row{ table = "other", primary_key = { "chengdu" }, columns = {}, transaction_id = tx })
    assert(db:commit_transaction{ transaction_id = tx })
    assert.same({ "beijing/1:v=1", "chengdu/9:v=9" }, dump(db))
  end)

  it("a transaction ends after 60 s, or 60 s without a request; the partition is free then", function()
    local db, c = clocked()
    mk(db)
    local tx = assert(db:start_local_transaction{ table = "t", key = { "a" } }).transaction_id
    for _ = 1, 3 do
      c.now = c.now + 19
      assert(db:put_row{ table = "t", primary_key = { "a", 1 }, columns = { v = 1 }, transaction_id = tx })
    end
    c.now = c.now + 4 -- 61 s since the start
    fails("OTSSessionNotExist", db:put_row{ table = "t", primary_key = { "a", 1 }, columns = {}, transaction_id = tx })
    assert(db:put_row{ table = "t", primary_key = { "a", 2 }, columns = { v = 2 } })
    assert.same({ "a/2:v=2" }, dump(db))
    local tx2 = assert(db:start_local_transaction{ table = "t", key = { "a" } }).transaction_id
    c.now = c.now + 61 -- idle
    assert(db:start_local_transaction{ table = "t", key = { "a" } }) -- the idle one ended
    fails("OTSSessionNotExist", db:commit_transaction{ transaction_id = tx2 })
  end)

  it("a transaction writes at most 4 MB", function()
    local db = clocked()
    mk(db)
    local tx = assert(db:start_local_transaction{ table = "t", key = { "a" } }).transaction_id
    local big = ("x"):rep(1500000)
    for i = 1, 2 do assert(db:put_row{ table = "t", primary_key = { "a", i }, columns = { v = big }, transaction_id = tx }) end
    fails("OTSOutOfTransactionDataSizeLimit", db:put_row{ table = "t", primary_key = { "a", 3 }, columns = { v = big }, transaction_id = tx })
    assert(db:put_row{ table = "t", primary_key = { "a", 3 }, columns = { v = "small" }, transaction_id = tx })
    assert(db:commit_transaction{ transaction_id = tx })
    assert.equal(3, #dump(db))
  end)

  it("works across connections and a reopen (the transaction lives in the file)", function()
    local path = os.tmpname()
    os.remove(path)
    local a, c = clocked(path)
    local b = assert(store.open{ path = path, clock = function() return c.now end })
    mk(a)
    local tx = assert(a:start_local_transaction{ table = "t", key = { "a" } }).transaction_id
    assert(b:put_row{ table = "t", primary_key = { "a", 1 }, columns = { v = 1 }, transaction_id = tx })
    fails("OTSRowOperationConflict", b:put_row{ table = "t", primary_key = { "a", 2 }, columns = {} })
    fails("OTSRowOperationConflict", b:start_local_transaction{ table = "t", key = { "a" } })
    a:close()
    a = assert(store.open{ path = path, clock = function() return c.now end })
    assert.same({}, dump(b))
    assert(a:commit_transaction{ transaction_id = tx })
    assert.same({ "a/1:v=1" }, dump(b))
    a:close(); b:close()
    os.remove(path)
  end)

  it("a committed transaction equals the same writes made directly; an aborted one changes nothing", function()
    local r = helper.rng(777)
    for _ = 1, helper.trials(40) do
      local direct, c1 = clocked()
      local viatx = assert(store.open{ clock = function() return c1.now end })
      for _, db in ipairs({ direct, viatx }) do
        mk(db)
        for i = 1, 6 do assert(db:put_row{ table = "t", primary_key = { i % 2 == 0 and "a" or "b", i }, columns = { v = i } }) end
      end
      local before = dump(viatx)
      local commit = r.int(0, 1) == 1
      local tx = assert(viatx:start_local_transaction{ table = "t", key = { "a" } }).transaction_id
      for _ = 1, r.int(1, 8) do
        local id, k = r.int(1, 7), r.int(1, 4)
        local req
        if k == 1 then req = { "put_row", { table = "t", primary_key = { "a", id }, columns = { v = r.int(0, 9) } } }
        elseif k == 2 then req = { "update_row", { table = "t", primary_key = { "a", id }, update = { INCREMENT = { v = 1 } } } }
        elseif k == 3 then req = { "delete_row", { table = "t", primary_key = { "a", id } } }
        else req = { "put_row", { table = "t", primary_key = { "a", id }, columns = { v = 1 }, condition = { row_existence = "EXPECT_NOT_EXIST" } } } end
        local a1, _, ca = direct[req[1]](direct, req[2])
        req[2].transaction_id = tx
        local a2, _, cb = viatx[req[1]](viatx, req[2])
        assert.equal(a1 == nil, a2 == nil)
        assert.equal(ca, cb)
      end
      if commit then
        assert(viatx:commit_transaction{ transaction_id = tx })
        assert.same(dump(direct), dump(viatx))
      else
        assert(viatx:abort_transaction{ transaction_id = tx })
        assert.same(before, dump(viatx))
      end
    end
  end)
end)
