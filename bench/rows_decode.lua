--- bench/rows_decode.lua [ROUNDS [REPS]] -- issue 30's decode figure: a
-- 5000-row GetRange response (4 key + 6 attribute columns, every attribute
-- with a timestamp) decoded by otskit.wire and by the official Node.js SDK
-- (tablestore@5.6.5 from `make interop`, bench/rows_node.js as a child
-- process), in interleaved rounds: each round runs the SDK (REPS timed
-- runs after warm-up) and then each otskit variant (REPS runs), so a
-- change of the shared machine's load hits both sides alike. CPU time on
-- both sides (os.clock; process.cpuUsage), a full GC before every timed
-- run on both sides. The outputs are checked equal first (every key,
-- value and timestamp), then dropped: the timed runs hold what the SDK's
-- process holds. The last row, the floor: the same tables built in Lua
-- from values at hand, strings made from their bytes, no parsing.
-- Prints a markdown table: medians over all runs,
-- min-max, SDK / otskit ratios, the load average before and after.
-- Run by bench/rows_bench.sh under lua5.4 and luajit.
local wire = require "otskit.wire"
local core = require("otskit.core").wire
local cjson = require "cjson"
local ok_cb, cbench = pcall(require, "otskit_bench")

local ROUNDS, REPS, ROWS, T = tonumber(arg[1]) or 5, tonumber(arg[2]) or 5, 5000, 1700000000000
local dir = os.getenv("BENCH_DIR") or "build/bench"
os.execute("mkdir -p " .. dir)
if not io.open("build/node/node_modules/tablestore/package.json") then
  print("rows decode bench: skipped (run `make interop` first: it installs the Node SDK into build/node)")
  return
end

local seed = 20261125
local function rnd(n)
  seed = (seed * 48271) % 2147483647
  return seed % n
end
local function text(n)
  local t = {}
  for i = 1, n do t[i] = string.char(97 + rnd(26)) end
  return table.concat(t)
end
local function int(n) return math.tointeger and math.tointeger(n) or n end

-- 4 key columns (STRING, INTEGER, STRING, INTEGER) and 6 attributes
-- (STRING x2, INTEGER, DOUBLE, BOOLEAN, BINARY), each with a timestamp
local rows = {}
for i = 1, ROWS do
  local ts = T + i
  rows[i] = {
    primary_key = { { "region", ("r%02d"):format(rnd(16)) }, { "user", int(1000000 + i) },
                    { "device", ("dev-%06d"):format(rnd(1e6)) }, { "seq", int(i * 3) } },
    cells = { { "name", text(24), ts }, { "note", text(48), ts }, { "count", int(rnd(1e6)), ts },
              { "score", rnd(100000) + 0.25, ts }, { "active", rnd(2) == 1, ts },
              { "blob", wire.binary(text(16)), ts } },
  }
end
local body = assert(wire.encode_response("GetRange", { rows = rows, consumed = { capacity_unit = { read = 700, write = 0 } } }))
local file = dir .. "/rows46.bin"
local f = assert(io.open(file, "wb")); f:write(body); f:close()

local function node(reps, out)
  local p = assert(io.popen(("NODE_PATH=build/node/node_modules node --expose-gc bench/rows_node.js %s %d %s")
    :format(file, reps, out or "")))
  local r = cjson.decode(p:read("a"))
  p:close()
  return r
end

-- equal outputs: every decoded key, value and timestamp, as text lines
local function hexs(s) return (s:gsub(".", function(ch) return ("%02x"):format(ch:byte()) end)) end
local function vtext(v, ty)
  if ty == "BINARY" then return "b:" .. hexs(v) end
  if type(v) == "string" then return "s:" .. v end
  if type(v) == "boolean" then return "o:" .. tostring(v) end
  if (math.type and math.type(v) == "integer") or (not math.type and v == math.floor(v)) then return ("i:%d"):format(v) end
  return ("d:%.17g"):format(v)
end
local first = node(1, dir .. "/rows46_node.txt")
local res = assert(wire.decode_response("GetRange", body))
local i = 0
for l in io.lines(dir .. "/rows46_node.txt") do
  i = i + 1
  local r, cells = res.rows[i], {}
  for _, c in ipairs(r.primary_key) do cells[#cells + 1] = c[1] .. "=" .. vtext(c[2]) end
  for _, c in ipairs(r.cells) do cells[#cells + 1] = c[1] .. "=" .. vtext(c[2], c[4]) .. ("@%d"):format(c[3]) end
  local mine = table.concat(cells, " ")
  if mine ~= l then error(("rows decode bench: row %d differs:\n SDK    %s\n otskit %s"):format(i, l, mine)) end
end
assert(i == ROWS and #res.rows == ROWS, "rows decode bench: row count")
-- the timed runs hold what the SDK's process holds: the body and the last
-- result (the rows built above and the checked result would otherwise be
-- live data every collection of the timed runs traverses again)
-- The floor of what the interface asks for: the same rows, keys, columns
-- and cells built in Lua from values at hand (one flat array of numbers:
-- the places of the strings' bytes in the response, the numbers), each
-- string made from its bytes as a decoder must, no parsing at all.
local rows_field = assert(core.proto_decode("GetRangeResponse", body)).rows
local flat = {}
do
  local at = 1
  local function str(v)
    local a, b = rows_field:find(v, at, true)
    assert(a and rows_field:sub(a, b) == v)
    flat[#flat + 1] = a; flat[#flat + 1] = b; at = b + 1
  end
  for _, r in ipairs(res.rows) do
    local k, c = r.primary_key, r.cells
    str(k[1][2]); flat[#flat + 1] = k[2][2]; str(k[3][2]); flat[#flat + 1] = k[4][2]
    str(c[1][2]); str(c[2][2]); flat[#flat + 1] = c[3][2]; flat[#flat + 1] = c[4][2]
    flat[#flat + 1] = c[5][2] and 1 or 0; str(c[6][2]); flat[#flat + 1] = c[1][3]
  end
end
rows, res, first.ms = nil, nil, nil

-- the otskit variants: what a reader asks for decides what is built
local sink
local variants = {
  { "decode_response (rows, keys, columns; cells when read)", function()
      sink = wire.decode_response("GetRange", body) end },
  { "decode + read every key value and column", function()
      local r = wire.decode_response("GetRange", body)
      local n = 0
      for _, row in ipairs(r.rows) do
        for _, c in ipairs(row.primary_key) do if c[2] then n = n + 1 end end
        for _, v in pairs(row.columns) do if v ~= nil then n = n + 1 end end
      end
      sink = n end },
  { "decode + read every cell (all the SDK builds)", function()
      local r = wire.decode_response("GetRange", body)
      local n = 0
      for _, row in ipairs(r.rows) do
        for _, c in ipairs(row.primary_key) do if c[2] then n = n + 1 end end
        for _, c in ipairs(row.cells) do if c[3] then n = n + 1 end end
      end
      sink = n end },
  { "the interface's objects alone: same rows and cells from values at hand, strings from bytes (the floor)", function()
      local out, sub, blob = {}, string.sub, rows_field
      for i = 1, ROWS do
        local b = (i - 1) * 16 -- s1 from to, user, s3 from to, seq, s5, s6, count, score, active, s10, ts
        local s1, s3 = sub(blob, flat[b + 1], flat[b + 2]), sub(blob, flat[b + 4], flat[b + 5])
        local s5, s6, s10 = sub(blob, flat[b + 7], flat[b + 8]), sub(blob, flat[b + 9], flat[b + 10]),
          sub(blob, flat[b + 14], flat[b + 15])
        local count, score, active, ts = flat[b + 11], flat[b + 12], flat[b + 13] == 1, flat[b + 16]
        out[i] = {
          primary_key = { { "region", s1 }, { "user", flat[b + 3] }, { "device", s3 }, { "seq", flat[b + 6] } },
          columns = { name = s5, note = s6, count = count, score = score, active = active, blob = s10 },
          cells = { { "name", s5, ts, "STRING" }, { "note", s6, ts, "STRING" }, { "count", count, ts, "INTEGER" },
                    { "score", score, ts, "DOUBLE" }, { "active", active, ts, "BOOLEAN" }, { "blob", s10, ts, "BINARY" } },
        }
      end
      sink = #out end },
}
if ok_cb then
  variants[#variants + 1] = { "C alone: parse + verify every checksum, no Lua objects (the limit)", function()
    sink = cbench.plainbuffer_count(rows_field) end }
end

local function time(fn)
  collectgarbage(); collectgarbage()
  local t0 = os.clock()
  fn()
  return (os.clock() - t0) * 1e3
end
for _, v in ipairs(variants) do v[2]() end -- warm-up (LuaJIT traces)
local load0 = io.open("/proc/loadavg"):read("l"):match("^(%S+ %S+ %S+)")
local sdk, ms = {}, {}
for _ = 1, ROUNDS do
  for _, x in ipairs(node(REPS).ms) do sdk[#sdk + 1] = x end
  for j, v in ipairs(variants) do
    ms[j] = ms[j] or {}
    for _ = 1, REPS do ms[j][#ms[j] + 1] = time(v[2]) end
  end
end
local load1 = io.open("/proc/loadavg"):read("l"):match("^(%S+ %S+ %S+)")

local function stats(xs)
  table.sort(xs)
  return xs[math.floor((#xs + 1) / 2)], xs[1], xs[#xs]
end
local sm, slo, shi = stats(sdk)
print(("### %s: GetRange decode, %d rows x (4 key + 6 attribute columns), %d B/row, vs Node SDK %s")
  :format(jit and jit.version or _VERSION, ROWS, math.floor(#rows_field / ROWS), first.node))
print()
print(("%d interleaved rounds x %d runs; load average %s before, %s after"):format(ROUNDS, REPS, load0, load1))
print()
print("| decode | otskit ms CPU: median (min-max) | SDK / otskit (median) |")
print("|---|---|---|")
print(("| Node SDK `TS.decoder.decode('getRange')` | %.1f (%.1f-%.1f) | 1 |"):format(sm, slo, shi))
for j, v in ipairs(variants) do
  local m, lo, hi = stats(ms[j])
  print(("| %s | %.2f (%.2f-%.2f) | %.1fx |"):format(v[1], m, lo, hi, sm / m))
end
print()
