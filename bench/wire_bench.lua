--- bench/wire_bench.lua -- otskit.wire against the official Node.js SDK
-- (tablestore@5.6.5, bench/wire_node.js run as a child process that times
-- itself in CPU time, as os.clock does here) on the same bytes: decoding a 5000-row GetRange response (2 key +
-- 8 attribute columns of mixed types with timestamps) into rows, and
-- encoding a 200-row BatchWriteRow request. Outputs are checked equal
-- first (every decoded value and timestamp; the request bytes once the
-- SDK's zero padding is cut). Also the C-only decode (checksums verified,
-- no Lua objects): the limit. Needs `make interop` (the SDK in build/node).
local bench = require "lib"
local wire = require "otskit.wire"
local core = require("otskit.core").wire
local cjson = require "cjson"
local cbench = require "otskit_bench"

local ROWS, BATCH, T = 5000, 200, 1700000000000
local dir = "build/bench"
os.execute("mkdir -p " .. dir)
if not io.open("build/node/node_modules/tablestore/package.json") then
  print("wire bench: skipped (run `make interop` first: it installs the Node SDK into build/node)")
  return
end

local seed = 20240611
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

-- one row: 2 key columns, 8 attributes of every type, each with a timestamp
local function make_row(i)
  local ts = T + i
  return {
    primary_key = { { "pk1", ("user-%08d"):format(rnd(1e8)) }, { "pk2", int(i * 7) } },
    cells = {
      { "a_name", text(60), ts }, { "a_city", text(30), ts }, { "a_note", text(50), ts },
      { "n_count", int(rnd(1000)), ts }, { "n_total", int(rnd(1e9) * 1000), ts },
      { "f_score", rnd(100000) + 0.5, ts }, { "b_active", rnd(2) == 1, ts },
      { "x_blob", wire.binary(text(40)), ts },
    },
  }
end

local rows = {}
for i = 1, ROWS do rows[i] = make_row(i) end
local body = assert(wire.encode_response("GetRange", { rows = rows, consumed = { capacity_unit = { read = 700, write = 0 } } }))
local f = assert(io.open(dir .. "/getrange.bin", "wb")); f:write(body); f:close()

-- the batch: PUT rows, as JSON for the Node side
local batch, jrows = {}, {}
for i = 1, BATCH do
  local r = make_row(i)
  local cols, jcols = {}, {}
  for j, c in ipairs(r.cells) do
    cols[j] = c
    local v = c[2]
    if type(v) == "table" then v = { b = (v.value:gsub(".", function(ch) return ("%02x"):format(ch:byte()) end)) }
    elseif math.type and math.type(v) == "integer" then v = { i = v }
    elseif not math.type and type(v) == "number" and v == math.floor(v) then v = { i = ("%d"):format(v) } end
    jcols[j] = { c[1], v, c[3] }
  end
  batch[i] = { type = "PUT", condition = "IGNORE", primary_key = r.primary_key, columns = cols }
  jrows[i] = { pk = { { "pk1", r.primary_key[1][2] }, { "pk2", { i = r.primary_key[2][2] } } }, cols = jcols }
end
f = assert(io.open(dir .. "/batch.json", "w")); f:write(cjson.encode({ table = "t", rows = jrows })); f:close()
local breq = { tables = { { table = "t", rows = batch } } }

-- the Node SDK, timing itself
local reps = bench.quick and 3 or 7
local p = assert(io.popen(("NODE_PATH=build/node/node_modules node bench/wire_node.js %s %d"):format(dir, reps)))
local node = cjson.decode(p:read("a"))
p:close()

-- equal outputs: every decoded value and timestamp, as text lines
local function hexs(s) return (s:gsub(".", function(ch) return ("%02x"):format(ch:byte()) end)) end
local function vtext(v, ty)
  local t = type(v)
  if ty == "BINARY" then return "b:" .. hexs(v) end
  if t == "string" then return "s:" .. v end
  if t == "boolean" then return "o:" .. tostring(v) end
  if (math.type and math.type(v) == "integer") or (not math.type and v == math.floor(v)) then return ("i:%d"):format(v) end
  return ("d:%.17g"):format(v)
end
local res = assert(wire.decode_response("GetRange", body))
local lines = {}
for i, r in ipairs(res.rows) do
  local cells = {}
  for _, c in ipairs(r.primary_key) do cells[#cells + 1] = c[1] .. "=" .. vtext(c[2]) end
  for _, c in ipairs(r.cells) do cells[#cells + 1] = c[1] .. "=" .. vtext(c[2], c[4]) .. ("@%d"):format(c[3]) end
  lines[i] = table.concat(cells, " ")
end
local node_lines = {}
for l in io.lines(dir .. "/node_rows.txt") do node_lines[#node_lines + 1] = l end
bench.same(node_lines, lines, "decoded rows (Node SDK vs otskit)")

local ours = assert(wire.encode_request("BatchWriteRow", breq))
local nb = assert(io.open(dir .. "/node_batch.bin", "rb")):read("a")
local m = assert(core.proto_decode("BatchWriteRowRequest", nb))
for _, r in ipairs(m.tables[1].rows) do r.row_change = r.row_change:sub(1, assert(core.rows_length(r.row_change))) end
bench.same(assert(core.proto_encode("BatchWriteRowRequest", m)), ours, "BatchWriteRow bytes (Node SDK, padding cut, vs otskit)")

-- timings (ms per page / per batch)
local rows_bytes = assert(core.proto_decode("GetRangeResponse", body)).rows
bench.title(("wire: GetRange decode (%d rows, %d B/row) and BatchWriteRow encode (%d rows), vs Node SDK %s")
  :format(ROWS, math.floor(#rows_bytes / ROWS), BATCH, node.node))
local t_full = bench.time_batch(function() wire.decode_response("GetRange", body) end, 1, reps) * 1e3
local t_rows = bench.time_batch(function() wire.decode_rows(rows_bytes) end, 1, reps) * 1e3
local t_c = bench.time_batch(function() cbench.plainbuffer_count(rows_bytes) end, 1, reps) * 1e3
local t_enc = bench.time_batch(function() wire.encode_request("BatchWriteRow", breq) end, 1, reps) * 1e3
local gres = { rows = rows, consumed = { capacity_unit = { read = 700, write = 0 } } }
local t_srv = bench.time_batch(function() wire.encode_response("GetRange", gres) end, 1, reps) * 1e3

bench.table({ "operation", "otskit ms", "Node SDK ms CPU (min-max; wall)", "SDK / otskit" })
bench.row("GetRange response -> Lua rows (decode_response)", t_full,
  ("%.3g (%.3g-%.3g; %.3g)"):format(node.decode_ms, node.decode_min, node.decode_max, node.decode_wall), node.decode_ms / t_full)
bench.row("rows field only (decode_rows)", t_rows, "", node.decode_ms / t_rows)
bench.row("C-only decode, checksums verified (the limit)", t_c, "", node.decode_ms / t_c)
bench.row("BatchWriteRow request encode (encode_request)", t_enc,
  ("%.3g (%.3g-%.3g; %.3g)"):format(node.encode_ms, node.encode_min, node.encode_max, node.encode_wall), node.encode_ms / t_enc)
bench.row("GetRange response encode, server side (encode_response)", t_srv, "(no SDK encoder)", "")

-- the Node SDK's own medians and the ratios, recorded with the run
bench.value("wire: Node SDK GetRange decode (ms)", "ms", "lower", node.decode_ms)
bench.value("wire: Node SDK BatchWriteRow encode (ms)", "ms", "lower", node.encode_ms)
bench.value("wire: GetRange decode, SDK / otskit", "x", "higher", node.decode_ms / t_full)
bench.value("wire: BatchWriteRow encode, SDK / otskit", "x", "higher", node.encode_ms / t_enc)
