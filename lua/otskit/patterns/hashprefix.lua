--- otskit.patterns.hashprefix -- hash-prefixed sequential ids with point
-- reads (best practices: "prepend the first few hex digits of md5 of a
-- sequential key; point reads recompute it").
--
-- Order numbers 90000001, 90000002, ... would all land on the tail
-- partition; with a 4-hex-digit md5 prefix ("176a0090000005") they scatter
-- over the whole key space. A point read recomputes the key; a range read
-- in order-number order is no longer possible (that is the price).
--
--   local hashprefix = require "otskit.patterns.hashprefix"
--   local p = hashprefix.new{ store = db, table = "orders", algo = "md5",
--                             len = 4, width = 10, retry = {...} }
--   p:create()                       -> true | nil, msg, code
--   p:key(90000005)                  -> "176a0090000005" (the stored key)
--   p:put(id, columns)               -> true | nil, msg, code
--   p:put_many{ {id, columns}, ... } -> true | nil, msg, code, nfailed
--   p:get(id [, columns])            -> columns | false (missing) | nil, msg, code
--   p:get_many(ids [, columns])      -> { [i] = columns | false } | nil, msg, code
-- ids: non-negative integers (zero-padded to `width` digits, so keys keep
-- one length) or strings of [0-9A-Za-z_-]. Codes: BadKey, IntTooWide,
-- the store's.
local key = require "otskit.key"
local common = require "otskit.patterns.common"

local M = {}
local MOD = "otskit.patterns.hashprefix"

local P = {}
P.__index = P

local function raise(msg) error(MOD .. ": " .. msg, 3) end

--- hashprefix.new(opts) -> pattern (see the header). Raises on bad options.
function M.new(opts)
  common.preamble(MOD, opts, { call = "new", options = { "width", "algo", "len", "pk_name" } })
  local name = opts.table
  local width = opts.width or 10
  if not (common.is_int(width) and width >= 1 and width <= 15) then raise("width must be 1..15") end
  local self = setmetatable({
    table = name, width = width, fmt = "%0" .. width .. ".0f",
    hp = key.hash_prefix { algo = opts.algo or "md5", len = opts.len or 4 },
    pk_name = opts.pk_name or "id", acc = common.access(opts, MOD),
  }, P)
  self.stats = self.acc.stats
  return self
end

function P:create(splits)
  local ok, msg, code = self.acc:store("create_table", { name = self.table,
    primary_key = { { self.pk_name, "STRING" } }, splits = splits }, "CreateTable")
  if not ok then return nil, msg, code end
  return true
end

--- p:key(id) -> the stored key (prefix .. padded id) | nil, msg, code
function P:key(id)
  if type(id) == "number" then
    if not (common.is_int(id) and id >= 0) then
      return common.bad(MOD, "BadKey", "id must be a non-negative integer, got %s", tostring(id))
    end
    local s = self.fmt:format(id)
    if #s > self.width then
      return common.bad(MOD, "IntTooWide", "id %s does not fit %d digits", s, self.width)
    end
    return self.hp:encode(s)
  end
  if type(id) ~= "string" or id == "" or #id > 1000 or id:find("[^%w_%-]") then
    return common.bad(MOD, "BadKey", "id must be an integer or a string of 1..1000 [0-9A-Za-z_-], got %s",
      type(id) == "string" and ("%q"):format(id:sub(1, 40)) or type(id))
  end
  return self.hp:encode(id)
end

--- p:put(id, columns) -> true | nil, msg, code
function P:put(id, columns)
  local k, msg, code = self:key(id)
  if not k then return nil, msg, code end
  if columns ~= nil and type(columns) ~= "table" then return common.bad(MOD, "BadValue", "columns must be a table") end
  return common.put_row(self, self.table, { { self.pk_name, k } }, columns)
end

--- p:put_many{ {id, columns}, ... } -> true | nil, msg, code, nfailed
function P:put_many(list)
  if type(list) ~= "table" then raise("put_many expects a list") end
  local rows = {}
  for i, r in ipairs(list) do
    if type(r) ~= "table" then return common.bad(MOD, "BadKey", "row %d is not a table", i) end
    local k, msg, code = self:key(r[1])
    if not k then return nil, ("row %d: %s"):format(i, msg), code end
    rows[i] = { table = self.table, row = { type = "PUT", primary_key = { { self.pk_name, k } }, columns = r[2] or {} } }
  end
  return common.write_batches(self.acc, rows)
end

--- p:get(id [, columns [, { deadline = t }]]) -> columns | false | nil,
-- msg, code. Past the deadline (absolute, otskit.backoff.now() scale):
-- nil, msg, "RequestTimeout".
function P:get(id, columns, o)
  local k, msg, code = self:key(id)
  if not k then return nil, msg, code end
  local ok, om, oc = common.read_opts(MOD, o)
  if not ok then return nil, om, oc end
  local _, pm, pc = common.past(MOD, o and o.deadline)
  if pc then return nil, pm, pc end
  local res, m, c = self.acc:store("get_row", { table = self.table, primary_key = { { self.pk_name, k } },
    columns = columns }, "GetRow")
  if not res then return nil, m, c end
  if not res.row then return false end
  self.stats.rows_read = self.stats.rows_read + 1
  return res.row.columns
end

-- ids one get_many takes (1000 BatchGetRow requests); more is BadRange
M.MAX_IDS = 100000

--- p:get_many(ids [, columns [, { deadline = t }]]) -> list (columns |
-- false per id, in order) | nil, msg, code. At most hashprefix.MAX_IDS
-- (100 000) ids, else BadRange before any read. BatchGetRow requests of at
-- most 100 keys; rows that fail alone are read again (retried through
-- otskit.retry); the deadline is checked before every batch.
function P:get_many(ids, columns, o)
  if type(ids) ~= "table" then raise("get_many expects a list of ids") end
  local nids = #ids
  if not (nids >= 0 and nids <= M.MAX_IDS) then
    return common.bad(MOD, "BadRange", "get_many reads at most %d ids a call, got %s", M.MAX_IDS, tostring(nids))
  end
  local ok, om, oc = common.read_opts(MOD, o)
  if not ok then return nil, om, oc end
  local dl = o and o.deadline
  local keys, index, uniq = {}, {}, {}
  for i, id in ipairs(ids) do
    local k, msg, code = self:key(id)
    if not k then return nil, ("id %d: %s"):format(i, msg), code end
    keys[i] = k
    if not index[k] then index[k] = true; uniq[#uniq + 1] = k end
  end
  local found, acc, db = {}, self.acc, self.acc.db
  local retry = require "otskit.retry"
  for from = 1, #uniq, 100 do
    local batch = {}
    for j = from, math.min(from + 99, #uniq) do batch[#batch + 1] = uniq[j] end
    local o = { op = "BatchGetRow" }
    for kk, v in pairs(acc.ropts) do o[kk] = v end
    local _, pm, pc = common.past(MOD, dl)
    if pc then return nil, pm, pc end
    local results, nfailed, attempts = retry.batch_write(function(sub)
      acc.stats.requests = acc.stats.requests + 1
      local pks = {}
      for j, k in ipairs(sub) do pks[j] = { { self.pk_name, k } } end
      local res, m, c = db:batch_get_row { tables = { { table = self.table, primary_keys = pks, columns = columns } } }
      if not res then return nil, { code = c, message = m } end
      local out = {}
      for j, r in ipairs(res.tables[1].rows) do
        if r.ok then
          found[sub[j]] = r.row and r.row.columns or false
          if r.row then acc.stats.rows_read = acc.stats.rows_read + 1 end
          out[j] = true
        else
          out[j] = { code = r.code, message = r.message }
        end
      end
      return out
    end, batch, o)
    if attempts > 1 then acc.stats.retries = acc.stats.retries + attempts - 1 end
    if nfailed > 0 then
      acc.stats.failed = acc.stats.failed + 1
      for _, r in ipairs(results) do
        if r ~= true then
          return nil, MOD .. ": " .. tostring(r.message or r.code), r.code
        end
      end
    end
  end
  local out = {}
  for i, k in ipairs(keys) do out[i] = found[k] end
  return out
end

return M
