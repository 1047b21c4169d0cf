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
  p:option("--prefix", "nginx prefix (config, logs); default: a temporary directory, removed at exit.")
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

-- The foreground runner: nginx as a child of this shell; INT/TERM/HUP stop
-- it (TERM, then KILL of the master and its workers after 10 s); a watchdog
-- stops it too when the otskit process ($1) disappears (killed -9).
local RUNNER = [[
parent=$1; prefix=$2; cleanup=$3
nginx -p "$prefix" -c "$prefix/conf/nginx.conf" -g "daemon off;" &
ng=$!
stop() {
  kill -TERM "$ng" 2>/dev/null
  i=0
  while kill -0 "$ng" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  if kill -0 "$ng" 2>/dev/null; then kill -KILL "$ng" $(pgrep -P "$ng") 2>/dev/null; fi
}
trap 'stop' INT TERM HUP
( while kill -0 "$parent" 2>/dev/null && kill -0 "$ng" 2>/dev/null; do sleep 0.3; done
  kill -0 "$ng" 2>/dev/null && kill -TERM "$ng" ) &
watch=$!
status=0
while kill -0 "$ng" 2>/dev/null; do wait "$ng"; status=$?; done
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
  -- workers run as the user who started serve (root stays root), so the
  -- --data files stay theirs and the checkout needs no world-readable copy
  local user = run("id -u") == "0" and "user root root;" or ""
  local text = conf.render{ listen = args.listen, workers = workers, lua = lua_dir, cpath = cpath, user = user,
    config = { access_key_id = args.access_key_id, secret = args.access_key_secret, instance = args.instance,
               path = path, workers = workers, faults = args.faults or "",
               -- OTSKIT_SERVE_WRITE_LOCK=0: leave concurrent writes to SQLite's
               -- busy timeout instead (for bench/serve_bench.sh's comparison)
               write_lock = os.getenv("OTSKIT_SERVE_WRITE_LOCK") ~= "0" } }
  local cf = io.open(prefix .. "/conf/nginx.conf", "w")
  cf:write(text); cf:close()
  os.execute("chmod 600 " .. sh_quote(prefix .. "/conf/nginx.conf"))

  io.stdout:write(("otskit serve: Tablestore API on http://%s\n"):format(args.listen),
    ("  instance %s, access key id %s, secret %s\n"):format(args.instance, args.access_key_id, args.access_key_secret),
    ("  storage %s, %d worker%s, prefix %s\n"):format(path == ":memory:" and "memory" or path, workers,
      workers == 1 and "" or "s", prefix),
    ("  admin: curl http://%s/_otskit/faults (127.0.0.1 only); Ctrl-C stops\n"):format(args.listen))
  io.stdout:flush()
  local pid = run("echo $PPID")
  local rf = io.open(prefix .. "/run.sh", "w")
  rf:write(RUNNER); rf:close()
  local okx, how, code = os.execute(("sh %s %s %s %d"):format(sh_quote(prefix .. "/run.sh"), pid, sh_quote(prefix), cleanup))
  if okx then return 0 end
  return how == "exit" and code or 1
end

return serve
