--- otskit.store -- an embedded store with Tablestore semantics on SQLite.
--
-- The operations and vocabulary of the official Tablestore SDKs, in Lua
-- form: create_table, put_row, get_row, update_row, delete_row,
-- batch_write_row, batch_get_row, get_range, compute_split_points_by_size.
-- Row keys are the order-preserving tuple encoding of the typed primary
-- key (otskit.key), so SQLite's byte order is Tablestore's row order. Every operation
-- returns a response table, or nil, message, code with Tablestore's error
-- code; a failed operation, condition or whole batch leaves the data as
-- it was. Partitions (otskit.store.partitions) and fault injection
-- (otskit.store.faults) sit on top.
local core = require "otskit.core"
local clock = require "otskit.clock"
local values = require "otskit.store.values"
local faults = require "otskit.store.faults"
local base = require "otskit.store.base"
local tables = require "otskit.store.tables"
require "otskit.store.schema"
require "otskit.store.write"
require "otskit.store.read"
require "otskit.store.stream"
require "otskit.store.batch"
require "otskit.store.splits"
require "otskit.store.search"
require "otskit.store.sql"
local localtxn = require "otskit.store.localtxn"

local kv = core.kv
local DB = base.DB
local txn = require "otskit.store.txn"
local part_opts = tables.part_opts

local store = {}

--- The open ends of a key column in get_range bounds.
store.INF_MIN, store.INF_MAX = base.INF_MIN, base.INF_MAX

--- The value to write in an AUTO_INCREMENT key column: the store fills it in.
store.AUTO_INCREMENT = base.AUTO_INCREMENT

--- Typed values: store.binary(s), store.integer(v), store.double(v).
store.binary, store.integer, store.double = values.binary, values.integer, values.double

--- The service's documented limits, enforced with its error codes.
store.LIMITS = base.LIMITS

--- store.open{ path = ":memory:" | "file.db", clock = fn, partitions = true,
-- partition = { split_rows, split_bytes, split_load, window, history },
-- page = { rows = 5000, bytes = 4194304 }, busy_timeout = 5000,
-- integrity_check = false } -> db | nil, msg, code. clock() -> seconds
-- since the epoch (default: the system clock, sub-millisecond) drives cell
-- timestamps, time_to_live and the partition windows; injected latency is
-- added to it (db:now()). partitions = false turns the partition
-- accounting off. page: what one get_range page may scan (the service's
-- 5000 rows / 4 MB); lower it to exercise pagers on small data.
-- busy_timeout (ms): how long an operation waits for another connection's
-- lock before it answers OTSServerBusy (nothing applied). integrity_check:
-- run db:check() (SQLite's integrity check, every row's checksum) first.
-- Several processes may open one file: every operation is one transaction.
-- path is a file name, never an SQLite URI: a path that is not a string
-- raises; "", one holding a NUL byte, or one starting with "file:" (any
-- case; name such a file "./file:...") is nil, msg, OTSParameterInvalid.
local OPEN_OPTS = { path = "string", clock = "function", partitions = "boolean", partition = "table",
  page = "table", busy_timeout = "number", integrity_check = "boolean" }

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
  for _, k in ipairs({ "rows", "bytes" }) do
    local v = page[k]
    if v ~= nil and (type(v) ~= "number" or v < 1 or v ~= math.floor(v)) then
      error("otskit.store: page." .. k .. " must be a positive integer", 2)
    end
  end
  local popts = part_opts(opts.partition)
  -- a path is a file name or ":memory:", never an SQLite URI: kv.open
  -- refuses "file:..." names, NUL bytes and "" (code KVBadPath)
  local h, msg, code = kv.open(opts.path or ":memory:", busy)
  if not h and code == "KVBadPath" then return nil, msg, "OTSParameterInvalid" end
  if not h then return txn.dberr(msg, code) end
  local db = setmetatable({ h = h, tables = {}, clock = opts.clock or clock.now, offset = 0,
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
    if ok then ok, err, ecode = h:create("ltxn") end
    if ok then ok, err, ecode = h:commit() end
    if not ok then h:rollback() end
  end
  if not ok then return failed(txn.dberr(err, ecode)) end
  if opts.integrity_check then
    ok, err, ecode = db:check()
    if not ok then return failed(nil, err, ecode) end
  end
  -- reads every table definition (and sizes partitions), checked
  ok, err, ecode = db:_txn(false, function() return true end)
  if not ok then return failed(nil, err, ecode) end
  return db
end

--- db:close(): closes the SQLite database; idempotent.
function DB:close()
  -- (a search's doc values: their memory is freed now, not at a collection)
  if self._dv then require("otskit.store.search.docvalues").drop(self) end
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
  if t.base then return nil, "index table '" .. t.name .. "' keeps no partition accounting", "OTSParameterInvalid" end
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

localtxn.before_wrap()
localtxn.capture()
txn.wrap()
localtxn.after_wrap()

return store
