--- gateway.series -- the bucketed time series and blobs behind the gateway,
-- composed from otskit.key (buckets, tuple keys), otskit.merge (fan-out
-- merge, signed cursors), otskit.retry (backoff, a retry budget shared by
-- all workers) and otskit.store (the embedded store).
--
-- Table "series": primary key (b INTEGER, id STRING, ts INTEGER), column
-- v. b = ts mod 16, so consecutive timestamps land in different buckets
-- (REFERENCE §1); a read asks every bucket, in parallel, and merges.
--
-- Where the data lives: each nginx worker is its own process, so each
-- opens its own SQLite connection to one file db under the nginx prefix
-- (run.sh creates it, with the tables, before nginx starts). SQLite locks
-- the file between processes; the store does not wait for a lock (no
-- busy timeout, which would block the worker), so a write that meets
-- another worker's lock fails with OTSInternalServerError and is retried
-- with backoff (ngx.sleep: the worker keeps serving meanwhile). Writes
-- here are idempotent (a PUT of the whole row), so retrying is safe.
local key = require "otskit.key"
local merge = require "otskit.merge"
local retry = require "otskit.retry"
local backoff = require "otskit.backoff"
local store = require "otskit.store"
local blob = require "otskit.blob"

local series = {}

local cfg, db, buckets, sources
local budget, budget_version

-- Retries inside a request: short delays (a page must stay fast), enough
-- attempts that 5 % injected faults never reach the client (0.05^8 per
-- bucket read), and a deadline. Throttling codes get a longer window.
series.backoff = { strategy = "full", base = 0.005, cap = 0.05, throttle_base = 0.02,
                   max_attempts = 8, deadline = 2 }

local function dict() return ngx.shared.otskit_gw end
local function count(name, n) dict():incr("n:" .. name, n or 1, 0) end

function series.db() return db end

-- The shared budget object; rebuilt when /_admin/budget changed the
-- capacity (the tokens themselves live in the shared dict).
local function get_budget()
  local v = dict():get("budget_version") or 0
  if budget == nil or v ~= budget_version then
    local cap = dict():get("budget_capacity") or 500
    budget = backoff.budget { dict = ngx.shared.otskit_budget, capacity = cap }
    budget_version = v
  end
  return budget
end

function series.reset_budget(cap)
  dict():set("budget_capacity", cap)
  ngx.shared.otskit_budget:set("otskit:retry-budget", cap)
  dict():incr("budget_version", 1, 0)
end

function series.budget_available() return get_budget():available() end

-- The shared budget as one object whose capacity follows /_admin/budget
-- (for code that keeps its retry options, like the timeseries pattern).
local budget_proxy = {
  acquire = function(_, ...) return get_budget():acquire(...) end,
  success = function(_, ...) return get_budget():success(...) end,
  available = function(_, ...) return get_budget():available(...) end,
  type = function() return "bucket" end,
}

local function retry_opts(op)
  return { op = op, idempotent = true, budget = get_budget(), backoff = series.backoff }
end

--- open(cfg) (init_worker): this worker's connection to the file db.
function series.open(c)
  cfg = c
  -- Both workers open the same WAL file at once: one may find it locked
  -- while the other recovers it (OTSServerBusy). Retry; init_worker may
  -- block briefly, no request is being served yet.
  local d, msg, code = retry.call(function() return store.open { path = cfg.db } end,
    { op = "DescribeTable", budget = false,
      backoff = { strategy = "full", base = 0.01, cap = 0.2, max_attempts = 30 } })
  if not d then error(("gateway: cannot open %s: %s (%s)"):format(cfg.db, tostring(msg), tostring(code))) end
  db = d
  buckets = key.buckets { n = cfg.buckets }
  sources = buckets:all()
  require("gateway.events").open(cfg, db, { budget = budget_proxy, backoff = series.backoff })
end

---------------------------------------------------------------------------
-- reads

-- Decodes a /_bucket reply: rows, next start ts (nil at the end).
local function decode_page(body)
  local t = key.unpack(body)
  if not t or t[1] ~= "ok" then return nil end
  local rows, nxt = {}, t[2]
  if nxt == key.null then nxt = nil end
  for j = 3, #t, 2 do
    local ts, v = t[j], t[j + 1]
    if v == key.null then v = nil end
    rows[#rows + 1] = { k = key.pack { ts }, ts = ts, v = v }
  end
  return rows, nxt
end

-- The ts a bucket read starts at (inclusive), from merge's `after`: nil
-- (the start of the range), our continuation (a ts) or a cursor resume.
local function start_of(q, after)
  if after == nil then return q.desc and q.to - 1 or q.from end
  if type(after) == "number" then return after end
  local ts = key.unpack(after.key)[1]
  if after.inclusive then return ts end
  return q.desc and ts - 1 or ts + 1
end

local function bucket_reader(q)
  local pid = ngx.worker.pid()
  return function(b, after, want)
    local start = start_of(q, after)
    if (q.desc and start < q.from) or (not q.desc and start >= q.to) then return {}, nil end
    local args = { b = b, id = q.id, start = start, stop = q.desc and q.from - 1 or q.to,
                   dir = q.desc and "BACKWARD" or "FORWARD", want = want }
    count("reads")
    local rows, nxt, code = retry.call(function(attempt)
      count("attempts")
      if attempt > 1 then count("retries:" .. pid) end
      local res = ngx.location.capture("/_bucket", { args = args })
      if res.status == 200 then
        local r, n = decode_page(res.body)
        if r then return r, n end
      end
      local t = res.status == 503 and key.unpack(res.body)
      if t and t[1] == "err" then return nil, { code = t[2], message = t[3] } end
      return nil, { code = "OTSInternalServerError", message = "bucket read failed: HTTP " .. res.status }
    end, retry_opts("GetRange"))
    if rows == nil then
      if code == "RetryBudgetExhausted" then count("budget_refused") end
      count("failed")
      return nil, nxt, code
    end
    return rows, nxt
  end
end

-- What a cursor is bound to: a cursor of another series, range or order
-- fails its HMAC check (merge.read's secret) and is refused.
local function bound_secret(q)
  return table.concat({ cfg.secret, q.id, ("%d"):format(q.from), ("%d"):format(q.to),
                        q.desc and "desc" or "asc" }, "\0")
end

--- read{ id, from, to, limit, order, cursor, parallel } -> page | nil, msg, code
-- page = { rows = {{ts, v}, ...}, cursor = next cursor or json null }.
-- Rows with from <= ts < to, newest first ("desc") or oldest first.
function series.read(q)
  q.desc = q.order == "desc"
  local rows, cursor, code = merge.read {
    sources = sources, fetch = bucket_reader(q), key = "k", limit = q.limit,
    order = q.desc and "desc" or "asc", cursor = q.cursor, secret = bound_secret(q),
    -- first fetches ask each bucket for about twice its share of a page
    -- (merge's default): with ts mod 16 buckets the rows of any time span
    -- are spread evenly, so one round of parallel reads fills a page; a
    -- skewed series takes a second round for the buckets that ran out.
    -- (first_rows = limit would guarantee one round at 16x the rows read.)
    parallel = q.parallel and "ngx" or false,
  }
  if not rows then return nil, cursor, code end
  local out = {}
  for i, r in ipairs(rows) do out[i] = { ts = r.ts, v = r.v } end
  local json = require "gateway.json"
  return { rows = json.array(out), cursor = cursor or json.null }
end

--- read_bucket(id, b, limit) -> rows | nil, msg, code: one bucket read of
-- the newest rows, the way a page's fan-out reads each bucket (the bench's
-- "one bucket read" baseline).
function series.read_bucket(id, b, limit)
  local q = { id = id, from = 0, to = 2 ^ 53 - 1, desc = true }
  return bucket_reader(q)(b, nil, limit)
end

---------------------------------------------------------------------------
-- writes

local function send_series(batch)
  local res, msg, code = db:batch_write_row { tables = { { table = "series", rows = batch } } }
  count("write_attempts")
  if not res then return nil, { code = code, message = msg } end
  return res.tables[1].rows
end

--- write(id, points) -> { written = n } | nil, msg, code. Points with the
-- same ts: the last one wins (a batch may not hold a row twice).
function series.write(id, pts)
  local at, rows = {}, {}
  for _, p in ipairs(pts) do
    local row = { type = "PUT", primary_key = { buckets:of(p.ts), id, p.ts }, columns = { v = p.v } }
    if at[p.ts] then rows[at[p.ts]] = row else rows[#rows + 1] = row; at[p.ts] = #rows end
  end
  local written = 0
  for i = 1, #rows, 200 do
    local batch = {}
    for j = i, math.min(#rows, i + 199) do batch[#batch + 1] = rows[j] end
    local results, nfailed = retry.batch_write(send_series, batch, retry_opts("BatchWriteRow"))
    if nfailed > 0 then
      for _, r in ipairs(results) do
        if r ~= true then
          local code = type(r) == "table" and r.code or tostring(r)
          local msg = type(r) == "table" and r.message or tostring(r)
          local left = nfailed + (#rows - (i - 1) - #batch)
          return nil, ("%d of %d points not written (%s); %d written"):format(
            left, #rows, msg, written + #batch - nfailed), code
        end
      end
    end
    written = written + #batch
  end
  return { written = written, rows = #rows }
end

---------------------------------------------------------------------------
-- blobs: table "blobs", primary key (id STRING); the value compressed
-- into a frame, split over columns body_0 .. body_N-1 and the manifest in
-- column body, written last (the commit point).

local CHUNK = 64 * 1024

local function call(fn, op)
  return retry.call(fn, retry_opts(op))
end

--- blob_put(id, value) -> { bytes, stored, chunks, codec } | nil, msg, code
function series.blob_put(id, value)
  local frame = assert(blob.pack(value))
  local cur, msg, code = call(function() return db:get_row { table = "blobs", primary_key = { id } } end, "GetRow")
  if not cur then return nil, msg, code end
  local prev = cur.row and cur.row.columns.body or nil   -- the manifest it replaces
  local parts = blob.split(frame, { name = "body", key = id, chunk_size = CHUNK })
  local plan, pmsg, pcode = blob.plan(parts, { previous = prev })
  if not plan then return nil, pmsg, pcode end
  for _, req in ipairs(plan.requests) do
    for _, row in ipairs(req.rows) do
      local put = {}
      for _, c in ipairs(row.columns) do put[c[1]] = store.binary(c[2]) end
      local ok, m, c = call(function()
        return db:update_row { table = "blobs", primary_key = { id }, update = { PUT = put } }
      end, "UpdateRow")
      if not ok then return nil, m, c end
    end
  end
  local stale = {}
  for _, c in ipairs(plan.cleanup) do stale[#stale + 1] = c.column end
  if #stale > 0 then
    call(function()
      return db:update_row { table = "blobs", primary_key = { id }, update = { DELETE_ALL = stale } }
    end, "UpdateRow")
  end
  return { bytes = #value, stored = #frame, chunks = parts.count, codec = blob.info(frame).codec }
end

--- blob_get(id) -> value | nil, msg, code ("NotFound", or the blob codes)
function series.blob_get(id)
  local res, msg, code = call(function() return db:get_row { table = "blobs", primary_key = { id } } end, "GetRow")
  if not res then return nil, msg, code end
  if not res.row then return nil, "no blob " .. id, "NotFound" end
  local manifest, chunks = blob.from_columns(res.row.columns, "body")
  if not manifest then return nil, chunks, "NotFound" end
  local frame, jmsg, jcode = blob.join(manifest, chunks)
  if not frame then return nil, jmsg, jcode end
  return blob.unpack(frame)
end

return series
