--- gateway.app -- the otskit gateway example: routes, input checks and
-- JSON replies, in front of Tablestore (or `otskit serve`). Every worker
-- talks to the service through its own otskit.client (gateway.db);
-- /series is gateway.series, /events gateway.events, /blobs
-- gateway.blobs, /counters gateway.counter.
--
--   GET  /series/{id}?from&to&limit&cursor&order   one page, merged from 16 buckets
--   POST /series/{id}   {"points": [{"ts": 1700000000000, "v": 1.5}, ...]}
--   GET  /blobs/{id}    a value stored compressed, in chunks
--   POST /blobs/{id}    (body: the value)
--   GET  /counters/{id}; POST /counters/{id}?by=n | ?mode=cas
--   GET  /healthz
--
-- Bad input gets a 4xx with {"error": "...", "code": "..."}; nothing a
-- client sends may turn into a 500 (spec/openresty checks the error log).
local json = require "gateway.json"
local backoff = require "otskit.backoff"
local gwdb = require "gateway.db"

local app = {}

-- Settings; init() runs in the nginx master, so every worker forks with them.
local cfg = { buckets = 16, max_limit = 1000, default_limit = 100, max_points = 1000,
              max_id = 64 }
app.cfg = cfg

local function urandom(n)
  local f = assert(io.open("/dev/urandom", "rb"))
  local s = f:read(n)
  f:close()
  return s
end

-- The shared dicts the gateway needs: without one, nginx must refuse to
-- start (naming the directive), not answer every request with a 500.
app.SHARED_DICTS = { { "otskit_budget", "1m" }, { "otskit_gw", "4m" } }

--- init{ endpoint, instance, access_key_id, access_key_secret, location,
-- buckets } (init_by_lua): the service, settings and the cursor secret.
-- The secret is drawn here, before the fork, because a cursor one worker
-- signs must be accepted by every other worker. The keys, when not given,
-- come from the environment variables OTSKIT_ACCESS_KEY_ID and
-- OTSKIT_ACCESS_KEY_SECRET, which nginx.conf must then pass on with
-- `env OTSKIT_ACCESS_KEY_ID; env OTSKIT_ACCESS_KEY_SECRET;` (nginx clears
-- every other variable). location: the internal location that
-- proxy_passes to the service (default /_otskit).
function app.init(opts)
  for _, d in ipairs(app.SHARED_DICTS) do
    if not ngx.shared[d[1]] then
      error(("otskit gateway: nginx.conf has no shared dict %s: add `lua_shared_dict %s %s;` to its http block")
        :format(d[1], d[1], d[2]), 0)
    end
  end
  local known = { endpoint = true, instance = true, access_key_id = true, access_key_secret = true,
                  location = true, buckets = true }
  for k in pairs(opts) do
    if not known[k] then error("otskit gateway: init: unknown option " .. tostring(k), 0) end
  end
  local env = { access_key_id = "OTSKIT_ACCESS_KEY_ID", access_key_secret = "OTSKIT_ACCESS_KEY_SECRET" }
  for _, k in ipairs { "endpoint", "instance", "access_key_id", "access_key_secret" } do
    local v = opts[k]
    if v == nil and env[k] then v = os.getenv(env[k]) end
    if type(v) ~= "string" or v == "" then
      error(("otskit gateway: init: %s is required%s"):format(k, env[k]
        and (" (or the environment variable " .. env[k] .. ", passed on by nginx.conf's `env " .. env[k] .. ";`)")
        or ""), 0)
    end
    cfg[k] = v
  end
  cfg.location = opts.location
  cfg.buckets = opts.buckets or cfg.buckets
  local nb = cfg.buckets
  if type(nb) ~= "number" or nb ~= math.floor(nb) or nb < 1 or nb > 1024 then
    error("otskit gateway: init: buckets must be an integer 1..1024", 0)
  end
  local ok, err = gwdb.check(cfg)
  if not ok then error("otskit gateway: init: " .. err, 0) end
  cfg.secret = urandom(32)
  -- load the modules before the fork (shared pages, errors at startup)
  require "otskit.key"
  require "otskit.merge"
  require "otskit.client"
  require "otskit.blob"
  require "otskit.patterns.timeseries"
  require "gateway.series"
  require "gateway.events"
  require "gateway.blobs"
  require "gateway.counter"
end

--- init_worker (each worker, after the fork): this worker's client, and
-- the first delays of a fresh retry schedule, recorded so the test can
-- check that no two workers share a jitter sequence (schedules are seeded
-- from getrandom when created).
function app.init_worker()
  local client = gwdb.open(cfg)
  require("gateway.series").open(cfg)
  require("gateway.events").open(cfg, client)
  local s = backoff.new { strategy = "full", base = 1, cap = 1, max_attempts = 0 }
  local d = {}
  for i = 1, 8 do d[i] = ("%.17g"):format(s:next()) end
  local dict = ngx.shared.otskit_gw
  dict:set("jitter:" .. ngx.worker.pid(), table.concat(d, ","))
end

---------------------------------------------------------------------------
-- replies

-- Every reply names the worker that served it (X-Worker-Pid): the tests
-- use it to make sure both workers took part.
local function reply(status, body)
  gwdb.publish()
  ngx.status = status
  ngx.header["Content-Type"] = "application/json"
  ngx.header["X-Worker-Pid"] = ngx.worker.pid()
  ngx.say(json.encode(body))
  return ngx.exit(status)
end
app.reply = reply

local function fail(status, code, message)
  return reply(status, { error = message, code = code })
end
app.fail = fail

-- A request the service did not carry out (after the client's retries).
local function store_fail(msg, code)
  local d = ngx.shared.otskit_gw
  d:incr("n:failed", 1, 0)
  if code == "RetryBudgetExhausted" then
    d:incr("n:budget_refused", 1, 0)
    return fail(503, code, "retry budget exhausted: the store is failing and this gateway stopped retrying; try later")
  end
  return fail(503, code or "Unavailable", msg)
end

local HTTP_CODES = { [400] = "BadRequest", [403] = "Forbidden", [404] = "NotFound",
                     [405] = "MethodNotAllowed", [414] = "URITooLong",
                     [501] = "MethodNotAllowed", [505] = "HTTPVersionNotSupported",
                     [494] = "RequestHeaderTooLarge", [500] = "InternalError",
                     [502] = "BadGateway", [503] = "Unavailable", [504] = "Timeout" }

--- http_error (error_page of nginx's own errors): the same JSON shape.
function app.http_error()
  local st = tonumber(ngx.var.uri:match("^/_error/(%d+)$"))
  if not HTTP_CODES[st] then st = 500 end
  -- 494 is nginx's internal code for a header too large: the client sees 400
  -- 494 is nginx's internal code for a header too large, 505 an HTTP
  -- version it does not speak: the client sees 400; 501 (a method nginx
  -- does not know) is 405 as for any other method
  local out = (st == 494 or st == 505) and 400 or st == 501 and 405 or st
  return fail(out, HTTP_CODES[st], "HTTP " .. st .. " (refused by nginx)")
end

function app.too_large()
  return fail(413, "RequestBodyTooLarge", "request body over the 2 MB limit")
end

---------------------------------------------------------------------------
-- input checks

local function check_id(id)
  if #id < 1 or #id > cfg.max_id or not id:match("^[%w_%-]+$") then
    return nil, ("id must be 1..%d characters of [A-Za-z0-9_-]"):format(cfg.max_id)
  end
  return id
end

-- an integer query argument within [lo, hi], or def when absent
local function int_arg(args, name, lo, hi, def)
  local v = args[name]
  if v == nil then
    if def ~= nil then return def end
    return nil, name .. " is required"
  end
  if type(v) ~= "string" or not v:match("^%-?%d+$") or #v > 16 then
    return nil, ("%s must be an integer"):format(name)
  end
  local n = tonumber(v)
  if n < lo or n > hi then return nil, ("%s must be %d..%d"):format(name, lo, hi) end
  return n
end

local MAX_TS = 2 ^ 53 - 2

-- whether s is well-formed UTF-8 (no overlong forms, no surrogates, at
-- most U+10FFFF): the service stores STRING values as UTF-8 and refuses
-- the others, so the gateway answers them 400 itself
local function utf8_ok(s)
  if not s:find("[\128-\255]") then return true end
  local i, n, byte = 1, #s, string.byte
  while i <= n do
    local c = byte(s, i)
    if c < 0x80 then
      i = i + 1
    else
      local len
      if c >= 0xC2 and c <= 0xDF then len = 2
      elseif c >= 0xE0 and c <= 0xEF then len = 3
      elseif c >= 0xF0 and c <= 0xF4 then len = 4
      else return false end
      if i + len - 1 > n then return false end
      local c2 = byte(s, i + 1)
      if (c == 0xE0 and c2 < 0xA0) or (c == 0xED and c2 > 0x9F)
         or (c == 0xF0 and c2 < 0x90) or (c == 0xF4 and c2 > 0x8F) then
        return false
      end
      for j = i + 1, i + len - 1 do
        local b = byte(s, j)
        if b < 0x80 or b > 0xBF then return false end
      end
      i = i + len
    end
  end
  return true
end
app.utf8_ok = utf8_ok

local function series_get(id)
  local args, err = ngx.req.get_uri_args(32)
  if err == "truncated" then return fail(400, "BadRequest", "too many query arguments") end
  for k, v in pairs(args) do
    if type(v) == "table" then return fail(400, "BadRequest", "argument " .. k .. " given twice") end
  end
  local from, e1 = int_arg(args, "from", 0, MAX_TS, 0)
  if not from then return fail(400, "BadRequest", e1) end
  local to, e2 = int_arg(args, "to", 1, MAX_TS + 1, MAX_TS + 1)
  if not to then return fail(400, "BadRequest", e2) end
  if to <= from then return fail(400, "BadRequest", "to must be greater than from") end
  local limit, e3 = int_arg(args, "limit", 1, cfg.max_limit, cfg.default_limit)
  if not limit then return fail(400, "BadRequest", e3) end
  local order = args.order or "desc"
  if order ~= "asc" and order ~= "desc" then
    return fail(400, "BadRequest", "order must be asc or desc")
  end
  local cursor = args.cursor
  if cursor ~= nil and (type(cursor) ~= "string" or #cursor > 2048 or not cursor:match("^[%w_%-=]*$")) then
    return fail(400, "BadCursor", "cursor is not one this gateway issued")
  end
  local fanout = args.fanout or "parallel"
  if fanout ~= "parallel" and fanout ~= "sequential" then
    return fail(400, "BadRequest", "fanout must be parallel or sequential")
  end
  local rows, c, code = require("gateway.series").read {
    id = id, from = from, to = to, limit = limit, order = order, cursor = cursor,
    parallel = fanout == "parallel",
  }
  if not rows then
    if code == "BadCursor" then return fail(400, code, c) end
    return store_fail(c, code)
  end
  return reply(200, { rows = json.array(rows), cursor = c or json.null })
end

local function read_body()
  ngx.req.read_body()
  local body = ngx.req.get_body_data()
  if body == nil and ngx.req.get_body_file() then
    return nil, "request body too large"
  end
  return body or ""
end

local function series_post(id)
  local body, err = read_body()
  if not body then return fail(413, "RequestBodyTooLarge", err) end
  local doc, jerr = json.decode(body)
  if type(doc) ~= "table" or type(doc.points) ~= "table" then
    return fail(400, "BadRequest", "body must be JSON {\"points\": [{\"ts\": int, \"v\": number|string}, ...]}"
      .. (jerr and (" (" .. jerr .. ")") or ""))
  end
  local pts = doc.points
  if #pts < 1 or #pts > cfg.max_points then
    return fail(400, "BadRequest", ("1..%d points per request"):format(cfg.max_points))
  end
  for i = 1, #pts do
    local p = pts[i]
    if type(p) ~= "table" then return fail(400, "BadRequest", ("point %d is not an object"):format(i)) end
    local ts, v = p.ts, p.v
    if type(ts) ~= "number" or ts ~= math.floor(ts) or ts < 0 or ts > MAX_TS then
      return fail(400, "BadRequest", ("point %d: ts must be an integer 0..%d"):format(i, MAX_TS))
    end
    if type(v) ~= "number" and type(v) ~= "string" then
      return fail(400, "BadRequest", ("point %d: v must be a number or a string"):format(i))
    end
    if type(v) == "number" and (v ~= v or v == math.huge or v == -math.huge) then
      return fail(400, "BadRequest", ("point %d: v must be finite"):format(i))
    end
    if type(v) == "string" and not utf8_ok(v) then
      return fail(400, "BadRequest", ("point %d: v is not valid UTF-8"):format(i))
    end
    if type(v) == "string" and #v > 65536 then
      return fail(400, "BadRequest", ("point %d: v over 64 KB"):format(i))
    end
  end
  local res, msg, code = require("gateway.series").write(id, pts)
  if not res then return store_fail(msg, code) end
  return reply(200, res)
end

local function blob_get(id)
  local value, msg, code = require("gateway.blobs").get(id)
  if not value then
    if code == "NotFound" then return fail(404, code, msg) end
    return store_fail(msg, code)
  end
  gwdb.publish()
  ngx.header["Content-Type"] = "application/octet-stream"
  ngx.header["X-Worker-Pid"] = ngx.worker.pid()
  ngx.print(value)
  return ngx.exit(200)
end

local function blob_post(id)
  local body, err = read_body()
  if not body then return fail(413, "RequestBodyTooLarge", err) end
  local res, msg, code = require("gateway.blobs").put(id, body)
  if not res then return store_fail(msg, code) end
  return reply(200, res)
end

-- GET /events?from&to&limit&cursor: every id, newest first (the
-- timeseries pattern); POST /events {"events": [{"ts", "id", "v"}, ...]}
local function events_get()
  local args, err = ngx.req.get_uri_args(32)
  if err == "truncated" then return fail(400, "BadRequest", "too many query arguments") end
  for k, v in pairs(args) do
    if type(v) == "table" then return fail(400, "BadRequest", "argument " .. k .. " given twice") end
  end
  local from, e1 = int_arg(args, "from", 0, MAX_TS, false)
  if from == nil then return fail(400, "BadRequest", e1) end
  local to, e2 = int_arg(args, "to", 1, MAX_TS + 1, false)
  if to == nil then return fail(400, "BadRequest", e2) end
  local limit, e3 = int_arg(args, "limit", 1, cfg.max_limit, cfg.default_limit)
  if not limit then return fail(400, "BadRequest", e3) end
  local cursor = args.cursor
  if cursor ~= nil and (type(cursor) ~= "string" or #cursor > 2048) then
    return fail(400, "BadCursor", "cursor is not one this gateway issued")
  end
  local rows, c, code = require("gateway.events").read {
    from = from or nil, to = to or nil, limit = limit, cursor = cursor }
  if not rows then
    if code == "BadCursor" or code == "BadRange" then return fail(400, code, c) end
    return store_fail(c, code)
  end
  local out = {}
  for i, p in ipairs(rows) do out[i] = { ts = p.ts, id = p.id, v = p.columns.v } end
  return reply(200, { rows = json.array(out), cursor = c or json.null })
end

local function events_post()
  local body, err = read_body()
  if not body then return fail(413, "RequestBodyTooLarge", err) end
  local doc = json.decode(body)
  if type(doc) ~= "table" or type(doc.events) ~= "table" or #doc.events < 1
     or #doc.events > cfg.max_points then
    return fail(400, "BadRequest", ("body must be JSON {\"events\": [{\"ts\": int, \"id\": string, \"v\": number|string}, ...]} with 1..%d events"):format(cfg.max_points))
  end
  local pts = {}
  for i, e in ipairs(doc.events) do
    if type(e) ~= "table" or type(e.ts) ~= "number" or e.ts ~= math.floor(e.ts) or e.ts < 0
       or e.ts > MAX_TS then
      return fail(400, "BadRequest", ("event %d: ts must be an integer 0..%d"):format(i, MAX_TS))
    end
    if type(e.id) ~= "string" or not check_id(e.id) then
      return fail(400, "BadId", ("event %d: id must be 1..%d characters of [A-Za-z0-9_-]"):format(i, cfg.max_id))
    end
    if (type(e.v) ~= "number" and type(e.v) ~= "string") or e.v ~= e.v
       or e.v == math.huge or e.v == -math.huge or (type(e.v) == "string" and #e.v > 65536) then
      return fail(400, "BadRequest", ("event %d: v must be a finite number or a string up to 64 KB"):format(i))
    end
    if type(e.v) == "string" and not utf8_ok(e.v) then
      return fail(400, "BadRequest", ("event %d: v is not valid UTF-8"):format(i))
    end
    pts[#pts + 1] = { e.ts, e.id, { v = e.v } } -- put_many: the last of a repeated (ts, id) wins
  end
  local ok, msg, code = require("gateway.events").put_many(pts)
  if not ok then return store_fail(msg, code) end
  return reply(200, { events = #doc.events })
end

local function counter_get(id)
  local v, msg, code = require("gateway.counter").get(id)
  if not v then return store_fail(msg, code) end
  return reply(200, { id = id, n = v })
end

local function counter_post(id)
  local args, err = ngx.req.get_uri_args(4)
  if err == "truncated" then return fail(400, "BadRequest", "too many query arguments") end
  local c = require "gateway.counter"
  local v, msg, code
  if args.mode == "cas" then
    v, msg, code = c.cas(id)
  elseif args.mode == nil then
    local by, e = int_arg(args, "by", -1000000, 1000000, 1)
    if not by then return fail(400, "BadRequest", e) end
    v, msg, code = c.add(id, by)
  else
    return fail(400, "BadRequest", "mode must be cas (or absent)")
  end
  if not v then return store_fail(msg, code) end
  return reply(200, { id = id, n = v, conflicts = msg })
end

local routes = {
  counters = { GET = counter_get, POST = counter_post },
  series = { GET = series_get, POST = series_post },
  blobs = { GET = blob_get, POST = blob_post },
}

--- handle (content_by_lua of location /)
function app.handle()
  -- an HTTP/0.9 request can only be answered with a body: the JSON error,
  -- then the connection closes
  if ngx.req.http_version() == 0.9 then
    return fail(400, "BadRequest", "HTTP/0.9 is not supported: use HTTP/1.x")
  end
  if ngx.req.get_method() == "HEAD" then
    return fail(400, "BadRequest", "HEAD is not served: use GET")
  end
  local uri = ngx.var.uri
  if uri == "/healthz" then return reply(200, { ok = true, pid = ngx.worker.pid() }) end
  if uri == "/events" then
    local m = ngx.req.get_method()
    if m == "GET" then return events_get() end
    if m == "POST" then return events_post() end
    ngx.header["Allow"] = "GET, POST"
    return fail(405, "MethodNotAllowed", "use GET or POST")
  end
  local kind, id = uri:match("^/(%a+)/([^/]*)$")
  local r = kind and routes[kind]
  if not r then
    -- echoed percent-encoded: the JSON stays valid UTF-8 whatever the URI held
    local shown = uri:sub(1, 100):gsub("[^\32-\126]", function(c) return ("%%%02X"):format(c:byte()) end)
    return fail(404, "NotFound", "no such endpoint: " .. shown)
  end
  local h = r[ngx.req.get_method()]
  if not h then
    ngx.header["Allow"] = "GET, POST"
    return fail(405, "MethodNotAllowed", "use GET or POST")
  end
  local ok, err = check_id(id)
  if not ok then return fail(400, "BadId", err) end
  return h(id)
end

---------------------------------------------------------------------------
-- admin (127.0.0.1 only): the budget and counters. Faults and latency
-- are injected by the service (otskit serve's /_otskit/faults).

--- POST /_admin/budget?capacity=500   (refills it)
--- GET  /_admin/stats   counters (calls, attempts, retries:<pid>, failed,
---                      budget_refused), the budget, the workers' jitter
--- GET  /_admin/bucket?id&b&limit   one bucket read (bench baseline)
--- POST /_admin/reset   counters to zero
function app.admin()
  local dict = ngx.shared.otskit_gw
  local bname = ngx.var.uri:match("^/_admin/bench/(%w+)$")
  if bname then return require("gateway.bench").handle(bname) end
  local what = ngx.var.uri:match("^/_admin/(%w+)$")
  gwdb.publish()   -- this worker's own counts first
  local args = ngx.req.get_uri_args()
  if what == "budget" then
    local cap = tonumber(args.capacity or "500")
    if not cap or cap < 0 or cap ~= math.floor(cap) or cap > 1e9 then
      return fail(400, "BadRequest", "capacity must be an integer 0..1000000000")
    end
    gwdb.reset_budget(cap)
    return reply(200, { capacity = cap })
  elseif what == "stats" then
    local out = { workers = {}, counters = {} }
    for _, k in ipairs(dict:get_keys(0)) do
      local pid = k:match("^jitter:(%d+)$")
      if pid then
        out.workers[#out.workers + 1] = { pid = tonumber(pid), jitter = dict:get(k) }
      elseif k:match("^n:") then
        out.counters[k:sub(3)] = dict:get(k)
      end
    end
    out.workers = json.array(out.workers)
    out.budget = gwdb.budget_available()
    out.key_path = require("otskit.key").path
    out.ffi_why = require("otskit.key").ffi_why
    return reply(200, out)
  elseif what == "bucket" then
    -- one bucket read, exactly as the fan-out does it (bench baseline)
    local id, b = args.id or "", tonumber(args.b or "0")
    local limit = tonumber(args.limit or "100")
    if not check_id(id) or not b or not limit then return fail(400, "BadRequest", "id, b, limit") end
    local rows, msg, code = require("gateway.series").read_bucket(id, b, limit)
    if not rows then return store_fail(msg, code) end
    return reply(200, { rows = #rows })
  elseif what == "reset" then
    for _, k in ipairs(dict:get_keys(0)) do
      if k:match("^n:") then dict:delete(k) end
    end
    return reply(200, { ok = true })
  end
  return fail(404, "NotFound", "no such admin endpoint")
end

return app
