--- otskit.patterns.hotcold -- hot and cold data in one table per month
-- (best practices: "separate hot and cold data, e.g. one table per
-- month"). The current month's table takes every write and most reads;
-- older months are read rarely and can be given less capacity, a
-- cheaper storage class or dropped whole.
--
-- Each month table is "<prefix>_YYYYMM" with primary key (key STRING,
-- ts INTEGER, id STRING): the key (a device, a user) first and evenly
-- used, then time. A read of one key over a time range fans out to the
-- month tables it spans (one get_range each) and merges them with
-- otskit.merge, newest first (or oldest first), paged by cursor.
--
--   local hotcold = require "otskit.patterns.hotcold"
--   local p = hotcold.new{ store = db, prefix = "events",
--                          first = "2026-01", last = "2026-12",
--                          secret = "...", retry = {...} }
--   p:create()                       -> true | nil, msg, code (every month's table,
--                                       pre-split at opts.splits: key values)
--   p:month(ts)                      -> "2026-03" (UTC)
--   p:table_of(ts)                   -> "events_202603" | nil, msg, "BadMonth"
--   p:put(key, ts, id, columns)      -> true | nil, msg, code
--   p:put_many{ {key, ts, id, columns}, ... }
--   p:read{ key, from, to, limit, cursor, order = "desc" | "asc" }
--     -> rows ({ key, ts, id, month, columns }), cursor | nil, msg, code
-- ts are Unix seconds (integers). A month outside [first, last] is
-- BadMonth, for writes and reads alike. Other codes: BadKey, BadRange,
-- BadCursor, the store's.
local common = require "otskit.patterns.common"

local M = {}
local MOD = "otskit.patterns.hotcold"

local P = {}
P.__index = P

local function raise(msg) error(MOD .. ": " .. msg, 3) end

-- "2026-03" -> 2026 * 12 + 2 (a month number), or nil
local function month_num(s)
  if type(s) ~= "string" then return nil end
  local y, m = s:match("^(%d%d%d%d)%-(%d%d)$")
  y, m = tonumber(y), tonumber(m)
  if not y or m < 1 or m > 12 then return nil end
  return y * 12 + m - 1
end

local function month_text(n) return ("%04d-%02d"):format(math.floor(n / 12), n % 12 + 1) end

-- days from 1970-01-01 to the first of month n (civil calendar, UTC)
local function days_from_civil(y, m, d)
  y = m <= 2 and y - 1 or y
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = math.floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

--- The first second of month n (a month number).
local function month_start(n)
  return days_from_civil(math.floor(n / 12), n % 12 + 1, 1) * 86400
end

-- the month number of Unix time ts (UTC), without os.date (which is
-- limited to time_t and the C library on some systems)
local function month_of(ts)
  local z = math.floor(ts / 86400) + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400 + (m <= 2 and 1 or 0)
  return y * 12 + m - 1
end

M.month_start = function(s)
  local n = month_num(s)
  if not n then raise("month must be \"YYYY-MM\"") end
  return month_start(n)
end

--- hotcold.new(opts) -> pattern (see the header). Raises on bad options.
function M.new(opts)
  -- the month tables are prefix .. "_YYYYMM"
  common.preamble(MOD, opts, { call = "new", name = "prefix", suffix = "_202601", parallel = true,
    options = { "first", "last", "secret", "splits" } })
  local prefix = opts.prefix
  local first, last = month_num(opts.first), month_num(opts.last)
  if not first or not last then raise("first and last must be months \"YYYY-MM\"") end
  if last < first then raise("last must not be before first") end
  if last - first >= 1024 then raise("at most 1024 months") end
  if opts.secret ~= nil and (type(opts.secret) ~= "string" or #opts.secret < 16) then
    raise("secret must be a string of at least 16 bytes")
  end
  if opts.splits ~= nil and type(opts.splits) ~= "table" then raise("splits must be a list of keys") end
  local self = setmetatable({ prefix = prefix, first = first, last = last, splits = opts.splits,
    acc = common.access(opts, MOD), tag = "hotcold:" .. prefix, parallel = common.parallel_of(opts) }, P)
  self.stats = self.acc.stats
  self.secret = common.cursor_secret(opts.secret, self.tag)
  return self
end

function P:_table(n) return ("%s_%04d%02d"):format(self.prefix, math.floor(n / 12), n % 12 + 1) end

--- p:create() -> true | nil, msg, code: the table of every month.
function P:create()
  for n = self.first, self.last do
    local ok, msg, code = self.acc:store("create_table", { name = self:_table(n),
      primary_key = { { "key", "STRING" }, { "ts", "INTEGER" }, { "id", "STRING" } },
      splits = self.splits }, "CreateTable")
    if not ok then return nil, msg, code end
  end
  return true
end

--- p:month(ts) -> "YYYY-MM" of Unix time ts (UTC)
function P:month(ts)
  if not common.is_int(ts) then raise("ts must be an integer") end
  return month_text(month_of(ts))
end

function P:_month_checked(ts)
  if not common.is_int(ts) then return common.bad(MOD, "BadKey", "ts must be an integer, got %s", tostring(ts)) end
  local n = month_of(ts)
  if n < self.first or n > self.last then
    return common.bad(MOD, "BadMonth", "month %s of ts %.0f is outside %s..%s", month_text(n), ts,
      month_text(self.first), month_text(self.last))
  end
  return n
end

--- p:table_of(ts) -> table name | nil, msg, code
function P:table_of(ts)
  local n, msg, code = self:_month_checked(ts)
  if not n then return nil, msg, code end
  return self:_table(n)
end

function P:_row(k, ts, id)
  if type(k) ~= "string" or k == "" or #k > 1024 then
    return common.bad(MOD, "BadKey", "key must be a string of 1..1024 bytes")
  end
  if id == nil then id = "" end
  if type(id) ~= "string" or #id > 1024 then return common.bad(MOD, "BadKey", "id must be a string of at most 1024 bytes") end
  local n, msg, code = self:_month_checked(ts)
  if not n then return nil, msg, code end
  return self:_table(n), { { "key", k }, { "ts", ts }, { "id", id } }
end

--- p:put(key, ts, id, columns) -> true | nil, msg, code
function P:put(k, ts, id, columns)
  local t, pk, code = self:_row(k, ts, id)
  if not t then return nil, pk, code end
  return common.put_row(self, t, pk, columns)
end

--- p:put_many{ {key, ts, id, columns}, ... } -> true | nil, msg, code, nfailed
-- Every row is checked (months included) before anything is written.
function P:put_many(list)
  if type(list) ~= "table" then raise("put_many expects a list") end
  local rows = {}
  for i, r in ipairs(list) do
    if type(r) ~= "table" then return common.bad(MOD, "BadKey", "row %d is not a table", i) end
    local t, pk, code = self:_row(r[1], r[2], r[3])
    if not t then return nil, ("row %d: %s"):format(i, pk), code end
    rows[i] = { table = t, row = { type = "PUT", primary_key = pk, columns = r[4] or {} } }
  end
  return common.write_batches(self.acc, rows)
end

--- p:read{ key, from, to, limit = 100, cursor, order = "desc", columns }
-- -> rows, cursor: the rows of key with from <= ts < to (nil bounds: the
-- first / last configured month), across month tables, newest first
-- (order = "asc": oldest first). Pass the same query with the cursor.
function P:read(q)
  if type(q) ~= "table" then raise("read expects a query table") end
  local values = require "otskit.values"
  local INF_MIN, INF_MAX = values.INF_MIN, values.INF_MAX
  local k = q.key
  if type(k) ~= "string" or k == "" or #k > 1024 then return common.bad(MOD, "BadKey", "key must be a string of 1..1024 bytes") end
  local from, to = q.from, q.to
  if from ~= nil and not common.is_int(from) then return common.bad(MOD, "BadRange", "from must be an integer") end
  if to ~= nil and not common.is_int(to) then return common.bad(MOD, "BadRange", "to must be an integer") end
  if from and to and from >= to then return common.bad(MOD, "BadRange", "empty range: from >= to") end
  local m1, m2 = self.first, self.last
  if from then
    local n, msg, code = self:_month_checked(from)
    if not n then return nil, msg, code end
    m1 = n
  end
  if to then
    local n, msg, code = self:_month_checked(to - 1)
    if not n then return nil, msg, code end
    m2 = n
  end
  local desc = q.order == nil or q.order == "desc"
  if not desc and q.order ~= "asc" then return common.bad(MOD, "BadRange", "order must be \"asc\" or \"desc\"") end
  local limit, lm, lc = common.check_limit(MOD, q.limit)
  if not limit then return nil, lm, lc end
  local dok, dm, dc = common.check_deadline(MOD, q.deadline)
  if not dok then return nil, dm, dc end
  -- a cursor is bound to the key and range it was made for (BadCursor otherwise)
  local bound = ("key=%s,from=%s,to=%s"):format(require("otskit.hash").xxh3(k, true),
    from and ("%.0f"):format(from) or "", to and ("%.0f"):format(to) or "")
  local inner, cm, cc
  if q.cursor ~= nil then
    inner, cm, cc = common.unwrap_cursor(MOD, self.tag, q.cursor, bound)
    if not inner then return nil, cm, cc end
  end
  local months = {}
  for n = m1, m2 do months[#months + 1] = n end
  local lo, hi = from or INF_MIN, to or INF_MAX
  local db = self.acc.db
  local rows, cursor, code = common.range_read(self.acc, {
    sources = months, keycols = { 2, 3 }, direction = desc and "BACKWARD" or "FORWARD",
    table_of = function(n) return self:_table(n) end,
    start = function() if desc then return { k, hi, INF_MIN } end return { k, lo, INF_MIN } end,
    stop = function() if desc then return { k, lo, INF_MIN } end return { k, hi, INF_MIN } end,
    resume = function(_, v)
      if (to and v[1] >= to) or (from and v[1] < from) then return nil end
      return { k, v[1], v[2] }
    end,
    get_range = function(req) return db:get_range(req) end,
    map = function(row, n)
      local pk = row.primary_key
      return { key = k, ts = pk[2][2], id = pk[3][2], month = month_text(n), columns = row.columns }
    end,
    limit = limit, cursor = inner, secret = self.secret and (self.secret .. "\0" .. bound),
    parallel = self.parallel, columns = q.columns, deadline = q.deadline })
  if not rows then return nil, cursor, code end
  return rows, common.wrap_cursor(self.tag, cursor, bound)
end

return M
