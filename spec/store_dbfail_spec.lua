-- spec/store_dbfail_spec.lua -- a db failure inside the partition
-- accounting (txn.check: a split's write refused because another
-- connection holds the lock, a damaged key met by a split's scan) on a
-- server path (db:put_row_pb, db:get_row_pb: DB:_txn_open, no pcall) is
-- raised; txn.failure(e) gives the nil, msg, code DB:_txn answers for it,
-- and otskit serve answers that code and message -- never a bare
-- OTSInternalServerError -- and serves the next request.
local store = require "otskit.store"
local txn = require "otskit.store.txn"
local wire = require "otskit.wire"
local serve = require "support.serve"

local function rm(path) os.remove(path); os.remove(path .. "-wal"); os.remove(path .. "-shm") end

-- reads key 1, 2, ... on table t until one fails: its error, and the
-- reads that answered (a load split happens after a few)
local function read_until_fail(read)
  for i = 1, 20 do
    local ok, e = read(i % 4 + 1)
    if not ok then return e, i end
  end
  error("no read failed")
end

describe("a db failure raised in the partition accounting", function()
  it("is mapped by txn.failure as DB:_txn maps it (put_row_pb and put_row)", function()
    local path = os.tmpname()
    local db = assert(store.open{ path = path })
    assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
    local m = wire.decode_message("PutRow", assert(wire.encode_request("PutRow",
      { table = "t", primary_key = { { "id", 1 } }, columns = { { "v", "x" } } })))
    db._account = function() txn.check(nil, "database is locked", "KVBusy") end
    local ok, e = pcall(db.put_row_pb, db, m)
    assert.is_false(ok)
    local r, msg, code = txn.failure(e)
    assert.is_nil(r)
    assert.equal("OTSServerBusy", code)
    assert.equal("the store is busy (another connection holds its lock): database is locked", msg)
    -- the general path answers the same
    local r2, msg2, code2 = db:put_row{ table = "t", primary_key = { 1 }, columns = { v = "x" } }
    assert.is_nil(r2)
    assert.equal(msg, msg2); assert.equal(code, code2)
    db._account = nil
    -- nothing applied, and the next call works
    assert.is_nil(assert(db:get_row{ table = "t", primary_key = { 1 } }).row)
    assert(db:put_row_pb(m))
    assert.is_table(assert(db:get_row{ table = "t", primary_key = { 1 } }).row)
    -- any other error is not a db failure
    assert.is_false(txn.failure("boom"))
    assert.is_false(txn.failure({ msg = "x", code = "KVBusy" }))
    db:close(); rm(path)
  end)

  it("a load split on a read while another connection writes: OTSServerBusy, then reads work", function()
    local path = os.tmpname()
    local a = assert(store.open{ path = path, busy_timeout = 0 })
    local b = assert(store.open{ path = path })
    assert(a:create_table{ name = "t", primary_key = { { "id", "INTEGER" } }, partition = { split_load = 2 } })
    for i = 1, 4 do assert(b:put_row{ table = "t", primary_key = { i }, columns = { v = "x" } }) end
    assert(b.h:begin(false)) -- b holds the write lock
    local e = read_until_fail(function(i) return pcall(a.get_row_pb, a, { table = "t", primary_key = { i } }) end)
    local r, msg, code = txn.failure(e)
    assert.is_nil(r)
    assert.equal("OTSServerBusy", code)
    assert.matches("^the store is busy", msg)
    b.h:rollback()
    local got = assert(a:get_row_pb{ table = "t", primary_key = { 2 } })
    assert.is_false(a.h:in_txn())
    assert.is_true(#got.row_pb > 0)
    -- the split that was not stored is not in the model either: its
    -- partitions are the file's (as a new connection reads them)
    local c = assert(store.open{ path = path })
    local function los(list)
      local out = {}
      for i, p in ipairs(list) do out[i] = { p.lo, p.hi } end
      return out
    end
    assert.same(los(assert(c:partitions("t"))), los(assert(a:partitions("t"))))
    a:close(); b:close(); c:close(); rm(path)
  end)

  it("a split's scan stopped by a damaged key leaves no snapshot: after another connection's write, the next write lands", function()
    local path = os.tmpname()
    local a = assert(store.open{ path = path, busy_timeout = 0 })
    local b = assert(store.open{ path = path, partitions = false })
    assert(b:create_table{ name = "w", primary_key = { { "id", "INTEGER" } }, partition = { split_rows = 3 } })
    for i = 1, 4 do assert(b:put_row{ table = "w", primary_key = { i }, columns = { v = "x" } }) end
    assert(b.h:put("t_w", "\255 not a key", "x"))
    local m = wire.decode_message("PutRow", assert(wire.encode_request("PutRow",
      { table = "w", primary_key = { { "id", 9 } }, columns = { { "v", "y" } } })))
    -- the general path and the server path (raised, then db:_recover as serve does)
    local r, msg, code = a:put_row{ table = "w", primary_key = { 9 }, columns = { v = "y" } }
    assert.is_nil(r)
    assert.equal("OTSInternalServerError", code)
    assert.equal("the store file is damaged: a stored key is not a tuple: ", msg:sub(1, 56))
    local ok, e = pcall(a.put_row_pb, a, m)
    assert.is_false(ok)
    local r2, msg2, code2 = txn.failure(e)
    assert.is_nil(r2); assert.equal(msg, msg2); assert.equal(code, code2)
    a:_recover()
    assert(b.h:delete("t_w", "\255 not a key")) -- another connection writes
    assert(a:put_row_pb(m))
    assert(a:put_row{ table = "w", primary_key = { 10 }, columns = { v = "z" } })
    assert.equal("y", assert(b:get_row{ table = "w", primary_key = { 9 } }).row.columns.v)
    a:close(); b:close(); rm(path)
  end)
end)

describe("otskit serve, a db failure raised in the store", function()
  it("answers its code and message (read path and write-lock path), then serves the next request", function()
    local srv = assert(serve.start{ workers = 2, data = true })
    local db
    finally(function()
      if db then db:close() end
      srv.stop()
    end)
    local cl = serve.client(srv, { retry = false })
    assert(cl:list_table{}) -- the server creates its file first (its workers' user owns it)
    db = assert(store.open{ path = srv.tmp .. "/data/otskit.db", partitions = false })
    -- r: a load split after 2 reads; w: a split past 3 rows
    assert(db:create_table{ name = "r", primary_key = { { "id", "INTEGER" } }, partition = { split_load = 2 } })
    assert(db:create_table{ name = "w", primary_key = { { "id", "INTEGER" } }, partition = { split_rows = 3 } })
    for i = 1, 4 do
      assert(db:put_row{ table = "r", primary_key = { i }, columns = { v = "x" } })
      assert(db:put_row{ table = "w", primary_key = { i }, columns = { v = "x" } })
    end

    -- a GetRow whose load split cannot write: this process holds the lock
    assert(db.h:begin(false))
    local e = read_until_fail(function(i)
      local res, msg, code = cl:get_row{ table = "r", primary_key = { { "id", i } } }
      if res then return true end
      return false, { msg = msg, code = code }
    end)
    assert.equal("OTSServerBusy", e.code)
    assert.matches("the store is busy", e.msg)
    db.h:rollback()
    local got = assert(cl:get_row{ table = "r", primary_key = { { "id", 2 } } })
    assert.equal("x", got.row.columns.v)

    -- a PutRow (2 workers: under the write lock) whose split scans a damaged key
    assert(db.h:put("t_w", "\255 not a key", "x"))
    local res, msg, code = cl:put_row{ table = "w", primary_key = { { "id", 9 } }, columns = { v = "y" } }
    assert.is_nil(res)
    -- (the client: a 500 on a write may have been applied)
    assert.equal("OTSOutcomeUnknown", code)
    assert.matches("OTSInternalServerError: the store file is damaged: a stored key is not a tuple", msg, 1, true)
    assert(db.h:delete("t_w", "\255 not a key"))
    -- the write lock and the transaction were let go: the next write lands
    assert(cl:put_row{ table = "w", primary_key = { { "id", 9 } }, columns = { v = "z" } })
    assert.equal("z", assert(db:get_row{ table = "w", primary_key = { 9 } }).row.columns.v)
  end)
end)
