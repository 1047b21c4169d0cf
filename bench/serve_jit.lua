--- bench/serve_jit.lua [N] -- the request path of `otskit serve` without
-- nginx (otskit.server.dispatch.call: protobuf request -> store ->
-- protobuf response, what a worker runs per request between reading the
-- body and sending the answer) in a loop, for LuaJIT's trace log:
--
--   LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="build/jit/?.so;;" \
--     luajit bench/serve_jit.lua
--
-- N (default 3000) GetRow, PutRow and 100-row GetRange calls on an
-- in-memory store, checked to answer; prints the calls/s of each (one
-- process, CPU time) and, under LuaJIT, the trace counts (started,
-- aborted; the abort reasons by count, then each abort's place as -jv
-- prints it) from jit.attach.
local dispatch = require "otskit.server.dispatch"
local store = require "otskit.store"
local wire = require "otskit.wire"

local N = tonumber(arg[1]) or 3000
local db = assert(store.open{ path = ":memory:" })
local function call(api, req)
  local out, msg = dispatch.call(db, api, assert(wire.encode_request(api, req)))
  return assert(out, msg)
end
call("CreateTable", { name = "bench", primary_key = { { "id", "INTEGER" } } })
local VALUE = ("v"):rep(100)
for id = 1, 1000 do
  call("PutRow", { table = "bench", primary_key = { { "id", id } }, columns = { { "v", VALUE }, { "n", id } } })
end
local gets, puts = {}, {}
for i = 1, 1000 do gets[i] = assert(wire.encode_request("GetRow", { table = "bench", primary_key = { { "id", i } } })) end
for i = 1, 1000 do
  puts[i] = assert(wire.encode_request("PutRow", { table = "bench", primary_key = { { "id", 2000 + i } },
    columns = { { "v", VALUE }, { "n", i } } }))
end
local range = assert(wire.encode_request("GetRange", { table = "bench", start = { { "id", 1 } },
  stop = { { "id", wire.INF_MAX } }, limit = 100 }))
local got = wire.decode_response("GetRange", assert(dispatch.call(db, "GetRange", range)))
assert(#got.rows == 100 and got.rows[100].columns.v == VALUE, "GetRange does not answer 100 rows")

-- Under LuaJIT the trace events are taken here, with their places (what
-- `-jv` prints: one jit.attach handler per event kind, so run this
-- without -jv): every abort as "[TRACE --- start -- reason at place]".
local started, aborted, reasons, places = 0, 0, {}, {}
if jit then
  local vmdef = require "jit.vmdef"
  local jutil = require "jit.util"
  local function loc(fn, pc)
    local ok, fi = pcall(jutil.funcinfo, fn, pc)
    if not ok or not fi then return "?" end
    return fi.loc or (fi.ffid and vmdef.ffnames[fi.ffid]) or "?"
  end
  local start = {}
  jit.attach(function(what, tr, fn, pc, otr, oex)
    if what == "start" then
      started = started + 1
      start[tr] = loc(fn, pc)
    elseif what == "abort" then
      aborted = aborted + 1
      local why = vmdef.traceerr[otr] or tostring(otr)
      if type(oex) == "number" and why:find("%%d") then why = why:format(oex)
      elseif oex ~= nil and why:find("%%s") then why = why:format(vmdef.ffnames[oex] or tostring(oex)) end
      reasons[why] = (reasons[why] or 0) + 1
      local p = ("[TRACE --- %s -- %s at %s]"):format(start[tr] or "?", why, loc(fn, pc))
      places[p] = (places[p] or 0) + 1
    end
  end, "trace")
end

local function loop(name, bodies, api)
  local t0 = os.clock()
  for i = 1, N do
    local out, msg = dispatch.call(db, api, bodies[(i - 1) % #bodies + 1])
    if not out then error(name .. ": " .. tostring(msg)) end
  end
  local dt = os.clock() - t0
  print(("%-16s %8.0f calls/s  %6.1f us/call"):format(name, N / dt, dt / N * 1e6))
end
loop("GetRow", gets, "GetRow")
loop("PutRow", puts, "PutRow")
loop("GetRange 100", { range }, "GetRange")
if jit then
  print(("traces: %d started, %d aborted"):format(started, aborted))
  local list = {}
  for why, n in pairs(reasons) do list[#list + 1] = { why, n } end
  table.sort(list, function(a, b) return a[2] > b[2] end)
  for _, r in ipairs(list) do print(("  %4d  %s"):format(r[2], r[1])) end
  local ps = {}
  for p, n in pairs(places) do ps[#ps + 1] = { p, n } end
  table.sort(ps, function(a, b) return a[2] > b[2] or (a[2] == b[2] and a[1] < b[1]) end)
  for _, r in ipairs(ps) do print(("  %4d  %s"):format(r[2], r[1])) end
end
