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
require "otskit.store.schema"
require "otskit.store.write"
require "otskit.store.read"
require "otskit.store.batch"

local kv = core.kv
local DB = base.DB
local part_opts, unhex = tables.part_opts, tables.unhex

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
-- partition = { split_rows, split_bytes, split_load, window, history } }
-- page = { rows = 5000, bytes = 4194304 } }
-- -> db | nil, msg, code. clock() -> seconds since the epoch (default: the
-- system clock, sub-millisecond) drives cell timestamps, time_to_live and
-- the partition windows; injected latency is added to it (db:now()).
-- partitions = false turns the partition accounting off. page: what one
-- get_range page may scan (the service's 5000 rows / 4 MB); lower it to
-- exercise pagers on small data.
function store.open(opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("otskit.store: open takes an options table", 2) end
  if opts.clock ~= nil and type(opts.clock) ~= "function" then error("otskit.store: clock must be a function", 2) end
  local h, msg, code = kv.open(opts.path or ":memory:")
  if not h then return nil, msg, code end
  local page = opts.page or {}
  if type(page) ~= "table" then error("otskit.store: page must be a table { rows =, bytes = }", 2) end
  for _, k in ipairs({ "rows", "bytes" }) do
    local v = page[k]
    if v ~= nil and (type(v) ~= "number" or v < 1 or v ~= math.floor(v)) then
      error("otskit.store: page." .. k .. " must be a positive integer", 2)
    end
  end
  local db = setmetatable({ h = h, tables = {}, clock = opts.clock or kv.now, offset = 0,
    accounting = opts.partitions ~= false, popts = part_opts(opts.partition),
    page_rows = page.rows or base.LIMITS.range_rows, page_bytes = page.bytes or base.LIMITS.range_bytes,
    autoinc = {} }, DB)
  -- Another connection may hold the file (or be recovering its WAL) as we
  -- open: "database is locked" is worth retrying, so it says OTSServerBusy.
  local function failed(err)
    h:close()
    local busy = tostring(err):find("locked", 1, true) or tostring(err):find("busy", 1, true)
    return nil, tostring(err), busy and "OTSServerBusy" or "OTSInternalServerError"
  end
  local ok, err = h:create("meta")
  if ok then ok, err = h:create("autoinc") end
  if not ok then return failed(err) end
  local cur, serr = h:scan("meta")
  if not cur then return failed(serr) end
  for name, text in cur.next, cur do
    local pk, bounds, po, to, res, auto = {}, {}, {}, {}, {}, {}
    for line in text:gmatch("[^\n]+") do
      local a, b, c = line:match("^(%S+) (%S+) ?(%S*)$")
      if a == "pk" then pk[#pk + 1] = { name = b, type = c }
      elseif a == "bound" then bounds[#bounds + 1] = unhex(b)
      elseif a == "opt" then po[b] = tonumber(c)
      elseif a == "tab" then to[b] = tonumber(c)
      elseif a == "res" then res[b] = tonumber(c)
      elseif a == "auto" then auto[b] = true end
    end
    for _, col in ipairs(pk) do col.auto = auto[col.name] end
    db:_attach(name, pk, bounds, part_opts(nil, po), to, res)
  end
  return db
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

return store
