--- gateway.db -- the gateway's Tablestore client: one otskit.client per
-- nginx worker, transport "nginx" (ngx.location.capture_multi to the
-- internal location, default /_otskit, that proxy_passes to the service
-- with keepalive), retrying under one budget for every worker.
--
-- The budget's tokens live in ngx.shared.otskit_budget; its capacity in
-- ngx.shared.otskit_gw, so POST /_admin/budget?capacity=N changes it for
-- every worker (each rebuilds its budget object on its next retry).
-- Each worker's client.stats are added to shared counters (n:calls,
-- n:attempts, n:retries:<pid>) whenever it answers, for /_admin/stats.
local client = require "otskit.client"
local backoff = require "otskit.backoff"

local db = {}

-- Retries inside a request: short delays (a page must stay fast), enough
-- attempts that 20 % injected faults never reach the client (0.2^8 per
-- call), and a deadline. Throttling codes get a longer window.
db.RETRY = { strategy = "full", base = 0.005, cap = 0.05, throttle_base = 0.02,
             max_attempts = 8, deadline = 2 }

local conn, budget, budget_version
local seen = { calls = 0, attempts = 0 }

local function dict() return ngx.shared.otskit_gw end

local function get_budget()
  local v = dict():get("budget_version") or 0
  if budget == nil or v ~= budget_version then
    budget = backoff.budget { dict = ngx.shared.otskit_budget, capacity = dict():get("budget_capacity") or 500 }
    budget_version = v
  end
  return budget
end

-- The budget the client holds: the shared one at its current capacity.
local shared_budget = {
  acquire = function(_, ...) return get_budget():acquire(...) end,
  success = function(_, ...) return get_budget():success(...) end,
  available = function(_, ...) return get_budget():available(...) end,
  type = function() return "bucket" end,
}

local function new_client(cfg)
  return client.new { endpoint = cfg.endpoint, instance = cfg.instance,
    access_key_id = cfg.access_key_id, access_key_secret = cfg.access_key_secret,
    transport = "nginx", location = cfg.location, retry = db.RETRY, budget = shared_budget }
end

--- check(cfg) -> true | nil, message: the client options, checked in the
-- master (init), so a bad one stops nginx at start-up.
function db.check(cfg)
  local ok, err = pcall(new_client, cfg)
  if not ok then return nil, tostring(err) end
  return true
end

--- open(cfg) (init_worker): this worker's client.
function db.open(cfg)
  conn = new_client(cfg)
  return conn
end

function db.client() return conn end

--- reset_budget(cap): capacity cap and a full bucket, for every worker.
function db.reset_budget(cap)
  dict():set("budget_capacity", cap)
  ngx.shared.otskit_budget:set("otskit:retry-budget", cap)
  dict():incr("budget_version", 1, 0)
end

function db.budget_available() return get_budget():available() end

--- publish(): adds what this worker's client did since the last call to
-- the shared counters (retries = attempts beyond the first of each call).
function db.publish()
  if not conn then return end
  local st, d = conn.stats, dict()
  local calls, attempts = st.calls - seen.calls, st.attempts - seen.attempts
  if calls == 0 and attempts == 0 then return end
  seen.calls, seen.attempts = st.calls, st.attempts
  d:incr("n:calls", calls, 0)
  d:incr("n:attempts", attempts, 0)
  if attempts > calls then d:incr("n:retries:" .. ngx.worker.pid(), attempts - calls, 0) end
end

return db
