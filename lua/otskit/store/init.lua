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
local values = require "otskit.store.values"
local faults = require "otskit.store.faults"
local base = require "otskit.store.base"
local tables = require "otskit.store.tables"
local schema = require "otskit.store.schema"
require "otskit.store.write"
require "otskit.store.read"
require "otskit.store.batch"

local kv = core.kv
local DB = base.DB
local part_opts, parse_meta = tables.part_opts, tables.parse_meta
local dberr, damaged, DBFAIL, key_vals = base.dberr, base.damaged, base.DBFAIL, schema.key_vals

local store = {}

--- The open ends of a key column in get_range bounds.
store.INF_MIN, store.INF_MAX = base.INF_MIN, base.INF_MAX

--- The value to write in an AUTO_INCREMENT key column: the store fills it in.
store.AUTO_INCREMENT = base.AUTO_INCREMENT

--- Typed values: store.binary(s), store.integer(v), store.double(v).
store.binary, store.integer, store.double = values.binary, values.integer, values.double

--- The service's limits (REFERENCE §2), enforced with its error codes.
store.LIMITS = base.LIMITS

--- store.open{ path = ":memory:" | "file.db", clock = fn, partitions = true,
-- partition = { split_rows, split_bytes, split_load, window, history },
-- page = { rows = 5000, bytes = 4194304 }, busy_timeout = 5000 (ms),
-- integrity_check = false }
-- -> db | nil, msg, code. clock() -> seconds since the epoch (default: the
-- system clock, sub-millisecond) drives cell timestamps, time_to_live and
-- the partition windows; injected latency is added to it (db:now()).
-- partitions = false turns the partition accounting off. page: what one
-- get_range page may scan (the service's 5000 rows / 4 MB); lower it to
-- exercise pagers on small data.
local OPEN_OPTS = { path = "string", clock = "function", partitions = "boolean", partition = "table",
  busy_timeout = "number", integrity_check = "boolean", page = "table" }

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
  local page = opts.page or {}
  for k, v in pairs(page) do
    if (k ~= "rows" and k ~= "bytes") or type(v) ~= "number" or v < 1 or v ~= math.floor(v) then
      error("otskit.store: open: page takes rows and bytes, positive integers", 2)
    end
  end
  local popts = part_opts(opts.partition)
  local h, msg, code = kv.open(opts.path or ":memory:", busy)
  if not h then return dberr(msg, code) end
  local db = setmetatable({ h = h, tables = {}, clock = opts.clock or core.row.now, offset = 0,
    accounting = opts.partitions ~= false, popts = popts,
    page_rows = page.rows or base.LIMITS.range_rows, page_bytes = page.bytes or base.LIMITS.range_bytes,
    autoinc = {} }, DB)
  local function failed(_, m, c) -- takes a nil, msg, code triple
    h:close()
    return nil, m, c
  end
  local ok, err, ecode = h:begin()
  if ok then
    ok, err, ecode = h:create("meta")
    if ok then ok, err, ecode = h:create("autoinc") end
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
      local pk, bounds, po, to, res = parse_meta(name, text)
      if not pk then return damaged(bounds) end
      local has, e2, c2 = h:has("t_" .. name)
      if has == nil then return dberr(e2, c2) end
      if not has then return damaged(("table %s has metadata but no data table"):format(name)) end
      seen[name] = true
      local old = self.tables[name]
      if not (old and old.meta == text) then
        local ok, r = pcall(self._attach, self, name, pk, bounds, part_opts(nil, po), to, res)
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
    delete_row = true, batch_write_row = true, update_table = true, get_row = false, get_range = false,
    batch_get_row = false, describe_table = false, list_table = false }) do
  local op = DB[name]
  DB[name] = function(self, ...)
    if self.h == nil then error("otskit.store: db is closed", 2) end
    return self:_txn(write, op, ...)
  end
end

return store
