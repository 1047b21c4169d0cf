--- otskit.store -- an embedded store with Tablestore semantics on SQLite.
--
-- The operations and vocabulary of the official Tablestore SDKs, in Lua
-- form: create_table, put_row, get_row, update_row, delete_row,
-- batch_write_row, batch_get_row, get_range. Row keys are the
-- order-preserving tuple encoding of the typed primary key (otskit.key),
-- so SQLite's byte order is Tablestore's row order. Every operation
-- returns a response table, or nil, message, code with Tablestore's error
-- code; a failed operation, condition or whole batch leaves the data as
-- it was. Partitions (otskit.store.partitions) and fault injection
-- (otskit.store.faults) sit on top.
local core = require "otskit.core"
local keycodec = require "otskit.key"
local values = require "otskit.store.values"
local condition = require "otskit.store.condition"
local partitions = require "otskit.store.partitions"
local faults = require "otskit.store.faults"

local kv = core.kv
local pack, unpack = keycodec.pack, keycodec.unpack

local store = {}

--- The open ends of a key column in get_range bounds.
store.INF_MIN = setmetatable({}, { __tostring = function() return "INF_MIN" end })
store.INF_MAX = setmetatable({}, { __tostring = function() return "INF_MAX" end })
local INF_MIN, INF_MAX = store.INF_MIN, store.INF_MAX

--- Typed values: store.binary(s), store.integer(v), store.double(v).
store.binary, store.integer, store.double = values.binary, values.integer, values.double

--- The service's limits (REFERENCE §2), enforced with its error codes.
store.LIMITS = {
  pk_columns = 4, pk_cell = values.MAX_PK_CELL, cell = values.MAX_CELL,
  columns_per_row = 1024, columns_to_get = 128, row_bytes = 4194304,
  batch_write_rows = 200, batch_get_rows = 100, request_bytes = 4194304,
  range_rows = 5000, range_bytes = 4194304, name_bytes = 255,
}
local L = store.LIMITS

local DB = {}
DB.__index = DB

local function invalid(msg) return nil, msg, "OTSParameterInvalid" end

-- A kv failure as the service reports it: lock contention that outlasted
-- the busy timeout is OTSServerBusy (retryable: the transaction was
-- rolled back, nothing applied); a table another connection dropped is
-- OTSObjectNotExist; damage, a full disk or anything else is
-- OTSInternalServerError with what happened.
local KV_WHAT = { KVCorrupt = "the store file is damaged: ", KVFull = "the disk is full: " }
local function dberr(msg, code)
  msg = tostring(msg)
  if code == "KVBusy" then return nil, "the store is busy (another connection holds its lock): " .. msg, "OTSServerBusy" end
  if code == "KVNoTable" then return nil, "the table was dropped by another connection: " .. msg, "OTSObjectNotExist" end
  return nil, (KV_WHAT[code] or "") .. msg, "OTSInternalServerError"
end
local function damaged(msg) return nil, "the store file is damaged: " .. msg, "OTSInternalServerError" end

local function check_req(req, op)
  if type(req) ~= "table" then error("otskit.store: " .. op .. " takes a request table", 3) end
end

local function valid_name(s)
  return type(s) == "string" and #s >= 1 and #s <= L.name_bytes and s:match("^[A-Za-z_][A-Za-z0-9_]*$") ~= nil
end

local function ceil_cu(bytes)
  local n = math.ceil(bytes / 4096)
  return n < 1 and 1 or n
end

----------------------------------------------------------------------
-- opening, table metadata

local DEFAULT_PART = { split_bytes = 64 * 1048576, window = 60, history = 120 }

local function part_opts(base, over)
  if base ~= nil and type(base) ~= "table" then error("otskit.store: partition must be a table", 4) end
  if over ~= nil and type(over) ~= "table" then error("otskit.store: partition must be a table", 4) end
  local o = {}
  for k, v in pairs(DEFAULT_PART) do o[k] = v end
  for k, v in pairs(base or {}) do o[k] = v end
  for k, v in pairs(over or {}) do o[k] = v end
  for _, k in ipairs({ "split_rows", "split_bytes", "split_load", "window", "history" }) do
    local v = o[k]
    if v ~= nil and v ~= false and (type(v) ~= "number" or v <= 0) then
      error("otskit.store: partition." .. k .. " must be a positive number or false", 4)
    end
    if v == false then o[k] = nil end
  end
  return o
end

local function hex(s) return (s:gsub(".", function(c) return ("%02x"):format(c:byte()) end)) end
local function unhex(h)
  if #h % 2 ~= 0 or h:find("[^0-9a-f]") then return nil end
  return (h:gsub("..", function(x) return string.char(tonumber(x, 16)) end))
end

-- metadata row text: "pk <name> <TYPE>" lines, then "bound <hex>" lines
local function meta_text(t)
  local out = {}
  for _, c in ipairs(t.pk) do out[#out + 1] = "pk " .. c.name .. " " .. c.type end
  for _, b in ipairs(t.bounds) do out[#out + 1] = "bound " .. hex(b) end
  for _, k in ipairs({ "split_rows", "split_bytes", "split_load", "window", "history" }) do
    if t.popts[k] then out[#out + 1] = "opt " .. k .. " " .. ("%.17g"):format(t.popts[k]) end
  end
  return table.concat(out, "\n")
end

-- The stored key k of table t as its primary-key values, checked against
-- the schema: a key that is not a tuple of the table's column types is
-- damage, reported, never returned. -> vals | nil, msg
local function key_vals(t, k)
  local vals = unpack(k)
  if type(vals) ~= "table" then return nil, "a stored key is not a tuple" end
  local n = 0
  for _ in pairs(vals) do n = n + 1 end
  if n ~= t.npk then return nil, ("a stored key of table %s has %d columns, not %d"):format(t.name, n, t.npk) end
  for i, c in ipairs(t.pk) do
    local v = vals[i]
    local ok
    if c.type == "INTEGER" then ok = type(v) == "number" or (type(v) == "table" and keycodec.kind(v) == "int")
    else ok = type(v) == "string" end
    if not ok then return nil, ("a stored key of table %s: column %s is not %s"):format(t.name, c.name, c.type) end
  end
  return vals
end

-- Parses a metadata row ("pk <name> <TYPE>", "bound <hex>", "opt <k> <v>"
-- lines), checking every field: a damaged row is reported, never used.
-- -> pk, bounds, opts | nil, msg
local PK_TYPES = { INTEGER = true, STRING = true, BINARY = true }
local OPT_KEYS = { split_rows = true, split_bytes = true, split_load = true, window = true, history = true }
local function parse_meta(name, text)
  local function bad(why) return nil, ("metadata of table %q: %s"):format(tostring(name), why) end
  if not valid_name(name) then return bad("not a valid table name") end
  local pk, bounds, po, seen = {}, {}, {}, {}
  for line in text:gmatch("[^\n]+") do
    local a, b, c = line:match("^(%S+) (%S+) ?(%S*)$")
    if a == "pk" then
      if not valid_name(b) or not PK_TYPES[c] or seen[b] then return bad("bad primary key line") end
      seen[b] = true
      pk[#pk + 1] = { name = b, type = c }
    elseif a == "bound" and c == "" then
      local raw = unhex(b)
      if not raw then return bad("a split bound is not hex") end
      bounds[#bounds + 1] = raw
    elseif a == "opt" and OPT_KEYS[b] then
      local v = tonumber(c)
      if not v or v ~= v or v <= 0 or v == math.huge then return bad("bad option " .. b) end
      po[b] = v
    else
      return bad("unknown line")
    end
  end
  if #pk < 1 or #pk > L.pk_columns then return bad("needs 1 to 4 primary key columns, has " .. #pk) end
  local t1 = { name = name, pk = { pk[1] }, npk = 1 }
  for i, b in ipairs(bounds) do
    if not key_vals(t1, b) then return bad("split bound " .. i .. " is not a " .. pk[1].type) end
    if i > 1 and kv.cmp(bounds[i - 1], b) >= 0 then return bad("split bounds out of order") end
  end
  return pk, bounds, po
end

-- A db failure inside a partition callback: raised as a table so the
-- transaction wrapper returns it as nil, msg, code (never a Lua error).
local DBFAIL = {}
local function check(v, msg, code)
  if v == nil and msg ~= nil then error(setmetatable({ msg = msg, code = code }, DBFAIL), 0) end
  return v
end

function DB:_attach(name, pk, bounds, popts)
  local t = { name = name, kv = "t_" .. name, pk = pk, npk = #pk, pknames = {}, bounds = bounds, popts = popts }
  for _, c in ipairs(pk) do t.pknames[c.name] = true end
  if self.accounting then
    local h = self.h
    t.parts = partitions.new({ bounds = bounds, split_rows = popts.split_rows, split_bytes = popts.split_bytes,
      split_load = popts.split_load, window = popts.window, history = popts.history }, {
      clock = function() return self:now() end,
      scan = function(lo, hi)
        local cur = check(h:scan(t.kv, lo, hi, false))
        return function()
          local k, v, code = cur:next()
          if k == nil and v ~= nil then check(nil, v, code) end
          return k, v
        end
      end,
      pk1 = function(k)
        local f, m = core.key.first(k)
        if not f then check(nil, "a stored key is not a tuple: " .. m, "KVCorrupt") end
        return f
      end,
      value = function(enc)
        local v = unpack(enc)
        v = type(v) == "table" and v[1]
        if v == nil then check(nil, "a split bound is not a tuple", "KVCorrupt") end
        if type(v) == "table" or type(v) == "cdata" then v = tostring(v) end
        return v
      end,
      on_split = function(los)
        t.bounds = los
        t.meta = meta_text(t)
        check(h:put("meta", name, t.meta))
      end,
    })
    -- sizes of an existing table (reopened file)
    local cur = check(h:scan(t.kv, nil, nil, false))
    while true do
      local ks, vs, n = cur:fetch(512)
      check(ks, vs, n)
      if n == 0 then break end
      for i = 1, n do
        local p = t.parts.parts[t.parts:locate(ks[i])]
        p.rows, p.bytes = p.rows + 1, p.bytes + #ks[i] + #vs[i]
      end
    end
  end
  self.tables[name] = t
  return t
end

--- store.open{ path = ":memory:" | "file.db", clock = fn, partitions = true,
-- partition = { split_rows, split_bytes, split_load, window, history } }
-- -> db | nil, msg, code. clock() -> seconds (default os.time) drives the
-- partition windows; injected latency is added to it (db:now()).
-- partitions = false turns the partition accounting off.
local OPEN_OPTS = { path = "string", clock = "function", partitions = "boolean", partition = "table",
  busy_timeout = "number", integrity_check = "boolean" }

function store.open(opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("otskit.store: open takes an options table", 2) end
  for k, v in pairs(opts) do
    local want = OPEN_OPTS[k]
    if not want then error("otskit.store: open: unknown option " .. tostring(k), 2) end
    if type(v) ~= want then error("otskit.store: open: " .. k .. " must be a " .. want .. ", got " .. type(v), 2) end
  end
  local busy = opts.busy_timeout or 5000
  if busy ~= math.floor(busy) or busy < 0 or busy > 86400000 then
    error("otskit.store: open: busy_timeout must be an integer number of ms in 0..86400000", 2)
  end
  local popts = part_opts(opts.partition)
  local h, msg, code = kv.open(opts.path or ":memory:", busy)
  if not h then return dberr(msg, code) end
  local db = setmetatable({ h = h, tables = {}, clock = opts.clock or os.time, offset = 0,
    accounting = opts.partitions ~= false, popts = popts }, DB)
  local function failed(m, c)
    h:close()
    return nil, m, c
  end
  local ok, err, ecode = h:begin()
  if ok then
    ok, err, ecode = h:create("meta")
    if ok then ok, err, ecode = h:commit() end
    if not ok then h:rollback() end
  end
  if not ok then return failed(dberr(err, ecode)) end
  if opts.integrity_check then
    ok, err, ecode = db:check()
    if not ok then return failed(nil, err, ecode) end
  end
  ok, err, ecode = db:_txn(false, function() return true end)
  if not ok then return failed(nil, err, ecode) end
  return db
end

--- db:check() -> true | nil, msg, code: SQLite's integrity check of the
-- whole file, then every stored row against its checksum and its table's
-- key schema. Damage is OTSInternalServerError naming what is wrong.
-- (store.open{ integrity_check = true } runs it before the first use.)
function DB:check()
  local h = self.h
  if h == nil then error("otskit.store: db is closed", 2) end
  local ok, err, code = h:integrity()
  if not ok then return dberr(err, code) end
  return self:_txn(false, function()
    for _, t in pairs(self.tables) do
      local cur, m, c = h:scan(t.kv)
      if not cur then return dberr(m, c) end
      while true do
        local ks, vs, n = cur:fetch(512)
        if ks == nil then return dberr(vs, n) end
        if n == 0 then break end
        for i = 1, n do
          local _, why = key_vals(t, ks[i])
          if why then return damaged(why) end
          local cols, e = values.decode(vs[i])
          if not cols then return damaged("a row of table " .. t.name .. ": " .. tostring(e)) end
        end
      end
    end
    return true
  end)
end

-- Brings self.tables up to what is on disk when another connection (or
-- this one) changed the schema: tables created, dropped or re-created.
-- Runs inside a transaction; an unchanged table keeps its object (and
-- its partition accounting).
function DB:_sync()
  local h = self.h
  local v, err, code = h:schema()
  if v == nil then return dberr(err, code) end
  if v == self.schema then return true end
  local cur, m, c = h:scan("meta")
  if not cur then return dberr(m, c) end
  local seen = {}
  while true do
    local ks, vs, n = cur:fetch(256)
    if ks == nil then return dberr(vs, n) end
    if n == 0 then break end
    for i = 1, n do
      local name, text = ks[i], vs[i]
      local pk, bounds, po = parse_meta(name, text)
      if not pk then return damaged(bounds) end
      local has, e2, c2 = h:has("t_" .. name)
      if has == nil then return dberr(e2, c2) end
      if not has then return damaged(("table %s has metadata but no data table"):format(name)) end
      seen[name] = true
      local old = self.tables[name]
      if not (old and old.meta == text) then
        local ok, r = pcall(self._attach, self, name, pk, bounds, part_opts(nil, po))
        if not ok then
          if getmetatable(r) == DBFAIL then return dberr(r.msg, r.code) end
          error(r, 0)
        end
        r.meta = text
      end
    end
  end
  for name in pairs(self.tables) do
    if not seen[name] then self.tables[name] = nil end
  end
  self.schema = v
  return true
end

-- Runs fn(self, ...) as one SQLite transaction: BEGIN IMMEDIATE for
-- writes (the write lock is taken before anything is read, so a
-- read-modify-write such as INCREMENT or a condition check cannot
-- interleave with another connection's), BEGIN for reads (one snapshot).
-- Commits when fn returns a result, rolls back when it returns nil, msg,
-- code or raises (re-raised; a db failure inside a callback is returned).
-- Lock contention beyond the busy timeout: OTSServerBusy, nothing applied.
function DB:_txn(write, fn, ...)
  local h = self.h
  if h == nil then error("otskit.store: db is closed", 3) end
  if h:in_txn() then return fn(self, ...) end
  local ok, err, code = h:begin(not write)
  if not ok then return dberr(err, code) end
  ok, err, code = self:_sync()
  local okp, r1, r2, r3, r4
  if ok then
    okp, r1, r2, r3, r4 = pcall(fn, self, ...)
  else
    okp, r1, r2, r3 = true, nil, err, code
  end
  if not okp then
    h:rollback()
    if getmetatable(r1) == DBFAIL then return dberr(r1.msg, r1.code) end
    error(r1, 0)
  end
  if r1 == nil and r4 ~= "commit" then
    h:rollback()
    return nil, r2, r3
  end
  ok, err, code = h:commit()
  if not ok then
    h:rollback()
    return dberr(err, code)
  end
  if r1 == nil then return nil, r2, r3 end -- an injected fault after the write
  return r1, r2
end

--- db:close(): closes the SQLite database; idempotent.
function DB:close()
  if self.h then self.h:close(); self.h = nil end
end
DB.__close = DB.close

--- db:now() -> the store's clock: clock() plus all injected latency.
function DB:now() return self.clock() + self.offset end

function DB:_table(name)
  local h = self.h
  if h == nil then error("otskit.store: db is closed", 3) end
  local t = self.tables[name]
  if t == nil then
    if type(name) ~= "string" then return invalid("table name must be a string") end
    return nil, "Requested table does not exist: " .. name, "OTSObjectNotExist"
  end
  return t
end

--- db:create_table{ name, primary_key = {{"pk1", "INTEGER"|"STRING"|"BINARY"}, ...},
-- splits = { partition-key values }, partition = { thresholds } }
-- -> { table = name } | nil, msg, code
function DB:create_table(req)
  check_req(req, "create_table")
  if self.h == nil then error("otskit.store: db is closed", 2) end
  local name = req.name or req.table
  if not valid_name(name) then return invalid("table name must be 1-255 bytes of [A-Za-z0-9_], not starting with a digit: " .. tostring(name)) end
  if self.tables[name] then return nil, "Requested table already exists: " .. name, "OTSObjectAlreadyExist" end
  local spec = req.primary_key
  if type(spec) ~= "table" or #spec < 1 or #spec > L.pk_columns then
    return invalid("primary_key must list 1 to 4 columns")
  end
  local pk, seen = {}, {}
  for i, c in ipairs(spec) do
    if type(c) ~= "table" then return invalid("primary key column " .. i .. " must be {name, type}") end
    local n, ty = c[1] or c.name, c[2] or c.type
    if not valid_name(n) then return invalid("bad primary key column name: " .. tostring(n)) end
    if seen[n] then return invalid("duplicate primary key column: " .. n) end
    if ty ~= "INTEGER" and ty ~= "STRING" and ty ~= "BINARY" then
      return invalid("primary key column " .. n .. " type must be INTEGER, STRING or BINARY, got " .. tostring(ty))
    end
    seen[n] = true
    pk[i] = { name = n, type = ty }
  end
  local t0 = { name = name, pk = pk, npk = #pk, pknames = seen }
  local bounds = {}
  for i, v in ipairs(req.splits or {}) do
    local vals, msg, code = self:_pk_values(t0, { v }, false, 1)
    if not vals then return nil, "splits[" .. i .. "]: " .. msg, code end
    bounds[i] = pack(vals)
  end
  table.sort(bounds, function(a, b) return kv.cmp(a, b) < 0 end)
  for i = 2, #bounds do
    if bounds[i] == bounds[i - 1] then return invalid("duplicate split point") end
  end
  local popts = part_opts(self.popts, req.partition)
  local t = { pk = pk, bounds = bounds, popts = popts }
  -- inside the write transaction self.tables is what is on disk (synced
  -- under the write lock), so two connections creating one name cannot
  -- both succeed; a data table left without metadata is replaced
  local h = self.h
  local text = meta_text(t)
  local ok, msg, ecode = h:drop("t_" .. name)
  if ok then ok, msg, ecode = h:create("t_" .. name) end
  if ok then ok, msg, ecode = h:put("meta", name, text) end
  if not ok then return dberr(msg, ecode) end
  self:_attach(name, pk, bounds, popts).meta = text
  return { table = name }
end

--- db:delete_table{ name } -> {} | nil, msg, code
function DB:delete_table(req)
  check_req(req, "delete_table")
  local name = req.name or req.table
  local t, msg, code = self:_table(name)
  if not t then return nil, msg, code end
  local h = self.h
  local ok, err, ecode = h:drop(t.kv)
  if ok then ok, err, ecode = h:delete("meta", name) end
  if ok == nil then return dberr(err, ecode) end
  self.tables[name] = nil
  return {}
end

--- db:list_table() -> { table_names = {...} } (sorted)
function DB:list_table()
  local names = {}
  for n in pairs(self.tables) do names[#names + 1] = n end
  table.sort(names, function(a, b) return kv.cmp(a, b) < 0 end)
  return { table_names = names }
end

--- db:describe_table{ name } -> { table_meta = { table, primary_key },
-- shard_splits = { partition-key values } } | nil, msg, code
function DB:describe_table(req)
  check_req(req, "describe_table")
  local t, msg, code = self:_table(req.name or req.table)
  if not t then return nil, msg, code end
  local pk, splits = {}, {}
  for i, c in ipairs(t.pk) do pk[i] = { c.name, c.type } end
  for i, b in ipairs(t.bounds) do
    local v = unpack(b)[1]
    splits[i] = type(v) == "table" and tostring(v) or v
  end
  return { table_meta = { table = t.name, primary_key = pk }, shard_splits = splits }
end

----------------------------------------------------------------------
-- primary keys and columns

local INF = { [INF_MIN] = true, [INF_MAX] = true }

-- The values of a primary key in schema order: pk is {{name, v}, ...} (the
-- SDK form) or {v1, v2, ...}. n: how many columns to expect (default all).
function DB:_pk_values(t, pk, allow_inf, n)
  if type(pk) ~= "table" then return invalid("primary_key must be a table") end
  n = n or t.npk
  if #pk ~= n then
    return invalid(("primary key of table %s has %d columns, got %d"):format(t.name, n, #pk))
  end
  local vals = {}
  for i = 1, n do
    local col, v = t.pk[i], pk[i]
    if type(v) == "table" and not INF[v] and not values.is_typed(v) then
      if v[1] ~= col.name then
        return invalid(("primary key column %d must be '%s', got '%s'"):format(i, col.name, tostring(v[1])))
      end
      v = v[2]
    end
    if INF[v] then
      if not allow_inf then return invalid("INF_MIN and INF_MAX are only allowed in get_range bounds") end
    else
      local ty, x = values.classify(v)
      if ty == "STRING" and col.type == "BINARY" then ty = "BINARY"
      elseif ty == "DOUBLE" and col.type == "INTEGER" and not values.is_typed(v)
          and x == math.floor(x) and x >= -2^63 and x < 2^63 then
        ty, x = "INTEGER", values.LUA54 and math.tointeger(x) or x -- 5.4: 2^40 is a float
      end
      if ty ~= col.type then
        return invalid(("primary key column '%s' must be %s, got %s"):format(col.name, col.type, ty or type(v)))
      end
      if ty == "INTEGER" and type(x) == "string" then
        x = keycodec.int(x) -- LuaJIT: an int64 beyond 2^53, as decimal text
      elseif ty ~= "INTEGER" and #x > L.pk_cell then
        return invalid(("primary key column '%s' is %d bytes, longer than %d"):format(col.name, #x, L.pk_cell))
      end
      v = x
    end
    vals[i] = v
  end
  return vals
end

-- the pk size for limits: names plus values
local function pk_size(t, vals)
  local n = 0
  for i, c in ipairs(t.pk) do
    local v = vals[i]
    n = n + #c.name + (c.type == "INTEGER" and 8 or #v)
  end
  return n
end

-- the encoded lower/upper bound of a get_range key with INF columns
local function bound_key(vals)
  local pre = {}
  for i = 1, #vals do
    local v = vals[i]
    if v == INF_MIN then return pack(pre) end
    if v == INF_MAX then return pack(pre) .. "\255" end -- above every tuple type code
    pre[i] = v
  end
  return pack(pre)
end

local function pk_out(t, k)
  local vals = key_vals(t, k)
  if not vals then return nil end
  local out = {}
  for i, c in ipairs(t.pk) do
    local v = vals[i]
    if type(v) == "table" then v = tostring(v) end -- LuaJIT int64 beyond 2^53: decimal text
    out[i] = { c.name, v }
  end
  return out
end

-- Attribute columns to write: {c = v} or {{"c", v}, ...}.
-- -> names, types, vals, size | nil, msg, code
local function parse_columns(t, cols, what)
  if type(cols) ~= "table" then return invalid(what .. " must be a table") end
  local names, types, vals, size, seen, n = {}, {}, {}, 0, {}, 0
  for k, v in pairs(cols) do
    local name, val = k, v
    if type(k) == "number" then
      if type(v) ~= "table" then return invalid(what .. "[" .. k .. "] must be {name, value}") end
      name, val = v[1], v[2]
    end
    if not valid_name(name) then return invalid("bad column name: " .. tostring(name)) end
    if t.pknames[name] then return invalid("column '" .. name .. "' is a primary key column") end
    if seen[name] then return invalid("duplicate column: " .. name) end
    seen[name] = true
    local ty, x = values.classify(val)
    if not ty then return invalid("column '" .. name .. "': " .. tostring(x)) end
    local sz = values.size(ty, x)
    if (ty == "STRING" or ty == "BINARY") and sz > L.cell then
      return invalid(("column '%s' is %d bytes, longer than %d"):format(name, sz, L.cell))
    end
    n = n + 1
    if n > L.columns_per_row then
      return nil, "more than " .. L.columns_per_row .. " attribute columns in one row", "OTSOutOfColumnCountLimit"
    end
    names[n], types[n], vals[n] = name, ty, x
    size = size + #name + sz
  end
  return names, types, vals, size
end

-- columns_to_get -> set of names, or nil for all
local function parse_get_columns(t, cols)
  if cols == nil then return nil end
  if type(cols) ~= "table" then return invalid("columns must be a list of names") end
  if #cols > L.columns_to_get then return invalid("more than " .. L.columns_to_get .. " columns to get") end
  if #cols == 0 then return nil end
  local set = {}
  for _, c in ipairs(cols) do
    if not valid_name(c) then return invalid("bad column name: " .. tostring(c)) end
    if not t.pknames[c] then set[c] = true end
  end
  return set
end

----------------------------------------------------------------------
-- write plans: validated once, applied inside or outside a transaction

local PUT_EXIST = nil
local DEL_EXIST = { IGNORE = true, EXPECT_EXIST = true }

function DB:_plan_put(t, row)
  local vals, msg, code = self:_pk_values(t, row.primary_key, false)
  if not vals then return nil, msg, code end
  local names, types, cv, csize = parse_columns(t, row.columns or {}, "columns")
  if not names then return nil, types, cv end
  local cond, m2, c2 = condition.parse(row.condition, PUT_EXIST)
  if not cond then return nil, m2, c2 end
  local size = pk_size(t, vals) + csize
  if size > L.row_bytes then return nil, "row is " .. size .. " bytes, larger than 4 MB", "OTSRequestBodyTooLarge" end
  return { kind = "PUT", key = pack(vals), cond = cond, size = size,
           blob = values.encode(names, types, cv), ret = row.return_type }
end

local UPDATE_OPS = { PUT = true, DELETE = true, DELETE_ALL = true, INCREMENT = true }

function DB:_plan_update(t, row)
  local vals, msg, code = self:_pk_values(t, row.primary_key, false)
  if not vals then return nil, msg, code end
  local up = row.update
  if type(up) ~= "table" then return invalid("update must be a table { PUT = ..., DELETE = ..., DELETE_ALL = ..., INCREMENT = ... }") end
  for k in pairs(up) do
    if not UPDATE_OPS[k] then return invalid("update operation must be PUT, DELETE, DELETE_ALL or INCREMENT, got " .. tostring(k)) end
  end
  local plan = { kind = "UPDATE", size = pk_size(t, vals), ret = row.return_type }
  local seen, ncols = {}, 0
  local function claim(name)
    if not valid_name(name) then return invalid("bad column name: " .. tostring(name)) end
    if t.pknames[name] then return invalid("column '" .. name .. "' is a primary key column") end
    if seen[name] then return invalid("column '" .. name .. "' appears twice in one update") end
    seen[name] = true
    ncols = ncols + 1
    if ncols > L.columns_per_row then
      return nil, "more than " .. L.columns_per_row .. " attribute columns in one row", "OTSOutOfColumnCountLimit"
    end
    return true
  end
  if up.PUT ~= nil then
    local names, types, cv, csize = parse_columns(t, up.PUT, "update.PUT")
    if not names then return nil, types, cv end
    for _, n in ipairs(names) do
      local ok, m, c = claim(n)
      if not ok then return nil, m, c end
    end
    plan.put_names, plan.put_types, plan.put_vals = names, types, cv
    plan.size = plan.size + csize
  end
  plan.del = {}
  for _, op in ipairs({ "DELETE", "DELETE_ALL" }) do
    local list = up[op]
    if list ~= nil then
      if type(list) ~= "table" then return invalid("update." .. op .. " must be a list of column names") end
      for _, n in ipairs(list) do
        if type(n) == "table" then n = n[1] end -- {name, timestamp}: one version per cell here
        local ok, m, c = claim(n)
        if not ok then return nil, m, c end
        plan.del[#plan.del + 1] = n
        plan.size = plan.size + #n
      end
    end
  end
  if up.INCREMENT ~= nil then
    local names, types, cv = parse_columns(t, up.INCREMENT, "update.INCREMENT")
    if not names then return nil, types, cv end
    for i, n in ipairs(names) do
      if types[i] ~= "INTEGER" then return invalid("INCREMENT of '" .. n .. "' needs an INTEGER, got " .. types[i]) end
      local ok, m, c = claim(n)
      if not ok then return nil, m, c end
      plan.size = plan.size + #n + 8
    end
    plan.inc_names, plan.inc_vals = names, cv
  end
  local cond, m2, c2 = condition.parse(row.condition, PUT_EXIST)
  if not cond then return nil, m2, c2 end
  if plan.size > L.row_bytes then return nil, "row is " .. plan.size .. " bytes, larger than 4 MB", "OTSRequestBodyTooLarge" end
  plan.key, plan.cond = pack(vals), cond
  return plan
end

function DB:_plan_delete(t, row)
  local vals, msg, code = self:_pk_values(t, row.primary_key, false)
  if not vals then return nil, msg, code end
  local cond, m2, c2 = condition.parse(row.condition, DEL_EXIST)
  if not cond then return nil, m2, c2 end
  return { kind = "DELETE", key = pack(vals), cond = cond, size = pk_size(t, vals), ret = row.return_type }
end

local PLAN = { PUT = DB._plan_put, UPDATE = DB._plan_update, DELETE = DB._plan_delete }

local function int_add(a, b)
  if values.LUA54 then
    local r = a + b
    -- int64 overflow wraps on 5.4: same sign in, other sign out
    if (a >= 0) == (b >= 0) and (r >= 0) ~= (a >= 0) then return nil end
    return r
  end
  if type(a) ~= "number" or type(b) ~= "number" then return nil end
  local r = a + b
  if r >= values.TWO53 or r <= -values.TWO53 then return nil end -- past 2^53 doubles round
  return r
end

-- Applies a plan: reads the row if needed, checks the condition, writes.
-- -> accounting {key, drows, dbytes} or false (nothing changed) | nil, msg, code
function DB:_apply(t, plan)
  local h = self.h
  local k = plan.key
  local parts = t.parts ~= nil
  if plan.kind == "PUT" and not condition.needs_row(plan.cond) then
    -- the common blind put: one C call reads the old size and writes
    local old, err, ecode = h:put(t.kv, k, plan.blob, parts)
    if old == nil then return dberr(err, ecode) end
    if not parts then return { k, 0, 0 } end
    return { k, old and 0 or 1, old and (#plan.blob - old) or (#k + #plan.blob) }
  end
  local need = condition.needs_row(plan.cond) or plan.kind == "UPDATE" or parts
  local old, cols, types
  if need then
    local err, ecode
    old, err, ecode = h:get(t.kv, k)
    if old == nil and err then return dberr(err, ecode) end
  end
  if plan.cond.exist ~= "IGNORE" or plan.cond.cc or plan.kind == "UPDATE" then
    if old then
      cols, types = values.decode(old, nil, true)
      if not cols then return damaged("a stored row: " .. tostring(types)) end
    end
    local ok, m, c = condition.check(plan.cond, old ~= nil, cols, types)
    if not ok then return nil, m, c end
  end
  local oldbytes = old and (#k + #old) or 0
  if plan.kind == "DELETE" then
    if not old and need then return { k, 0, 0 } end
    local ok, err, ecode = h:delete(t.kv, k)
    if ok == nil then return dberr(err, ecode) end
    return { k, (old or ok) and -1 or 0, -oldbytes }
  end
  local blob = plan.blob
  if plan.kind == "UPDATE" then
    cols, types = cols or {}, types or {}
    if plan.put_names then
      for i, n in ipairs(plan.put_names) do cols[n], types[n] = plan.put_vals[i], plan.put_types[i] end
    end
    for _, n in ipairs(plan.del) do cols[n], types[n] = nil, nil end
    if plan.inc_names then
      for i, n in ipairs(plan.inc_names) do
        local cur = cols[n]
        if cur ~= nil and types[n] ~= "INTEGER" then
          return invalid("INCREMENT of '" .. n .. "': the column is " .. types[n] .. ", not INTEGER")
        end
        local r = int_add(cur or 0, plan.inc_vals[i])
        if r == nil then return invalid("INCREMENT of '" .. n .. "' overflows int64" .. (values.LUA54 and "" or " (or 2^53 on LuaJIT)")) end
        cols[n], types[n] = r, "INTEGER"
      end
    end
    local names, tys, vs, i = {}, {}, {}, 0
    for n, v in pairs(cols) do i = i + 1; names[i], tys[i], vs[i] = n, types[n], v end
    blob = values.encode(names, tys, vs)
  end
  local ok, err, ecode = h:put(t.kv, k, blob)
  if not ok then return dberr(err, ecode) end
  return { k, old and 0 or 1, #k + #blob - oldbytes }
end

function DB:_account(t, acct, defer)
  if t.parts and acct then t.parts:write(acct[1], acct[2], acct[3], defer) end
end

function DB:_fault(op)
  local f = self.faults
  if not f then return 0, false end
  local lat, fail = f:call(op)
  self.offset = self.offset + lat
  self.last_latency = lat
  return lat, fail
end

local function consumed(read, write)
  return { capacity_unit = { read = read, write = write } }
end

-- one single-row write operation
function DB:_write(op, kind, req)
  check_req(req, op)
  local lat, fail = self:_fault(op)
  if fail and not self.faults.applied then return nil, self.faults:message(), self.faults.code end
  local t, msg, code = self:_table(req.table)
  if not t then return nil, msg, code end
  local plan, m, c = PLAN[kind](self, t, req)
  if not plan then return nil, m, c end
  local acct, m2, c2 = self:_apply(t, plan)
  if not acct then return nil, m2, c2 end
  self:_account(t, acct)
  if fail then return nil, self.faults:message(), self.faults.code, "commit" end
  local res = { consumed = consumed(condition.needs_row(plan.cond) and 1 or 0, ceil_cu(plan.size)), latency = lat }
  if plan.ret == "RT_PK" then res.row = { primary_key = pk_out(t, plan.key) } end
  return res
end

--- db:put_row{ table, primary_key, columns = {c = v} | {{"c", v}, ...},
-- condition, return_type = "RT_PK" } -> { consumed, row?, latency }
-- Replaces the whole row.
function DB:put_row(req) return self:_write("put_row", "PUT", req) end

--- db:update_row{ table, primary_key, update = { PUT = columns, DELETE =
-- {names}, DELETE_ALL = {names}, INCREMENT = {c = n} }, condition }
-- Creates the row if missing (unless the condition forbids it).
function DB:update_row(req) return self:_write("update_row", "UPDATE", req) end

--- db:delete_row{ table, primary_key, condition } (IGNORE or EXPECT_EXIST)
function DB:delete_row(req) return self:_write("delete_row", "DELETE", req) end

----------------------------------------------------------------------
-- reads

local function row_out(t, k, blob, want)
  local cols, err, size = values.decode(blob, want, false)
  if not cols then return nil, "the store file is damaged: a stored row: " .. err end
  local vals, why = key_vals(t, k)
  if not vals then return nil, "the store file is damaged: " .. why end
  local pk, pkc = {}, t.pk
  for i = 1, #pkc do
    local c, v = pkc[i], vals[i]
    if c.type == "INTEGER" then
      if type(v) == "table" then v = tostring(v) end -- LuaJIT int64 beyond 2^53: decimal text
      size = size + #c.name + 8
    else
      size = size + #c.name + #v
    end
    pk[i] = { c.name, v }
  end
  return { primary_key = pk, columns = cols }, size
end

--- db:get_row{ table, primary_key, columns = {names} } -> { row = { primary_key,
-- columns = {c = v} } or nil when missing, consumed }
function DB:get_row(req)
  check_req(req, "get_row")
  local lat, fail = self:_fault("get_row")
  if fail then return nil, self.faults:message(), self.faults.code end
  local t, msg, code = self:_table(req.table)
  if not t then return nil, msg, code end
  local vals, m, c = self:_pk_values(t, req.primary_key, false)
  if not vals then return nil, m, c end
  local want, m2, c2 = parse_get_columns(t, req.columns)
  if m2 then return nil, m2, c2 end
  local k = pack(vals)
  local blob, err, ecode = self.h:get(t.kv, k)
  if blob == nil and err then return dberr(err, ecode) end
  if t.parts then t.parts:read(k) end
  local row, size
  if blob then
    row, size = row_out(t, k, blob, want)
    if not row then return nil, size, "OTSInternalServerError" end
  end
  return { row = row, consumed = consumed(ceil_cu(size or 0), 0), latency = lat }
end

local function norm_direction(d)
  if d == nil or d == "FORWARD" then return false end
  if d == "BACKWARD" then return true end
  return nil
end

--- db:get_range{ table, start, stop (also inclusive_start_primary_key,
-- exclusive_end_primary_key), direction = "FORWARD" | "BACKWARD", limit,
-- columns } -> { rows, next_start_primary_key, consumed }
-- start is inclusive, stop exclusive; columns may be INF_MIN / INF_MAX.
-- A page stops at limit, 5000 rows or 4 MB; next_start_primary_key is
-- the key to continue from, nil when the range is exhausted.
function DB:get_range(req)
  check_req(req, "get_range")
  local lat, fail = self:_fault("get_range")
  if fail then return nil, self.faults:message(), self.faults.code end
  local t, msg, code = self:_table(req.table)
  if not t then return nil, msg, code end
  local reverse = norm_direction(req.direction)
  if reverse == nil then return invalid("direction must be FORWARD or BACKWARD, got " .. tostring(req.direction)) end
  local sv, m, c = self:_pk_values(t, req.start or req.inclusive_start_primary_key, true)
  if not sv then return nil, "start: " .. m, c end
  local ev, m1, c1 = self:_pk_values(t, req.stop or req.exclusive_end_primary_key, true)
  if not ev then return nil, "stop: " .. m1, c1 end
  local want, m2, c2 = parse_get_columns(t, req.columns)
  if m2 then return nil, m2, c2 end
  local limit = req.limit
  if limit ~= nil then
    if type(limit) ~= "number" or limit ~= math.floor(limit) or limit < 1 then
      return invalid("limit must be a positive integer")
    end
    if limit > L.range_rows then limit = L.range_rows end
  else
    limit = L.range_rows
  end
  local S, E = bound_key(sv), bound_key(ev)
  local lo, hi
  if reverse then
    if kv.cmp(S, E) <= 0 then return invalid("Begin key must be greater than end key in BACKWARD") end
    lo, hi = E .. "\0", S .. "\0" -- (E, S] as [lo, hi): successors in byte order
  else
    if kv.cmp(S, E) >= 0 then return invalid("Begin key must be less than end key in FORWARD") end
    lo, hi = S, E
  end
  local h, parts = self.h, t.parts
  local cur, err, ecode = h:scan(t.kv, lo, hi, reverse, limit + 1)
  if not cur then return dberr(err, ecode) end
  local rows, n, bytes, nextk = {}, 0, 0, nil
  while nextk == nil do
    -- fetch fails as nil, msg, code: test the first value, not the count
    local ks, vs, got = cur:fetch(n < 64 and 64 or 256, 1048576)
    if ks == nil then cur:close(); return dberr(vs, got) end
    if got == 0 then break end
    for i = 1, got do
      local k = ks[i]
      if n == limit then nextk = k; break end
      local row, size = row_out(t, k, vs[i], want)
      if not row then cur:close(); return nil, size, "OTSInternalServerError" end
      if n > 0 and bytes + size > L.range_bytes then nextk = k; break end
      n = n + 1
      rows[n] = row
      bytes = bytes + size
      if parts then parts:read(k) end
    end
  end
  cur:close()
  local nextpk = nextk and pk_out(t, nextk)
  if nextk and not nextpk then return damaged(select(2, key_vals(t, nextk))) end
  return { rows = rows, next_start_primary_key = nextpk,
           consumed = consumed(ceil_cu(bytes), 0), latency = lat }
end

----------------------------------------------------------------------
-- batches

--- db:batch_get_row{ tables = {{ table, primary_keys = {pk, ...}, columns }} }
-- -> { tables = {{ table, rows = {{ ok = true, row = row|nil } | { ok = false,
-- code, message }} }} }: at most 100 rows in all.
function DB:batch_get_row(req)
  check_req(req, "batch_get_row")
  local lat, fail = self:_fault("batch_get_row")
  if fail then return nil, self.faults:message(), self.faults.code end
  if type(req.tables) ~= "table" or #req.tables == 0 then return invalid("tables must be a non-empty list") end
  local total, plans = 0, {}
  for i, spec in ipairs(req.tables) do
    if type(spec) ~= "table" then return invalid("tables[" .. i .. "] must be a table") end
    local t, msg, code = self:_table(spec.table)
    if not t then return nil, msg, code end
    local want, m2, c2 = parse_get_columns(t, spec.columns)
    if m2 then return nil, m2, c2 end
    if type(spec.primary_keys) ~= "table" then return invalid("tables[" .. i .. "].primary_keys must be a list") end
    local keys, seen = {}, {}
    for j, pk in ipairs(spec.primary_keys) do
      local vals, m, c = self:_pk_values(t, pk, false)
      if not vals then return nil, ("tables[%d].primary_keys[%d]: %s"):format(i, j, m), c end
      local k = pack(vals)
      if seen[k] then return invalid("duplicated primary key in tables[" .. i .. "]") end
      seen[k] = true
      keys[j] = k
    end
    total = total + #keys
    plans[i] = { t = t, keys = keys, want = want }
  end
  if total > L.batch_get_rows then return invalid("Rows count exceeds the upper limit: " .. L.batch_get_rows) end
  local out = {}
  for i, p in ipairs(plans) do
    local rows = {}
    for j, k in ipairs(p.keys) do
      if self.faults and self.faults:row_fails("batch_get_row") then
        rows[j] = { ok = false, code = self.faults.code, message = self.faults:message() }
      else
        local blob, err, ecode = self.h:get(p.t.kv, k)
        if blob == nil and err then
          local _, m, c = dberr(err, ecode)
          if c == "OTSServerBusy" then return nil, m, c end
          rows[j] = { ok = false, code = c, message = m }
        else
          if p.t.parts then p.t.parts:read(k) end
          local row, m = nil, nil
          if blob then row, m = row_out(p.t, k, blob, p.want) end
          if blob and not row then rows[j] = { ok = false, code = "OTSInternalServerError", message = m }
          else rows[j] = { ok = true, row = row } end
        end
      end
    end
    out[i] = { table = p.t.name, rows = rows }
  end
  return { tables = out, latency = lat }
end

--- db:batch_write_row{ tables = {{ table, rows = {{ type = "PUT" | "UPDATE"
-- | "DELETE", primary_key, columns | update, condition }, ...} }} }
-- -> { tables = {{ table, rows = {{ ok = true } | { ok = false, code,
-- message }} }}, failed = n }. At most 200 rows and 4 MB in all; a row
-- may fail alone (its data unchanged) while the others are written; a
-- request-level error writes nothing.
function DB:batch_write_row(req)
  check_req(req, "batch_write_row")
  local lat, fail = self:_fault("batch_write_row")
  local f = self.faults
  if fail and not f.applied then return nil, f:message(), f.code end
  if type(req.tables) ~= "table" or #req.tables == 0 then return invalid("tables must be a non-empty list") end
  local total, size, specs = 0, 0, {}
  for i, spec in ipairs(req.tables) do
    if type(spec) ~= "table" then return invalid("tables[" .. i .. "] must be a table") end
    local t, msg, code = self:_table(spec.table)
    if not t then return nil, msg, code end
    if type(spec.rows) ~= "table" then return invalid("tables[" .. i .. "].rows must be a list") end
    total = total + #spec.rows
    if total > L.batch_write_rows then return invalid("Rows count exceeds the upper limit: " .. L.batch_write_rows) end
    local plans, seen = {}, {}
    for j, row in ipairs(spec.rows) do
      if type(row) ~= "table" then return invalid(("tables[%d].rows[%d] must be a table"):format(i, j)) end
      local mk = PLAN[row.type]
      local plan, m, c
      if not mk then
        m, c = "row type must be PUT, UPDATE or DELETE, got " .. tostring(row.type), "OTSParameterInvalid"
      else
        plan, m, c = mk(self, t, row)
      end
      if plan then
        if seen[plan.key] then return invalid(("tables[%d]: the same row appears twice (rows %d and %d)"):format(i, seen[plan.key], j)) end
        seen[plan.key] = j
        size = size + plan.size
      end
      plans[j] = plan or { err = m, code = c }
    end
    specs[i] = { t = t, plans = plans }
  end
  if size > L.request_bytes then return nil, "request is " .. size .. " bytes, larger than 4 MB", "OTSRequestBodyTooLarge" end
  -- the whole batch is one transaction (DB:_txn): a request-level error
  -- rolls every row back
  local out, accts, failed = {}, {}, 0
  for i, s in ipairs(specs) do
    local rows = {}
    for j, plan in ipairs(s.plans) do
      local r
      if plan.err then
        r = { ok = false, code = plan.code, message = plan.err }
      elseif f and f:row_fails("batch_write_row") then
        r = { ok = false, code = f.code, message = f:message() }
      else
        local acct, m, c = self:_apply(s.t, plan)
        if acct then
          r = { ok = true, consumed = consumed(0, ceil_cu(plan.size)) }
          if plan.ret == "RT_PK" then r.row = { primary_key = pk_out(s.t, plan.key) } end
          accts[#accts + 1] = { s.t, acct }
        elseif c == "OTSInternalServerError" or c == "OTSServerBusy" or c == "OTSObjectNotExist" then
          return nil, m, c
        else
          r = { ok = false, code = c, message = m }
        end
      end
      if not r.ok then failed = failed + 1 end
      rows[j] = r
    end
    out[i] = { table = s.t.name, rows = rows }
  end
  -- count every row first, then split: a split rescans the store, which
  -- already holds the whole batch
  local touched = {}
  for _, a in ipairs(accts) do
    self:_account(a[1], a[2], true)
    touched[a[1]] = true
  end
  for t in pairs(touched) do if t.parts then t.parts:settle() end end
  if fail then return nil, f:message(), f.code, "commit" end
  return { tables = out, failed = failed, latency = lat }
end

----------------------------------------------------------------------
-- partitions and faults

--- db:partitions(table) -> list of { id, lo, hi, rows, bytes, reads,
-- writes, window_reads, window_writes } in key order (lo/hi: partition-key
-- values, nil for INF_MIN / INF_MAX) | nil, msg, code
function DB:partitions(name)
  local t, msg, code = self:_table(name)
  if not t then return nil, msg, code end
  if not t.parts then return nil, "partition accounting is off (store.open{ partitions = false })", "OTSParameterInvalid" end
  return t.parts:list()
end

--- db:hotspots(table) -> { writes, reads, hottest (partition id), share
-- (of writes on it), skew (its writes / mean per partition), partitions,
-- splits, windows = {{ start, writes, reads, partitions, hottest, share }} }
function DB:hotspots(name)
  local t, msg, code = self:_table(name)
  if not t then return nil, msg, code end
  if not t.parts then return nil, "partition accounting is off (store.open{ partitions = false })", "OTSParameterInvalid" end
  return t.parts:hotspots()
end

--- db:inject(cfg | nil): turns fault injection on with cfg (see
-- otskit.store.faults) or off. Raises on a bad config.
function DB:inject(cfg)
  if cfg == nil or cfg == false then self.faults = nil; return end
  self.faults = faults.new(cfg)
end

--- db:fault_stats() -> { calls, failed, rows_failed, latency } | nil
function DB:fault_stats()
  return self.faults and self.faults.stats or nil
end


-- Every operation that touches the file is one transaction (DB:_txn):
-- writes take the write lock first, reads see one snapshot, and both see
-- tables other connections created or dropped.
for name, write in pairs({ create_table = true, delete_table = true, put_row = true, update_row = true,
    delete_row = true, batch_write_row = true, get_row = false, get_range = false,
    batch_get_row = false, describe_table = false, list_table = false }) do
  local op = DB[name]
  DB[name] = function(self, ...)
    if self.h == nil then error("otskit.store: db is closed", 2) end
    return self:_txn(write, op, ...)
  end
end

return store
