-- Several processes on one store file: every read-modify-write is one
-- transaction under SQLite's write lock, so increments and optimistic
-- locks lose nothing, and a busy store answers OTSServerBusy (nothing
-- applied), never a wrong result. Worker processes are this interpreter
-- running spec/store_worker.lua.
local store = require "otskit.store"

local interp = jit and "luajit" or "lua5.4"

local helper = require "helper"
local tmpdb, cleanup = helper.tmpdb, helper.remove_db

-- Starts n workers (mode, count each) on path; returns their reports:
-- { done = acknowledged operations, busy = OTSServerBusy answers, ... }
local function run(n, path, mode, count)
  local procs = {}
  for i = 1, n do
    local cmd = ("%s spec/store_worker.lua %q %q %q %s %d %d 2>&1"):format(interp, package.path, package.cpath,
      path, mode, count, i)
    procs[i] = assert(io.popen(cmd))
  end
  local reports = {}
  for i, p in ipairs(procs) do
    local out = p:read("*a")
    p:close()
    local r = {}
    for k, v in out:gmatch("(%w+)=(%-?%d+)") do r[k] = tonumber(v) end
    assert(r.done, "worker " .. i .. " said: " .. out)
    reports[i] = r
  end
  return reports
end

local function setup(path)
  local db = assert(store.open { path = path })
  assert(db:create_table { name = "c", primary_key = { { "id", "STRING" } } })
  assert(db:put_row { table = "c", primary_key = { "n" }, columns = { v = 0, w = 0 } })
  db:close()
end

local function read(path)
  local db = assert(store.open { path = path, integrity_check = true })
  local r = assert(db:get_row { table = "c", primary_key = { "n" } })
  db:close()
  return r.row.columns
end

describe("otskit.store shared by processes", function()
  for _, n in ipairs({ 2, 4 }) do
    it(n .. " processes incrementing one counter lose no acknowledged increment", function()
      local path = tmpdb()
      setup(path)
      local per = 300
      local reps = run(n, path, "inc", per)
      local acked = 0
      for _, r in ipairs(reps) do acked = acked + r.done end
      assert.equal(n * per, acked) -- busy answers were retried until acknowledged
      assert.equal(acked, read(path).v)
      cleanup(path)
    end)

    it(n .. " processes with optimistic locks (read, then put if unchanged) lose nothing", function()
      local path = tmpdb()
      setup(path)
      local per = 150
      local reps = run(n, path, "cas", per)
      local acked, conflicts = 0, 0
      for _, r in ipairs(reps) do acked, conflicts = acked + r.done, conflicts + r.conflict end
      assert.equal(n * per, acked)
      -- every successful conditional put moved w by exactly one from the
      -- value it read: two winners from one read would leave w short
      assert.equal(acked, read(path).w)
      cleanup(path)
    end)
  end

  it("two processes creating one table with different keys: exactly one wins, the other sees it", function()
    for _ = 1, 5 do
      local path = tmpdb()
      local db = assert(store.open { path = path })
      db:close()
      local reps = run(2, path, "create", 1)
      local won = 0
      for _, r in ipairs(reps) do won = won + r.done end
      assert.equal(1, won)
      local d = assert(store.open { path = path })
      local meta = assert(d:describe_table { name = "race" })
      local winner = meta.table_meta.primary_key[1][2]
      -- the table works with the winner's key type on every connection
      local v = winner == "INTEGER" and 1 or "a"
      assert(d:put_row { table = "race", primary_key = { v }, columns = { x = 1 } })
      assert.equal(1, #assert(d:get_range { table = "race", start = { store.INF_MIN }, stop = { store.INF_MAX } }).rows)
      d:close()
      cleanup(path)
    end
  end)

  it("a table dropped or re-created by another connection is seen, never raised", function()
    local path = tmpdb()
    local a = assert(store.open { path = path })
    local b = assert(store.open { path = path })
    assert(a:create_table { name = "t", primary_key = { { "id", "STRING" } } })
    assert(b:put_row { table = "t", primary_key = { "x" }, columns = { v = 1 } })
    assert(a:delete_table { name = "t" })
    local r, msg, code = b:get_row { table = "t", primary_key = { "x" } }
    assert.is_nil(r); assert.equal("OTSObjectNotExist", code); assert.is_string(msg)
    r, msg, code = b:put_row { table = "t", primary_key = { "x" }, columns = { v = 1 } }
    assert.is_nil(r); assert.equal("OTSObjectNotExist", code)
    -- re-created with another key type: b follows
    assert(a:create_table { name = "t", primary_key = { { "id", "INTEGER" } } })
    r, msg, code = b:put_row { table = "t", primary_key = { "x" }, columns = { v = 1 } }
    assert.is_nil(r); assert.equal("OTSInvalidPK", code) -- b follows the new key type
    assert(b:put_row { table = "t", primary_key = { 7 }, columns = { v = 1 } })
    assert.equal(1, a:get_row { table = "t", primary_key = { 7 } }.row.columns.v)
    -- update_table changes no SQLite schema: b still sees it (metadata generation)
    assert(a:update_table { name = "t", options = { max_versions = 3 } })
    assert.equal(3, b:describe_table { name = "t" }.options.max_versions)
    local ok2, m2, c2 = b:create_table { name = "t", primary_key = { { "id", "STRING" } } }
    assert.is_nil(ok2); assert.equal("OTSObjectAlreadyExist", c2); assert.is_string(m2)
    a:close(); b:close()
    cleanup(path)
  end)

  it("a write lock held past the busy timeout is OTSServerBusy and applies nothing", function()
    local path = tmpdb()
    setup(path)
    local holder = assert(store.open { path = path })
    local other = assert(store.open { path = path, busy_timeout = 50 })
    holder.h:begin() -- hold the write lock as a long transaction would
    assert(holder.h:put("meta", "zz_probe", "x")) -- (any write inside it)
    for _, op in ipairs({
      function() return other:update_row { table = "c", primary_key = { "n" }, update = { INCREMENT = { v = 1 } } } end,
      function() return other:put_row { table = "c", primary_key = { "m" }, columns = { v = 1 } } end,
      function() return other:batch_write_row { tables = { { table = "c", rows = {
        { type = "PUT", primary_key = { "p" }, columns = { v = 1 } } } } } } end,
      function() return other:create_table { name = "d", primary_key = { { "id", "STRING" } } } end,
    }) do
      local r, msg, code = op()
      assert.is_nil(r)
      assert.equal("OTSServerBusy", code)
      assert.matches("busy", msg)
    end
    holder.h:rollback()
    -- reads never wait for a writer (WAL) and nothing was applied
    local row = assert(other:get_row { table = "c", primary_key = { "n" } }).row
    assert.equal(0, row.columns.v)
    assert.is_nil(assert(other:get_row { table = "c", primary_key = { "m" } }).row)
    assert.is_nil(other:describe_table { name = "d" })
    holder:close(); other:close()
    cleanup(path)
  end)
end)
