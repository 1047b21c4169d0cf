-- bench/serve_wrk.lua -- wrk script for bench/serve_bench.sh: replays the
-- signed requests listed in the file named by $SERVE_REQS (made by
-- bench/serve_reqs.lua), formatted once at start, in turn per thread.
local reqs, n, i = {}, 0, 0
-- in init (per thread), once wrk.headers has the Host header
function init()
  for j, r in ipairs(dofile(os.getenv("SERVE_REQS"))) do reqs[j] = wrk.format("POST", r.path, r.headers, r.body) end
  n = #reqs
end
function request()
  i = i % n + 1
  return reqs[i]
end
-- the first answer that is not a 200, to say why (per thread)
local told = false
function response(status, headers, body)
  if status ~= 200 and not told then
    told = true
    io.stderr:write(("serve_wrk: HTTP %d: %q\n"):format(status, body or ""))
  end
end
function done(summary, latency)
  io.write(("RESULT rps=%.1f p50=%.3f p99=%.3f requests=%d non2xx=%d\n"):format(
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.requests, (summary.errors.status or 0)))
end
