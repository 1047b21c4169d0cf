--- otskit.store.tables -- table metadata: create, delete, list, describe.
local base = require "otskit.store.base"
local core = require "otskit.core"
local keycodec = require "otskit.key"
local partitions = require "otskit.store.partitions"
local kv = core.kv
local pack, unpack = keycodec.pack, keycodec.unpack
local DB, L = base.DB, base.LIMITS
local invalid, check_req, valid_name, ceil_cu, consumed =
  base.invalid, base.check_req, base.valid_name, base.ceil_cu, base.consumed

local tables = {}

local DEFAULT_PART = { split_bytes = 64 * 1048576, window = 60, history = 120 }

local function part_opts(base, over)
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
local function unhex(h) return (h:gsub("..", function(x) return string.char(tonumber(x, 16)) end)) end

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

function DB:_attach(name, pk, bounds, popts)
  local t = { name = name, kv = "t_" .. name, pk = pk, npk = #pk, pknames = {}, bounds = bounds, popts = popts }
  for _, c in ipairs(pk) do t.pknames[c.name] = true end
  if self.accounting then
    local h = self.h
    t.parts = partitions.new({ bounds = bounds, split_rows = popts.split_rows, split_bytes = popts.split_bytes,
      split_load = popts.split_load, window = popts.window, history = popts.history }, {
      clock = function() return self:now() end,
      scan = function(lo, hi)
        local cur = assert(h:scan(t.kv, lo, hi, false))
        return function() return cur:next() end
      end,
      pk1 = function(k) return (assert(kv.first(k))) end,
      value = function(enc)
        local v = unpack(enc)[1]
        if type(v) == "table" then v = tostring(v) end
        return v
      end,
      on_split = function(los)
        t.bounds = los
        h:put("meta", name, meta_text(t))
      end,
    })
    -- sizes of an existing table (reopened file)
    local cur = assert(h:scan(t.kv, nil, nil, false))
    while true do
      local ks, vs, n = cur:fetch(512)
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
  local h = self.h
  local ok, msg = h:create("t_" .. name)
  if ok then ok, msg = h:put("meta", name, meta_text(t)) end
  if not ok then return nil, msg, "OTSInternalServerError" end
  self:_attach(name, pk, bounds, popts)
  return { table = name }
end

--- db:delete_table{ name } -> {} | nil, msg, code
function DB:delete_table(req)
  check_req(req, "delete_table")
  local name = req.name or req.table
  local t, msg, code = self:_table(name)
  if not t then return nil, msg, code end
  local h = self.h
  local ok, err = h:drop(t.kv)
  if ok then ok, err = h:delete("meta", name) end
  if ok == nil then return nil, err, "OTSInternalServerError" end
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

tables.part_opts, tables.unhex = part_opts, unhex
return tables
