-- bench/store_writers.lua [ops per writer] [runs]: throughput of the
-- embedded store with N writer processes (1, 2, 4) on one file. Each
-- writer is spec/store_worker.lua ("put": distinct rows, "inc": one hot
-- counter); every operation is one SQLite write transaction, so writers
-- take turns on the file's lock. Prints ops/s (median of runs, range) and
-- the OTSServerBusy answers (retried; 0 with the 5 s busy timeout).
-- Run from the repo root: lua5.4 bench/store_writers.lua 500 3
local LUA54 = _VERSION == "Lua 5.4" and not jit
local interp = LUA54 and "lua5.4" or "luajit"
local build = LUA54 and "build/5.4" or "build/jit"
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = build .. "/?.so;" .. package.cpath
local store = require "otskit.store"
local ok, socket = pcall(require, "socket")
local now = ok and socket.gettime or os.time

local per = tonumber(arg and arg[1]) or 500
local runs = tonumber(arg and arg[2]) or 3

local function rm(p) for _, s in ipairs({ "", "-wal", "-shm" }) do os.remove(p .. s) end end

local function run(n, mode)
  local path = os.tmpname()
  rm(path)
  local db = assert(store.open { path = path })
  assert(db:create_table { name = "c", primary_key = { { "id", "STRING" } } })
  assert(db:put_row { table = "c", primary_key = { "n" }, columns = { v = 0, w = 0 } })
  db:close()
  local procs = {}
  local t0 = now()
  for i = 1, n do
    procs[i] = assert(io.popen(("%s spec/store_worker.lua %q %q %q %s %d %d"):format(interp, package.path,
      package.cpath, path, mode, per, i)))
  end
  local busy = 0
  for _, p in ipairs(procs) do
    local out = p:read("*a")
    p:close()
    busy = busy + tonumber(out:match("busy=(%d+)") or "0")
  end
  local dt = now() - t0
  db = assert(store.open { path = path })
  local v = db:get_row { table = "c", primary_key = { "n" } }.row.columns.v
  db:close()
  rm(path)
  if mode == "inc" then assert(v == n * per, "lost increments: " .. tostring(v)) end
  return n * per / dt, busy
end

print(("%s, %d ops per writer, %d runs (2 shared cores: noisy)"):format(_VERSION .. (jit and " (LuaJIT)" or ""), per, runs))
for _, mode in ipairs({ "put", "inc" }) do
  for _, n in ipairs({ 1, 2, 4 }) do
    local rates, busy = {}, 0
    for r = 1, runs do
      local rate, b = run(n, mode)
      rates[r], busy = rate, busy + b
    end
    table.sort(rates)
    print(("%-3s writers=%d  median %6.0f ops/s  range %.0f..%.0f  busy answers %d"):format(mode, n,
      rates[math.ceil(#rates / 2)], rates[1], rates[#rates], busy))
  end
end
