-- examples/timeseries.lua -- a bucketed time series on the embedded store:
-- one sensor reading per second for an hour, spread over 16 buckets, read
-- back newest first a page at a time.
-- Run from a checkout after `make`: sh examples/run.sh timeseries
local store = require "otskit.store"
local timeseries = require "otskit.patterns.timeseries"

local now = 0
local db = assert(store.open { clock = function() return now end, partition = { window = 60 } })
local s = timeseries.new { store = db, table = "readings", buckets = 16,
                           secret = "example secret of 16+ bytes" }
assert(s:create())

local t0, points = 1700000000, {}
for i = 0, 3599 do points[#points + 1] = { t0 + i, "sensor-1", { celsius = 20 + (i % 50) / 10 } } end
for i = 1, #points, 200 do
  now = now + 60 -- one batch a minute of simulated time
  local chunk = {}
  for j = i, math.min(i + 199, #points) do chunk[#chunk + 1] = points[j] end
  assert(s:put_many(chunk))
end

local hs = db:hotspots("readings")
print(("writes: %d over %d partitions, hottest took %.1f%%"):format(hs.writes, hs.partitions, 100 * hs.share))

local rows, cursor = assert(s:read { from = t0 + 600, to = t0 + 1200, limit = 5 })
for _, r in ipairs(rows) do print(r.ts, r.id, r.bucket, r.columns.celsius) end
rows = assert(s:read { from = t0 + 600, to = t0 + 1200, limit = 5, cursor = cursor })
print("next page starts at", rows[1].ts)
print(("requests %d, rows read %d, retries %d"):format(s.stats.requests, s.stats.rows_read, s.stats.retries))
