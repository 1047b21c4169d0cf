-- bench/serve_reqs.lua URL AK SK INSTANCE OUTDIR -- for bench/serve_bench.sh:
-- creates table `bench` (id INTEGER) on `otskit serve` at URL and puts the
-- rows the GetRow requests read, checks that one GetRow answer decodes to
-- what was put, and writes OUTDIR/{get,put}.lua (signed requests for
-- bench/serve_wrk.lua: 1 GetRow over 1000 rows, 2000 distinct PutRow) and
-- OUTDIR/{get,put}.body (one real response body each, the fixed bodies
-- the ceiling nginx answers with, so both return the same bytes).
local wire = require "otskit.wire"
local http = require "socket.http"
local ltn12 = require "ltn12"
local url, ak, sk, inst, out = arg[1], arg[2], arg[3], arg[4], arg[5]

local function signed(api, body)
  local h = { ["x-ots-date"] = wire.date(math.floor(os.time() * 1000)), ["x-ots-apiversion"] = "2015-12-31",
    ["x-ots-accesskeyid"] = ak, ["x-ots-instancename"] = inst, ["x-ots-contentmd5"] = wire.content_md5(body) }
  h["x-ots-signature"] = wire.sign_request(sk, api, h)
  return h
end
local function call(api, req)
  local body = wire.encode_request(api, req)
  local h = signed(api, body)
  h["content-length"] = #body
  local sink = {}
  local _, status = http.request{ url = url .. "/" .. api, method = "POST", headers = h,
    source = ltn12.source.string(body), sink = ltn12.sink.table(sink) }
  local resp = table.concat(sink)
  if status ~= 200 then error(api .. ": HTTP " .. tostring(status) .. " " .. tostring(wire.decode_error(resp))) end
  return wire.decode_response(api, resp), resp
end

local VALUE = ("v"):rep(100)
call("CreateTable", { name = "bench", primary_key = { { "id", "INTEGER" } } })
for id = 1, 1000 do
  call("PutRow", { table = "bench", primary_key = { { "id", id } }, columns = { { "v", VALUE }, { "n", id } } })
end
local got, get_body = call("GetRow", { table = "bench", primary_key = { { "id", 500 } } })
assert(got.row and got.row.columns.v == VALUE and got.row.columns.n == 500, "GetRow does not read back what was put")
local _, put_body = call("PutRow", { table = "bench", primary_key = { { "id", 1 } }, columns = { { "v", VALUE }, { "n", 1 } } })

local function write(name, s)
  local f = assert(io.open(out .. "/" .. name, "wb")); f:write(s); f:close()
end
local function list(reqs)
  local parts = { "return {\n" }
  for _, r in ipairs(reqs) do
    local hs = {}
    for k, v in pairs(r.h) do hs[#hs + 1] = ("[%q] = %q"):format(k, v) end
    parts[#parts + 1] = ("{ path = %q, body = %q, headers = { %s } },\n"):format(r.path, r.body, table.concat(hs, ", "))
  end
  parts[#parts + 1] = "}\n"
  return table.concat(parts)
end
local gets, puts = {}, {}
for id = 1, 1000 do
  local body = wire.encode_request("GetRow", { table = "bench", primary_key = { { "id", id } } })
  gets[id] = { path = "/GetRow", body = body, h = signed("GetRow", body) }
end
for id = 1, 2000 do
  local body = wire.encode_request("PutRow", { table = "bench", primary_key = { { "id", 1000 + id } },
    columns = { { "v", VALUE }, { "n", id } } })
  puts[id] = { path = "/PutRow", body = body, h = signed("PutRow", body) }
end
-- a 100-row GetRange (issue 30's figure), answered rows 1..100
local rbody = wire.encode_request("GetRange", { table = "bench", start = { { "id", 1 } }, stop = { { "id", 101 } } })
local range_res, range_body = call("GetRange", { table = "bench", start = { { "id", 1 } }, stop = { { "id", 101 } } })
assert(#range_res.rows == 100, "GetRange does not answer 100 rows")
write("get.lua", list(gets)); write("put.lua", list(puts))
write("range.lua", list({ { path = "/GetRange", body = rbody, h = signed("GetRange", rbody) } }))
write("get.body", get_body); write("put.body", put_body); write("range.body", range_body)
print(("serve_reqs: GetRow answer %d bytes, PutRow answer %d bytes"):format(#get_body, #put_body))
