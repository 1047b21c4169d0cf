-- bench/serve_limit.lua [N] -- the limit of `otskit serve`'s own work per
-- request on this machine: what a worker does between reading the body
-- and sending the answer (the body's MD5 and the request signature
-- checked, the protobuf request decoded, one read transaction (GetRow:
-- one statement once the definitions were checked, as serve does), the
-- rows read straight into PlainBuffer (PutRow: one write transaction, the
-- row decoded into the stored key and row), the protobuf answer, its MD5
-- and signature) for a GetRow, a 100-row GetRange and a PutRow (one write
-- transaction replacing a row of the bench's shape), done
--   C alone  by otskit_bench.serve_limit (bench/cbench.c: plain C over
--            the same kv, rowstream, sign and protobuf code), and
--   otskit   by the Lua request path without nginx (core.wire.raw_verify
--            over the raw header, dispatch.call, core.wire.answer),
-- on the same SQLite file (1000 rows of bench/serve_reqs.lua's shape).
-- Needs `make build build/jit/otskit_bench.so` (or 5.4). Prints us per
-- request, medians of 5 runs of N (default 2000) requests each.
local store = require "otskit.store"
local wire = require "otskit.wire"
local dispatch = require "otskit.server.dispatch"
local bench = require "otskit_bench"

local N = tonumber(arg[1]) or 2000
local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. dir))
local path = dir .. "/limit.db"
local VALUE = ("v"):rep(100)
do
  local db = assert(store.open{ path = path })
  assert(db:create_table{ name = "bench", primary_key = { { "id", "INTEGER" } } })
  for id = 1, 1000 do
    assert(db:put_row{ table = "bench", primary_key = { { "id", id } }, columns = { { "v", VALUE }, { "n", id } } })
  end
  db:close()
end

local AK, SK, INST = "bak", "bsk", "bench"
local function signed(api, body)
  local h = { ["x-ots-date"] = wire.date(math.floor(os.time() * 1000)), ["x-ots-apiversion"] = "2015-12-31",
    ["x-ots-accesskeyid"] = AK, ["x-ots-instancename"] = INST, ["x-ots-contentmd5"] = wire.content_md5(body) }
  h["x-ots-signature"] = wire.sign_request(SK, api, h)
  return h
end
local CASES = {
  { "GetRow", "get", { table = "bench", primary_key = { { "id", 500 } } } },
  { "GetRange", "range", { table = "bench", start = { { "id", 1 } }, stop = { { "id", 101 } } } },
  { "PutRow", "put", { table = "bench", primary_key = { { "id", 1500 } }, columns = { { "v", VALUE }, { "n", 1500 } } } },
}
local cfg = { access_key_id = AK, secret = SK, instance = INST }
local db = assert(store.open{ path = path })

-- otskit's Lua path for one request, as server.handle's fast path and
-- respond.send run it: the raw header and body checked in one C call,
-- dispatch.call, the answer's MD5, date and signature in one C call
local core = require("otskit.core")
local raw_api, raw_verify, answer = core.wire.raw_api, core.wire.raw_verify, core.wire.answer
local now = require("otskit.clock").now
local n = 0
local function raw_of(api, body, headers)
  local t = { "POST /" .. api .. " HTTP/1.1\r\nHost: 127.0.0.1\r\n" }
  for k, v in pairs(headers) do t[#t + 1] = k .. ": " .. v .. "\r\n" end
  t[#t + 1] = "Content-Length: " .. #body .. "\r\n\r\n"
  return table.concat(t)
end
local function lua_once(api, body, raw)
  assert(raw_api(raw) == api and raw_verify(raw, body, SK, AK, INST, now() * 1000))
  local out = assert(dispatch.call(db, api, body))
  n = n < 4294967295 and n + 1 or 0
  return answer(SK, AK, api, out, math.floor(now() * 1000), "00000000-0000-0000-0000-0000", n)
end

local function median(t)
  table.sort(t)
  return t[math.floor((#t + 1) / 2)]
end

print(("serve's work per request without nginx, us (median of 5 x %d; %s; load %s)"):format(N,
  jit and "LuaJIT" or _VERSION, io.open("/proc/loadavg"):read("*l"):match("^(%S+ %S+ %S+)")))
print("| op | C alone | otskit (Lua path) | otskit / C |")
print("|---|---|---|---|")
for _, c in ipairs(CASES) do
  local api, mode, req = c[1], c[2], c[3]
  local body = assert(wire.encode_request(api, req))
  local headers = signed(api, body)
  local res = wire.decode_response(api, assert(dispatch.call(db, api, body)))
  assert((res.row and res.row.columns.v == VALUE) or (res.rows and #res.rows == 100) or (api == "PutRow" and res.consumed),
    api .. " does not answer")
  local cs, ls = {}, {}
  for r = 1, 5 do
    cs[r] = bench.serve_limit(path, "t_bench", mode, body, headers, SK, AK, N)
    local t0 = os.clock()
    local raw = raw_of(api, body, headers)
    for _ = 1, N do lua_once(api, body, raw) end
    ls[r] = (os.clock() - t0) / N * 1e6
  end
  local cm, lm = median(cs), median(ls)
  print(("| %s | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) | %.1f |"):format(api, cm, cs[1], cs[#cs], lm, ls[1], ls[#ls], lm / cm))
end
db:close()
os.remove(path); os.remove(path .. "-wal"); os.remove(path .. "-shm")
os.execute("rmdir " .. dir)
