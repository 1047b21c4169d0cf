--- otskit.store.splits -- ComputeSplitPointsBySize: where to cut a table
-- into pieces of about split_size for parallel scans.
local base = require "otskit.store.base"
local core = require "otskit.core"
local keycodec = require "otskit.key"
local key_cell = require("otskit.values").key_cell
local txn = require "otskit.store.txn"
local dberr, damaged = txn.dberr, txn.damaged
local DB = base.DB
local invalid, check_req, consumed = base.invalid, base.check_req, base.consumed

local splits = {}

local FIELDS = base.set{ "table", "split_size", "split_size_unit_in_byte" }
local UNIT = 100 * 1048576 -- the service's split_size unit: 100 MB

local function positive_int(v) return type(v) == "number" and v >= 1 and v == math.floor(v) and v < 2^53 end

-- the partition-key value of an encoded one-value tuple, as describe_table
-- gives it (LuaJIT: an int64 beyond 2^53 as decimal text)
local function pk1_value(enc)
  local v = keycodec.unpack(enc)
  v = type(v) == "table" and v[1]
  if type(v) == "table" then v = tostring(v) end
  return v
end

-- The encoded partition-key values where the table is cut: every
-- partition bound, and inside a partition the first new partition-key
-- value after each run of at least `limit` stored bytes (key + row). One
-- value's rows are never cut apart (a point is a partition-key value).
-- Scans the table only when some partition may hold `limit` bytes.
local function cut_points(db, t, limit)
  local bounds = t.bounds
  if t.parts then
    local big = false
    for _, p in ipairs(t.parts.parts) do if p.bytes >= limit then big = true end end
    if not big then return bounds end
  end
  local out, nb, acc, last = {}, 1, 0, nil
  local cur, err, code = db.h:scan(t.kv)
  if not cur then return dberr(err, code) end
  while true do
    local ks, vs, n = cur:fetch(512, 1048576)
    if ks == nil then cur:close(); return dberr(vs, n) end
    if n == 0 then break end
    for i = 1, n do
      local k = ks[i]
      while bounds[nb] and core.kv.cmp(k, bounds[nb]) >= 0 do -- a partition starts: a point
        out[#out + 1] = bounds[nb]
        nb, acc, last = nb + 1, 0, bounds[nb]
      end
      if last == nil or k:sub(1, #last) ~= last then -- a new partition-key value
        local v, m = core.key.first(k)
        if not v then cur:close(); return damaged("a stored key of table " .. t.name .. " is not a tuple: " .. m) end
        if acc >= limit and v ~= out[#out] then
          out[#out + 1] = v
          acc = 0
        end
        last = v
      end
      acc = acc + #k + #vs[i]
    end
  end
  cur:close()
  for j = nb, #bounds do out[#out + 1] = bounds[j] end
  return out
end

--- db:compute_split_points_by_size{ table, split_size,
-- split_size_unit_in_byte } -> { schema = {{name, type}, ...},
-- split_points = {{{pk1, value [, type]}}, ...}, locations = {{ location, repeat }},
-- consumed } | nil, msg, code. split_size (positive integer) counts units
-- of split_size_unit_in_byte bytes (default 100 MB). A split point is a
-- partition-key value alone (the service omits the trailing INF_MIN
-- columns): every partition bound of the table, plus, inside a partition,
-- the next partition-key value after each split_size of stored bytes, so
-- the pieces are about split_size or smaller, and one partition-key
-- value's rows are never cut apart. One location holds every piece.
function DB:compute_split_points_by_size(req)
  check_req(req, "compute_split_points_by_size")
  local okf, mf, cf = base.known(req, FIELDS, "compute_split_points_by_size")
  if not okf then return nil, mf, cf end
  local t, msg, code = self:_table(req.table)
  if not t then return nil, msg, code end
  local size, unit = req.split_size, req.split_size_unit_in_byte
  if not positive_int(size) then return invalid("split_size must be a positive integer, got " .. tostring(size)) end
  if unit ~= nil and not positive_int(unit) then
    return invalid("split_size_unit_in_byte must be a positive integer, got " .. tostring(unit))
  end
  local points, m2, c2 = cut_points(self, t, size * (unit or UNIT))
  if not points then return nil, m2, c2 end
  local schema, out, name = {}, {}, t.pk[1].name
  for i, c in ipairs(t.pk) do schema[i] = { c.name, c.type } end
  local ty = t.pk[1].type
  for i, enc in ipairs(points) do out[i] = { key_cell(name, ty, pk1_value(enc)) } end   -- tagged as keys are read
  return { schema = schema, split_points = out, locations = { { location = "otskit-local", ["repeat"] = #out + 1 } },
           consumed = consumed(1, 0) }
end

splits.cut_points = cut_points
return splits
