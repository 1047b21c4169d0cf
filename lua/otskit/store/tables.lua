--- otskit.store.tables -- table metadata: create, delete, list, describe.
local base = require "otskit.store.base"
local errors = require "otskit.errors"
local core = require "otskit.core"
local keycodec = require "otskit.key"
local names = require "otskit.names"
local partitions = require "otskit.store.partitions"
local purge = require "otskit.store.purge"
local txn = require "otskit.store.txn"
local indexes = require "otskit.store.indexes"
local dberr, check = txn.dberr, txn.check
local kv = core.kv
local pack, unpack = keycodec.pack, keycodec.unpack
local DB, L = base.DB, base.LIMITS
local invalid, check_req, valid_name, ceil_cu, consumed =
  base.invalid, base.check_req, base.valid_name, base.ceil_cu, base.consumed

local tables = {}

local OPTIONS = { "time_to_live", "max_versions", "max_time_deviation" }
local OPTION_SET = base.set{ "time_to_live", "max_versions", "max_time_deviation", "allow_update" }
local CREATE_FIELDS = base.set{ "name", "table", "primary_key", "options", "reserved", "splits", "partition",
  "defined_columns", "index_metas", "enable_local_txn" }
local UPDATE_FIELDS = base.set{ "name", "table", "options", "reserved" }
local NAME_FIELDS = base.set{ "name", "table" }

local function is_int(v) return type(v) == "number" and v == math.floor(v) and v > -2^63 and v < 2^63 end

-- validated table options over `cur` (defaults when nil) -> options | nil, msg, code
local function parse_options(o, cur)
  local out = {}
  for _, k in ipairs(OPTIONS) do out[k] = cur and cur[k] or base.OPTION_DEFAULTS[k] end
  out.allow_update = not (cur and cur.allow_update == false)
  if o == nil then return out end
  if type(o) ~= "table" then return invalid("options must be a table") end
  local ok, m, c = base.known(o, OPTION_SET, "options")
  if not ok then return nil, m, c end
  if o.allow_update ~= nil then
    if type(o.allow_update) ~= "boolean" then return invalid("allow_update must be a boolean") end
    out.allow_update = o.allow_update
  end
  local ttl, mv, dev = o.time_to_live, o.max_versions, o.max_time_deviation
  if ttl ~= nil then
    -- the service: -1 (never expire) or at least one day
    if not is_int(ttl) or (ttl ~= -1 and ttl < 86400) or ttl > 2147483647 then
      return invalid("time_to_live must be -1 or 86400..2147483647 seconds, got " .. tostring(ttl))
    end
    out.time_to_live = ttl
  end
  if mv ~= nil then
    if not is_int(mv) or mv < 1 or mv > 2147483647 then
      return invalid("max_versions must be an integer 1..2147483647, got " .. tostring(mv))
    end
    out.max_versions = mv
  end
  if dev ~= nil then
    if not is_int(dev) or dev < 1 then return invalid("max_time_deviation must be a positive integer, got " .. tostring(dev)) end
    out.max_time_deviation = dev
  end
  return out
end

local function parse_reserved(r, cur)
  local out = { read = cur and cur.read or 0, write = cur and cur.write or 0 }
  if r == nil then return out end
  if type(r) ~= "table" then return invalid("reserved must be a table { read =, write = }") end
  local ok, m, c = base.known(r, base.set{ "read", "write" }, "reserved")
  if not ok then return nil, m, c end
  for _, k in ipairs({ "read", "write" }) do
    local v = r[k]
    if v ~= nil then
      if not is_int(v) or v < 0 then return invalid("reserved." .. k .. " must be an integer >= 0, got " .. tostring(v)) end
      out[k] = v
    end
  end
  return out
end

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
    -- type(), not v ~= nil: a NULL cdata equals nil on LuaJIT
    if type(v) ~= "nil" and v ~= false and (type(v) ~= "number" or not (v > 0) or v == math.huge) then
      error("otskit.store: partition." .. k .. " must be a positive number or false", 4)
    end
    if v == false or type(v) == "nil" then o[k] = nil end
  end
  return o
end

local function copy(o)
  local c = {}
  for k, v in pairs(o) do c[k] = v end
  return c
end

local function hex(s) return (s:gsub(".", function(c) return ("%02x"):format(c:byte()) end)) end
local function unhex(h) return (h:gsub("..", function(x) return string.char(tonumber(x, 16)) end)) end

-- metadata row text: "pk <name> <TYPE>" lines, then "bound <hex>",
-- "auto <column>", "tab <option> <n>", "res <read|write> <n>" lines
local function meta_text(t)
  local out = {}
  for _, c in ipairs(t.pk) do out[#out + 1] = "pk " .. c.name .. " " .. c.type end
  for _, c in ipairs(t.pk) do if c.auto then out[#out + 1] = "auto " .. c.name end end
  for _, k in ipairs(OPTIONS) do out[#out + 1] = ("tab %s %d"):format(k, t.options[k]) end
  out[#out + 1] = ("res read %d"):format(t.reserved.read)
  out[#out + 1] = ("res write %d"):format(t.reserved.write)
  for _, b in ipairs(t.bounds) do out[#out + 1] = "bound " .. hex(b) end
  for _, k in ipairs({ "split_rows", "split_bytes", "split_load", "window", "history" }) do
    if t.popts[k] then out[#out + 1] = "opt " .. k .. " " .. ("%.17g"):format(t.popts[k]) end
  end
  indexes.meta_lines(t, out) -- defined columns, flags, indexes
  return table.concat(out, "\n")
end

--- db:_meta_text(t) -> the metadata row of table t
function DB:_meta_text(t) return meta_text(t) end

-- derived per-table settings the hot paths read
local function settle(t)
  local o = t.options
  t.ttl_ms = o.time_to_live ~= -1 and o.time_to_live * 1000 or nil
  t.maxv = o.max_versions
  t.dev_ms = o.max_time_deviation * 1000
  t._getplan = nil -- (otskit.store.stream: made again from these)
end

function DB:_attach(name, pk, bounds, popts, options, reserved, meta)
  local t = { name = name, kv = "t_" .. name, pk = pk, npk = #pk, pknames = {}, bounds = bounds, popts = popts,
              options = parse_options(options), reserved = parse_reserved(reserved) }
  for i, c in ipairs(pk) do
    t.pknames[c.name] = true
    if c.auto then t.auto = i end
  end
  settle(t)
  indexes.attach(self, t, meta)
  if self.accounting then
    local h = self.h
    t.parts = partitions.new({ bounds = bounds, split_rows = popts.split_rows, split_bytes = popts.split_bytes,
      split_load = popts.split_load, window = popts.window, history = popts.history }, {
      clock = function() return self:now() end,
      -- db failures here are raised for DB:_txn (txn.check), never left raw
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
        if type(v) == "table" then v = tostring(v) end
        return v
      end,
      on_split = function(los) -- (a failed write leaves t as it was)
        local old = t.bounds
        t.bounds = los
        local text = meta_text(t)
        local ok, m, c = h:put("meta", name, text)
        if not ok then
          t.bounds = old
          check(nil, m, c)
        end
        t.meta = text
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

function DB:_table(name)
  local h = self.h
  if h == nil then error("otskit.store: db is closed", 3) end
  local t = self.tables[name]
  if t == nil then
    if not valid_name(name) then return invalid("Invalid table name: '" .. tostring(name) .. "'.") end
    return errors.fail("OTSObjectNotExist")
  end
  return t
end

--- db:create_table{ name, primary_key = {{"pk1", "INTEGER"|"STRING"|"BINARY"
-- [, "AUTO_INCREMENT"]}, ...}, options = { time_to_live = -1, max_versions = 1,
-- max_time_deviation = 86400 }, reserved = { read = 0, write = 0 },
-- splits = { partition-key values }, partition = { thresholds } }
-- -> { table = name } | nil, msg, code
function DB:create_table(req)
  check_req(req, "create_table")
  if self.h == nil then error("otskit.store: db is closed", 2) end
  local okf, mf, cf = base.known(req, CREATE_FIELDS, "create_table")
  if not okf then return nil, mf, cf end
  local name = req.name or req.table
  if not valid_name(name) then return invalid("table name must be " .. names.RULE .. ": " .. tostring(name)) end
  if self.tables[name] then return errors.fail("OTSObjectAlreadyExist") end
  local options, mo, co = parse_options(req.options)
  if not options then return nil, mo, co end
  local reserved, mr, cr = parse_reserved(req.reserved)
  if not reserved then return nil, mr, cr end
  local spec = req.primary_key
  if type(spec) ~= "table" or #spec < 1 or #spec > L.pk_columns then
    return invalid("primary_key must list 1 to 4 columns")
  end
  local pk, seen = {}, {}
  for i, c in ipairs(spec) do
    if type(c) ~= "table" then return invalid("primary key column " .. i .. " must be {name, type}") end
    local n, ty, opt = c[1] or c.name, c[2] or c.type, c[3] or c.option
    if not valid_name(n) then return invalid("bad primary key column name: " .. tostring(n)) end
    if seen[n] then return invalid("Duplicated primary key name: '" .. n .. "'.") end
    if ty ~= "INTEGER" and ty ~= "STRING" and ty ~= "BINARY" then
      return invalid("primary key column " .. n .. " type must be INTEGER, STRING or BINARY, got " .. tostring(ty))
    end
    seen[n] = true
    pk[i] = { name = n, type = ty }
    if opt ~= nil then
      if opt ~= "AUTO_INCREMENT" then return invalid("primary key column " .. n .. ": unsupported option '" .. tostring(opt) .. "'") end
      if i == 1 then return invalid("the partition key '" .. n .. "' cannot be AUTO_INCREMENT") end
      if ty ~= "INTEGER" then return invalid("AUTO_INCREMENT column '" .. n .. "' must be INTEGER") end
      for j = 1, i - 1 do
        if pk[j].auto then return invalid("at most one AUTO_INCREMENT column") end
      end
      pk[i].auto = true
    end
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
  local ext, me, ce = indexes.parse_create(self, t0, req, options)
  if not ext then return nil, me, ce end
  local t = { pk = pk, bounds = bounds, popts = popts, options = options, reserved = reserved, ext = ext }
  -- inside the write transaction self.tables is what is on disk (synced
  -- under the write lock), so two connections creating one name cannot
  -- both succeed; a data table left without metadata is replaced
  local h = self.h
  local text = meta_text(t)
  local ok, msg, ecode = h:drop("t_" .. name)
  if ok then ok, msg, ecode = h:create("t_" .. name) end
  if ok then ok, msg, ecode = h:put("meta", name, text) end
  for _, ix in ipairs(ext.indexes) do
    if ok then ok, msg, ecode = h:drop("t_" .. ix.name) end
    if ok then ok, msg, ecode = h:create("t_" .. ix.name) end
  end
  if not ok then return dberr(msg, ecode) end
  ok, msg, ecode = self:_bump()
  if not ok then return nil, msg, ecode end
  self:_attach(name, pk, bounds, popts, options, reserved, ext).meta = text
  return { table = name }
end

-- What update_table removes from storage when options change from o to
-- n -> maxv, cut (ms, nil: none) | nil when nothing can have been hidden.
-- The stricter of both settings: what the new ones hide, and what the old
-- ones hid at this moment, so raising a setting never brings back a
-- version that was already invisible.
local function purge_limits(db, o, n)
  local ttl_changed = o.time_to_live ~= n.time_to_live
  if n.max_versions >= o.max_versions and not ttl_changed then return nil end
  local maxv = math.min(o.max_versions, n.max_versions)
  local now, cut = base.now_ms(db), nil
  for _, ttl in ipairs({ o.time_to_live, n.time_to_live }) do
    if ttl ~= -1 then
      local c = now - ttl * 1000
      if cut == nil or c > cut then cut = c end
    end
  end
  return maxv, cut
end

--- db:update_table{ name, options = {...}, reserved = {...} } -> { options,
-- reserved } (the table's settings after the change) | nil, msg, code.
-- Lowering max_versions or changing time_to_live removes, in the same
-- transaction, every stored version the old or the new setting hides at
-- that moment (purge.lua: it reads the whole table and rewrites the rows
-- that change, so on a large table it costs a scan), so no read,
-- capacity count, partition size or split point sees them, and a later
-- raise does not bring them back. Versions that expire later are hidden
-- from reads at once and leave storage on the row's next write.
function DB:update_table(req)
  check_req(req, "update_table")
  local okf, mf, cf = base.known(req, UPDATE_FIELDS, "update_table")
  if not okf then return nil, mf, cf end
  local t, msg, code = self:_table(req.name or req.table)
  if not t then return nil, msg, code end
  if req.options == nil and req.reserved == nil then return invalid("update_table needs options or reserved") end
  local options, mo, co = parse_options(req.options, t.options)
  if not options then return nil, mo, co end
  local reserved, mr, cr = parse_reserved(req.reserved, t.reserved)
  if not reserved then return nil, mr, cr end
  if t.base then return invalid("update_table on an index table: '" .. t.name .. "'") end
  local oki, mi, ci = indexes.check_options(t, options)
  if not oki then return nil, mi, ci end
  local old_o, old_r = t.options, t.reserved
  t.options, t.reserved = options, reserved
  local text = meta_text(t)
  local ok, err, ecode = self.h:put("meta", t.name, text)
  if ok then ok, err, ecode = self:_bump() else ok, err, ecode = dberr(err, ecode) end
  local sizes
  if ok then
    local maxv, cut = purge_limits(self, old_o, options)
    if maxv then
      sizes, err, ecode = purge.table(self, t, maxv, cut)
      ok = sizes ~= nil
    end
  end
  if not ok then
    t.options, t.reserved = old_o, old_r
    return nil, err, ecode
  end
  t.meta = text
  settle(t)
  indexes.settle(t)
  if sizes then purge.account(t, sizes) end
  return { options = copy(options), reserved = copy(reserved) }
end

--- db:delete_table{ name } -> {} | nil, msg, code
function DB:delete_table(req)
  check_req(req, "delete_table")
  local okf, mf, cf = base.known(req, NAME_FIELDS, "delete_table")
  if not okf then return nil, mf, cf end
  local name = req.name or req.table
  local t, msg, code = self:_table(name)
  if not t then return nil, msg, code end
  if t.base then return invalid("Cannot delete an index table with delete_table, use drop_index: '" .. name .. "'.") end
  local h = self.h
  local ok, err, ecode = h:drop(t.kv)
  if ok then ok, err, ecode = h:delete("meta", name) end
  if ok then ok, err, ecode = indexes.drop_all(self, t) end
  if ok == nil then return dberr(err, ecode) end
  ok, err, ecode = self:_bump()
  if not ok then return nil, err, ecode end
  self.tables[name] = nil
  for _, ix in ipairs(t.indexes or {}) do self.tables[ix.name] = nil end
  return {}
end

--- db:list_table() -> { table_names = {...} } (sorted)
function DB:list_table()
  local names = {}
  for n, t in pairs(self.tables) do if not t.base then names[#names + 1] = n end end
  table.sort(names, function(a, b) return kv.cmp(a, b) < 0 end)
  return { table_names = names }
end

--- db:describe_table{ name } -> { table_meta = { table, primary_key =
-- {{name, type [, "AUTO_INCREMENT"]}, ...} }, options, reserved,
-- shard_splits = { partition-key values } } | nil, msg, code
function DB:describe_table(req)
  check_req(req, "describe_table")
  local okf, mf, cf = base.known(req, NAME_FIELDS, "describe_table")
  if not okf then return nil, mf, cf end
  local t, msg, code = self:_table(req.name or req.table)
  if not t then return nil, msg, code end
  local pk, splits = {}, {}
  for i, c in ipairs(t.pk) do pk[i] = { c.name, c.type, c.auto and "AUTO_INCREMENT" or nil } end
  for i, b in ipairs(t.bounds) do
    local v = unpack(b)[1]
    splits[i] = type(v) == "table" and tostring(v) or v
  end
  local res = { table_meta = { table = t.name, primary_key = pk }, options = copy(t.options),
           reserved = copy(t.reserved), shard_splits = splits }
  indexes.describe(t, res)
  return res
end

tables.part_opts, tables.unhex = part_opts, unhex
return tables
