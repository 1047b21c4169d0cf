--- bench/rows_client.lua URL ROUNDS DIR -- issue 30's client figure, run by
-- bench/rows_bench.sh against its `otskit serve` at URL (keys bak/bsk,
-- instance bench): fills table `rows` (5000 rows of bench/rows_decode.lua's
-- shape: 4 key + 6 attribute columns) once, then in ROUNDS interleaved
-- rounds reads it whole (one 5000-row GetRange page) N times with
-- otskit.client and N times with the Node SDK's client
-- (bench/rows_client_node.js, a child process). Both read the same rows
-- (checked: row count and the last key); prints rows/s (wall, medians and
-- ranges) and each client's own CPU per page. ROUNDS 0: only fills the
-- table.
local client = require "otskit.client"
local wire = require "otskit.wire"
local url, ROUNDS = arg[1], tonumber(arg[2]) or 5
local N, ROWS = 5, 5000
local T = os.time() * 1000 - 3600000 -- within the table's max_time_deviation

local c = client.new{ endpoint = url, instance = "bench", access_key_id = "bak", access_key_secret = "bsk", retry = false }
local function int(n) return math.tointeger and math.tointeger(n) or n end
if not c:describe_table{ name = "rows" } then
  assert(c:create_table{ name = "rows", primary_key = { { "region", "STRING" }, { "user", "INTEGER" },
    { "device", "STRING" }, { "seq", "INTEGER" } } })
  local seed = 20261125
  local function rnd(n) seed = (seed * 48271) % 2147483647; return seed % n end
  local function text(n) local t = {}; for i = 1, n do t[i] = string.char(97 + rnd(26)) end; return table.concat(t) end
  for b = 0, ROWS / 200 - 1 do
    local rows = {}
    for j = 1, 200 do
      local i, ts = b * 200 + j, T + b * 200 + j
      rows[j] = { type = "PUT", condition = "IGNORE",
        primary_key = { { "region", ("r%02d"):format(rnd(16)) }, { "user", int(1000000 + i) },
                        { "device", ("dev-%06d"):format(rnd(1e6)) }, { "seq", int(i * 3) } },
        columns = { { "name", text(24), ts }, { "note", text(48), ts }, { "count", int(rnd(1e6)), ts },
                    { "score", rnd(100000) + 0.25, ts }, { "active", rnd(2) == 1, ts },
                    { "blob", wire.binary(text(16)), ts } } }
    end
    local res = assert(c:batch_write_row{ tables = { { table = "rows", rows = rows } } })
    for _, r in ipairs(res.tables[1].rows) do assert(r.ok, r.message) end
  end
end
if ROUNDS == 0 then return end -- the table only (bench/rows_bench.sh phases)
local INF_MIN, INF_MAX = wire.INF_MIN, wire.INF_MAX
local req = { table = "rows", start = { { "region", INF_MIN }, { "user", INF_MIN }, { "device", INF_MIN }, { "seq", INF_MIN } },
  stop = { { "region", INF_MAX }, { "user", INF_MAX }, { "device", INF_MAX }, { "seq", INF_MAX } }, limit = ROWS }
local function page()
  local res = assert(c:get_range(req))
  assert(#res.rows == ROWS and res.next_start_primary_key == nil, "a page of every row")
  return res
end
local function now() return require("socket").gettime() end

for _ = 1, 2 do page() end
local ours, sdk, ocpu, scpu = {}, {}, {}, {}
local load0 = io.open("/proc/loadavg"):read("l"):match("^(%S+ %S+ %S+)")
for _ = 1, ROUNDS do
  local p = assert(io.popen(("NODE_PATH=build/node/node_modules node bench/rows_client_node.js %s %d"):format(url, N)))
  local out = p:read("a"); p:close()
  local s = assert(require("cjson").decode(out))
  assert(s.rows == ROWS, "the SDK read " .. tostring(s.rows) .. " rows a page")
  sdk[#sdk + 1], scpu[#scpu + 1] = s.rows_per_s, s.cpu_ms
  local c0, t0 = os.clock(), now()
  for _ = 1, N do page() end
  ours[#ours + 1], ocpu[#ocpu + 1] = N * ROWS / (now() - t0), (os.clock() - c0) * 1e3 / N
end
local load1 = io.open("/proc/loadavg"):read("l"):match("^(%S+ %S+ %S+)")
local function stat(xs)
  table.sort(xs)
  return xs[math.floor((#xs + 1) / 2)], xs[1], xs[#xs]
end
local om, olo, ohi = stat(ours)
local sm, slo, shi = stat(sdk)
local ocm, scm = stat(ocpu), stat(scpu)
print(("### %s: otskit.client vs the Node SDK's client, GetRange of %d rows (one page) against the same `otskit serve`")
  :format(jit and jit.version or _VERSION, ROWS))
print()
print(("%d interleaved rounds x %d pages each; load average %s before, %s after"):format(ROUNDS, N, load0, load1))
print()
print("| client | rows/s (wall): median (min-max) | client CPU ms per page (median) |")
print("|---|---|---|")
print(("| Node SDK `client.getRange` | %.0f (%.0f-%.0f) | %.1f |"):format(sm, slo, shi, scm))
print(("| otskit.client `get_range` | %.0f (%.0f-%.0f) | %.1f |"):format(om, olo, ohi, ocm))
print(("| otskit / SDK | %.2fx | %.2fx less CPU |"):format(om / sm, scm / ocm))
print()
