--- otskit serve -- a local Tablestore-protocol server (API 2015-12-31)
-- the official SDKs can use: Debian's nginx with its lua module, in the
-- foreground, from a generated config in a temporary (or given) prefix,
-- serving otskit.store over the wire format. Ctrl-C or SIGTERM stops nginx
-- and every process it started; so does this command exiting.
local conf = require "otskit.server.conf"
local faults = require "otskit.server.faults"

local serve = {}

function serve.configure(p)
  p:option("--listen", "Address to bind (only this one).", "127.0.0.1:8800")
  p:option("--data", "Keep the tables in DIR/otskit.db (SQLite, survives restarts and kill -9).")
  p:flag("--memory", "Keep the tables in memory (the default; one worker).")
  p:option("--instance", "Instance name the clients must use.", "otskit")
  p:option("--access-key-id", "Access key id the clients must use.", "otskit")
  p:option("--access-key-secret", "Access key secret the clients must use.", "otskit-secret")
  p:option("--workers", "nginx worker processes (more than 1 needs --data).", "1")
  p:option("--faults", "Faults to inject, e.g. rate=0.1,code=OTSServerBusy,latency=5-20,drop=0.01.")
  p:option("--jit-log", "Write LuaJIT's trace events (as `luajit -jv` prints them: traces compiled, "
    .. "linked, aborted and why) from every worker to FILE (appended); needs nginx's lua module on LuaJIT."):argname("<file>")
  p:option("--prefix", "nginx prefix (config, logs); default: a temporary directory, removed at exit.")
  p:option("--admin-token", "Token /_otskit/faults requires (header x-otskit-admin-token); "
    .. "default $OTSKIT_ADMIN_TOKEN, else a random one in PREFIX/admin-token.")
  p:option("--user", "Started as root: the user the workers run as (default $SUDO_USER, else nobody).")
end

-- the keys everyone knows: fine on loopback, refused beyond it
local DEFAULT_ID, DEFAULT_SECRET = "otskit", "otskit-secret"

-- a loopback address (127.0.0.0/8, ::1): only this host can connect
local function loopback(host)
  return host:match("^127%.%d+%.%d+%.%d+$") ~= nil or host == "::1" or host == "0:0:0:0:0:0:0:1"
end

local function random_token()
  local f = io.open("/dev/urandom", "rb")
  local b = f and f:read(24)
  if f then f:close() end
  if not b or #b ~= 24 then return nil end
  return (b:gsub(".", function(c) return ("%02x"):format(c:byte()) end))
end

local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function run(cmd)
  local p = io.popen(cmd)
  local out = p:read("*a")
  local ok = p:close()
  return ok and out:gsub("%s+$", "") or nil
end

local function fail(msg)
  io.stderr:write("otskit serve: ", msg, "\n")
  return 2
end

-- the checkout (or installed tree) this module runs from: lua/ and build/jit/
local function roots()
  local src = debug.getinfo(1, "S").source:gsub("^@", "")
  local lua_dir = src:match("^(.*)/otskit/cmd/serve%.lua$") or "lua"
  if lua_dir:sub(1, 1) ~= "/" then lua_dir = (run("pwd") or ".") .. "/" .. lua_dir end
  local build = os.getenv("OTSKIT_BUILD") or (lua_dir .. "/../build")
  if build:sub(1, 1) ~= "/" then build = (run("pwd") or ".") .. "/" .. build end
  return lua_dir, build .. "/jit"
end

-- The foreground runner: nginx as a child of this shell, in a process
-- group of its own (setsid) that its workers share; INT/TERM/HUP stop it
-- (TERM, then KILL of the whole group after 10 s). Ties both ways, so a
-- kill -9 of any one process leaves nothing serving or holding the port:
-- - the runner is started with the kernel's parent-death signal
--   (`setpriv --pdeathsig TERM`, util-linux): the otskit process dying,
--   however (kill -9), TERMs the runner, which stops nginx;
-- - nginx gets TERM the same way when the runner dies (kill -9 of the
--   runner alone, or of the whole process group it shares with otskit);
--   TERM is nginx's fast shutdown: workers stop, the port is freed;
-- - a watchdog stops nginx when the otskit process ($1) is gone (the same
--   tie where setpriv lacks --pdeathsig);
-- - when the master is gone, however it went (killed -9), its group is
--   killed; a worker whose master is gone exits by itself too
--   (otskit.server.init_worker watches getppid).
local RUNNER = [[
parent=$1; prefix=$2; cleanup=$3
pd=
setpriv --help 2>/dev/null | grep -q pdeathsig && pd="setpriv --pdeathsig TERM"
# a session and process group of its own (setsid execs nginx, through
# setpriv: $! is the master, and the group id), which its workers share
setsid $pd nginx -p "$prefix" -c "$prefix/conf/nginx.conf" -g "daemon off;" &
ng=$!
stop() {
  kill -TERM "$ng" 2>/dev/null
  i=0
  while kill -0 "$ng" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  kill -KILL -"$ng" 2>/dev/null
}
trap 'stop' INT TERM HUP
( while kill -0 "$parent" 2>/dev/null && kill -0 "$ng" 2>/dev/null; do sleep 0.3; done
  kill -0 "$ng" 2>/dev/null && kill -TERM "$ng" ) &
watch=$!
status=0
while kill -0 "$ng" 2>/dev/null; do wait "$ng"; status=$?; done
# the master is gone: its workers go too (TERM, then KILL)
if kill -0 -"$ng" 2>/dev/null; then
  kill -TERM -"$ng" 2>/dev/null
  i=0
  while kill -0 -"$ng" 2>/dev/null && [ $i -lt 30 ]; do sleep 0.1; i=$((i + 1)); done
  kill -KILL -"$ng" 2>/dev/null
fi
kill "$watch" 2>/dev/null
[ "$cleanup" = 1 ] && rm -rf "$prefix"
exit "$status"
]]

function serve.run(args)
  local host, port = args.listen:match("^([%d%.]+):(%d+)$")
  if not host then host, port = args.listen:match("^%[([%x:]+)%]:(%d+)$") end
  if not host or tonumber(port) < 1 or tonumber(port) > 65535 then
    return fail("--listen must be HOST:PORT with a numeric address, got " .. args.listen)
  end
  local workers = tonumber(args.workers)
  if not workers or workers < 1 or workers > 64 or workers % 1 ~= 0 then
    return fail("--workers must be 1 to 64")
  end
  if args.data and args.memory then return fail("--data and --memory exclude each other") end
  if not args.data and workers > 1 then
    return fail("--memory keeps the tables in one worker: use --workers 1, or --data DIR")
  end
  for _, k in ipairs{ "instance", "access_key_id", "access_key_secret" } do
    if not tostring(args[k]):match("^[%w%-_%.%+/=]+$") then
      return fail("--" .. k:gsub("_", "-") .. " may hold letters, digits and -_.+/= only")
    end
  end
  local ok, err = faults.parse(args.faults)
  if ok == nil then return fail(err) end
  if not loopback(host) and (args.access_key_id == DEFAULT_ID or args.access_key_secret == DEFAULT_SECRET) then
    return fail("--listen " .. args.listen .. " is reachable from other hosts: the default access key id and "
      .. "secret are public; pass --access-key-id and --access-key-secret of your own")
  end
  local jit_log = args.jit_log
  if jit_log ~= nil then
    if jit_log == "" or jit_log:find("\0", 1, true) or jit_log:find("[\n\r]") then return fail("--jit-log takes a file name") end
    if jit_log:sub(1, 1) ~= "/" then jit_log = (run("pwd") or ".") .. "/" .. jit_log end
    local jf, jerr = io.open(jit_log, "a")
    if not jf then return fail("--jit-log: cannot write " .. jit_log .. ": " .. tostring(jerr)) end
    jf:close()
  end
  local token = args.admin_token or os.getenv("OTSKIT_ADMIN_TOKEN")
  if token ~= nil and (#token < 16 or #token > 256 or not token:match("^[%w%-_%.]+$")) then
    return fail("--admin-token must be 16 to 256 letters, digits and -_.")
  end
  local token_file = token == nil
  if token_file then
    token = random_token()
    if not token then return fail("cannot read /dev/urandom for the admin token") end
  end
  -- workers never run as root: started as root, they run as --user (the
  -- user behind sudo, else nobody), which must reach the code and the data
  local root = run("id -u") == "0"
  local wuser
  if root then
    wuser = args.user or os.getenv("SUDO_USER")
    if wuser == nil or wuser == "" or wuser == "root" then wuser = "nobody" end
    if not wuser:match("^[%w_][%w%._%-]*$") then return fail("--user: not a user name: " .. wuser) end
    if run("id -u " .. sh_quote(wuser) .. " 2>/dev/null") == nil then return fail("--user: no such user " .. wuser) end
    if run("id -u " .. sh_quote(wuser)) == "0" then return fail("--user: the workers never run as root") end
    if jit_log then os.execute(("chown %s %s"):format(sh_quote(wuser), sh_quote(jit_log))) end
  elseif args.user then
    return fail("--user is for a server started as root (the workers run as you)")
  end

  local lua_dir, cpath = roots()
  local f = io.open(cpath .. "/otskit/core.so")
  if not f then return fail("no LuaJIT build at " .. cpath .. " (run make build)") end
  f:close()

  local path = ":memory:"
  if args.data then
    if not os.execute("mkdir -p " .. sh_quote(args.data)) then return fail("cannot create " .. args.data) end
    local dir = args.data
    if dir:sub(1, 1) ~= "/" then dir = run("pwd") .. "/" .. dir end
    path = dir .. "/otskit.db"
    if root then
      -- the data directory and its files become the worker user's; it
      -- must be able to reach them (every parent searchable)
      os.execute(("chown -R %s %s"):format(sh_quote(wuser), sh_quote(dir)))
      if not os.execute(("su -s /bin/sh %s -c %s"):format(sh_quote(wuser),
          sh_quote("test -w " .. sh_quote(dir) .. " -a -x " .. sh_quote(dir)))) then
        return fail(("the workers run as %s, who cannot write %s (a parent directory not searchable by "
          .. "others?): chmod o+x its parents, or --user a user who can"):format(wuser, dir))
      end
    end
  end
  local prefix, cleanup = args.prefix, 0
  if prefix then
    if not os.execute("mkdir -p " .. sh_quote(prefix)) then return fail("cannot create " .. prefix) end
  else
    prefix = run("mktemp -d /tmp/otskit-serve.XXXXXX")
    if not prefix then return fail("mktemp failed") end
    cleanup = 1
  end
  if prefix:sub(1, 1) ~= "/" then prefix = run("pwd") .. "/" .. prefix end
  os.execute("mkdir -p " .. sh_quote(prefix .. "/conf") .. " " .. sh_quote(prefix .. "/logs"))
  -- workers run as the user who started serve; started as root, as wuser
  local user = root and ("user %s %s;"):format(wuser, run("id -gn " .. sh_quote(wuser))) or ""
  local text = conf.render{ listen = args.listen, workers = workers, lua = lua_dir, cpath = cpath, user = user,
    config = { access_key_id = args.access_key_id, secret = args.access_key_secret, instance = args.instance,
               path = path, workers = workers, faults = args.faults or "", admin_token = token,
               jit_log = jit_log or "",
               -- OTSKIT_SERVE_WRITE_LOCK=0: leave concurrent writes to SQLite's
               -- busy timeout instead (for bench/serve_bench.sh's comparison)
               write_lock = os.getenv("OTSKIT_SERVE_WRITE_LOCK") ~= "0" } }
  local cf = io.open(prefix .. "/conf/nginx.conf", "w")
  cf:write(text); cf:close()
  os.execute("chmod 600 " .. sh_quote(prefix .. "/conf/nginx.conf"))
  if token_file then
    local tf = io.open(prefix .. "/admin-token", "w")
    if not tf then return fail("cannot write " .. prefix .. "/admin-token") end
    os.execute("chmod 600 " .. sh_quote(prefix .. "/admin-token"))
    tf:write(token, "\n"); tf:close()
  end

  io.stdout:write(("otskit serve: Tablestore API on http://%s\n"):format(args.listen),
    ("  instance %s, access key id %s (the secret is not shown)\n"):format(args.instance, args.access_key_id),
    ("  storage %s, %d worker%s, prefix %s\n"):format(path == ":memory:" and "memory" or path, workers,
      workers == 1 and "" or "s", prefix),
    ("  admin: curl -H \"x-otskit-admin-token: $TOKEN\" http://%s/_otskit/faults (loopback only; token %s)%s; "
      .. "Ctrl-C stops\n"):format(args.listen, token_file and ("in " .. prefix .. "/admin-token") or "as given",
      root and (", workers run as " .. wuser) or ""))
  io.stdout:flush()
  local pid = run("echo $PPID")
  local rf = io.open(prefix .. "/run.sh", "w")
  rf:write(RUNNER); rf:close()
  -- exec: the runner is this process's own child, so the parent-death
  -- signal set by setpriv (when it has --pdeathsig) follows this process
  local has = os.execute("setpriv --help 2>/dev/null | grep -q pdeathsig")
  local pd = (has == true or has == 0) and "setpriv --pdeathsig TERM " or ""
  local okx, how, code = os.execute(("exec %ssh %s %s %s %d"):format(pd, sh_quote(prefix .. "/run.sh"), pid,
    sh_quote(prefix), cleanup))
  if okx == true or okx == 0 then return 0 end
  if type(okx) == "number" then return okx % 256 == 0 and math.floor(okx / 256) or 1 end -- LuaJIT: the wait status
  return how == "exit" and code or 1
end

return serve
