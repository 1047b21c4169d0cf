--- bench/rows_client_phases.lua URL [PAGES] -- where otskit.client's CPU
-- goes on a 5000-row GetRange page (issue 30), run by bench/rows_bench.sh
-- (part `phases`) against its `otskit serve` at URL after the `client`
-- part filled table `rows` (bench/rows_client.lua). Each phase of
-- client:get_range is timed with os.clock (CPU) by wrapping the functions
-- it calls: the transport (curl: the request and the body made a Lua
-- string), the response checks (verify.headers: MD5 of the body and the
-- signature), decode_response, and the GetRange check (verify.rows).
-- Prints the medians (min-max) over PAGES pages (default 20), in steady
-- state (no collection forced between pages), and the load average.
-- Then the paths before and after session 8 in one process, alternating
-- (ROUNDS rounds x 8 pages each; CPU per page): (1) the rows field
-- copied out of the body (core.proto_decode) and the GetRange check
-- comparing every row's key in Lua, what the client did before; (2) the
-- copy, with the decoder's key-order flag; (3) the rows read in the body
-- (core.proto_decode_span) with the flag, what it does now. (1) and (2)
-- are made by replacing core.proto_decode_span / pb.decode_rows for the
-- round.
local client = require "otskit.client"
local verify = require "otskit.client.verify"
local wire = require "otskit.wire"
local pb = require "otskit.wire.plainbuffer"
local core = require("otskit.core").wire
local url, PAGES, ROUNDS = arg[1], tonumber(arg[2]) or 20, tonumber(arg[3]) or 8
local acc
local function wrap(tbl, k, name)
  local f = tbl[k]
  tbl[k] = function(...)
    local c0 = os.clock()
    local a, b, c, d, e = f(...)
    acc[name] = (acc[name] or 0) + os.clock() - c0
    return a, b, c, d, e
  end
end
wrap(client.Client, "_perform", "transport")
wrap(verify, "headers", "MD5 + signature")
wrap(wire, "decode_response", "decode_response")
wrap(verify, "rows", "GetRange check")
-- the load average now, and the median, min and max of the numbers xs
local function loadavg() return io.open("/proc/loadavg"):read("l"):match("^(%S+ %S+ %S+)") end
local function spread(xs)
  table.sort(xs)
  return xs[math.floor((#xs + 1) / 2)], xs[1], xs[#xs]
end
local c = client.new{ endpoint = url, instance = "bench", access_key_id = "bak", access_key_secret = "bsk", retry = false }
local INF_MIN, INF_MAX = wire.INF_MIN, wire.INF_MAX
local req = { table = "rows", start = { { "region", INF_MIN }, { "user", INF_MIN }, { "device", INF_MIN }, { "seq", INF_MIN } },
  stop = { { "region", INF_MAX }, { "user", INF_MAX }, { "device", INF_MAX }, { "seq", INF_MAX } }, limit = 5000 }
local load0 = loadavg()
acc = {}
for _ = 1, 3 do assert(c:get_range(req)) end
local samples = {}
for _ = 1, PAGES do
  acc = {}
  local c0 = os.clock()
  local res = assert(c:get_range(req))
  assert(#res.rows == 5000, "a page of every row")
  acc.total = os.clock() - c0
  samples[#samples + 1] = acc
end
local load1 = loadavg()
print(("### %s: otskit.client's CPU per 5000-row GetRange page, by phase (%d pages; load average %s before, %s after)")
  :format(jit and jit.version or _VERSION, PAGES, load0, load1))
print()
print("| phase | CPU ms per page: median (min-max) |")
print("|---|---|")
for _, n in ipairs({ "total", "transport", "MD5 + signature", "decode_response", "GetRange check" }) do
  local xs = {}
  for i, s in ipairs(samples) do xs[i] = (s[n] or 0) * 1e3 end
  print(("| %s | %.2f (%.2f-%.2f) |"):format(n == "total" and "get_range (all)" or n, spread(xs)))
end
print()

-- the paths, alternating
local span, dr = core.proto_decode_span, pb.decode_rows
local function no_span() return nil end
local function flagged(b) return pb.decode_rows_at(b, 0, #b) end
local paths = {
  { "rows field copied, GetRange check in Lua (before)", function() core.proto_decode_span, pb.decode_rows = no_span, dr end },
  { "rows field copied, the decoder's order flag", function() core.proto_decode_span, pb.decode_rows = no_span, flagged end },
  { "rows read in the body, the decoder's order flag (now)", function() core.proto_decode_span, pb.decode_rows = span, dr end },
}
local cpu = { {}, {}, {} }
local l0 = loadavg()
for _ = 1, ROUNDS do
  for k, p in ipairs(paths) do
    p[2]()
    for _ = 1, 2 do assert(c:get_range(req)) end
    local c0 = os.clock()
    for _ = 1, 8 do assert(#assert(c:get_range(req)).rows == 5000) end
    local t = cpu[k]; t[#t + 1] = (os.clock() - c0) * 1e3 / 8
  end
end
core.proto_decode_span, pb.decode_rows = span, dr
local l1 = loadavg()
print(("%s, the same pages by path, alternating (%d rounds x 8 pages; load average %s before, %s after):")
  :format(jit and jit.version or _VERSION, ROUNDS, l0, l1))
print()
print("| path | CPU ms per page: median (min-max) | vs before |")
print("|---|---|---|")
local base
for k, p in ipairs(paths) do
  local m, lo, hi = spread(cpu[k])
  base = base or m
  print(("| %s | %.2f (%.2f-%.2f) | %.2fx |"):format(p[1], m, lo, hi, m / base))
end
print()
