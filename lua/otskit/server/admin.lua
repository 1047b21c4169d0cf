--- otskit.server.admin -- the admin endpoint of `otskit serve`, under
-- /_otskit/ on the serving address and answered only to 127.0.0.1 (nginx
-- `allow 127.0.0.1; deny all;`). JSON in and out:
--   GET    /_otskit/health   {"ok":true,"instance":...,"workers":...}
--   GET    /_otskit/faults   the current faults and their counters
--   PUT    /_otskit/faults   body: a faults spec (see otskit.server.faults)
--   DELETE /_otskit/faults   faults off
local cjson = require "cjson.safe"
local faults = require "otskit.server.faults"

local admin = {}

local function reply(status, t)
  ngx.status = status
  ngx.header["content-type"] = "application/json"
  ngx.say(cjson.encode(t))
  return ngx.exit(ngx.OK)
end

--- admin.handle(state): state.dict (the shared dict), state.cfg.
function admin.handle(state)
  local dict, method, what = state.dict, ngx.req.get_method(), ngx.var.uri:match("^/_otskit/(.*)$")
  local function counters()
    return { requests = dict:get("n_requests") or 0, failed = dict:get("n_failed") or 0,
             dropped = dict:get("n_dropped") or 0, empty = dict:get("n_empty") or 0 }
  end
  if what == "health" and method == "GET" then
    return reply(200, { ok = true, instance = state.cfg.instance, workers = state.cfg.workers,
                        storage = state.cfg.path == ":memory:" and "memory" or "data" })
  elseif what == "faults" then
    if method == "GET" then
      local cfg = faults.parse(dict:get("faults"))
      local out = faults.describe(cfg)
      out.counters = counters()
      return reply(200, out)
    elseif method == "PUT" or method == "POST" or method == "DELETE" then
      local spec = ""
      if method ~= "DELETE" then
        ngx.req.read_body()
        spec = ngx.req.get_body_data() or ""
      end
      spec = spec:gsub("^%s+", ""):gsub("%s+$", "")
      local cfg, err = faults.parse(spec)
      if cfg == nil then return reply(400, { error = err }) end
      dict:set("faults", spec)
      dict:incr("faults_gen", 1, 0)
      local out = faults.describe(cfg)
      out.counters = counters()
      return reply(200, out)
    end
    return reply(405, { error = "use GET, PUT or DELETE" })
  end
  return reply(404, { error = "unknown admin path; try /_otskit/health or /_otskit/faults" })
end

return admin
