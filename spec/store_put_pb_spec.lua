-- PutRow straight from its PlainBuffer row (db:put_row_pb, what `otskit
-- serve` answers PutRow with) equals db:put_row given the request
-- otskit.wire decodes from the same bytes: on random tables (1-4 key
-- columns of every key type, AUTO_INCREMENT, versions, time to live) and
-- random requests (every value type, explicit timestamps in and out of
-- max_time_deviation, duplicate cells, a key column's name as a column,
-- wrong key sizes, names and types, invalid UTF-8, conditions, every
-- return type, corrupted bytes), the answer bytes or the failure triple
-- are the same, every stored key and row is the same byte for byte, and
-- so is the partition accounting. put_row_pb answers every plain put
-- itself (false only where the request needs the general path); an error
-- raised out of a server path leaves nothing open once db:_recover() (or
-- the next such call) ran, and lets other connections write.
local store = require "otskit.store"
local wire = require "otskit.wire"
local helper = require "helper"
local gen = require "support.pbgen"

local N = helper.trials(400)
local NOW, PKT, int = gen.NOW, gen.PKT, gen.int
local function value(r) return gen.value(r, true) end
local function key_value(r, ty) return gen.key_value(r, ty, true) end

local function random_pk(r, t)
  local pk = {}
  for i, c in ipairs(t) do
    local v = key_value(r, c.type)
    if c.auto and r.int(1, 3) == 1 then v = wire.AUTO_INCREMENT end
    pk[i] = { c.name, v }
  end
  local k = r.int(1, 40)
  if k == 1 then pk[#pk] = nil                                     -- too few columns
  elseif k == 2 then pk[#pk + 1] = { "zz", 1 }                       -- too many
  elseif k == 3 then pk[1] = { "other", pk[1][2] }                   -- a wrong name
  elseif k == 4 then pk[1] = { pk[1][1], key_value(r, PKT[r.int(1, 3)]) } -- maybe a wrong type
  elseif k == 5 then pk[1] = { pk[1][1], wire.INF_MAX } end
  return pk
end

local NAMES = { "a", "b", "c", "d", "k1", "_x9" } -- k1 may be a key column's name

local function columns(r)
  local cols = {}
  for _ = 1, r.int(0, 6) do
    local c = { NAMES[r.int(1, 4)], value(r) }
    if r.int(1, 15) == 1 then c[1] = NAMES[r.int(5, 6)] end
    local k = r.int(1, 6)
    if k <= 2 then c[3] = (NOW - r.int(0, 8)) * 1000 + r.int(0, 999)
    elseif k == 3 then c[3] = (NOW - 86400 + r.int(-3, 3)) * 1000 end -- about the time to live
    if r.int(1, 50) == 1 then c[3] = (NOW + 300000) * 1000 end       -- past max_time_deviation
    cols[#cols + 1] = c
  end
  if #cols > 0 and r.int(1, 12) == 1 then cols[#cols + 1] = { cols[1][1], cols[1][2], cols[1][3] } end -- a duplicate
  return cols
end

local function rows_of(db)
  local out = {}
  for name in pairs(db.tables) do
    local cur = assert(db.h:scan("t_" .. name))
    while true do
      local ks, vs, n = cur:fetch(256)
      assert(ks, vs)
      if n == 0 then break end
      for i = 1, n do out[#out + 1] = name .. "\0" .. ks[i] .. "\0" .. vs[i] end
    end
  end
  table.sort(out)
  return out
end

local fast, total = 0, 0

local function trial(seed)
  local r = helper.rng(seed)
  local t, create = gen.table(r, true)
  local A, B = gen.stores(create)
  local keys = {}
  for q = 1, r.int(1, 40) do
    local what = ("seed %d put %d"):format(seed, q)
    local pk = random_pk(r, t)
    if #keys > 0 and r.int(1, 3) == 1 then pk = keys[r.int(1, #keys)] end
    keys[#keys + 1] = pk
    local req = { table = r.int(1, 40) == 1 and "nope" or "t", primary_key = pk, columns = columns(r) }
    local k = r.int(1, 12)
    if k == 1 then req.condition = "EXPECT_EXIST"
    elseif k == 2 then req.condition = "EXPECT_NOT_EXIST"
    elseif k == 3 then req.condition = { row_existence = "IGNORE", column_condition = { column = "a", comparator = "EQUAL", value = 1 } }
    elseif k == 4 then req.condition = "IGNORE" end
    k = r.int(1, 8)
    if k == 1 then req.return_type = "RT_PK"
    elseif k == 2 then req.return_type = "RT_NONE"
    elseif k == 3 then req.return_type = "RT_AFTER_MODIFY"
    elseif k == 4 then req.return_type, req.return_column_names = "RT_AFTER_MODIFY", { "a" } end
    local body = wire.encode_request("PutRow", req)
    if body then
      if r.int(1, 30) == 1 then -- a corrupted byte (a checksum, a length, a type...)
        local i = r.int(1, #body)
        body = body:sub(1, i - 1) .. string.char((body:byte(i) + r.int(1, 255)) % 256) .. body:sub(i + 1)
      end
      local a, am, ac
      local m = wire.decode_message("PutRow", body)
      if m then a, am, ac = A:put_row_pb(m) end
      total = total + 1
      if a == false or m == nil then
        local dr, dm, dc = wire.decode_request("PutRow", body)
        if dr then a, am, ac = A:put_row(dr) else a, am, ac = nil, dm, dc end
      else
        fast = fast + 1
        -- put_row_pb answers only what it can answer as put_row does
        assert.is_truthy(a or ac, what)
      end
      local b, bm, bc
      local dr, dm, dc = wire.decode_request("PutRow", body)
      if dr then b, bm, bc = B:put_row(dr) else b, bm, bc = nil, dm, dc end
      gen.same("PutRow", a, am, ac, b, bm, bc, what)
    end
  end
  assert.are.same(rows_of(B), rows_of(A), "stored rows, seed " .. seed)
  assert.are.same(B:partitions("t"), A:partitions("t"), "partition accounting, seed " .. seed)
  A:close(); B:close()
end

describe("db:put_row_pb", function()
  it("answers and stores PutRow exactly as db:put_row does", function()
    for i = 1, N do trial(i) end
    -- most random puts are plain: put_row_pb answered them itself
    assert.is_true(fast > total / 4, ("put_row_pb answered %d of %d"):format(fast, total))
  end)

  it("rolls back what an error raised out of a server path left open (db:_recover, or the next call)", function()
    local path = os.tmpname()
    local db = assert(store.open{ path = path })
    local other = assert(store.open{ path = path, busy_timeout = 0 })
    assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
    local function msg(id) return wire.decode_message("PutRow", assert(wire.encode_request("PutRow",
      { table = "t", primary_key = { { "id", id } }, columns = { { "v", "x" } } }))) end
    -- a write that raises after writing its row
    db._account = function() error("boom") end
    assert.is_false(pcall(db.put_row_pb, db, msg(1)))
    assert.is_true(db.h:in_txn())
    db:_recover()
    assert.is_false(db.h:in_txn())
    db._account = nil
    -- rolled back, and the write lock let go: another connection writes at once
    assert.is_nil(assert(other:get_row{ table = "t", primary_key = { 1 } }).row)
    assert(other:put_row{ table = "t", primary_key = { 2 }, columns = { v = "y" } })
    -- a read that raises: the next server call rolls it back first
    db._read_start = function() error("boom") end
    assert.is_false(pcall(db.get_row_pb, db, { table = "t", primary_key = { 2 } }))
    assert.is_true(db.h:in_txn())
    db._read_start = nil
    local r = assert(db:get_row_pb{ table = "t", primary_key = { 2 } })
    assert.is_false(db.h:in_txn())
    assert.is_true(#r.row_pb > 0)
    assert(db:put_row_pb(msg(3)))
    assert.is_table(assert(other:get_row{ table = "t", primary_key = { 3 } }).row)
    db:close(); other:close()
    os.remove(path); os.remove(path .. "-wal"); os.remove(path .. "-shm")
  end)

  it("answers a plain put itself, and leaves what it does not answer to db:put_row", function()
    local db = assert(store.open{ path = ":memory:" })
    assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
    local function msg(req) return wire.decode_message("PutRow", assert(wire.encode_request("PutRow", req))) end
    local res = db:put_row_pb(msg{ table = "t", primary_key = { { "id", 1 } }, columns = { { "a", "x" }, { "b", 2 } } })
    assert.is_table(res)
    local got = assert(db:get_row{ table = "t", primary_key = { { "id", 1 } } })
    assert.are.same({ a = "x", b = int(2) }, got.row.columns)
    assert.is_false(db:put_row_pb(msg{ table = "t", primary_key = { { "id", 1 } }, condition = "EXPECT_EXIST" }))
    assert.is_false(db:put_row_pb(msg{ table = "t", primary_key = { { "id", 1 } }, return_type = "RT_AFTER_MODIFY" }))
    assert.is_false(db:put_row_pb(msg{ table = "t", primary_key = { { "id", "s" } } }))
    assert.is_false(db:put_row_pb(msg{ table = "nope", primary_key = { { "id", 1 } } }))
    assert.is_false(db:put_row_pb({}))
    db:close()
  end)
end)
