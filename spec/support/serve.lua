-- spec/support/serve.lua -- `otskit serve` for specs and benches: a
-- temporary prefix, a free 127.0.0.1 port, started in the background and
-- stopped (with every nginx process it started) by :stop().
local serve = {}

--- serve.sh(cmd) -> what cmd printed, trailing white space removed
local function sh(cmd)
  local p = io.popen(cmd)
  local out = p:read("a")
  p:close()
  return (out:gsub("%s+$", ""))
end
serve.sh = sh

function serve.free_port()
  local socket = require "socket"
  local s = assert(socket.bind("127.0.0.1", 0))
  local _, port = s:getsockname()
  s:close()
  return tonumber(port)
end

serve.AK, serve.SK, serve.INSTANCE = "ak-test", "sk-test", "inst"
-- the admin token of the servers started here (/_otskit/faults needs it)
serve.ADMIN_TOKEN = "spec-admin-token-0123456789"

-- pgrep for the stop paths: without make check's ASan preload (under it
-- pgrep, like curl, deadlocks at start in libgpg-error's constructor) and
-- bounded, so a stop never waits forever.
serve.PGREP = "env -u LD_PRELOAD timeout 10 pgrep"

--- serve.start{ faults = "latency=20", workers = 1, data = bool,
-- instance, access_key_id, access_key_secret, lua = "luajit" (the
-- interpreter of bin/otskit; default its #! line, lua5.4), setsid = bool
-- (bin/otskit leads a session and process group of its own) } ->
-- { url, port, pid (of bin/otskit), tmp, stop() } | nil, message
function serve.start(o)
  o = o or {}
  local port = serve.free_port()
  -- under TMPDIR: spec/run.sh stops what a run left running by the path
  -- of its scratch directory (which holds TMPDIR) in the command line
  local tmp = sh("mktemp -d \"${TMPDIR:-/tmp}/otskit-client-serve.XXXXXX\"")
  -- started as root, the workers run as nobody: --data must be reachable
  os.execute("chmod 711 " .. tmp)
  local args = { "bin/otskit", "serve", "--listen", "127.0.0.1:" .. port, "--prefix", tmp .. "/ng",
    "--instance", o.instance or serve.INSTANCE, "--access-key-id", o.access_key_id or serve.AK,
    "--access-key-secret", o.access_key_secret or serve.SK,
    "--workers", tostring(o.workers or 1), "--admin-token", serve.ADMIN_TOKEN }
  if o.data or (o.workers or 1) > 1 then args[#args + 1] = "--data"; args[#args + 1] = tmp .. "/data" end
  if o.faults then args[#args + 1] = "--faults"; args[#args + 1] = o.faults end
  -- the server runs the plain build without the sanitizer preload (under
  -- make check a forked nginx worker cannot load the ASan module, and the
  -- preload hangs curl); the code under test in this process keeps ASan.
  local env = (o.setsid and "setsid " or "") .. "env -u LD_PRELOAD OTSKIT_BUILD=build " .. (o.lua and (o.lua .. " ") or "")
  local pid = sh(("%s%s >%s/serve.log 2>&1 & echo $!"):format(env, table.concat(args, " "), tmp))
  local url = "http://127.0.0.1:" .. port
  local self = { url = url, port = port, pid = pid, tmp = tmp }
  function self.stop()
    if not self.pid then return end
    os.execute(("kill -TERM %s 2>/dev/null; i=0; while kill -0 %s 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; kill -KILL %s 2>/dev/null"):format(pid, pid, pid))
    local f = io.open(tmp .. "/ng/logs/nginx.pid")
    if f then
      local m = f:read("l"); f:close()
      if m and m:match("^%d+$") then os.execute(("kill -KILL %s $(%s -P %s) 2>/dev/null"):format(m, serve.PGREP, m)) end
    end
    os.execute("rm -rf " .. tmp)
    self.pid = nil
  end
  local health = ("env -u LD_PRELOAD timeout 5 curl -sf --max-time 2 -o /dev/null %s/_otskit/health"):format(url)
  for _ = 1, 100 do
    local ok = os.execute(health)
    if ok == true or ok == 0 then return self end
    os.execute("sleep 0.1")
  end
  local log = sh("cat " .. tmp .. "/serve.log")
  self.stop()
  return nil, "otskit serve did not start: " .. log
end

--- serve.admin(s, method [, body]) -> the JSON text of /_otskit/faults
-- (GET, PUT with a faults spec, DELETE), "" when curl failed.
function serve.admin(s, method, body)
  local cmd = ("env -u LD_PRELOAD curl -sf --max-time 5 -X %s -H 'x-otskit-admin-token: %s' %s %s/_otskit/faults")
    :format(method, serve.ADMIN_TOKEN, body and ("--data-binary '" .. body:gsub("'", "'\\''") .. "'") or "", s.url)
  return sh(cmd)
end

--- A client of the server (extra options merged in).
function serve.client(s, extra)
  local o = { endpoint = s.url, instance = serve.INSTANCE, access_key_id = serve.AK,
              access_key_secret = serve.SK }
  for k, v in pairs(extra or {}) do o[k] = v end
  return require("otskit.client").new(o)
end

return serve
