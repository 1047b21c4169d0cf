-- A plain GetRow answered in one C call (db:get_row_answer, what `otskit
-- serve` answers GetRow with) answers exactly what the general path
-- (otskit.wire's decode, db:get_row, otskit.wire's encode) answers for the
-- same request bytes: on random tables (1-4 key columns of every key type,
-- versions, a time to live, split and load-split partitions) and random
-- requests (missing keys, columns to get with key names and unknown names,
-- max_versions sent or not, time ranges, wrong key sizes and types,
-- unknown fields, corrupted and truncated bytes) interleaved with the
-- store's own writes, the answer bytes or the failure triple are the
-- same, and so is the partition accounting; every plain request is
-- answered by the C call itself, and none on a load-split table. Across
-- connections: another connection's writes are seen at once; after its
-- update_table or a table dropped and made again with another key type,
-- the next read is left to the general path (which reads the definitions
-- again) and answers as it does. Index tables, transactions and injected
-- faults are left to the general path.
local store = require "otskit.store"
local wire = require "otskit.wire"
local dispatch = require "otskit.server.dispatch"
local helper = require "helper"
local gen = require "support.pbgen"

local N = helper.trials(80)
local NOW, key_value = gen.NOW, gen.key_value
local unpack = table.unpack or unpack
local NAMES = { "a", "b", "c", "d", "k1" } -- k1 may be a key column's name

-- the general path's answer: the same store code with the C call hidden
local function general(db, body)
  db.get_row_answer = false
  local out, msg, code = dispatch.call(db, "GetRow", body)
  db.get_row_answer = nil
  return out, msg, code
end

-- serve's answer, and whether the C call made it
local function served(db, body)
  local taken = false
  local c_call = db.get_row_answer
  db.get_row_answer = function(self, b)
    local out = c_call(self, b)
    taken = out and true or false
    return out
  end
  local out, msg, code = dispatch.call(db, "GetRow", body)
  db.get_row_answer = nil
  return taken, out, msg, code
end

local function varint(n)
  local out = ""
  while n >= 128 do
    out = out .. string.char(n % 128 + 128)
    n = math.floor(n / 128)
  end
  return out .. string.char(n)
end

local function random_request(r, t, keys)
  local pk = {}
  for i, c in ipairs(t) do pk[i] = { c.name, key_value(r, c.type) } end
  if #keys > 0 and r.int(1, 2) == 1 then pk = keys[r.int(1, #keys)] end
  local plain = true
  local k = r.int(1, 25)
  if k == 1 then -- a wrong key size
    pk = #pk > 1 and { unpack(pk, 1, #pk - 1) } or { pk[1], { "zz", 1 } }
    plain = false
  elseif k == 2 then pk = { { pk[1][1], key_value(r, gen.PKT[r.int(1, 3)]) }, unpack(pk, 2) }; plain = nil
  elseif k == 3 then pk = { { "other", pk[1][2] }, unpack(pk, 2) }; plain = false end
  local req = { table = r.int(1, 30) == 1 and "nope" or "t", primary_key = pk }
  if req.table ~= "t" then plain = false end
  if r.int(1, 3) == 1 then
    local cols = {}
    for _ = 1, r.int(0, 3) do cols[#cols + 1] = NAMES[r.int(1, #NAMES)] end
    if r.int(1, 6) == 1 then cols[#cols + 1] = "zz" end
    if r.int(1, 20) == 1 then cols[#cols + 1] = "9bad"; plain = false end
    req.columns = cols
  end
  if r.int(1, 3) == 1 then req.max_versions = r.int(1, 5) end
  if r.int(1, 6) == 1 then
    req.time_range = { NOW * 1000 - r.int(0, 5000), NOW * 1000 + 1 }
    plain = false
  end
  local body = assert(wire.encode_request("GetRow", req))
  if r.int(1, 6) == 1 and not req.time_range and req.max_versions == nil then
    -- max_versions not sent (the SDKs always send it; the service takes 1)
    local pkb = assert(wire.encode_pk(pk))
    body = "\10" .. string.char(#req.table) .. req.table .. "\18" .. varint(#pkb) .. pkb
    for _, c in ipairs(req.columns or {}) do body = body .. "\26" .. string.char(#c) .. c end
  end
  local m = r.int(1, 20)
  if m == 1 then body = body .. "\48\0" -- cache_blocks = false: taken
  elseif m == 2 then body = body .. "\96\1"; plain = false -- field 12: not taken
  elseif m == 3 then body = body .. "\40\0"; plain = false -- max_versions 0: refused
  elseif m == 4 then -- a byte changed anywhere: whatever it is, the same answer
    local i = r.int(1, #body)
    body = body:sub(1, i - 1) .. string.char(r.int(0, 255)) .. body:sub(i + 1)
    plain = nil
  elseif m == 5 then body = body:sub(1, r.int(0, #body - 1)); plain = nil end
  return body, plain
end

local function trial(seed)
  local r = helper.rng(seed)
  local t, create = gen.table(r)
  local A, B = gen.stores(create)
  local keys = {}
  local function write()
    local pk = {}
    for i, c in ipairs(t) do pk[i] = { c.name, key_value(r, c.type) } end
    keys[#keys + 1] = pk
    local req = { table = "t", primary_key = pk, columns = gen.columns(r, NAMES) }
    assert.are.same({ A:put_row(req) ~= nil }, { B:put_row(req) ~= nil })
  end
  for _ = 1, r.int(1, 30) do write() end
  local load_split = create.partition and create.partition.split_load
  for q = 1, r.int(5, 30) do
    local what = ("seed %d read %d"):format(seed, q)
    local body, plain = random_request(r, t, keys)
    local a, am, ac = general(A, body)
    local taken, b, bm, bc = served(B, body)
    assert.are.same({ a, am, ac }, { b, bm, bc }, what)
    if load_split then
      assert.is_false(taken, what .. ": a table whose reads may split it")
    elseif plain == true then
      assert.is_true(taken, what .. ": a plain GetRow not answered by the C call")
    elseif plain == false then
      assert.is_false(taken, what)
    end
    if r.int(1, 5) == 1 then write() end -- the store's own writes between reads
  end
  assert.are.same(A:partitions("t"), B:partitions("t"), "partition accounting, seed " .. seed)
  A:close(); B:close()
end

describe("db:get_row_answer", function()
  it("answers a GetRow byte for byte as the general path does", function()
    for i = 1, N do trial(i) end
  end)

  it("sees another connection's writes and definition changes, and its own writes", function()
    local path = helper.tmpdb()
    local R = assert(store.open{ path = path })
    local W = assert(store.open{ path = path })
    assert(W:create_table{ name = "t", primary_key = { { "id", "INTEGER" } }, options = { max_versions = 3 } })
    local function get(pk, extra)
      local req = { table = "t", primary_key = pk, max_versions = 3 }
      for k, v in pairs(extra or {}) do req[k] = v end
      local body = assert(wire.encode_request("GetRow", req))
      local taken, out, msg, code = served(R, body)
      local ref, rm, rc = general(R, body)
      assert.are.same({ ref, rm, rc }, { out, msg, code })
      return out and wire.decode_response("GetRow", out) or nil, msg, code, taken
    end
    local res, _, _, taken
    for i = 1, 3 do
      assert(W:update_row{ table = "t", primary_key = { { "id", 1 } }, update = { PUT = { { "v", i, os.time() * 1000 - 10000 + i } } } })
      res, _, _, taken = get({ { "id", 1 } })
      assert.are.equal(i, #res.row.cells, "another connection's write " .. i)
      assert.are.equal(i, res.row.columns.v)
      res, _, _, taken = get({ { "id", 1 } })
      assert.is_true(taken) -- nothing changed: the one-statement read
      assert.are.equal(i, res.row.columns.v)
    end
    -- max_versions lowered by the other connection: the definitions are
    -- read again (the C call leaves that read to the general path)
    assert(W:update_table{ name = "t", options = { max_versions = 1 } })
    res, _, _, taken = get({ { "id", 1 } })
    assert.is_false(taken)
    assert.are.equal(1, #res.row.cells)
    res, _, _, taken = get({ { "id", 1 } })
    assert.is_true(taken)
    -- this connection's own write
    assert(R:put_row{ table = "t", primary_key = { { "id", 1 } }, columns = { { "v", 99 } } })
    res, _, _, taken = get({ { "id", 1 } })
    assert.are.equal(99, res.row.columns.v)
    assert.is_true(taken)
    -- the table dropped and made again with a STRING key by the other connection
    assert(W:delete_table{ name = "t" })
    assert(W:create_table{ name = "t", primary_key = { { "id", "STRING" } } })
    assert(W:put_row{ table = "t", primary_key = { { "id", "x" } }, columns = { { "v", "new" } } })
    local _, msg, code
    _, msg, code, taken = get({ { "id", 1 } })
    assert.are.equal("OTSInvalidPK", code, msg)
    assert.is_false(taken)
    res, _, _, taken = get({ { "id", "x" } })
    assert.are.equal("new", res.row.columns.v)
    res, _, _, taken = get({ { "id", "x" } })
    assert.is_true(taken)
    -- deleted by the other connection
    assert(W:delete_table{ name = "t" })
    _, msg, code = get({ { "id", "x" } })
    assert.are.equal("OTSObjectNotExist", code, msg)
    R:close(); W:close()
    helper.remove_db(path)
  end)

  it("leaves a transaction, injected faults and index tables to the general path", function()
    local ix = assert(store.open{ path = ":memory:" })
    assert(ix:create_table{ name = "b", primary_key = { { "pk", "INTEGER" } }, defined_columns = { { "c1", "INTEGER" } },
      index_metas = { { name = "gi", primary_key = { "c1" } } } })
    assert(ix:put_row{ table = "b", primary_key = { { "pk", 1 } }, columns = { c1 = 7 } })
    local base_body = assert(wire.encode_request("GetRow", { table = "b", primary_key = { { "pk", 1 } } }))
    local index_body = assert(wire.encode_request("GetRow", { table = "gi", primary_key = { { "c1", 7 }, { "pk", 1 } } }))
    local taken, out = served(ix, base_body)
    assert.is_true(taken) -- an indexed table's own reads
    assert.are.equal(7, wire.decode_response("GetRow", out).row.columns.c1)
    taken, out = served(ix, index_body)
    assert.is_false(taken)
    assert.are.equal(out, (general(ix, index_body)))
    assert.are.same({ { "c1", 7 }, { "pk", 1 } }, wire.decode_response("GetRow", out).row.primary_key)
    ix:close()
    local db = assert(store.open{ path = ":memory:" })
    assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
    assert(db:put_row{ table = "t", primary_key = { { "id", 1 } }, columns = { { "a", 1 } } })
    local body = assert(wire.encode_request("GetRow", { table = "t", primary_key = { { "id", 1 } } }))
    assert.is_string(db:get_row_answer(body))
    assert(db.h:begin(true))
    assert.is_false(db:get_row_answer(body))
    assert(db.h:rollback())
    db:inject{ rate = 0 }
    assert.is_false(db:get_row_answer(body))
    db:inject(nil)
    assert.is_string(db:get_row_answer(body))
    assert.has_error(function() db.h:get_row_answer(body, nil, 0, "0", 0, 1024, 128) end)
    local get_plan = require("otskit.core").kv.get_plan
    assert.is_userdata(get_plan("t_t", { { name = "id", type = "INTEGER" } }, 1)) -- no time to live
    assert.has_error(function() get_plan("t_t", { { name = "id", type = "FLOAT" } }, 1) end)
    assert.has_error(function() get_plan("t_t", {}, 1) end)
    assert.has_error(function() get_plan("t_t", { { name = "id", type = "INTEGER" } }, 0) end)
    assert.has_error(function() get_plan("t_t", { { name = "id", type = "INTEGER" } }, 1, -1) end)
    assert.is_false(db:get_row_answer(42))
    db:close()
    assert.is_false(db:get_row_answer(body))
  end)
end)
