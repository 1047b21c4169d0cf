-- `otskit serve` supervision, both ways, with bin/otskit under lua5.4 and
-- under LuaJIT: a kill -9 of any one of its processes — the otskit
-- process, the runner shell that started nginx, their whole process group,
-- the nginx master, the master and the runner together — leaves no nginx
-- process of that prefix, no otskit process, and the port free within a
-- few seconds. (Each case starts a server of its own, not the suite's.)
local serve = require "support.serve"
local socket = require "socket"

local function sh(cmd) return serve.sh(cmd) end

-- a process that still runs (a zombie waiting to be reaped has ended)
local function alive(pid)
  local f = io.open("/proc/" .. pid .. "/stat")
  if not f then return false end
  local st = f:read("*a"); f:close()
  if not st then return false end -- (it ended between the open and the read)
  return st:match("^%d+ %b() (%a)") ~= "Z"
end

local function children(pid)
  local out = {}
  for p in sh(serve.PGREP .. " -P " .. pid):gmatch("%d+") do out[#out + 1] = p end
  return out
end

local function master_of(s)
  for _ = 1, 50 do
    local f = io.open(s.tmp .. "/ng/logs/nginx.pid")
    if f then
      local m = f:read("*l"); f:close()
      if m and m:match("^%d+$") then return m end
    end
    os.execute("sleep 0.1")
  end
  error("no nginx.pid")
end

-- the runner: the shell running PREFIX/run.sh whose parent is otskit
local function runner_of(s)
  for _, p in ipairs(children(s.pid)) do
    local f = io.open("/proc/" .. p .. "/cmdline")
    local cmd = f and f:read("*a") or ""
    if f then f:close() end
    if cmd:find(s.tmp .. "/ng/run.sh", 1, true) then return p end
  end
  error("no runner under " .. s.pid)
end

local function port_free(port)
  local b = socket.bind("127.0.0.1", port)
  if b then b:close(); return true end
  return false
end

-- every pid ended, no process names the prefix, the port is free
local function all_gone(s, pids, secs)
  local left
  for _ = 1, secs * 10 do
    left = {}
    for _, p in ipairs(pids) do if alive(p) then left[#left + 1] = p end end
    -- "/n[g]": the pattern matches the prefix but not this pgrep's own shell
    local named = sh(serve.PGREP .. " -f '" .. s.tmp .. "/n[g]'")
    if named ~= "" then left[#left + 1] = "named:" .. named:gsub("%s+", ",") end
    if #left == 0 and port_free(s.port) then return true end
    os.execute("sleep 0.1")
  end
  return false, table.concat(left, " ") .. (port_free(s.port) and "" or " (port taken)")
end

-- starts a server, kills what victims(s, master, workers, runner) names
-- with kill -9, and asserts everything is gone within 8 s
local function trial(lua, victims, opts)
  local o = { lua = lua, workers = 2, data = true }
  for k, v in pairs(opts or {}) do o[k] = v end
  local s = assert(serve.start(o))
  local ok, err = pcall(function()
    local m = master_of(s)
    local workers = children(m)
    assert.is_true(#workers >= 2, "workers: " .. #workers)
    local runner = runner_of(s)
    local everyone = { s.pid, runner, m }
    for _, w in ipairs(workers) do everyone[#everyone + 1] = w end
    assert(os.execute("kill -KILL " .. victims(s, m, workers, runner)))
    local gone, left = all_gone(s, everyone, 8)
    assert.is_true(gone, "left: " .. tostring(left))
  end)
  -- all gone (or the assertion failed): stop() signals no pid that may be reused
  if ok then s.pid = nil; os.remove(s.tmp .. "/ng/logs/nginx.pid") end
  s.stop()
  if not ok then error(err, 0) end
end

for _, lua in ipairs { "lua5.4", "luajit" } do
  describe("otskit serve supervision (bin/otskit under " .. lua .. ")", function()
    it("kill -9 of the runner shell alone stops nginx and frees the port", function()
      trial(lua, function(_, _, _, runner) return runner end)
    end)

    it("kill -9 of the otskit process alone stops nginx and frees the port", function()
      trial(lua, function(s) return s.pid end)
    end)

    it("kill -9 of otskit's whole process group (otskit, runner, watchdog) stops nginx", function()
      trial(lua, function(s) return "-" .. s.pid end, { setsid = true })
    end)

    it("kill -9 of the nginx master stops its workers and the supervisor exits", function()
      trial(lua, function(_, m) return m end)
    end)

    it("kill -9 of the master and the runner together: the workers exit by themselves", function()
      trial(lua, function(_, m, _, runner) return m .. " " .. runner end)
    end)
  end)
end
