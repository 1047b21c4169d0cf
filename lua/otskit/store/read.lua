--- otskit.store.read -- single-row and range reads: versions, time
-- ranges, time_to_live, column ranges, filters and column pagination.
local base = require "otskit.store.base"
local keycodec = require "otskit.key"
local values = require "otskit.store.values"
local schema = require "otskit.store.schema"
local condition = require "otskit.store.condition"
local core = require "otskit.core"
local kv = core.kv
local pack, unpack = keycodec.pack, keycodec.unpack
local bound_key, pk_out = schema.bound_key, schema.pk_out
local DB, L = base.DB, base.LIMITS
local invalid, check_req, ceil_cu, consumed = base.invalid, base.check_req, base.ceil_cu, base.consumed
local decode, key_cell = values.decode, values.key_cell
local txn = require "otskit.store.txn"
local dberr, damaged, key_vals = txn.dberr, txn.damaged, txn.key_vals

local read = {}

local GET_ROW_FIELDS = base.set{ "table", "primary_key" }
local GET_RANGE_FIELDS = base.set{ "table", "start", "stop", "inclusive_start_primary_key",
  "exclusive_end_primary_key", "direction", "limit" }
for _, k in ipairs(schema.READ_OPTIONS) do GET_ROW_FIELDS[k], GET_RANGE_FIELDS[k] = true, true end
read.READ_FIELDS = schema.READ_OPTIONS
read.GET_ROW_FIELDS = GET_ROW_FIELDS

-- row.cells on a plain read (no max_versions, time_range, column range,
-- all-version filter or pagination), built on first use: most readers
-- only want row.columns, and building a table per cell, or keeping each
-- row's stored bytes for later, slows every read by a fifth or more. The
-- row's metatable (one per read) holds the db, the table and the read's
-- options; the cells come from the row as stored when first asked for.
-- Reads that name versions get their cells with the read.
local function lazy_cells(row, key)
  if key ~= "cells" then return nil end
  local mt = getmetatable(row)
  local db, t, o = mt.db, mt.t, mt.o
  local vals = {}
  for i, c in ipairs(row.primary_key) do vals[i] = c[2] end
  if t.pk[1] and #vals == t.npk then
    for i, c in ipairs(t.pk) do
      if c.type == "INTEGER" and type(vals[i]) == "string" then vals[i] = keycodec.int(vals[i]) end
    end
  end
  if db.h == nil then error("otskit.store: row.cells of a read without max_versions is read from the db, which is closed", 2) end
  local cells = {}
  local blob = db.h:get(t.kv, pack(vals))
  if blob then
    local _, _, _, _, c = decode(blob, o.want, false, o.lo, o.hi, o.maxv, true)
    cells = c or {}
  end
  rawset(row, "cells", cells)
  return cells
end

local function pk_of(t, k)
  local vals, why = key_vals(t, k)
  if not vals then return nil, why end
  local pk, pkc, size = {}, t.pk, 0
  for i = 1, #pkc do
    local c, v = pkc[i], vals[i]
    if c.type == "INTEGER" then
      if type(v) == "table" then v = tostring(v) end -- LuaJIT int64 beyond 2^53: decimal text
      size = size + #c.name + 8
    else
      size = size + #c.name + #v
    end
    -- a BINARY value, or a LuaJIT int64 as decimal text, is tagged with
    -- its type, as otskit.wire decodes it (so store and client rows are alike)
    pk[i] = key_cell(c.name, c.type, v)
  end
  return pk, size
end

-- cells -> the newest value and type of each column (cells: newest first)
local function columns_of(cells)
  local cols, types = {}, {}
  for i = #cells, 1, -1 do
    local c = cells[i]
    cols[c[1]], types[c[1]] = c[2], c[4]
  end
  return cols, types
end

-- the options that need every cell: column range, all-version filters,
-- column pagination -> cols, cells, or false when the filter drops the row
local function full_path(o, cols, types, cells)
  local sc, ec = o.start_col, o.end_col
  if sc or ec then
    local keep, n = {}, 0
    for _, c in ipairs(cells) do
      local name = c[1]
      if (sc == nil or kv.cmp(name, sc) >= 0) and (ec == nil or kv.cmp(name, ec) < 0) then
        n = n + 1
        keep[n] = c
      end
    end
    cells = keep
    cols, types = columns_of(cells)
  end
  if o.filter and not condition.eval(o.filter, cols, types, cells) then return false end
  if o.page_lim then
    local keep, n, seen, prev = {}, 0, 0, nil
    for _, c in ipairs(cells) do
      if c[1] ~= prev then seen, prev = seen + 1, c[1] end
      if seen > o.page_off and seen <= o.page_off + o.page_lim then
        n = n + 1
        keep[n] = c
      end
    end
    cells = keep
    cols = columns_of(cells)
  end
  return cols, cells
end

-- One stored row as read with options o -> row, size | false (not
-- returned), size | nil, msg. size: what the row cost to read (its key
-- and selected cells), returned or not. A row is returned when any cell
-- is selected, or when it has no cells at all and the read asked for no
-- columns or time range; then the filter decides.
local function row_out(t, k, blob, o)
  local simple = o.simple
  local cols, types, size, kept, cells = decode(blob, o.want, o.filter ~= nil, o.lo, o.hi, o.maxv, o.cells)
  if not cols then return nil, "the store file is damaged: a stored row: " .. tostring(types) end
  local pk, pksize = pk_of(t, k)
  if not pk then return nil, "the store file is damaged: " .. pksize end
  size = size + pksize
  if kept == 0 and (#blob > 0 or not o.plain) then return false, size end
  local row
  if simple then
    if o.filter and not condition.eval(o.filter, cols, types) then return false, size end
    if cells then
      row = { primary_key = pk, columns = cols, cells = cells }
    else
      row = setmetatable({ primary_key = pk, columns = cols }, o.mt)
    end
  else
    cols, cells = full_path(o, cols, types, cells)
    if not cols or (#cells == 0 and kept > 0) then return false, size end
    row = { primary_key = pk, columns = cols, cells = cells }
  end
  return row, size
end

-- what every read does first: the injected fault, the known fields, the
-- table -> latency, table | nil, msg, code
function DB:_read_start(req, op, fields)
  local lat, fail = self:_fault(op)
  if fail then return nil, self.faults:message(), self.faults.code end
  local okf, mf, cf = base.known(req, fields, op)
  if not okf then return nil, mf, cf end
  local t, msg, code = self:_table(req.table)
  if not t then return nil, msg, code end
  return lat, t
end

--- db:get_row{ table, primary_key, columns, max_versions, time_range,
-- filter, start_column, end_column } -> { row = { primary_key, columns,
-- cells } or nil (missing, or filtered out), consumed }
function DB:get_row(req)
  check_req(req, "get_row")
  local lat, t, code = self:_read_start(req, "get_row", GET_ROW_FIELDS)
  if not lat then return nil, t, code end
  local vals, m, c = self:_pk_values(t, req.primary_key)
  if not vals then return nil, m, c end
  local o, m2, c2 = self:_read_setup(t, req)
  if not o then return nil, m2, c2 end
  local k = pack(vals)
  local blob, err, ecode = self.h:get(t.kv, k)
  if blob == nil and err then return dberr(err, ecode) end
  if t.parts then t.parts:read(k) end
  local row, size
  if blob then
    row, size = row_out(t, k, blob, o)
    if row == nil then return nil, size, "OTSInternalServerError" end
  end
  return { row = row or nil, consumed = consumed(ceil_cu(size or 0), 0), latency = lat }
end

-- the read options of req, with what row_out needs: o.cells (decode the
-- cells with the read) and o.mt (the metatable of lazily built cells)
function DB:_read_setup(t, req)
  local o, m, c = self:_read_opts(t, req)
  if not o then return nil, m, c end
  o.cells = not o.simple or req.max_versions ~= nil or req.time_range ~= nil
  if not o.cells then o.mt = { db = self, t = t, o = o, __index = lazy_cells } end
  return o
end

local function norm_direction(d)
  if d == nil or d == "FORWARD" then return false end
  if d == "BACKWARD" then return true end
  return nil
end

-- what a range read checks first -> { lat, t, o, lo, hi (the scan's
-- [lo, hi) in key bytes), reverse, limit } | nil, msg, code
function DB:_range_setup(req)
  local lat, t, code = self:_read_start(req, "get_range", GET_RANGE_FIELDS)
  if not lat then return nil, t, code end
  local reverse = norm_direction(req.direction)
  if reverse == nil then return invalid("direction must be FORWARD or BACKWARD, got " .. tostring(req.direction)) end
  local sv, m, c = self:_pk_values(t, req.start or req.inclusive_start_primary_key, "inf")
  if not sv then return nil, "start: " .. m, c end
  local ev, m1, c1 = self:_pk_values(t, req.stop or req.exclusive_end_primary_key, "inf")
  if not ev then return nil, "stop: " .. m1, c1 end
  local o, m2, c2 = self:_read_setup(t, req)
  if not o then return nil, m2, c2 end
  local limit = req.limit
  if limit ~= nil then
    if type(limit) ~= "number" or limit ~= math.floor(limit) or limit < 1 then
      return invalid("The limit must be greater than 0.")
    end
    -- an int32 on the wire; a page returns at most range_rows rows (with
    -- the next key to continue from), whatever the limit
    if limit > 2147483647 then return invalid("limit must be an integer 1..2147483647, got " .. tostring(limit)) end
    if limit > L.range_rows then limit = L.range_rows end
  else
    limit = L.range_rows
  end
  local S, E = bound_key(sv), bound_key(ev)
  local lo, hi
  if reverse then
    if kv.cmp(S, E) <= 0 then return invalid("Begin key must more than end key in BACKWARD") end
    lo, hi = E .. "\0", S .. "\0" -- (E, S] as [lo, hi): successors in byte order
  else
    if kv.cmp(S, E) >= 0 then return invalid("Begin key must less than end key in FORWARD") end
    lo, hi = S, E
  end
  return { lat = lat, t = t, o = o, lo = lo, hi = hi, reverse = reverse, limit = limit }
end

--- db:get_range{ table, start, stop (also inclusive_start_primary_key,
-- exclusive_end_primary_key), direction = "FORWARD" | "BACKWARD", limit,
-- columns, max_versions, time_range, filter, start_column, end_column }
-- -> { rows, next_start_primary_key, consumed, scanned (rows read: the
-- rows returned and those a filter dropped) }
-- start is inclusive, stop exclusive; columns may be INF_MIN / INF_MAX.
-- A page stops at limit rows returned, or when it has scanned 5000 rows
-- or 4 MB (db page option): rows a filter drops still count, so a page
-- may hold 0 rows and a next key. next_start_primary_key is the key to
-- continue from, nil when the range is exhausted.
function DB:get_range(req)
  check_req(req, "get_range")
  local r, m, c = self:_range_setup(req)
  if not r then return nil, m, c end
  local t, o, lo, hi, reverse, limit = r.t, r.o, r.lo, r.hi, r.reverse, r.limit
  local h, parts = self.h, t.parts
  local page_rows, page_bytes = self.page_rows, self.page_bytes
  local cur, err, ecode = h:scan(t.kv, lo, hi, reverse, page_rows + 1)
  if not cur then return dberr(err, ecode) end
  local rows, n, scanned, bytes, nextk = {}, 0, 0, 0, nil
  while nextk == nil do
    -- small first batches: a small limit reads few rows when none are dropped
    local want = limit - n + 1
    local batch = scanned < 64 and 64 or 256
    -- fetch fails as nil, msg, code: test the first value, not the count
    local ks, vs, got = cur:fetch(want < batch and want or batch, 1048576)
    if ks == nil then cur:close(); return dberr(vs, got) end
    if got == 0 then break end
    for i = 1, got do
      local k = ks[i]
      if n == limit or scanned == page_rows then nextk = k; break end
      local row, size = row_out(t, k, vs[i], o)
      if row == nil then cur:close(); return nil, size, "OTSInternalServerError" end
      if scanned > 0 and bytes + size > page_bytes then nextk = k; break end
      scanned = scanned + 1
      bytes = bytes + size
      if row then
        n = n + 1
        rows[n] = row
      end
      if parts then parts:read(k) end
    end
  end
  cur:close()
  local nextpk = nextk and pk_out(t, nextk)
  if nextk and not nextpk then return damaged(select(2, key_vals(t, nextk))) end
  return { rows = rows, next_start_primary_key = nextpk, scanned = scanned,
           consumed = consumed(ceil_cu(bytes), 0), latency = r.lat }
end

read.row_out = row_out
return read
