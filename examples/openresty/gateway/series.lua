--- gateway.series -- the bucketed time series behind /series, composed
-- from otskit.key (buckets, tuple keys), otskit.merge (fan-out merge,
-- signed cursors) and the worker's otskit.client (gateway.db: retries
-- under the shared budget).
--
-- Table "series": primary key (b INTEGER, id STRING, ts INTEGER), column
-- v. b = ts mod 16, so consecutive timestamps land in different buckets
-- (a first key column that only rises would send every write to one
-- partition); a read asks every bucket and merges. With the client as
-- merge.read's `parallel`, the bucket reads of one round go out together:
-- one ngx.location.capture_multi to the service.
local key = require "otskit.key"
local merge = require "otskit.merge"
local gwdb = require "gateway.db"

local series = {}

local cfg, buckets, sources

--- open(cfg) (init_worker, after gateway.db.open)
function series.open(c)
  cfg = c
  buckets = key.buckets { n = cfg.buckets }
  sources = buckets:all()
end

---------------------------------------------------------------------------
-- reads

-- The ts a bucket read starts at (inclusive) for merge's `after`: nil
-- (the start of the range) or a cursor resume; a continuation is the
-- page's next_start_primary_key, used as it is.
local function start_ts(q, after)
  if after == nil then return q.desc and q.to - 1 or q.from end
  local ts = key.unpack(after.key)[1]
  if after.inclusive then return ts end
  return q.desc and ts - 1 or ts + 1
end

local function bucket_reader(q)
  local db = gwdb.client()
  return function(b, after, want)
    local start
    if after ~= nil and not after.resume then
      start = after
    else
      local ts = start_ts(q, after)
      if (q.desc and ts < q.from) or (not q.desc and ts >= q.to) then return {}, nil end
      start = { b, q.id, ts }
    end
    local page, msg, code = db:get_range { table = "series", start = start,
      stop = { b, q.id, q.desc and q.from - 1 or q.to }, direction = q.desc and "BACKWARD" or "FORWARD",
      limit = want, columns = { "v" } }
    if not page then return nil, msg, code end
    local rows = {}
    for i, row in ipairs(page.rows) do
      local ts = row.primary_key[3][2]
      rows[i] = { k = key.pack { ts }, ts = ts, v = row.columns.v }
    end
    return rows, page.next_start_primary_key
  end
end

-- What a cursor is bound to: a cursor of another series, range or order
-- fails its HMAC check (merge.read's secret) and is refused.
local function bound_secret(q)
  return table.concat({ cfg.secret, q.id, ("%d"):format(q.from), ("%d"):format(q.to),
                        q.desc and "desc" or "asc" }, "\0")
end

--- read{ id, from, to, limit, order, cursor, parallel } -> rows, cursor |
-- nil, msg, code. rows = {{ts, v}, ...} with from <= ts < to, newest
-- first ("desc") or oldest first; cursor nil on the last page.
function series.read(q)
  q.desc = q.order == "desc"
  local rows, cursor, code = merge.read {
    sources = sources, fetch = bucket_reader(q), key = "k", limit = q.limit,
    order = q.desc and "desc" or "asc", cursor = q.cursor, secret = bound_secret(q),
    -- first fetches ask each bucket for about twice its share of a page
    -- (merge's default): with ts mod 16 buckets the rows of any time span
    -- are spread evenly, so one round of parallel reads fills a page; a
    -- skewed series takes a second round for the buckets that ran out.
    parallel = q.parallel and gwdb.client() or false,
  }
  if not rows then return nil, cursor, code end
  for _, r in ipairs(rows) do r.k = nil end
  return rows, cursor
end

--- read_bucket(id, b, limit) -> rows | nil, msg, code: one bucket read of
-- the newest rows, as a page's fan-out reads each bucket (the bench's
-- "one bucket read" baseline).
function series.read_bucket(id, b, limit)
  local q = { id = id, from = 0, to = 2 ^ 53 - 1, desc = true }
  return bucket_reader(q)(b, nil, limit)
end

---------------------------------------------------------------------------
-- writes

--- write(id, points) -> { written = n, rows = m } | nil, msg, code.
-- Points with the same ts: the last one wins (a batch may not hold a row
-- twice). Batches of 200 rows; the client resends only rows that failed
-- with a retryable code.
function series.write(id, pts)
  local db = gwdb.client()
  local at, rows = {}, {}
  for _, p in ipairs(pts) do
    local row = { type = "PUT", primary_key = { buckets:of(p.ts), id, p.ts }, columns = { v = p.v } }
    if at[p.ts] then rows[at[p.ts]] = row else rows[#rows + 1] = row; at[p.ts] = #rows end
  end
  local written = 0
  for i = 1, #rows, 200 do
    local batch = {}
    for j = i, math.min(#rows, i + 199) do batch[#batch + 1] = rows[j] end
    local res, msg, code = db:batch_write_row { tables = { { table = "series", rows = batch } } }
    if not res then
      return nil, ("%d of %d points not written (%s); %d written"):format(#rows - written, #rows, msg, written), code
    end
    if res.failed > 0 then
      for _, r in ipairs(res.tables[1].rows) do
        if not r.ok then
          return nil, ("%d of %d points not written (%s); %d written"):format(
            #rows - written - #batch + res.failed, #rows, tostring(r.message), written + #batch - res.failed), r.code
        end
      end
    end
    written = written + #batch
  end
  return { written = written, rows = #rows }
end

return series
