--- otskit.store.stream -- plain reads answered as PlainBuffer bytes, for
-- a server: db:get_row_pb and db:get_range_pb read the stored rows in C
-- (otskit.core.kv's get_pb / range_pb) and write the PlainBuffer rows a
-- GetRow / GetRange response carries straight into one buffer, without a
-- Lua table per row or per cell.
--
-- The bytes are exactly those otskit.wire encodes from what db:get_row /
-- db:get_range return for the same request (spec/store_stream_spec.lua
-- checks it byte for byte over random tables, rows, versions and types);
-- consumed, next_start_primary_key, partition accounting, injected faults
-- and errors are the same too. A read these methods do not stream -- a
-- filter, a column range (start_column / end_column), a transaction id,
-- an index read while index changes are pending -- returns false: call
-- db:get_row / db:get_range instead.
local base = require "otskit.store.base"
local keycodec = require "otskit.key"
local schema = require "otskit.store.schema"
local txn = require "otskit.store.txn"
local read = require "otskit.store.read"

local DB = base.DB
local check_req, ceil_cu, consumed = base.check_req, base.ceil_cu, base.consumed
local pack, pk_out = keycodec.pack, schema.pk_out
local dberr, damaged, key_vals = txn.dberr, txn.damaged, txn.key_vals

-- false when the read needs the Lua path (see above)
local function streamable(self, req)
  if type(req) ~= "table" then return true end -- check_req raises
  if req.filter ~= nil or req.start_column ~= nil or req.end_column ~= nil or req.transaction_id ~= nil then
    return false
  end
  if self.index_pending then
    local t = type(req.table) == "string" and self.tables[req.table]
    if t and t.base then return false end
  end
  return true
end

-- the C read spec of options o on table t
local function spec_of(t, o)
  return { pk = t.pk, want = o.want, lo = o.lo, hi = o.hi, maxv = o.maxv, plain = o.plain }
end

-- a kv or damage failure of get_pb / range_pb as the store reports it
local function failed(msg, code)
  if code == "Damaged" then return damaged(msg) end
  return dberr(msg, code)
end

local function get_row_pb(self, req)
  check_req(req, "get_row_pb")
  local lat, t, code = self:_read_start(req, "get_row", read.GET_ROW_FIELDS)
  if not lat then return nil, t, code end
  local vals, m, c = self:_pk_values(t, req.primary_key)
  if not vals then return nil, m, c end
  local o, m2, c2 = self:_read_opts(t, req)
  if not o then return nil, m2, c2 end
  local k = pack(vals)
  local bytes, size, ecode = self.h:get_pb(t.kv, k, spec_of(t, o))
  if bytes == nil then return failed(size, ecode) end
  if t.parts then t.parts:read(k) end
  return { row_pb = bytes or "", consumed = consumed(ceil_cu(size), 0), latency = lat }
end

local function get_range_pb(self, req)
  check_req(req, "get_range_pb")
  local r, m, c = self:_range_setup(req)
  if not r then return nil, m, c end
  local t = r.t
  local parts = t.parts
  -- the partition model counts each scanned key: one count when every key
  -- falls in the single partition and no key sample is kept, else each key
  local each = parts ~= nil and (parts.opts.split_load ~= nil or #parts.los > 0)
  local bytes, n, scanned, size, nextk, first, keys = self.h:range_pb(t.kv, r.lo, r.hi, r.reverse, r.limit,
    self.page_rows, self.page_bytes, spec_of(t, r.o), each)
  if bytes == nil then return failed(n, scanned) end
  if parts and scanned > 0 then
    if each then
      for i = 1, scanned do parts:read(keys[i]) end
    else
      parts:read(first, scanned)
    end
  end
  local nextpk = nextk and pk_out(t, nextk)
  if nextk and not nextpk then return damaged(select(2, key_vals(t, nextk))) end
  return { rows_pb = bytes, row_count = n, next_start_primary_key = nextpk, scanned = scanned,
           consumed = consumed(ceil_cu(size), 0), latency = r.lat }
end

-- one read transaction each, as db:get_row / db:get_range
local function wrap(fn, name)
  return function(self, req)
    if not streamable(self, req) then return false end
    if self.h == nil then error("otskit.store: db is closed", 2) end
    -- no pcall (DB:_txn_open): a raise leaves the read open for db:_recover;
    -- a db failure (a load split's write refused...) is raised: txn.failure
    local res, msg, code = self:_txn_open(false, fn, req)
    if res == nil then return nil, msg, code end
    return res
  end
end

--- db:get_row_pb(req) -> { row_pb, consumed } | false | nil, msg, code:
-- req as db:get_row's; row_pb: the PlainBuffer bytes of the row (header
-- and row) db:get_row's answer encodes to, "" when there is no row (or
-- none selected). false: a read this does not stream (see above).
DB.get_row_pb = wrap(get_row_pb, "get_row_pb")

-- the plan db.h:get_row_answer reads of table t, made once per
-- definition (tables.lua's settle drops it): false for a table whose
-- reads it does not answer -- an index table (its reads wait for pending
-- index changes) or a table whose reads may split it (split_load)
local get_plan = require("otskit.core").kv.get_plan
local function plan_of(t)
  if t.base or (t.parts and t.parts.opts.split_load) then return false end
  return get_plan(t.kv, t.pk, t.maxv, t.ttl_ms)
end

local now_ms, PK_CELL, COLUMNS = base.now_ms, base.LIMITS.pk_cell, base.LIMITS.columns_to_get

--- db:get_row_answer(body) -> answer | false: body is a GetRowRequest
-- (protobuf); answer the GetRowResponse body db:get_row_pb's result
-- encodes to (otskit.wire), made in one C call, the row as of one
-- snapshot (spec/store_get_answer_spec.lua checks it byte for byte).
-- false: a request or a state this does not answer (a field beyond
-- table_name, primary_key, columns_to_get, max_versions and cache_blocks;
-- a key the store would refuse or would take in another type; injected
-- store faults; a table changed by another connection; a transaction
-- open; any db failure; an index table, or one whose reads may split
-- it): decode the request and read it as before.
function DB:get_row_answer(body)
  if self.faults or self._open or self.h == nil or type(body) ~= "string" then return false end
  local tables = self.tables
  local out, k, t = self.h:get_row_answer(body, tables, self.schema, self.gen, now_ms(self), PK_CELL, COLUMNS)
  if out == false and k == "no plan" then
    t._getplan = plan_of(t)
    out, k, t = self.h:get_row_answer(body, tables, self.schema, self.gen, now_ms(self), PK_CELL, COLUMNS)
  end
  if not out then return false end
  if t.parts then t.parts:read(k) end
  return out
end

--- db:get_range_pb(req) -> { rows_pb, row_count, next_start_primary_key,
-- consumed, scanned } | false | nil, msg, code: req as db:get_range's; rows_pb:
-- the PlainBuffer bytes of the page's rows ("" when none), row_count how
-- many. false: a read this does not stream (see above).
DB.get_range_pb = wrap(get_range_pb, "get_range_pb")

return {}
