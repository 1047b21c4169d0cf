--- otskit.patterns.colsplit -- a table split by column access frequency
-- (best practices: "split a table whose columns differ a lot in access
-- frequency").
--
-- The few columns read and updated all the time (status, balance,
-- last_seen) live in "<table>_hot"; the rest (profile text, settings,
-- history) in "<table>_cold", under the same primary key. The hot table
-- stays small: its partitions hold many more rows per byte, and its
-- frequent reads and updates never carry the cold bytes.
--
--   local colsplit = require "otskit.patterns.colsplit"
--   local p = colsplit.new{ store = db, table = "users",
--     primary_key = { { "id", "STRING" } }, hot = { "status", "balance" }, retry = {...} }
--   p:create([splits])                 -> true | nil, msg, code (both tables, pre-split
--                                         at the partition-key values splits)
--   p:put(pk, columns)                 -> true | nil, msg, code (cold, then hot)
--   p:update(pk, columns)              -> true | nil, msg, code (only the tables touched)
--   p:get(pk [, names])                -> columns | false | nil, msg, code
--   p:delete(pk)                       -> true | nil, msg, code (hot, then cold)
-- pk: {v1, ...} in schema order. get reads only the tables holding the
-- names asked for (all columns: both). A row exists when its hot row
-- does: put writes the cold row first and the hot row last, delete the
-- other way round, so a reader never sees a hot row without its cold
-- part. Codes: BadKey, BadValue, the store's.
local common = require "otskit.patterns.common"
local key = require "otskit.key"

local M = {}
local MOD = "otskit.patterns.colsplit"

local P = {}
P.__index = P

local function raise(msg) error(MOD .. ": " .. msg, 3) end

--- colsplit.new(opts) -> pattern (see the header). Raises on bad options.
function M.new(opts)
  -- the tables are name .. "_hot" and name .. "_cold"
  common.preamble(MOD, opts, { call = "new", suffix = "_cold", options = { "primary_key", "hot" } })
  local name = opts.table
  local pk = opts.primary_key
  if type(pk) ~= "table" or #pk < 1 or #pk > 4 then raise("primary_key must list 1..4 {name, type} columns") end
  for _, c in ipairs(pk) do
    if type(c) ~= "table" or type(c[1]) ~= "string" or (c[2] ~= "INTEGER" and c[2] ~= "STRING" and c[2] ~= "BINARY") then
      raise("primary_key columns must be {name, \"INTEGER\"|\"STRING\"|\"BINARY\"}")
    end
  end
  if type(opts.hot) ~= "table" or #opts.hot < 1 then raise("hot must list the frequently used columns") end
  local hot = {}
  for _, c in ipairs(opts.hot) do
    if type(c) ~= "string" then raise("hot column names must be strings") end
    hot[c] = true
  end
  local self = setmetatable({ table = name, pk = pk, hot = hot, hot_list = opts.hot,
    hot_table = name .. "_hot", cold_table = name .. "_cold", acc = common.access(opts, MOD) }, P)
  self.stats = self.acc.stats
  return self
end

function P:create(splits)
  for _, t in ipairs { self.hot_table, self.cold_table } do
    local ok, msg, code = self.acc:store("create_table", { name = t, primary_key = self.pk, splits = splits }, "CreateTable")
    if not ok then return nil, msg, code end
  end
  return true
end

function P:_pk(vals)
  if type(vals) ~= "table" or #vals ~= #self.pk then
    return common.bad(MOD, "BadKey", "primary key must be a list of %d values", #self.pk)
  end
  local pk = {}
  for i, c in ipairs(self.pk) do
    local v = vals[i]
    if type(v) == "table" then v = v[2] end
    local ok = (c[2] == "INTEGER" and common.is_int(v)) or (c[2] ~= "INTEGER" and type(v) == "string")
    if not ok then return common.bad(MOD, "BadKey", "column %s must be %s, got %s", c[1], c[2], type(v)) end
    pk[i] = { c[1], v }
  end
  local ok, msg, code = key.check_pk(pk)
  if not ok then return nil, MOD .. ": " .. msg, code == "BadPrimaryKey" and "BadKey" or code end
  return pk
end

-- columns cut in two: hot, cold (either may be empty)
function P:_split(columns)
  if type(columns) ~= "table" then return nil end
  local h, c, nh, nc = {}, {}, 0, 0
  for k, v in pairs(columns) do
    if type(k) ~= "string" then return nil end
    if self.hot[k] then h[k] = v; nh = nh + 1 else c[k] = v; nc = nc + 1 end
  end
  return h, c, nh, nc
end

--- p:put(pk, columns) -> true | nil, msg, code. Replaces both rows.
function P:put(vals, columns)
  local pk, msg, code = self:_pk(vals)
  if not pk then return nil, msg, code end
  local h, c = self:_split(columns or {})
  if not h then return common.bad(MOD, "BadValue", "columns must be a table of name = value") end
  local ok, m1, c1 = common.put_row(self, self.cold_table, pk, c)
  if not ok then return nil, m1, c1 end
  return common.put_row(self, self.hot_table, pk, h)
end

--- p:update(pk, columns) -> true | nil, msg, code. Puts the given
-- columns, touching only the table(s) they belong to.
function P:update(vals, columns)
  local pk, msg, code = self:_pk(vals)
  if not pk then return nil, msg, code end
  local h, c, nh, nc = self:_split(columns)
  if not h then return common.bad(MOD, "BadValue", "columns must be a table of name = value") end
  for _, part in ipairs { { self.cold_table, c, nc }, { self.hot_table, h, nh } } do
    if part[3] > 0 then
      local ok, m1, c1 = self.acc:store("update_row", { table = part[1], primary_key = pk,
        update = { PUT = part[2] }, condition = "EXPECT_EXIST" }, "UpdateRow", { idempotent = true })
      if not ok then return nil, m1, c1 end
      self.stats.rows_written = self.stats.rows_written + 1
    end
  end
  return true
end

--- p:get(pk [, names [, { deadline = t }]]) -> columns | false (no such
-- row) | nil, msg, code. Past the deadline (absolute, otskit.backoff.now()
-- scale, checked before each of its reads): nil, msg, "RequestTimeout".
function P:get(vals, names, o)
  local pk, msg, code = self:_pk(vals)
  if not pk then return nil, msg, code end
  local ok, om, oc = common.read_opts(MOD, o)
  if not ok then return nil, om, oc end
  local dl = o and o.deadline
  local want_hot, want_cold
  local hn, cn
  if names == nil then
    want_hot, want_cold = true, true
  else
    if type(names) ~= "table" or #names == 0 then return common.bad(MOD, "BadValue", "names must be a non-empty list") end
    hn, cn = {}, {}
    for _, n in ipairs(names) do
      if type(n) ~= "string" then return common.bad(MOD, "BadValue", "names must be strings") end
      if self.hot[n] then hn[#hn + 1] = n else cn[#cn + 1] = n end
    end
    want_hot, want_cold = #hn > 0, #cn > 0
  end
  local out = {}
  -- the hot row says whether the row exists; read it even for cold names
  local hot_cols -- nil: every column
  if names ~= nil then hot_cols = want_hot and hn or { self.hot_list[1] } end
  local _, pm, pc = common.past(MOD, dl)
  if pc then return nil, pm, pc end
  local res, m1, c1 = self.acc:store("get_row", { table = self.hot_table, primary_key = pk,
    columns = hot_cols }, "GetRow")
  if not res then return nil, m1, c1 end
  if not res.row then return false end
  self.stats.rows_read = self.stats.rows_read + 1
  if want_hot then for k, v in pairs(res.row.columns) do out[k] = v end end
  -- (a cold-only read asked the hot row for one column, only to see it exists)
  if want_cold then
    local _, qm, qc = common.past(MOD, dl)
    if qc then return nil, qm, qc end
    local r2, m2, c2 = self.acc:store("get_row", { table = self.cold_table, primary_key = pk, columns = cn }, "GetRow")
    if not r2 then return nil, m2, c2 end
    if r2.row then
      self.stats.rows_read = self.stats.rows_read + 1
      for k, v in pairs(r2.row.columns) do out[k] = v end
    end
  end
  return out
end

--- p:delete(pk) -> true | nil, msg, code
function P:delete(vals)
  local pk, msg, code = self:_pk(vals)
  if not pk then return nil, msg, code end
  for _, t in ipairs { self.hot_table, self.cold_table } do
    local ok, m1, c1 = self.acc:store("delete_row", { table = t, primary_key = pk }, "DeleteRow", { idempotent = true })
    if not ok then return nil, m1, c1 end
  end
  return true
end

return M
