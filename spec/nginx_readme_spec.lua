-- docs/openresty.md "## Your own nginx.conf", run as written: the lines of
-- its ```sh block (with free ports in place of 8800 and 8080) install
-- otskit and the gateway into a prefix of their own, start an `otskit
-- serve` and create the tables; nginx started with that very ```nginx
-- block serves the gateway and writes only under the prefix; the same
-- config without a lua_shared_dict, or started without the keys in its
-- environment, refuses to start, naming what is missing; the block's stop
-- lines stop nginx and serve and remove the prefix. Whatever a failed run
-- leaves is stopped and removed. Nothing here runs under make check's
-- ASan preload (curl hangs under it); the plain build/ is used.
local serve = require "support.serve"

local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1; echo \"rc=$?\""))
  local out = p:read("*a")
  p:close()
  return out, tonumber(out:match("rc=(%d+)%s*$"))
end

local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local text = f:read("*a")
  f:close()
  return text
end

local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

local function free_port()
  local out = sh([[env -u LD_PRELOAD luajit -e 'local s = assert(require("socket").bind("127.0.0.1", 0)); local _, p = s:getsockname(); print(p); s:close()']])
  return assert(tonumber(out:match("^(%d+)")), out)
end

local function plain(s) return (s:gsub("%p", "%%%0")) end

-- the section's ```sh lines (continuations joined) and its ```nginx block
local function walkthrough()
  local text = assert(read("docs/openresty.md"))
  local a = assert(text:find("## Your own nginx.conf\n", 1, true), "docs/openresty.md has no ## Your own nginx.conf")
  local shblock = assert(text:match("```sh\n(.-)```", a), "no sh block in the section")
  local conf = assert(text:match("```nginx\n(.-)```", a), "no nginx block in the section")
  local lines = {}
  for l in (shblock:gsub("\\\n", "")):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
  return lines, conf
end

local ROOT = select(1, sh("id -u")):match("^0") ~= nil
-- the shell the walk-through's lines run in: the plain build, no ASan
-- preload, no make jobserver of an outer make
local ENV = "env -u LD_PRELOAD -u OTSKIT_BUILD -u MAKEFLAGS -u MAKELEVEL -u MFLAGS "
  .. "-u OTSKIT_ENDPOINT -u OTSKIT_INSTANCE -u OTSKIT_ACCESS_KEY_ID -u OTSKIT_ACCESS_KEY_SECRET "

local function alive(pid) return pid and select(2, sh("kill -0 " .. pid)) == 0 end

local function wait_gone(pid)
  for _ = 1, 100 do
    if not alive(pid) then return true end
    sh("sleep 0.1")
  end
  return not alive(pid)
end

describe("docs/openresty.md: your own nginx.conf", function()
  local lines, conf = walkthrough()
  local sport, gport = free_port(), free_port()
  local P, servepid, nginxpid
  local exports = {}   -- the block's `export ...` lines, for the later steps
  local start_line, stop_lines = nil, {}

  -- the block as it reads, on the ports of this run
  local function ports(s)
    return (s:gsub(plain("127.0.0.1:8800"), "127.0.0.1:" .. sport):gsub(plain("127.0.0.1:8080"), "127.0.0.1:" .. gport))
  end

  local function run(script)
    local path = os.tmpname()
    write(path, "set -e\n" .. (P and ("P='" .. P .. "'\n") or "") .. (servepid and ("serve=" .. servepid .. "\n") or "")
      .. table.concat(exports, "\n") .. "\n" .. script .. "\n")
    local out, rc = sh(ENV .. "timeout 300 sh " .. path)   -- never waits forever
    os.remove(path)
    return out, rc
  end

  setup(function()
    -- split the block: the set-up lines, the line starting nginx, the
    -- check, the stop lines
    local setup_lines, phase = {}, "setup"
    for _, l in ipairs(lines) do
      l = ports(l)
      if phase == "setup" and l:match("^nginx %-p ") then
        start_line, phase = l, "check"
      elseif phase == "check" and l:match("^curl ") then
        phase = "stop"
      elseif phase == "setup" then
        -- otskit serve on this run's port (the block relies on its default)
        setup_lines[#setup_lines + 1] = (l:gsub("^bin/otskit serve ", "bin/otskit serve --listen 127.0.0.1:" .. sport .. " "))
        if l:match("^export ") then exports[#exports + 1] = l end
      elseif phase == "stop" then
        stop_lines[#stop_lines + 1] = l
      end
    end
    assert(start_line and #stop_lines > 0, "the sh block starts nginx, curls it, then stops it")
    local out, rc = run(table.concat(setup_lines, "\n") .. "\nprintf 'P=%s serve=%s\\n' \"$P\" \"$serve\"")
    P, servepid = out:match("P=(%S+) serve=(%d+)")
    assert(rc == 0 and P, out)
    assert.matches("setup.lua: created table series on http://127.0.0.1:" .. sport, out, 1, true)
    assert(P:match("^/") and P ~= "/")
    if not ROOT then conf = conf:gsub("\nuser [^\n]*;", "\n") end
    conf = ports(conf)
  end)

  teardown(function()
    -- whatever a failed run left
    if P then
      local pid = read(P .. "/logs/nginx.pid")
      if pid then sh("kill -QUIT " .. pid:match("%d+")); wait_gone(pid:match("%d+")) end
    end
    if servepid and alive(servepid) then sh("kill " .. servepid); wait_gone(servepid) end
    if P then sh("rm -rf '" .. P .. "'") end
  end)

  local function curl(args)
    local out, rc = sh("env -u LD_PRELOAD curl -s --max-time 5 -w '\\n%{http_code}' " .. args)
    local body, status = out:match("^(.*)\n(%d+)rc=%d+%s*$")
    return tonumber(status), body, rc
  end

  it("names no system path but the modules it reads: pid, logs, temp files and code under the prefix", function()
    for l in conf:gmatch("[^\n]+") do
      local code = l:gsub("#.*$", ""):gsub("^%s*location%s.*$", "")   -- URIs, not files
      for path in code:gmatch("[%s\"';](/[%w_./-]*)") do
        assert(path:match("^/usr/lib/nginx/modules/"), "the config names " .. path .. ": " .. l)
      end
    end
    for _, d in ipairs { "pid", "error_log", "access_log", "client_body_temp_path", "proxy_temp_path",
                         "fastcgi_temp_path", "uwsgi_temp_path", "scgi_temp_path" } do
      assert.matches("\n%s*" .. d .. " [%w_]", "\n" .. conf)
    end
  end)

  it("as written, serves the gateway from its prefix", function()
    write(P .. "/nginx.conf", conf)
    local out, rc = run(start_line)
    assert(rc == 0, out .. (read(P .. "/logs/error.log") or ""))
    nginxpid = assert((read(P .. "/logs/nginx.pid") or ""):match("%d+"), "no pid file in $P/logs")
    local base = "http://127.0.0.1:" .. gport
    local status
    for _ = 1, 50 do
      status = curl(base .. "/healthz")
      if status == 200 then break end
      sh("sleep 0.1")
    end
    assert.are.equal(200, status)
    local body
    status, body = curl("-X POST -d '{\"points\":[{\"ts\":1700000000001,\"v\":1.5},{\"ts\":1700000000002,\"v\":\"up\"},"
      .. "{\"ts\":9007199254740990,\"v\":3}]}' " .. base .. "/series/dev-1")
    assert.are.equal(200, status, body)
    status, body = curl("'" .. base .. "/series/dev-1?limit=2'")
    assert.are.equal(200, status, body)
    -- newest first, the 2^53 - 2 timestamp exact
    assert.matches('"ts":9007199254740990', body, 1, true)
    assert.matches('"ts":1700000000002', body, 1, true)
    local cursor = assert(body:match('"cursor":"([^"]+)"'), body)
    status, body = curl("'" .. base .. "/series/dev-1?limit=2&cursor=" .. cursor .. "'")
    assert.are.equal(200, status, body)
    assert.matches('"ts":1700000000001', body, 1, true)
    assert.matches('"cursor":null', body, 1, true)
    -- an empty page is an empty JSON list
    status, body = curl(base .. "/series/nobody")
    assert.are.equal(200, status, body)
    assert.matches('"rows":[]', body, 1, true)
    -- /events: the timeseries pattern with the client as its store
    status, body = curl("-X POST -d '{\"events\":[{\"ts\":5,\"id\":\"a\",\"v\":1},{\"ts\":6,\"id\":\"b\",\"v\":2}]}' " .. base .. "/events")
    assert.are.equal(200, status, body)
    status, body = curl(base .. "/events")
    assert.are.equal(200, status, body)
    assert.matches('^{.*"rows":%[{[^]]*"id":"b"', body)
    -- bad JSON, deeply nested JSON: a 400, not a 500
    status, body = curl("-X POST -d 'not json' " .. base .. "/series/dev-1")
    assert.are.equal(400, status, body)
    write(P .. "/nested.json", ("["):rep(5000))
    status, body = curl("-X POST --data-binary @" .. P .. "/nested.json " .. base .. "/series/dev-1")
    assert.are.equal(400, status, body)
    -- a body over client_body_buffer_size would go to a temp file: refused
    -- by client_max_body_size here, answered, never written to /var/lib/nginx
    -- counters and blobs through the client
    status, body = curl("-X POST '" .. base .. "/counters/c1?by=5'")
    assert.are.equal(200, status, body)
    assert.matches('"n":5', body, 1, true)
    status, body = curl("-X POST -d 'hello' " .. base .. "/blobs/b1")
    assert.are.equal(200, status, body)
    status, body = curl(base .. "/blobs/b1")
    assert.are.equal(200, status, body)
    assert.are.equal("hello", body)
    -- the data is on the service: another client reads the point written
    local page = assert(serve.client({ url = "http://127.0.0.1:" .. sport }, { instance = "otskit",
      access_key_id = "otskit", access_key_secret = "otskit-secret" })
      :get_row { table = "series", primary_key = { 2, "dev-1", 1700000000002 } })
    assert.are.equal("up", page.row.columns.v)
    -- the client's internal location is not reachable from outside
    status = curl("'" .. base .. "/_otskit?api=ListTable'")
    assert.are.equal(404, status)
    -- what nginx wrote is under the prefix: its logs, and the temp
    -- directories it made at start
    for _, f in ipairs { "logs/error.log", "logs/access.log", "temp/body", "temp/proxy", "temp/fastcgi",
                         "temp/uwsgi", "temp/scgi" } do
      assert(select(2, sh("test -e '" .. P .. "/" .. f .. "'")) == 0, "nginx made no $P/" .. f)
    end
    assert.matches("GET /healthz", read(P .. "/logs/access.log"), 1, true)
    local log = read(P .. "/logs/error.log")
    assert.not_matches("lua entry thread aborted", log, 1, true)
    assert.not_matches("runtime error", log, 1, true)
  end)

  -- another nginx on the same prefix: its own pid file and error log
  local function refused(conf_text, env)
    local c = conf_text:gsub("\npid logs/nginx%.pid;", "\npid logs/neg.pid;"):gsub("\nerror_log logs/error%.log", "\nerror_log logs/neg.log")
    write(P .. "/neg.conf", c)
    os.remove(P .. "/logs/neg.log")
    -- daemon off: it would stay in the foreground if it started
    local out, rc = sh(("env -u LD_PRELOAD -u OTSKIT_ACCESS_KEY_ID -u OTSKIT_ACCESS_KEY_SECRET %s nginx -p '%s/' -c '%s/neg.conf' -g 'daemon off;'")
      :format(env, P, P))
    assert.are_not.equal(0, rc, out)
    return read(P .. "/logs/neg.log") or ""
  end
  local KEYS = "OTSKIT_ACCESS_KEY_ID=otskit OTSKIT_ACCESS_KEY_SECRET=otskit-secret"

  it("a missing lua_shared_dict stops nginx at start-up, naming the directive", function()
    for _, d in ipairs { { "otskit_budget", "1m" }, { "otskit_gw", "4m" } } do
      local line = ("  lua_shared_dict %s %s;\n"):format(d[1], d[2])
      assert(conf:find(line, 1, true), "the config has " .. line)
      local log = refused((conf:gsub(plain(line), "", 1)), KEYS)
      assert.matches("init_by_lua error: otskit gateway: nginx.conf has no shared dict " .. d[1]
        .. ": add `lua_shared_dict " .. d[1] .. " " .. d[2] .. ";` to its http block", log, 1, true)
    end
  end)

  it("started without the keys in its environment, nginx refuses to start, naming them", function()
    for _, case in ipairs {
      { "", "access_key_id is required (or the environment variable OTSKIT_ACCESS_KEY_ID, passed on by nginx.conf's `env OTSKIT_ACCESS_KEY_ID;`)" },
      { "OTSKIT_ACCESS_KEY_ID=otskit", "access_key_secret is required (or the environment variable OTSKIT_ACCESS_KEY_SECRET" },
    } do
      local log = refused(conf, case[1])
      assert.matches("init_by_lua error: otskit gateway: init: " .. case[2], log, 1, true)
    end
    -- a bad client option stops it too
    local bad = conf:gsub('endpoint = "http://127%.0%.0%.1:%d+"', 'endpoint = "tablestore"', 1)
    local log = refused(bad, KEYS)
    assert.matches("otskit gateway: init: otskit.client: new: endpoint must be http(s)://host[:port], got 'tablestore'", log, 1, true)
  end)

  it("its stop lines stop nginx and otskit serve and remove the prefix", function()
    assert(nginxpid and alive(nginxpid), "nginx is running")
    assert(alive(servepid), "otskit serve is running")
    local out, rc = run(table.concat(stop_lines, "\n"))
    assert(rc == 0, out)
    assert(wait_gone(nginxpid), "nginx still runs after the stop lines")
    assert(wait_gone(servepid), "otskit serve still runs after the stop lines")
    assert(select(2, sh("test -e '" .. P .. "'")) ~= 0, "the prefix is still there")
    P = nil
  end)
end)
