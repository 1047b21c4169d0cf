--- gateway.bucket -- the internal location /_bucket: one GetRange over one
-- bucket of one series, from this worker's store connection. The parent
-- request reaches it with ngx.location.capture (a non-blocking
-- subrequest), one per bucket, from ngx.thread.spawn threads.
--
-- Reply: 200 and key.pack{"ok", next ts | null, ts1, v1, ts2, v2, ...},
-- or 503 and key.pack{"err", code, message} for a store error (an
-- injected fault, a lock held by another worker). The tuple codec carries
-- any bytes and both number types, and is a C (FFI) call each way.
--
-- Injected for tests and benches (POST /_admin/faults): a latency slept
-- with ngx.sleep before each read, and faults by the store's own fault
-- injection (retryable codes only) on reads and batch writes.
local key = require "otskit.key"
local series = require "gateway.series"

local bucket = {}

local fault_version = -1

-- Applies the shared fault settings to this worker's store when changed.
local function sync_faults(dict)
  local v = dict:get("fault_version") or 0
  if v == fault_version then return end
  fault_version = v
  local rate = dict:get("fault_rate") or 0
  if rate > 0 then
    series.db():inject { rate = rate, code = dict:get("fault_code") or "OTSServerBusy",
                         seed = ngx.worker.pid() * 1000 + v,
                         ops = { "get_range", "batch_write_row" } }
  else
    series.db():inject(nil)
  end
end
bucket.sync_faults = sync_faults

local function num(v)
  v = tonumber(v)
  if v and v == math.floor(v) then return v end
  return nil
end

function bucket.handle()
  local dict = ngx.shared.otskit_gw
  sync_faults(dict)
  local lat = dict:get("latency")
  if lat and lat > 0 then ngx.sleep(lat) end
  local a = ngx.req.get_uri_args()
  local b, start, stop, want = num(a.b), num(a.start), num(a.stop), num(a.want)
  local res, msg, code
  if not (b and start and stop and want and type(a.id) == "string") then
    msg, code = "bad bucket read arguments", "OTSParameterInvalid"
  else
    res, msg, code = series.db():get_range {
      table = "series", start = { b, a.id, start }, stop = { b, a.id, stop },
      direction = a.dir, limit = want, columns = { "v" } }
  end
  if not res then
    ngx.status = 503
    ngx.print(key.pack { "err", tostring(code), tostring(msg) })
    return ngx.exit(503)
  end
  local nk = res.next_start_primary_key
  local out = { "ok", nk and nk[3][2] or key.null }
  local n = 2
  for _, row in ipairs(res.rows) do
    local v = row.columns.v
    if v == nil then v = key.null end
    out[n + 1], out[n + 2] = row.primary_key[3][2], v
    n = n + 2
  end
  out.n = n
  ngx.print(key.pack(out))
end

--- handle_range (the internal location /_range, for gateway.events)
function bucket.handle_range()
  local dict = ngx.shared.otskit_gw
  sync_faults(dict)
  local lat = dict:get("latency")
  if lat and lat > 0 then ngx.sleep(lat) end
  return require("gateway.events").serve_range(series.db())
end

return bucket
