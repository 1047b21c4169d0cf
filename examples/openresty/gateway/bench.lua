--- gateway.bench -- measurements that must run inside an nginx worker
-- (OpenResty's LuaJIT), reached through /_admin/bench/<name>; used by
-- bench/openresty.sh, never by a request path.
local key = require "otskit.key"
local json = require "gateway.json"

local bench = {}

local function median(xs)
  table.sort(xs)
  local n = #xs
  if n % 2 == 1 then return xs[(n + 1) / 2] end
  return (xs[n / 2] + xs[n / 2 + 1]) / 2
end

-- median CPU seconds per call of fn(i) over reps runs of n calls
local function time(fn, n, reps)
  local per = {}
  for r = 1, reps do
    collectgarbage("collect")
    local t0 = os.clock()
    for i = 1, n do fn(i) end
    per[r] = (os.clock() - t0) / n
  end
  return median(per)
end

--- md5: otskit's md5 hash prefix (FFI path and Lua C API path) against
-- ngx.md5(v):sub(1, 4) .. v, on the same 1000 keys; outputs checked equal.
function bench.md5(n, reps)
  local hp = key.hash_prefix { algo = "md5", len = 4 }
  local capi = key._capi.prefix.encode
  local ids = {}
  for i = 1, 1000 do ids[i] = ("device-%08d"):format(i * 7919) end
  for i = 1, 1000 do
    local v = ids[i]
    local want = ngx.md5(v):sub(1, 4) .. v
    assert(hp:encode(v) == want and capi(hp, v) == want, "outputs differ")
  end
  local sink
  local t_ngx = time(function(i) local v = ids[i % 1000 + 1]; sink = ngx.md5(v):sub(1, 4) .. v end, n, reps)
  local t_ffi = time(function(i) sink = hp:encode(ids[i % 1000 + 1]) end, n, reps)
  local t_capi = time(function(i) sink = capi(hp, ids[i % 1000 + 1]) end, n, reps)
  -- the floor: the same keys built in a C loop (no Lua call, no string)
  local loop = require("otskit.core").key._bench_prefix_loop
  local t_c = time(function() loop(hp, ids, n / 1000) end, 1, reps) / n
  return { path = key.path, n = n, reps = reps, ngx_md5_ns = t_ngx * 1e9,
           otskit_ffi_ns = t_ffi * 1e9, otskit_capi_ns = t_capi * 1e9, c_loop_ns = t_c * 1e9,
           ffi_speedup = t_ngx / t_ffi, capi_speedup = t_ngx / t_capi, sink = #sink }
end

function bench.handle(name)
  local args = ngx.req.get_uri_args()
  local n = tonumber(args.n) or 200000
  local reps = tonumber(args.reps) or 7
  if name == "md5" then
    ngx.header["Content-Type"] = "application/json"
    ngx.say(json.encode(bench.md5(n, reps)))
    return
  end
  ngx.status = 404
  ngx.say('{"error":"no such bench","code":"NotFound"}')
end

return bench
