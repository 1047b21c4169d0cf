--- gateway.events -- an event stream over otskit.patterns.timeseries:
-- table "events", primary key (bucket, ts, id), all ids in one time order
-- (newest first), where /series keeps one series per id. The pattern's
-- store is the worker's otskit.client, so the pattern also takes it as its
-- `parallel`: a page's 16 bucket reads go out in one capture_multi. The
-- client retries (shared budget); the pattern makes one attempt per call,
-- so a failure is never retried twice over.
local timeseries = require "otskit.patterns.timeseries"

local events = {}

events.TABLE = "events"

local ts_series

--- open(cfg, client) (init_worker)
function events.open(cfg, client)
  ts_series = timeseries.new { store = client, table = events.TABLE, buckets = cfg.buckets,
    secret = cfg.secret, retry = { backoff = { max_attempts = 1 }, budget = false } }
end

--- create(store) (setup.lua): the pattern's table, pre-split at every bucket
function events.create(store)
  return timeseries.new { store = store, table = events.TABLE }:create()
end

function events.read(q) return ts_series:read(q) end
function events.put_many(points) return ts_series:put_many(points) end

return events
