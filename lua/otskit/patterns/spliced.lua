--- otskit.patterns.spliced -- a spliced partition key with range reads
-- (best practices: "join several columns into one string; zero-pad
-- integers; a connector lower than every character of the fields").
--
-- The card purchases: partition key "DeviceID,SellerID" (DeviceID padded
-- to 6 digits), then the remaining key columns. Devices are many and
-- evenly used, so writes spread; the key still sorts like the tuple, so
-- "DeviceID in [15, 100)" is one range read, not a scan of every seller.
--
--   local spliced = require "otskit.patterns.spliced"
--   local p = spliced.new{ store = db, table = "purchases",
--     splice = { sep = ",", { "DeviceID", "int", width = 6 },
--                { "SellerID", "string", charset = "alnum" } },
--     rest = { { "CardID", "INTEGER" }, { "OrderNumber", "STRING" } },
--     secret = "...", retry = {...}, get_range = fn }
--   p:create()                                 -> true | nil, msg, code
--   p:put({ 54, "a100" }, { 16, "o-1" }, cols) -> true | nil, msg, code
--   p:put_many{ { {54, "a100"}, {16, "o-1"}, cols }, ... }
--   p:get({ 54, "a100" }, { 16, "o-1" })       -> row | false | nil, msg, code
--   p:range{ from = { 15 }, to = { 100 }, limit = 100, cursor = c }
--     -> rows, cursor: rows in key order, each { fields = {54, "a100"},
--        rest = {16, "o-1"}, columns }; from / to are tuples of leading
--        fields (a prefix of the splice), from inclusive, to exclusive.
-- Codes: the splice's (IntTooWide, OutOfCharset, NotInteger, KeyTooLong),
-- BadKey (wrong shape), BadRange, BadCursor, the store's.
local key = require "otskit.key"
local common = require "otskit.patterns.common"

local M = {}
local MOD = "otskit.patterns.spliced"

local P = {}
P.__index = P

local function raise(msg) error(MOD .. ": " .. msg, 3) end

local TYPES = { INTEGER = true, STRING = true, BINARY = true }

--- spliced.new(opts) -> pattern (see the header). Raises on bad options.
function M.new(opts)
  common.preamble(MOD, opts, { call = "new", options = { "splice", "rest", "secret", "pk_name" },
    parallel = true, get_range = true })
  local name = opts.table
  local sp = opts.splice
  if type(sp) ~= "table" or #sp < 1 then raise("splice must be a key.splice spec") end
  local rest = opts.rest or {}
  if type(rest) ~= "table" or #rest > 3 then raise("rest must list 0..3 {name, type} key columns") end
  for _, c in ipairs(rest) do
    if type(c) ~= "table" or type(c[1]) ~= "string" or not TYPES[c[2]] then
      raise("rest columns must be {name, \"INTEGER\"|\"STRING\"|\"BINARY\"}")
    end
  end
  if opts.secret ~= nil and (type(opts.secret) ~= "string" or #opts.secret < 16) then
    raise("secret must be a string of at least 16 bytes")
  end
  local enc = key.splice(sp) -- checks the spec (raises otskit.key: ...)
  local names = {}
  for i, f in ipairs(sp) do names[i] = f[1] or f.name end
  local self = setmetatable({
    table = name, spec = sp, rest = rest, enc = enc, prefixes = {},
    pk_name = opts.pk_name or table.concat(names, "_"),
    acc = common.access(opts, MOD), tag = "spliced:" .. name, parallel = common.parallel_of(opts),
  }, P)
  self.stats = self.acc.stats
  self.secret = common.cursor_secret(opts.secret, self.tag)
  local db = opts.store
  self.get_range = opts.get_range or function(req) return db:get_range(req) end
  return self
end

--- p:create([splits]) -> true | nil, msg, code. splits: partition-key
-- values (spliced strings) to pre-split at.
function P:create(splits)
  local pk = { { self.pk_name, "STRING" } }
  for _, c in ipairs(self.rest) do pk[#pk + 1] = { c[1], c[2] } end
  local ok, msg, code = self.acc:store("create_table", { name = self.table, primary_key = pk,
    splits = splits }, "CreateTable")
  if not ok then return nil, msg, code end
  return true
end

-- the encoder of the first n fields (a prefix of the splice)
function P:_prefix_enc(n)
  local e = self.prefixes[n]
  if not e then
    local spec = { sep = self.spec.sep }
    for i = 1, n do spec[i] = self.spec[i] end
    e = key.splice(spec)
    self.prefixes[n] = e
  end
  return e
end

local function typed_ok(v, t)
  if t == "INTEGER" then return common.is_int(v) end
  return type(v) == "string" and #v <= 1024
end

-- the full primary key, or nil, msg, code
function P:_pk(fields, rest)
  if type(fields) ~= "table" or #fields ~= #self.spec then
    return common.bad(MOD, "BadKey", "fields must be a list of %d values (%s)", #self.spec, self.pk_name)
  end
  for i, f in ipairs(self.spec) do
    local want = f[2] or f.type
    local v = fields[i]
    if (want == "int" and type(v) ~= "number" and type(v) ~= "string") or (want == "string" and type(v) ~= "string") then
      return common.bad(MOD, "BadKey", "field %d (%s) must be a%s, got %s", i, f[1] or f.name,
        want == "int" and "n integer" or " string", type(v))
    end
  end
  local k, msg, code = self.enc:encode(fields)
  if not k then return nil, MOD .. ": " .. msg, code end
  rest = rest or {}
  if type(rest) ~= "table" or #rest ~= #self.rest then
    return common.bad(MOD, "BadKey", "rest must be a list of %d values", #self.rest)
  end
  local pk = { { self.pk_name, k } }
  for i, c in ipairs(self.rest) do
    if not typed_ok(rest[i], c[2]) then
      return common.bad(MOD, "BadKey", "rest %d (%s) must be %s", i, c[1], c[2])
    end
    pk[i + 1] = { c[1], rest[i] }
  end
  return pk
end

--- p:put(fields, rest, columns) -> true | nil, msg, code (replaces the row)
function P:put(fields, rest, columns)
  local pk, msg, code = self:_pk(fields, rest)
  if not pk then return nil, msg, code end
  if columns ~= nil and type(columns) ~= "table" then return common.bad(MOD, "BadValue", "columns must be a table") end
  return common.put_row(self, self.table, pk, columns)
end

--- p:put_many(list of {fields, rest, columns}) -> true | nil, msg, code,
-- nfailed. Every row is checked before anything is written.
function P:put_many(list)
  if type(list) ~= "table" then raise("put_many expects a list") end
  local rows = {}
  for i, r in ipairs(list) do
    if type(r) ~= "table" then return common.bad(MOD, "BadKey", "row %d is not a table", i) end
    local pk, msg, code = self:_pk(r[1], r[2])
    if not pk then return nil, ("row %d: %s"):format(i, msg), code end
    rows[i] = { table = self.table, row = { type = "PUT", primary_key = pk, columns = r[3] or {} } }
  end
  return common.write_batches(self.acc, rows)
end

local function decode_row(self, row)
  local pk = row.primary_key
  local fields = self.enc:decode(pk[1][2])
  local rest = {}
  for i = 2, #pk do rest[i - 1] = pk[i][2] end
  return { fields = fields, rest = rest, columns = row.columns }
end

--- p:get(fields, rest [, columns]) -> row | false (missing) | nil, msg, code
function P:get(fields, rest, columns)
  local pk, msg, code = self:_pk(fields, rest)
  if not pk then return nil, msg, code end
  local res, m, c = self.acc:store("get_row", { table = self.table, primary_key = pk, columns = columns }, "GetRow")
  if not res then return nil, m, c end
  if not res.row then return false end
  self.stats.rows_read = self.stats.rows_read + 1
  return decode_row(self, res.row)
end

-- the spliced bound of a prefix tuple: nil (open) or a string
function P:_bound(t, what)
  if t == nil then return true end
  if type(t) ~= "table" or #t < 1 or #t > #self.spec then
    return common.bad(MOD, "BadRange", "%s must be a list of 1..%d leading fields", what, #self.spec)
  end
  local k, msg, code = self:_prefix_enc(#t):encode(t)
  if not k then return nil, MOD .. ": " .. what .. ": " .. msg, code end
  return k
end

--- p:range{ from, to, limit = 100, cursor, columns } -> rows, cursor
-- Rows whose fields tuple starts at or after `from` and before `to`
-- (tuples of leading fields; nil = open), in key order, at most limit a
-- page; pass the same from / to with the cursor.
function P:range(q)
  if type(q) ~= "table" then raise("range expects a query table") end
  local values = require "otskit.values"
  local INF_MIN, INF_MAX = values.INF_MIN, values.INF_MAX
  local lo, m1, c1 = self:_bound(q.from, "from")
  if not lo then return nil, m1, c1 end
  local hi, m2, c2 = self:_bound(q.to, "to")
  if not hi then return nil, m2, c2 end
  if lo ~= true and hi ~= true and key.compare(lo, hi) >= 0 then
    return common.bad(MOD, "BadRange", "empty range: from is not before to")
  end
  local limit, lm, lc = common.check_limit(MOD, q.limit)
  if not limit then return nil, lm, lc end
  local dok, dm, dc = common.check_deadline(MOD, q.deadline)
  if not dok then return nil, dm, dc end
  -- a cursor is bound to the range it was made for (BadCursor otherwise)
  local xxh3 = require("otskit.hash").xxh3
  local made_for = ("from=%s,to=%s"):format(lo == true and "" or xxh3(lo, true), hi == true and "" or xxh3(hi, true))
  local inner, cm, cc
  if q.cursor ~= nil then
    inner, cm, cc = common.unwrap_cursor(MOD, self.tag, q.cursor, made_for)
    if not inner then return nil, cm, cc end
  end
  local nrest = #self.rest
  local function bound(v, inf)
    local b = { v }
    for i = 1, nrest do b[i + 1] = inf end
    return b
  end
  local keycols = { 1 }
  for i = 1, nrest do keycols[i + 1] = i + 1 end
  local rows, cursor, code = common.range_read(self.acc, {
    sources = { 1 }, keycols = keycols, direction = "FORWARD",
    table_of = function() return self.table end,
    start = function() return bound(lo == true and INF_MIN or lo, INF_MIN) end,
    stop = function() return bound(hi == true and INF_MAX or hi, INF_MIN) end,
    resume = function(_, vals)
      if (lo ~= true and key.compare(vals[1], lo) < 0) or (hi ~= true and key.compare(vals[1], hi) >= 0) then
        return nil
      end
      return vals
    end,
    get_range = self.get_range,
    map = function(row) return decode_row(self, row) end,
    limit = limit, cursor = inner, secret = self.secret and (self.secret .. "\0" .. made_for),
    parallel = false, columns = q.columns, deadline = q.deadline })
  if not rows then return nil, cursor, code end
  return rows, common.wrap_cursor(self.tag, cursor, made_for)
end

return M
