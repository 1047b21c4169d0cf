-- bench/serve_wrk.lua -- wrk script for bench/serve_bench.sh: replays the
-- signed requests listed in the file named by $SERVE_REQS (made by
-- bench/serve_reqs.lua), formatted once at start, in turn per thread.
local list = dofile(os.getenv("SERVE_REQS"))
local reqs = {}
for i, r in ipairs(list) do reqs[i] = wrk.format("POST", r.path, r.headers, r.body) end
local n, i = #reqs, 0
function request()
  i = i % n + 1
  return reqs[i]
end
local bad = 0
function response(status)
  if status ~= 200 then bad = bad + 1 end
end
function done(summary, latency)
  io.write(("RESULT rps=%.1f p50=%.3f p99=%.3f requests=%d non2xx=%d\n"):format(
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.requests, (summary.errors.status or 0)))
end
