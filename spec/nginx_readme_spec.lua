-- README "### Your own nginx.conf": nginx started with that very config
-- block (its paths moved into a temporary directory, a free port, the
-- service's address to an `otskit serve` started here) serves the
-- gateway; the same config without a lua_shared_dict, or started without
-- the keys in its environment, refuses to start, naming what is missing.
-- nginx and serve are always stopped. Nothing here runs under make
-- check's ASan preload (curl hangs under it).
local serve = require "support.serve"
local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1; echo \"rc=$?\""))
  local out = p:read("*a")
  p:close()
  return out, tonumber(out:match("rc=(%d+)%s*$"))
end

local function readme_conf()
  local f = assert(io.open("docs/openresty.md", "rb"))
  local text = f:read("*a")
  f:close()
  local a = assert(text:find("## Your own nginx.conf\n", 1, true), "docs/openresty.md has no ## Your own nginx.conf")
  return assert(text:match("```nginx\n(.-)```", a), "no nginx block in the section")
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

local ROOT = os.getenv("EUID") == "0" or select(1, sh("id -u")):match("^0") ~= nil
-- the plain build, also under make check (an ASan core.so would need the
-- ASan runtime preloaded into nginx; this spec is about the config)
local BUILD = "build"

describe("README nginx.conf", function()
  local dir, conf_text, port, srv
  -- the service's keys, as the README exports them
  local KEYS = "OTSKIT_ACCESS_KEY_ID=otskit OTSKIT_ACCESS_KEY_SECRET=otskit-secret"

  setup(function()
    -- the README's service (instance and keys of otskit serve's defaults)
    srv = assert(serve.start { instance = "otskit", access_key_id = "otskit", access_key_secret = "otskit-secret" })
    local out = sh("mktemp -d /tmp/otskit-nginx-readme.XXXXXX")
    dir = out:match("^(%S+)")
    assert(sh("chmod 755 " .. dir))
    -- where the README puts things, moved under dir
    for _, d in ipairs { "usr/share/lua/5.1", "usr/lib/lua/5.1/otskit", "srv/otskit", "logs" } do
      assert(select(2, sh("mkdir -p " .. dir .. "/" .. d)) == 0)
    end
    -- `make install`'s LuaJIT half and the gateway's code, world-readable
    local cmds = {
      ("cp -R lua/otskit %s/usr/share/lua/5.1/"):format(dir),
      ("cp %s/jit/otskit/core.so %s/usr/lib/lua/5.1/otskit/"):format(BUILD, dir),
      ("cp -R examples/openresty/gateway %s/srv/otskit/"):format(dir),
      ("chmod -R a+rX %s"):format(dir),
      -- the tables, before nginx starts (examples/openresty/setup.lua)
      ("env -u LD_PRELOAD OTSKIT_ENDPOINT=%s OTSKIT_INSTANCE=otskit %s "
        .. "LUA_PATH='%s/srv/otskit/?.lua;%s/usr/share/lua/5.1/?.lua;%s/usr/share/lua/5.1/?/init.lua;;' "
        .. "LUA_CPATH='%s/usr/lib/lua/5.1/?.so;;' luajit examples/openresty/setup.lua")
        :format(srv.url, KEYS, dir, dir, dir, dir),
    }
    for _, c in ipairs(cmds) do
      local o, rc = sh(c)
      assert(rc == 0, c .. ": " .. o)
    end
    port = free_port()
    conf_text = readme_conf()
      :gsub(plain("/usr/local/"), dir .. "/usr/")
      :gsub(plain("/srv/otskit/"), dir .. "/srv/otskit/")
      :gsub(plain("listen 127.0.0.1:8080;"), "listen 127.0.0.1:" .. port .. ";")
      :gsub(plain("127.0.0.1:8800"), "127.0.0.1:" .. srv.port)
      :gsub("http {\n", "http {\n  access_log off;\n", 1)
    if not ROOT then conf_text = conf_text:gsub("\nuser [^\n]*;", "\n") end
  end)

  local function nginx(conf, args, env)
    write(dir .. "/nginx.conf", conf)
    return sh(("env -u LD_PRELOAD -u OTSKIT_ACCESS_KEY_ID -u OTSKIT_ACCESS_KEY_SECRET %s nginx -p %s/ -c %s/nginx.conf -g 'pid %s/logs/nginx.pid; error_log %s/logs/error.log warn; %s'")
      :format(env or KEYS, dir, dir, dir, dir, args or "daemon on;"))
  end

  local function stop()
    local f = io.open(dir .. "/logs/nginx.pid", "rb")
    if not f then return end
    local pid = f:read("*l")
    f:close()
    sh("kill -QUIT " .. pid)
    for _ = 1, 100 do
      if select(2, sh("kill -0 " .. pid)) ~= 0 then break end
      sh("sleep 0.1")
    end
    os.remove(dir .. "/logs/nginx.pid")
  end

  teardown(function()
    if dir then
      stop()
      sh("rm -rf " .. dir)
    end
    if srv then srv.stop() end
  end)

  local function curl(args)
    local out, rc = sh("env -u LD_PRELOAD curl -s --max-time 5 -w '\\n%{http_code}' " .. args)
    local body, status = out:match("^(.*)\n(%d+)rc=%d+%s*$")
    return tonumber(status), body, rc
  end

  it("the README's config as written serves the gateway", function()
    local out, rc = nginx(conf_text)
    assert(rc == 0, out .. (io.open(dir .. "/logs/error.log") and io.open(dir .. "/logs/error.log"):read("*a") or ""))
    local base = "http://127.0.0.1:" .. port
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
    write(dir .. "/nested.json", ("["):rep(5000))
    status, body = curl("-X POST --data-binary @" .. dir .. "/nested.json " .. base .. "/series/dev-1")
    assert.are.equal(400, status, body)
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
    local page = assert(serve.client(srv, { instance = "otskit", access_key_id = "otskit",
      access_key_secret = "otskit-secret" }):get_row { table = "series", primary_key = { 2, "dev-1", 1700000000002 } })
    assert.are.equal("up", page.row.columns.v)
    -- the client's internal location is not reachable from outside
    status = curl("'" .. base .. "/_otskit?api=ListTable'")
    assert.are.equal(404, status)
    stop()
    local f = assert(io.open(dir .. "/logs/error.log", "rb"))
    local log = f:read("*a")
    f:close()
    assert.not_matches("lua entry thread aborted", log, 1, true)
    assert.not_matches("runtime error", log, 1, true)
  end)

  it("a missing lua_shared_dict stops nginx at start-up, naming the directive", function()
    for _, d in ipairs { { "otskit_budget", "1m" }, { "otskit_gw", "4m" } } do
      local line = ("  lua_shared_dict %s %s;\n"):format(d[1], d[2])
      assert(conf_text:find(line, 1, true), "the README config has " .. line)
      local without = conf_text:gsub(plain(line), "", 1)
      os.remove(dir .. "/logs/error.log")
      local out, rc = nginx(without, "daemon off;", "")   -- would stay in the foreground if it started
      assert.are_not.equal(0, rc, out)
      local f = assert(io.open(dir .. "/logs/error.log", "rb"))
      local log = f:read("*a")
      f:close()
      assert.matches("init_by_lua error: otskit gateway: nginx.conf has no shared dict " .. d[1]
        .. ": add `lua_shared_dict " .. d[1] .. " " .. d[2] .. ";` to its http block", log, 1, true)
    end
  end)

  it("started without the keys in its environment, nginx refuses to start, naming them", function()
    for _, case in ipairs {
      { "", "access_key_id is required (or the environment variable OTSKIT_ACCESS_KEY_ID, passed on by nginx.conf's `env OTSKIT_ACCESS_KEY_ID;`)" },
      { "OTSKIT_ACCESS_KEY_ID=otskit", "access_key_secret is required (or the environment variable OTSKIT_ACCESS_KEY_SECRET" },
    } do
      os.remove(dir .. "/logs/error.log")
      local out, rc = nginx(conf_text, "daemon off;", case[1])
      assert.are_not.equal(0, rc, out)
      local f = assert(io.open(dir .. "/logs/error.log", "rb"))
      local log = f:read("*a")
      f:close()
      assert.matches("init_by_lua error: otskit gateway: init: " .. case[2], log, 1, true)
    end
    -- a bad client option stops it too
    os.remove(dir .. "/logs/error.log")
    local bad = conf_text:gsub('endpoint = "http://127%.0%.0%.1:%d+"', 'endpoint = "tablestore"', 1)
    local out, rc = nginx(bad, "daemon off;")
    assert.are_not.equal(0, rc, out)
    local f = assert(io.open(dir .. "/logs/error.log", "rb"))
    local log = f:read("*a")
    f:close()
    assert.matches("otskit gateway: init: otskit.client: new: endpoint must be http(s)://host[:port], got 'tablestore'", log, 1, true)
  end)
end)
