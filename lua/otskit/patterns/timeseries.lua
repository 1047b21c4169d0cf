--- otskit.patterns.timeseries -- a bucketed time series (best practices:
-- "ts mod 16 as the first key column, time second").
--
-- Table: primary key (bucket INTEGER, ts INTEGER, id STRING). A point's
-- bucket is ts mod N, so consecutive writes go to N partition-key values
-- instead of the tail of the key space. When many writers share one
-- timestamp (10 000 devices reporting every second), ts mod N sends all
-- of a second's writes to one bucket: by = "id" buckets by hash(id) mod N
-- instead (by = "hash": hash(ts, id) mod N). A read of
-- a time range fans out to every bucket (one BACKWARD get_range each,
-- in parallel inside OpenResty), merges them newest-first in C
-- (otskit.merge) and returns pages with an opaque cursor (HMAC-signed when
-- a secret is given). Every store request is retried through
-- otskit.retry with the Tablestore classification.
--
--   local ts = require "otskit.patterns.timeseries"
--   local s = ts.new{ store = db, table = "metrics", buckets = 16,
--                     secret = "at least 16 bytes", retry = {...},
--                     get_range = fn, parallel = ..., by = "mod" | "id" | "hash" }
--   s:create()                             -> true | nil, msg, code
--   s:put(ts, id, columns)                 -> true | nil, msg, code
--   s:put_many{ {ts, id, columns}, ... }   -> true | nil, msg, code, nfailed
--   s:read{ from = t0, to = t1, limit = 100, cursor = c, columns = {...} }
--     -> points, cursor    points newest first: { ts, id, bucket, columns }
--     -> nil, msg, code    BadRange, BadCursor, or the store's code
--   s:bucket(ts, id)       -> the bucket a point is written to
--   s.stats                -> requests, retries, rows_read, rows_written, failed
--
-- get_range (optional): function(req, bucket) -> page | nil, msg, code,
-- how one page of one bucket is read; req is a db:get_range request and
-- page its response ({ rows, next_start_primary_key }). The default calls
-- store:get_range(req). Swap it to read buckets another way (a cache,
-- another transport). req.start / req.stop are
-- {bucket, ts, id} lists whose ts / id may be store.INF_MIN / INF_MAX;
-- the page's next_start_primary_key comes back unchanged as the next
-- req.start of that bucket (any form your reader understands); rows need
-- primary_key = {{"bucket", b}, {"ts", ts}, {"id", id}} (as the store
-- returns it) and columns. Failures are returned
-- as nil, message, code and retried by the Tablestore classification.
-- `ts` values are integers within +-2^53; `id` a string of at most 1024
-- bytes (default "").
local key = require "otskit.key"
local common = require "otskit.patterns.common"

local M = {}
local MOD = "otskit.patterns.timeseries"

local TS = {}
TS.__index = TS

local function raise(msg) error(MOD .. ": " .. msg, 3) end

--- timeseries.new(opts) -> series (see the header). Raises on bad options.
function M.new(opts)
  common.preamble(MOD, opts, { call = "new", options = { "buckets", "by", "secret" }, parallel = true, get_range = true })
  local name = opts.table
  local n = opts.buckets or 16
  if not (common.is_int(n) and n >= 1 and n <= 1024) then raise("buckets must be an integer 1..1024") end
  local secret = opts.secret
  if secret ~= nil and (type(secret) ~= "string" or #secret < 16) then
    raise("secret must be a string of at least 16 bytes")
  end
  local by = opts.by or "mod"
  if by ~= "mod" and by ~= "hash" and by ~= "id" then raise("by must be \"mod\", \"hash\" or \"id\"") end
  local self = setmetatable({
    table = name, n = n, by = by, parallel = common.parallel_of(opts),
    buckets = key.buckets { n = n, by = by == "mod" and "mod" or "hash" },
    acc = common.access(opts, MOD), tag = "ts:" .. name,
  }, TS)
  self.secret = common.cursor_secret(secret, self.tag)
  self.stats = self.acc.stats
  local db = opts.store
  self.get_range = opts.get_range or function(req) return db:get_range(req) end
  return self
end

--- s:create([splits]) -> true | nil, msg, code: creates the table, split
-- at every bucket (one partition per bucket from the start) unless
-- splits = false.
function TS:create(splits)
  local sp
  if splits ~= false then
    sp = {}
    for b = 1, self.n - 1 do sp[b] = b end
  end
  local ok, msg, code = self.acc:store("create_table", { name = self.table,
    primary_key = { { "bucket", "INTEGER" }, { "ts", "INTEGER" }, { "id", "STRING" } },
    splits = sp }, "CreateTable")
  if not ok then return nil, msg, code end
  return true
end

local function check_point(ts, id)
  if not common.is_int(ts) then
    return common.bad(MOD, "BadKey", "ts must be an integer within +-2^53, got %s", tostring(ts))
  end
  if id == nil then id = "" end
  if type(id) ~= "string" then
    return common.bad(MOD, "BadKey", "id must be a string, got %s", type(id))
  end
  if #id > 1024 then return common.bad(MOD, "KeyTooLong", "id is %d bytes, over 1024", #id) end
  return id
end

--- s:bucket(ts, id) -> bucket number 0..N-1: ts mod N (by = "mod"),
-- md5(id) mod N (by = "id": a writer's points stay in one bucket, and
-- writers that share a timestamp spread over all of them) or
-- md5("ts,id") mod N (by = "hash").
function TS:bucket(ts, id)
  if self.by == "mod" then return self.buckets:of(ts) end
  if self.by == "id" then return self.buckets:of(id or "") end
  return self.buckets:of(("%.0f,%s"):format(ts, id or ""))
end

function TS:_pk(ts, id)
  return { { "bucket", self:bucket(ts, id) }, { "ts", ts }, { "id", id } }
end

--- s:put(ts, id, columns) -> true | nil, msg, code. Writes one point
-- (replacing a point with the same ts and id); retried as idempotent.
function TS:put(ts, id, columns)
  local idv, msg, code = check_point(ts, id)
  if not idv then return nil, msg, code end
  if columns ~= nil and type(columns) ~= "table" then
    return common.bad(MOD, "BadValue", "columns must be a table")
  end
  return common.put_row(self, self.table, self:_pk(ts, idv), columns)
end

--- s:put_many(points) -> true | nil, msg, code, nfailed. points: a list of
-- {ts, id, columns}; every point is checked before anything is written,
-- then sent in batches of at most 200 rows and 4 MB (approximately: the
-- store refuses bigger ones). Failed rows are retried alone; nfailed rows
-- that still failed are reported with the first failure's message/code.
function TS:put_many(points)
  if type(points) ~= "table" then raise("put_many expects a list of points") end
  local rows, slot = {}, {}
  for i, p in ipairs(points) do
    if type(p) ~= "table" then return common.bad(MOD, "BadKey", "point %d is not a table", i) end
    local idv, msg, code = check_point(p[1], p[2])
    if not idv then return nil, ("point %d: %s"):format(i, msg), code end
    local cols = p[3] or {}
    if type(cols) ~= "table" then return common.bad(MOD, "BadValue", "point %d: columns must be a table", i) end
    local row = { table = self.table, row = { type = "PUT", primary_key = self:_pk(p[1], idv), columns = cols } }
    local k = key.pack { p[1], idv }
    if slot[k] then rows[slot[k]] = row else rows[#rows + 1] = row; slot[k] = #rows end
  end
  return common.write_batches(self.acc, rows)
end

local INF_MIN, INF_MAX
local function infs()
  if not INF_MIN then
    local values = require "otskit.values"
    INF_MIN, INF_MAX = values.INF_MIN, values.INF_MAX
  end
end

--- s:read{ from, to, limit, cursor, columns } -> points, cursor
-- Points with from <= ts < to (either bound may be nil: open), newest
-- first (ties by id, descending), at most limit (default 100) per page;
-- cursor continues the read (nil when nothing is left). Pass the same
-- from/to with a cursor. Exactly the points in range, none twice, across
-- pages; each page reads at most about 2 x limit rows.
function TS:read(q)
  if type(q) ~= "table" then raise("read expects a query table") end
  infs()
  local from, to, limit = q.from, q.to, q.limit or 100
  if from ~= nil and not common.is_int(from) then return common.bad(MOD, "BadRange", "from must be an integer") end
  if to ~= nil and not common.is_int(to) then return common.bad(MOD, "BadRange", "to must be an integer") end
  if from and to and from >= to then
    return common.bad(MOD, "BadRange", "empty range: from %.0f >= to %.0f", from, to)
  end
  local lm, lmsg, lcode = common.check_limit(MOD, limit)
  if not lm then return nil, lmsg, lcode end
  local dok, dm, dc = common.check_deadline(MOD, q.deadline)
  if not dok then return nil, dm, dc end
  -- a cursor carries the range it was made for: another from/to is
  -- refused (BadCursor), never silently read from the wrong window; with
  -- a secret, the range is part of what is signed too
  local bound = ("from=%s,to=%s"):format(from and ("%.0f"):format(from) or "", to and ("%.0f"):format(to) or "")
  local inner, cmsg, ccode
  if q.cursor ~= nil then
    inner, cmsg, ccode = common.unwrap_cursor(MOD, self.tag, q.cursor, bound)
    if not inner then return nil, cmsg, ccode end
  end
  local top, bottom = to or INF_MAX, from or INF_MIN
  local rows, cursor, code = common.range_read(self.acc, {
    sources = self.buckets:all(), keycols = { 2, 3 }, direction = "BACKWARD",
    table_of = function() return self.table end,
    start = function(b) return { b, top, INF_MIN } end,
    stop = function(b) return { b, bottom, INF_MIN } end,
    resume = function(b, k)
      if (to and k[1] >= to) or (from and k[1] < from) then return nil end -- outside: from the top
      return { b, k[1], k[2] }
    end,
    get_range = self.get_range,
    map = function(row, b)
      local pk = row.primary_key
      return { ts = pk[2][2], id = pk[3][2], bucket = b, columns = row.columns }
    end,
    limit = limit, cursor = inner, secret = self.secret and (self.secret .. "\0" .. bound),
    parallel = self.parallel, columns = q.columns, deadline = q.deadline })
  if not rows then return nil, cursor, code end
  return rows, common.wrap_cursor(self.tag, cursor, bound)
end

return M
