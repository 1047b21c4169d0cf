-- Secondary indexes and defined columns of otskit.store: a model-based
-- property (random operation sequences on a table with global and local
-- indexes; after each, every index equals the index recomputed from the
-- base table) and the service's limits and errors.
local store = require "otskit.store"
local helper = require "helper"

local INF_MIN, INF_MAX = store.INF_MIN, store.INF_MAX

local function all_rows(db, name, n)
  local s, e = {}, {}
  for i = 1, n do s[i], e[i] = INF_MIN, INF_MAX end
  local out = {}
  while true do
    local r = assert(db:get_range{ table = name, start = s, stop = e })
    for _, row in ipairs(r.rows) do out[#out + 1] = row end
    if not r.next_start_primary_key then break end
    s = r.next_start_primary_key
  end
  return out
end

local function ser(v)
  if type(v) == "table" then return "B:" .. tostring(v[2]) end
  return type(v):sub(1, 1) .. ":" .. tostring(v)
end

-- the index's rows as sorted strings, from its own table
local function index_rows(db, ix, npk)
  local out = {}
  for _, row in ipairs(all_rows(db, ix.name, npk)) do
    local parts = {}
    for i, c in ipairs(row.primary_key) do parts[i] = c[1] .. "=" .. ser(c[2]) end
    local names = {}
    for k in pairs(row.columns) do names[#names + 1] = k end
    table.sort(names)
    for _, k in ipairs(names) do parts[#parts + 1] = k .. ":" .. ser(row.columns[k]) end
    out[#out + 1] = table.concat(parts, " ")
  end
  return out
end

-- the same, recomputed from the base table
local TYPES = { col_i = "number", col_s = "string", col_x = "string" }
local function expected(db, ix, base_pk)
  local out = {}
  for _, row in ipairs(all_rows(db, "t", #base_pk)) do
    local vals = {}
    for _, c in ipairs(row.primary_key) do vals[c[1]] = c[2] end
    local parts, ok = {}, true
    local listed = {}
    for _, k in ipairs(ix.keys) do listed[k] = true end
    local keys = {}
    for _, k in ipairs(ix.keys) do keys[#keys + 1] = k end
    for _, k in ipairs(base_pk) do if not listed[k] then keys[#keys + 1] = k end end
    for i, k in ipairs(keys) do
      local v = vals[k]
      if v == nil then v = row.columns[k] end
      if v == nil or (TYPES[k] and type(v) ~= TYPES[k]) then ok = false; break end
      parts[i] = k .. "=" .. ser(v)
    end
    if ok then
      local names = {}
      for _, a in ipairs(ix.attrs) do
        local v = row.columns[a]
        if v ~= nil and type(v) == TYPES[a] then names[#names + 1] = a end
      end
      table.sort(names)
      for _, a in ipairs(names) do parts[#parts + 1] = a .. ":" .. ser(row.columns[a]) end
      out[#out + 1] = table.concat(parts, " ")
    end
  end
  return out
end

local function sorted(l) table.sort(l); return l end

local BASE_PK = { "pk1", "pk2" }
local INDEXES = {
  { name = "g_i", keys = { "col_i" }, attrs = { "col_s" } },
  { name = "g_s", keys = { "col_s", "pk2" }, attrs = { "col_i", "col_x" } },
  { name = "l_i", keys = { "pk1", "col_i" }, attrs = {}, type = "LOCAL" },
}

local function create(db, with_indexes)
  local metas = {}
  if with_indexes then
    for i, ix in ipairs(INDEXES) do
      metas[i] = { name = ix.name, primary_key = ix.keys, defined_columns = ix.attrs, index_type = ix.type }
    end
  end
  assert(db:create_table{ name = "t", primary_key = { { "pk1", "INTEGER" }, { "pk2", "STRING" } },
    defined_columns = { { "col_i", "INTEGER" }, { "col_s", "STRING" }, { "col_x", "STRING" } },
    index_metas = metas })
end

local function check_all(db, live)
  for _, ix in ipairs(INDEXES) do
    if live[ix.name] then
      local npk = #ix.keys
      for _, k in ipairs(BASE_PK) do
        local listed = false
        for _, x in ipairs(ix.keys) do if x == k then listed = true end end
        if not listed then npk = npk + 1 end
      end
      local got, want = sorted(index_rows(db, ix, npk)), sorted(expected(db, ix, BASE_PK))
      assert.same(want, got, "index " .. ix.name)
    end
  end
end

-- one random operation
local function random_op(db, r, txid)
  local function pk()
    local p1 = r.int(1, 3)
    if txid and r.int(1, 8) > 1 then p1 = txid.pk1 end
    return { { "pk1", p1 }, { "pk2", string.char(96 + r.int(1, 4)) } }
  end
  local tx = txid and txid.id
  local function val(name)
    if name == "col_i" then return r.int(-2, 2) end
    if name == "col_s" or name == "col_x" then return ({ "a", "b", "bb", "" })[r.int(1, 4)] end
    return r.int(0, 9)
  end
  local function cols()
    local c = {}
    for _, n in ipairs({ "col_i", "col_s", "col_x", "other" }) do
      if r.int(0, 2) > 0 then c[n] = val(n) end
    end
    return c
  end
  local kind = r.int(1, 7)
  local req
  if kind == 1 or kind == 2 then
    req = { table = "t", primary_key = pk(), columns = cols(), transaction_id = tx }
    if r.int(1, 10) == 1 then req.columns.col_i = "wrong type" end
    if r.int(1, 6) == 1 then req.condition = { row_existence = "EXPECT_EXIST" } end
    return db:put_row(req), req
  elseif kind == 3 or kind == 4 then
    local up = {}
    if r.int(0, 1) == 1 then up.PUT = cols(); up.PUT.col_i = nil end
    if r.int(0, 1) == 1 then up.DELETE_ALL = { ({ "col_i", "col_s", "col_x" })[r.int(1, 3)] } end
    if r.int(0, 1) == 1 and not (up.DELETE_ALL and up.DELETE_ALL[1] == "col_i") then up.INCREMENT = { col_i = r.int(-1, 1) } end
    if next(up) == nil then up.DELETE_ALL = { "col_s" } end
    req = { table = "t", primary_key = pk(), update = up, transaction_id = tx }
    return db:update_row(req), req
  elseif kind == 5 then
    req = { table = "t", primary_key = pk(), transaction_id = tx }
    return db:delete_row(req), req
  else
    local rows = {}
    for i = 1, r.int(1, 5) do
      local k = r.int(1, 3)
      rows[i] = k == 1 and { type = "PUT", primary_key = pk(), columns = cols() }
        or k == 2 and { type = "UPDATE", primary_key = pk(), update = { PUT = { col_s = val("col_s") } } }
        or { type = "DELETE", primary_key = pk() }
      if txid then rows[i].primary_key[1][2] = txid.pk1 end
    end
    return db:batch_write_row{ tables = { { table = "t", rows = rows } }, transaction_id = txid and txid.id }
  end
end

describe("otskit.store secondary indexes", function()
  it("every index equals the index recomputed from the base table after each random operation", function()
    local r = helper.rng()
    for trial = 1, helper.trials(12) do
      -- half the trials delay global index changes; the check reads after
      -- every delay has passed (the queue must apply them in write order)
      local now = 1700000000
      local db = assert(store.open{ clock = function() return now end })
      create(db, true)
      local delayed = r.int(0, 1) == 1
      if delayed then db:set_index_delay(r.int(1, 3)) end
      local live = { g_i = true, g_s = true, l_i = true }
      local exists = { g_i = true, g_s = true, l_i = true }
      for _ = 1, 40 do
        local c = r.int(1, 15)
        if c == 1 then
          -- drop one index and create it again (back-filled or not)
          local ix = INDEXES[r.int(1, #INDEXES)]
          if exists[ix.name] then
            assert(db:drop_index{ table = "t", index_name = ix.name })
            live[ix.name] = nil
          end
          exists[ix.name] = true
          local fill = r.int(0, 1) == 1
          assert(db:create_index{ table = "t", include_base_data = fill, index_meta = { name = ix.name,
            primary_key = ix.keys, defined_columns = ix.attrs, index_type = ix.type } })
          if fill then live[ix.name] = true end -- without back-fill only later rows are there
        elseif c == 2 then
          -- a local transaction: a few writes, then commit or abort
          local pk1 = r.int(1, 3)
          local tx = assert(db:start_local_transaction{ table = "t", key = { { "pk1", pk1 } } }).transaction_id
          for _ = 1, r.int(1, 3) do random_op(db, r, { id = tx, pk1 = pk1 }) end
          if r.int(0, 1) == 1 then assert(db:commit_transaction{ transaction_id = tx })
          else assert(db:abort_transaction{ transaction_id = tx }) end
        else
          random_op(db, r)
        end
        now = now + r.int(0, 2)
        if delayed and r.int(1, 4) == 1 then
          now = now + 4
          check_all(db, live)
        elseif not delayed then
          check_all(db, live)
        end
      end
      now = now + 4
      check_all(db, live)
      db:close()
      assert(trial)
    end
  end)

  it("a row moves within an index, leaves it when an indexed column goes, and sparse rows stay out", function()
    local db = assert(store.open{})
    create(db, true)
    assert(db:put_row{ table = "t", primary_key = { 1, "a" }, columns = { col_i = 5, col_s = "x" } })
    assert(db:put_row{ table = "t", primary_key = { 1, "b" }, columns = { col_s = "y" } }) -- no col_i
    local rows = all_rows(db, "g_i", 3)
    assert.equal(1, #rows)
    assert.same({ { "col_i", 5 }, { "pk1", 1 }, { "pk2", "a" } }, rows[1].primary_key)
    assert.same({ col_s = "x" }, rows[1].columns)
    assert(db:update_row{ table = "t", primary_key = { 1, "a" }, update = { PUT = { col_i = 7 } } })
    rows = all_rows(db, "g_i", 3)
    assert.equal(1, #rows)
    assert.equal(7, rows[1].primary_key[1][2])
    assert(db:update_row{ table = "t", primary_key = { 1, "a" }, update = { DELETE_ALL = { "col_i" } } })
    assert.equal(0, #all_rows(db, "g_i", 3))
    assert.equal(2, #all_rows(db, "g_s", 3))
    assert(db:delete_row{ table = "t", primary_key = { 1, "b" } })
    assert.equal(1, #all_rows(db, "g_s", 3))
    -- reads on an index name: get_row and batch_get_row with the full index key
    assert(db:put_row{ table = "t", primary_key = { 2, "c" }, columns = { col_i = 1, col_s = "z" } })
    local g = assert(db:get_row{ table = "g_i", primary_key = { { "col_i", 1 }, { "pk1", 2 }, { "pk2", "c" } } })
    assert.same({ col_s = "z" }, g.row.columns)
    local b = assert(db:batch_get_row{ tables = { { table = "g_i", primary_keys = { { 1, 2, "c" }, { 9, 9, "c" } } } } })
    assert.truthy(b.tables[1].rows[1].row)
    assert.falsy(b.tables[1].rows[2].row)
  end)

  it("refuses writes to an index, a wrong type in an indexed column, and keeps the data as it was", function()
    local db = assert(store.open{})
    create(db, true)
    for _, req in ipairs({
      { "put_row", { table = "g_i", primary_key = { 1, 1, "a" }, columns = {} } },
      { "update_row", { table = "g_i", primary_key = { 1, 1, "a" }, update = { PUT = { col_s = "a" } } } },
      { "delete_row", { table = "g_i", primary_key = { 1, 1, "a" } } },
      { "put_row", { table = "t", primary_key = { 1, "a" }, columns = { col_i = "text" } } },
      { "update_row", { table = "t", primary_key = { 1, "a" }, update = { PUT = { col_s = 3 } } } },
    }) do
      local res, msg, code = db[req[1]](db, req[2])
      assert.is_nil(res)
      assert.equal("OTSParameterInvalid", code)
      assert.is_string(msg)
    end
    local b = assert(db:batch_write_row{ tables = { { table = "g_i", rows = { { type = "PUT", primary_key = { 1, 1, "a" }, columns = {} } } } } })
    assert.equal(1, b.failed)
    assert.equal(0, #all_rows(db, "t", 2))
    -- an undeclared column is free: rows stay schema-free
    assert(db:put_row{ table = "t", primary_key = { 1, "a" }, columns = { other = "any", col_i = 1 } })
  end)

  it("a batch may hold the same row twice: applied in order, indexes right", function()
    local db = assert(store.open{})
    create(db, true)
    local res = assert(db:batch_write_row{ tables = { { table = "t", rows = {
      { type = "PUT", primary_key = { 1, "a" }, columns = { col_i = 1 } },
      { type = "PUT", primary_key = { 1, "a" }, columns = { col_i = 2 } },
    } } } })
    assert.equal(0, res.failed)
    assert.equal(2, assert(db:get_row{ table = "t", primary_key = { 1, "a" } }).row.columns.col_i)
    local rows = all_rows(db, "g_i", 3)
    assert.equal(1, #rows)
    assert.equal(2, rows[1].primary_key[1][2])
  end)

  it("the service's limits and errors", function()
    local db = assert(store.open{})
    local pk = { { "pk1", "INTEGER" }, { "pk2", "STRING" } }
    local defs = {}
    for i = 1, 33 do defs[i] = { "c" .. i, "STRING" } end
    local function err(res, msg, code) assert.is_nil(res); return code, msg end
    local code, msg = err(db:create_table{ name = "a", primary_key = pk, defined_columns = defs })
    assert.equal("OTSParameterInvalid", code)
    assert.equal("The number of defined columns must be in range: [0, 32].", msg)
    defs[33] = nil
    assert(db:create_table{ name = "a", primary_key = pk, defined_columns = defs })
    local function ci(meta) return db:create_index{ table = "a", index_meta = meta } end
    code, msg = err(ci{ name = "i", primary_key = { "c1", "c2", "c3", "c4", "c5" } })
    assert.equal("The number of primary key columns must be in range: [1, 4] in index.", msg)
    code, msg = err(ci{ name = "i", primary_key = {} })
    assert.equal("The number of primary key columns must be in range: [1, 4] in index.", msg)
    local attrs = {}
    for i = 2, 32 do attrs[#attrs + 1] = "c" .. i end
    assert(ci{ name = "i32", primary_key = { "c1" }, defined_columns = attrs })
    assert(ci{ name = "i0", primary_key = { "c1" } })
    code = err(ci{ name = "bad", primary_key = { "undeclared" } })
    assert.equal("OTSParameterInvalid", code)
    code = err(ci{ name = "bad", primary_key = { "c1" }, defined_columns = { "pk1" } })
    assert.equal("OTSParameterInvalid", code)
    code = err(ci{ name = "bad", primary_key = { "c1" }, index_type = "LOCAL" })
    assert.equal("OTSParameterInvalid", code) -- a local index starts with the partition key
    code = err(ci{ name = "a", primary_key = { "c1" } })
    assert.equal("OTSObjectAlreadyExist", code)
    for i = 3, 5 do assert(ci{ name = "x" .. i, primary_key = { "c" .. i } }) end
    code, msg = err(ci{ name = "x6", primary_key = { "c6" } })
    assert.equal("Number of index per table exceeds the quota:5.", msg)
    code = err(db:update_table{ table = "a", options = { max_versions = 2 } })
    assert.equal("OTSParameterInvalid", code)
    code = err(db:drop_index{ table = "a", index_name = "nope" })
    assert.equal("OTSObjectNotExist", code)
    code = err(db:delete_defined_column{ table = "a", columns = { "c1" } })
    assert.equal("OTSParameterInvalid", code) -- an index uses it
    code, msg = err(db:add_defined_column{ table = "a", columns = { { "d1", "DOUBLE" } } })
    assert.equal("The number of defined columns must be in range: [0, 32].", msg)
    code = err(db:delete_defined_column{ table = "a", columns = { "c32" } }) -- i32 uses c2..c32: drop it first
    assert.equal("OTSParameterInvalid", code)
    assert(db:drop_index{ table = "a", index_name = "i32" })
    assert(db:delete_defined_column{ table = "a", columns = { "c32" } })
    assert(db:add_defined_column{ table = "a", columns = { { "d1", "DOUBLE" } } })
    code = err(ci{ name = "x7", primary_key = { "d1" } }) -- a DOUBLE cannot be an index key
    assert.equal("OTSParameterInvalid", code)
    assert.equal(32, #assert(db:describe_table{ table = "a" }).table_meta.defined_columns)
    assert(db:delete_defined_column{ table = "a", columns = { "d1" } })
    -- list_table shows base tables only; delete_table takes the indexes along
    assert.same({ "a" }, db:list_table().table_names)
    assert(db:delete_table{ table = "a" })
    code = err(db:get_row{ table = "i0", primary_key = { "x", 1, "y" } })
    assert.equal("OTSObjectNotExist", code)
    assert(db:create_table{ name = "i0", primary_key = pk }) -- the name is free again
  end)

  it("allow_update: false refuses update_row (put and delete still work), describe echoes it", function()
    local db = assert(store.open{})
    assert(db:create_table{ name = "u", primary_key = { { "k", "STRING" } }, options = { allow_update = false } })
    assert.equal(false, db:describe_table{ table = "u" }.options.allow_update)
    assert(db:put_row{ table = "u", primary_key = { "a" }, columns = { v = 1 } })
    local res, _, code = db:update_row{ table = "u", primary_key = { "a" }, update = { PUT = { v = 2 } } }
    assert.is_nil(res)
    assert.equal("OTSParameterInvalid", code)
    local b = assert(db:batch_write_row{ tables = { { table = "u", rows = {
      { type = "UPDATE", primary_key = { "a" }, update = { PUT = { v = 2 } } } } } } })
    assert.equal(1, b.failed)
    assert(db:delete_row{ table = "u", primary_key = { "a" } })
    assert(db:update_table{ table = "u", options = { allow_update = true } })
    assert.equal(true, db:describe_table{ table = "u" }.options.allow_update)
    assert(db:update_row{ table = "u", primary_key = { "a" }, update = { PUT = { v = 2 } } })
    res, _, code = db:update_table{ table = "u", options = { allow_update = "no" } }
    assert.equal("OTSParameterInvalid", code)
  end)

  it("global index visibility can be delayed; local indexes stay synchronous", function()
    local now = 1000
    local db = assert(store.open{ clock = function() return now end })
    create(db, true)
    db:set_index_delay(2)
    assert(db:put_row{ table = "t", primary_key = { 1, "a" }, columns = { col_i = 1, col_s = "s" } })
    assert.equal(0, #all_rows(db, "g_i", 3))
    assert.equal(1, #all_rows(db, "l_i", 3))
    now = now + 1
    assert(db:put_row{ table = "t", primary_key = { 1, "a" }, columns = { col_i = 2, col_s = "s" } })
    now = now + 1.5
    local rows = all_rows(db, "g_i", 3) -- the first write is due, the second not yet
    assert.equal(1, #rows)
    assert.equal(1, rows[1].primary_key[1][2])
    now = now + 1
    rows = all_rows(db, "g_i", 3)
    assert.equal(1, #rows)
    assert.equal(2, rows[1].primary_key[1][2])
    db:set_index_delay(0)
    assert(db:delete_row{ table = "t", primary_key = { 1, "a" } })
    assert.equal(0, #all_rows(db, "g_i", 3))
    assert.has_error(function() db:set_index_delay(-1) end)
  end)

  it("indexes, defined columns and allow_update survive a reopen and are seen by another connection", function()
    local path = os.tmpname()
    os.remove(path)
    local a = assert(store.open{ path = path })
    local b = assert(store.open{ path = path })
    create(a, true)
    assert(a:update_table{ table = "t", options = { allow_update = true } })
    assert(b:put_row{ table = "t", primary_key = { 1, "a" }, columns = { col_i = 4 } })
    assert.equal(1, #all_rows(a, "g_i", 3))
    assert(b:drop_index{ table = "t", index_name = "g_s" })
    assert.equal(2, #a:describe_table{ table = "t" }.index_metas)
    a:close(); b:close()
    local c = assert(store.open{ path = path })
    local d = c:describe_table{ table = "t" }
    assert.equal(2, #d.index_metas)
    assert.equal(3, #d.table_meta.defined_columns)
    assert.equal(1, #all_rows(c, "g_i", 3))
    check_all(c, { g_i = true, l_i = true })
    c:close()
    os.remove(path)
  end)
  it("a create_index whose back-fill fails leaves no trace (injected, and on a damaged row)", function()
    local path = os.tmpname()
    os.remove(path)
    local db = assert(store.open{ path = path })
    assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } }, defined_columns = { { "v", "STRING" } } })
    for i = 1, 1200 do assert(db:put_row{ table = "t", primary_key = { i }, columns = { v = ("val%04d"):format(i) } }) end
    local meta = { name = "ix", primary_key = { "v" } }
    local function no_trace(d)
      assert.is_nil(d.tables.ix)
      assert.equal(0, #d.tables.t.ext.indexes)
      assert.is_nil(d.tables.t.indexes)
      assert.same({}, assert(d:describe_table{ table = "t" }).index_metas)
      assert.same({ "t" }, assert(d:list_table()).table_names)
      local r, _, code = d:describe_table{ table = "ix" }
      assert.is_nil(r)
      assert.equal("OTSObjectNotExist", code)
      r, _, code = d:get_range{ table = "ix", start = { INF_MIN, INF_MIN }, stop = { INF_MAX, INF_MAX } }
      assert.is_nil(r)
      assert.equal("OTSObjectNotExist", code)
    end
    -- a fault configuration that does not name create_index leaves it alone
    db:inject{ rate = 1, ops = { "put_row" } }
    assert.equal(0, #all_rows(db, "t", 1) - 1200)
    db:inject{ rate = 1, ops = { "create_index" } }
    -- without include_base_data nothing is back-filled: nothing fails
    assert(db:create_index{ table = "t", index_meta = { name = "empty", primary_key = { "v" } } })
    assert(db:drop_index{ table = "t", index_name = "empty" })
    local r, msg, code = db:create_index{ table = "t", include_base_data = true, index_meta = meta }
    assert.is_nil(r)
    assert.equal("OTSServerBusy", code, msg)
    assert.equal(1, db:fault_stats().failed)
    no_trace(db)
    -- the table's writes go on without the index
    db:inject(nil)
    assert(db:put_row{ table = "t", primary_key = { 1201 }, columns = { v = "val1201" } })
    no_trace(db)
    db:close()
    db = assert(store.open{ path = path })
    no_trace(db)
    -- the same request, no fault: every row indexed
    assert(db:create_index{ table = "t", include_base_data = true, index_meta = meta })
    assert.equal(1201, #all_rows(db, "ix", 2))
    assert(db:drop_index{ table = "t", index_name = "ix" })
    db:close()
    -- a damaged row fails the back-fill the same way
    local f = assert(io.open(path, "rb")); local bytes = f:read("*a"); f:close()
    local at = assert(bytes:find("val0013", 1, true))
    f = assert(io.open(path, "wb")); f:write(bytes:sub(1, at - 1) .. "vbl0013" .. bytes:sub(at + 7)); f:close()
    db = assert(store.open{ path = path, partitions = false })
    r, msg, code = db:create_index{ table = "t", include_base_data = true, index_meta = meta }
    assert.is_nil(r)
    assert.equal("OTSInternalServerError", code)
    assert.matches("damaged", msg, 1, true)
    no_trace(db)
    db:close()
    for _, sfx in ipairs({ "", "-wal", "-shm" }) do os.remove(path .. sfx) end
  end)
end)
