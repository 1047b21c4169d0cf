-- spec/support/nginx.lua -- a temporary nginx running
-- spec/support/nginx/client.conf.in in front of an upstream port.
local serve = require "support.serve"
local M = {}

local sh = serve.sh

--- M.start(upstream_port) -> { url, stop() } | nil, message
function M.start(upstream)
  local root = sh("pwd")
  local port = serve.free_port()
  local prefix = sh("mktemp -d \"${TMPDIR:-/tmp}/otskit-client-nginx.XXXXXX\"") -- (spec/run.sh: under TMPDIR)
  os.execute("mkdir -p " .. prefix .. "/logs " .. prefix .. "/conf")
  local f = assert(io.open("spec/support/nginx/client.conf.in"))
  local conf = f:read("a"); f:close()
  local build = os.getenv("OTSKIT_BUILD") or "build"
  conf = conf:gsub("@ROOT@", root):gsub("@BUILD@", build):gsub("@PORT@", tostring(port)):gsub("@UPSTREAM@", tostring(upstream))
  f = assert(io.open(prefix .. "/conf/nginx.conf", "w")); f:write(conf); f:close()
  local user = sh("id -u") == "0" and "-g 'user root;'" or ""
  local ok = os.execute(("nginx -p %s -c %s/conf/nginx.conf %s 2>%s/start.err"):format(prefix, prefix, user, prefix))
  local self = { url = "http://127.0.0.1:" .. port, prefix = prefix }
  function self.stop()
    local pf = io.open(prefix .. "/logs/nginx.pid")
    if pf then
      local pid = pf:read("l"); pf:close()
      if pid and pid:match("^%d+$") then
        os.execute(("kill -QUIT %s; i=0; while kill -0 %s 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done; kill -KILL %s $(%s -P %s) 2>/dev/null"):format(pid, pid, pid, serve.PGREP, pid))
      end
    end
    os.execute("rm -rf " .. prefix)
  end
  if ok ~= true and ok ~= 0 then
    local e = sh("cat " .. prefix .. "/start.err")
    self.stop()
    return nil, "nginx did not start: " .. e
  end
  return self
end

function M.error_log(self) return sh("cat " .. self.prefix .. "/logs/error.log") end

return M
