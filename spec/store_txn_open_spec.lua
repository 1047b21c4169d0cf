-- spec/store_txn_open_spec.lua -- a server path (db:put_row_pb,
-- db:get_row_pb: DB:_txn_open, no pcall) that raises leaves its
-- transaction open until db:_recover(); an ordinary call that comes next
-- (db:put_row, db:get_row...) rolls it back first: its own write is
-- committed and seen by another connection, the write lock let go, and
-- the raised call's write is not kept.
local store = require "otskit.store"
local wire = require "otskit.wire"

describe("a call after a raise out of a server path", function()
  it("rolls back the transaction left open, then commits its own", function()
    local path = os.tmpname()
    local db = assert(store.open{ path = path })
    local other = assert(store.open{ path = path, busy_timeout = 0 })
    assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
    local function msg(id)
      return wire.decode_message("PutRow", assert(wire.encode_request("PutRow",
        { table = "t", primary_key = { { "id", id } }, columns = { { "v", "x" } } })))
    end
    -- a write that raises after writing its row
    db._account = function() error("boom") end
    assert.is_false(pcall(db.put_row_pb, db, msg(1)))
    db._account = nil
    assert.is_true(db.h:in_txn())
    -- the next call is an ordinary put_row
    assert(db:put_row{ table = "t", primary_key = { 2 }, columns = { v = "y" } })
    assert.is_false(db.h:in_txn())
    assert.is_table(assert(other:get_row{ table = "t", primary_key = { 2 } }).row)
    assert.is_nil(assert(other:get_row{ table = "t", primary_key = { 1 } }).row)
    assert(other:put_row{ table = "t", primary_key = { 3 }, columns = { v = "z" } })
    -- a read that raises, then an ordinary read, then another connection writes
    db._read_start = function() error("boom") end
    assert.is_false(pcall(db.get_row_pb, db, { table = "t", primary_key = { 2 } }))
    db._read_start = nil
    assert.is_true(db.h:in_txn())
    assert.is_table(assert(db:get_row{ table = "t", primary_key = { 3 } }).row)
    assert.is_false(db.h:in_txn())
    assert(other:put_row{ table = "t", primary_key = { 4 }, columns = { v = "w" } })
    assert.is_table(assert(db:get_row{ table = "t", primary_key = { 4 } }).row)
    db:close(); other:close()
    os.remove(path); os.remove(path .. "-wal"); os.remove(path .. "-shm")
  end)
end)
