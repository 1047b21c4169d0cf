--- otskit.store.read -- single-row and range reads.
local base = require "otskit.store.base"
local keycodec = require "otskit.key"
local values = require "otskit.store.values"
local schema = require "otskit.store.schema"
local core = require "otskit.core"
local kv = core.kv
local pack, unpack = keycodec.pack, keycodec.unpack
local bound_key, pk_out, parse_get_columns = schema.bound_key, schema.pk_out, schema.parse_get_columns
local DB, L = base.DB, base.LIMITS
local invalid, check_req, valid_name, ceil_cu, consumed =
  base.invalid, base.check_req, base.valid_name, base.ceil_cu, base.consumed

local read = {}

local function row_out(t, k, blob, want)
  local cols, err, size = values.decode(blob, want, false)
  if not cols then return nil, "stored row is corrupt: " .. err end
  local vals = unpack(k)
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
  local blob, err = self.h:get(t.kv, k)
  if blob == nil and err then return nil, err, "OTSInternalServerError" end
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
  local cur, err = h:scan(t.kv, lo, hi, reverse, limit + 1)
  if not cur then return nil, err, "OTSInternalServerError" end
  local rows, n, bytes, nextk = {}, 0, 0, nil
  while nextk == nil do
    local ks, vs, got = cur:fetch(n < 64 and 64 or 256, 1048576)
    if got == nil then cur:close(); return nil, ks, "OTSInternalServerError" end
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
  return { rows = rows, next_start_primary_key = nextk and pk_out(t, nextk) or nil,
           consumed = consumed(ceil_cu(bytes), 0), latency = lat }
end

read.row_out = row_out
return read
