-- The C-streamed reads (otskit.store.stream: db:get_row_pb,
-- db:get_range_pb, what `otskit serve` answers GetRow / GetRange without a
-- filter with) equal the Lua-built ones byte for byte: on random tables
-- (1-4 key columns of every key type, escaped zero bytes, int64 keys),
-- random rows (every value type, several versions, explicit timestamps,
-- rows without attribute columns, deleted columns, versions past a time
-- to live), random reads (bounds with INF_MIN / INF_MAX, both
-- directions, limits, columns to get, max_versions, time ranges, small
-- pages, missing keys, bad requests), the response bytes otskit.wire
-- encodes from db:get_row / db:get_range equal those from the streamed
-- answers, errors are the same triple, and the partition accounting of
-- two stores given the same writes and reads (one store read each way)
-- ends equal (one partition, split partitions, split_load's key samples).
local store = require "otskit.store"
local wire = require "otskit.wire"
local helper = require "helper"
local gen = require "support.pbgen"

local N = helper.trials(60)
local NOW, key_value = gen.NOW, gen.key_value

local function random_pk(r, t)
  local pk = {}
  for i, c in ipairs(t) do pk[i] = { c.name, key_value(r, c.type) } end
  return pk
end

local NAMES = { "a", "b", "c", "d", "k1" } -- few names: versions; k1 may be a key column's name

local function bound(r, t)
  local pk = {}
  for i, c in ipairs(t) do
    local k = r.int(1, 6)
    local v = k == 1 and wire.INF_MIN or k == 2 and wire.INF_MAX or key_value(r, c.type)
    pk[i] = { c.name, v }
  end
  return pk
end

local function read_opts(r, req)
  if r.int(1, 3) == 1 then
    local cols = {}
    for _ = 1, r.int(0, 3) do cols[#cols + 1] = NAMES[r.int(1, #NAMES)] end
    if r.int(1, 6) == 1 then cols[#cols + 1] = "zz" end
    req.columns = cols
  end
  if r.int(1, 3) == 1 then req.max_versions = r.int(1, 4) end
  local k = r.int(1, 6)
  if k == 1 then
    local lo = NOW * 1000 - r.int(0, 5000)
    req.time_range = { lo, lo + r.int(1, 6000) }
  elseif k == 2 then
    req.time_range = { specific = NOW * 1000 - r.int(0, 3) * 1000 }
  end
  if r.int(1, 40) == 1 then req.max_versions = 0 end -- refused the same way
  return req
end

local function trial(seed)
  local r = helper.rng(seed)
  local t, create = gen.table(r)
  local page
  if r.int(1, 3) == 1 then page = { rows = r.int(1, 20), bytes = r.int(30, 2000) } end
  local A, B = gen.stores(create, page)
  local keys = {}
  for _ = 1, r.int(1, 40) do
    local pk = random_pk(r, t)
    if #keys > 0 and r.int(1, 3) == 1 then pk = keys[r.int(1, #keys)] end
    keys[#keys + 1] = pk
    local req = { table = "t", primary_key = pk, columns = gen.columns(r, NAMES) }
    local op = r.int(1, 8)
    local a, am, ac, b, bm, bc
    if op == 1 then
      local u = { table = "t", primary_key = pk, update = { DELETE_ALL = { NAMES[r.int(1, 4)] } } }
      a, am, ac = A:update_row(u)
      b, bm, bc = B:update_row(u)
    else
      a, am, ac = A:put_row(req)
      b, bm, bc = B:put_row(req)
    end
    assert.are.same({ a ~= nil, am, ac }, { b ~= nil, bm, bc })
  end
  for q = 1, r.int(5, 25) do
    local what = ("seed %d read %d"):format(seed, q)
    if r.int(1, 3) == 1 then
      local pk = (#keys > 0 and r.int(1, 2) == 1) and keys[r.int(1, #keys)] or random_pk(r, t)
      if r.int(1, 30) == 1 then pk = { pk[1] } end -- a bad key: the same refusal
      local req = read_opts(r, { table = "t", primary_key = pk })
      local a, am, ac = A:get_row(req)
      local b, bm, bc = B:get_row_pb(req)
      assert.is_not_false(b, what)
      gen.same("GetRow", a, am, ac, b, bm, bc, what)
    else
      local dir = r.int(1, 2) == 1 and "BACKWARD" or nil
      local req = read_opts(r, { table = "t", start = bound(r, t), stop = bound(r, t), direction = dir })
      if r.int(1, 2) == 1 then req.limit = r.int(1, 10) end
      local a, am, ac = A:get_range(req)
      local b, bm, bc = B:get_range_pb(req)
      assert.is_not_false(b, what)
      gen.same("GetRange", a, am, ac, b, bm, bc, what)
      if b then
        assert.are.equal(#a.rows, b.row_count, what)
        assert.are.equal(a.scanned, b.scanned, what)
      end
    end
  end
  assert.are.same(A:partitions("t"), B:partitions("t"), "partition accounting, seed " .. seed)
  A:close(); B:close()
end

describe("otskit.store.stream", function()
  it("answers GetRow / GetRange byte for byte as the Lua-built rows encode", function()
    for i = 1, N do trial(i) end
  end)

  it("reports a damaged stored row or key as the Lua path does", function()
    for _, bad in ipairs({ { "row", "\255\255\255" }, { "key", "text key" } }) do
      local db = assert(store.open{ path = ":memory:" })
      assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
      assert(db:put_row{ table = "t", primary_key = { { "id", 1 } }, columns = { { "a", 1 } } })
      local keycodec = require "otskit.key"
      if bad[1] == "row" then
        assert(db.h:put("t_t", keycodec.pack({ 1 }), bad[2])) -- a value that is not cells
      else
        assert(db.h:put("t_t", keycodec.pack({ bad[2] }), "")) -- a key of the wrong type
      end
      local req = { table = "t", start = { { "id", wire.INF_MIN } }, stop = { { "id", wire.INF_MAX } } }
      local a, am, ac = db:get_range(req)
      local b, bm, bc = db:get_range_pb(req)
      assert.is_nil(a); assert.is_nil(b)
      assert.are.equal("OTSInternalServerError", ac)
      assert.are.equal(ac, bc)
      assert.matches("^the store file is damaged: ", am)
      assert.matches("^the store file is damaged: a stored " .. bad[1], bm)
      if bad[1] == "row" then
        local g = { table = "t", primary_key = { { "id", 1 } } }
        local c, cm, cc = db:get_row(g)
        local d, dm, dc = db:get_row_pb(g)
        assert.is_nil(c); assert.is_nil(d)
        assert.are.equal(cc, dc)
        assert.matches("^the store file is damaged: ", cm)
        assert.matches("^the store file is damaged: a stored row", dm)
      end
      db:close()
    end
  end)

  it("does not stream a filter, a column range, a transaction id", function()
    local db = assert(store.open{ path = ":memory:" })
    assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
    assert(db:put_row{ table = "t", primary_key = { { "id", 1 } }, columns = { { "a", 1 } } })
    local pk = { { "id", 1 } }
    local all = { { "id", wire.INF_MIN } }
    local stop = { { "id", wire.INF_MAX } }
    assert.is_false(db:get_row_pb{ table = "t", primary_key = pk, start_column = "a" })
    assert.is_false(db:get_row_pb{ table = "t", primary_key = pk, filter = { "a", "==", 1 } })
    assert.is_false(db:get_range_pb{ table = "t", start = all, stop = stop, end_column = "b" })
    assert.is_false(db:get_range_pb{ table = "t", start = all, stop = stop, transaction_id = "x" })
    local res = assert(db:get_range_pb{ table = "t", start = all, stop = stop })
    assert.are.equal(1, res.row_count)
    assert.has_error(function() db:get_range_pb("t") end)
    db:close()
    assert.has_error(function() db:get_row_pb{ table = "t", primary_key = pk } end)
  end)
end)
