--- otskit.server.admin -- the admin endpoint of `otskit serve`, under
-- /_otskit/ on the serving address and answered only to loopback (nginx
-- `allow 127.0.0.1; allow ::1; deny all;`). JSON in and out:
--   GET    /_otskit/health   {"ok":true,"instance":...,"workers":...}
--   GET    /_otskit/faults   the current faults and their counters
--   PUT    /_otskit/faults   body: a faults spec (see otskit.server.faults)
--   DELETE /_otskit/faults   faults off
-- /_otskit/faults also needs credentials: the admin token (cfg.admin_token,
-- given at start or random) in the x-otskit-admin-token header, or the
-- x-ots-* headers of a request signed with the access key (as the SDKs
-- sign, over "/_otskit/faults" and the body). An address alone is not a
-- credential (any local user, or a proxy on this host, has it). Without
-- them: 401 {"error": ...}.
local cjson = require "cjson.safe"
local faults = require "otskit.server.faults"
local wire = require "otskit.wire"
local auth = require "otskit.server.auth"

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
    local headers = ngx.req.get_headers(32)
    local want, got = state.cfg.admin_token, headers["x-otskit-admin-token"]
    local allowed = type(want) == "string" and want ~= "" and type(got) == "string" and wire.equal(got, want)
    if not allowed and headers["x-ots-signature"] ~= nil then
      -- or signed like any request, over "/_otskit/faults" and the body
      ngx.req.read_body()
      allowed = auth.verify(state.cfg, "_otskit/faults", headers, ngx.req.get_body_data() or "", ngx.now() * 1000)
    end
    if not allowed then
      ngx.header["www-authenticate"] = "x-otskit-admin-token"
      return reply(401, { error = "the admin endpoint needs its token in the x-otskit-admin-token header "
        .. "(given with --admin-token, or in PREFIX/admin-token), or a request signed with the access key" })
    end
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
      dict:incr("gen", 1, 0) -- (after: a worker that sees it reads the new faults)
      local out = faults.describe(cfg)
      out.counters = counters()
      return reply(200, out)
    end
    return reply(405, { error = "use GET, PUT or DELETE" })
  end
  return reply(404, { error = "unknown admin path; try /_otskit/health or /_otskit/faults" })
end

return admin
