--- gateway.events -- an event stream over otskit.patterns.timeseries:
-- table "events", primary key (bucket, ts, id), all ids in one time order
-- (newest first), where /series keeps one series per id. The pattern does
-- the bucketing, fan-out, merge, cursors and retries; this module only
-- plugs in how one bucket page is read (its get_range hook): an nginx
-- subrequest to the internal location /_range, so the 16 reads of a page
-- run in parallel (ngx.thread.spawn inside merge) and wait without
-- blocking the worker.
local key = require "otskit.key"
local store = require "otskit.store"
local timeseries = require "otskit.patterns.timeseries"

local events = {}

local ts_series

-- INF_MIN / INF_MAX travel as false / true (no key column is a boolean).
local function enc(v)
  if type(v) == "table" and v[2] ~= nil then v = v[2] end   -- {name, value}
  if v == store.INF_MIN then return false end
  if v == store.INF_MAX then return true end
  return v
end
local function dec(v)
  if v == false then return store.INF_MIN end
  if v == true then return store.INF_MAX end
  return v
end

-- get_range hook: one page of one bucket through /_range.
local function range_via_subrequest(req)
  local s, e = req.start, req.stop
  local body = key.pack { req.table, req.direction, req.limit or 5000,
                          enc(s[1]), enc(s[2]), enc(s[3]), enc(e[1]), enc(e[2]), enc(e[3]) }
  local res = ngx.location.capture("/_range", { method = ngx.HTTP_POST, body = body })
  local t = key.unpack(res.body or "")
  if res.status == 200 and t and t[1] == "ok" then
    local rows = {}
    for j = 6, #t, 4 do
      local v = t[j + 3]
      rows[#rows + 1] = { primary_key = { { "bucket", t[j] }, { "ts", t[j + 1] }, { "id", t[j + 2] } },
                          columns = { v = v ~= key.null and v or nil } }
    end
    local nk
    if t[2] ~= key.null then nk = { t[3], t[4], t[5] } end
    return { rows = rows, next_start_primary_key = nk }
  end
  if t and t[1] == "err" then return nil, t[3], t[2] end
  return nil, "range read failed: HTTP " .. tostring(res.status), "OTSInternalServerError"
end

--- open(cfg, db, retry_opts) (init_worker)
function events.open(cfg, db, ropts)
  ts_series = timeseries.new { store = db, table = "events", buckets = cfg.buckets,
    secret = cfg.secret, retry = ropts, get_range = range_via_subrequest, parallel = "ngx" }
end

--- create(db) (setup, before nginx starts)
function events.create(db)
  return timeseries.new { store = db, table = "events" }:create()
end

function events.read(q) return ts_series:read(q) end
function events.put_many(points) return ts_series:put_many(points) end

--- serve_range (the internal location /_range): db:get_range of the
-- request packed by range_via_subrequest, answered packed:
-- {"ok", has_next, nb, nts, nid, b1, ts1, id1, v1, ...} or {"err", code, msg}.
function events.serve_range(db)
  ngx.req.read_body()
  local t = key.unpack(ngx.req.get_body_data() or "")
  local res, msg, code
  if not t or #t < 9 then
    msg, code = "bad range request", "OTSParameterInvalid"
  else
    res, msg, code = db:get_range { table = t[1], direction = t[2], limit = t[3],
      start = { dec(t[4]), dec(t[5]), dec(t[6]) }, stop = { dec(t[7]), dec(t[8]), dec(t[9]) } }
  end
  if not res then
    ngx.status = 503
    ngx.print(key.pack { "err", tostring(code), tostring(msg) })
    return ngx.exit(503)
  end
  local nk = res.next_start_primary_key
  local out = { "ok", nk and true or key.null, nk and nk[1][2] or key.null,
                nk and nk[2][2] or key.null, nk and nk[3][2] or key.null }
  local n = 5
  for _, row in ipairs(res.rows) do
    local pk, v = row.primary_key, row.columns.v
    if v == nil then v = key.null end
    out[n + 1], out[n + 2], out[n + 3], out[n + 4] = pk[1][2], pk[2][2], pk[3][2], v
    n = n + 4
  end
  out.n = n
  ngx.print(key.pack(out))
end

return events
