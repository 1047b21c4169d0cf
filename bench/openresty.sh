#!/bin/sh
# bench/openresty.sh -- the gateway example under load in Debian's nginx
# (2 workers, 127.0.0.1 only) in front of its own `otskit serve` (one
# worker, in memory), writing a markdown section to
# bench/RESULTS.openresty.md (for the lead to merge into RESULTS.md):
#   1. fan-out latency: 16 buckets x 20 ms latency serve adds to every
#      GetRange; series page (parallel: the client's capture_multi) vs
#      sequential vs one bucket
#   2. wrk, WRK_SECONDS (30) at WRK_CONN (16) connections: req/s, p99, errors
#   3. the same with 5 % injected OTSServerBusy: client-visible errors and the
#      measured retry amplification against the shared budget
#   4. inside OpenResty's LuaJIT: md5 hash prefix, otskit (FFI and C API
#      paths) vs ngx.md5(v):sub(1, 4) .. v
# nginx and serve are always stopped and the prefix removed (trap).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
B=${OTSKIT_BUILD:-build}
SECS=${WRK_SECONDS:-30}
CONN=${WRK_CONN:-16}
LAT_N=${LAT_N:-31}
out=bench/RESULTS.openresty.md
prefix=$(mktemp -d /tmp/otskit-bench.XXXXXX)
tmp=$(mktemp)
cleanup() { sh examples/openresty/run.sh stop "$prefix"; rm -rf "$prefix" "$tmp"; }
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
make -s build >/dev/null || exit 1
port=$(env -u OTSKIT_ENDPOINT OTSKIT_BUILD="$B" sh examples/openresty/run.sh start "$prefix" "" 2) || exit 1
u="http://127.0.0.1:$port"
serve=$(cat "$prefix/serve.url")
adm() { curl -sf -X POST "$u/_admin/$1" >/dev/null || { echo "bench: admin $1 failed" >&2; exit 1; }; }
faults() { curl -sf -X PUT -H "x-otskit-admin-token: $(cat "$prefix/serve/admin-token")" --data-binary "$1" "$serve/_otskit/faults" >/dev/null || { echo "bench: faults $1 failed" >&2; exit 1; }; }
stat() { # a counter (or "budget", or "retries": the sum over workers) from /_admin/stats
  curl -sf "$u/_admin/stats" | K="$1" luajit -e '
    local j = require("cjson.safe").decode(io.read("*a"))
    local k = os.getenv("K")
    if k == "budget" then print(j.budget) return end
    if k == "retries" then local s = 0 for n, v in pairs(j.counters) do if n:match("^retries:") then s = s + v end end print(s) return end
    print(j.counters[k] or 0)'
}

echo "bench: seeding 16000 points" >&2
luajit -e '
  for p = 0, 15 do
    local t = {}
    for j = 1, 1000 do local ts = 1700000000000 + p * 1000 + j; t[j] = ("{\"ts\":%d,\"v\":%d}"):format(ts, j) end
    io.write("{\"points\":[", table.concat(t, ","), "]}\n")
  end' | while read -r body; do
  printf '%s' "$body" | curl -sf -X POST --data-binary @- "$u/series/bench" >/dev/null || { echo "bench: seeding failed" >&2; exit 1; }
done

luajit -e '
  for p = 0, 7 do
    local t = {}
    for j = 1, 200 do t[j] = ("{\"ts\":%d,\"id\":\"d%d\",\"v\":%d}"):format(1700000000000 + p * 200 + j, j % 5, j) end
    io.write("{\"events\":[", table.concat(t, ","), "]}\n")
  end' | while read -r body; do
  printf '%s' "$body" | curl -sf -X POST --data-binary @- "$u/events" >/dev/null || { echo "bench: seeding events failed" >&2; exit 1; }
done

# median and p90 of curl's time_total (ms) over LAT_N requests to each of
# the URLs, taken in turn (one of each per round), so a change of the
# machine's load mid-run weighs on every URL alike; "median p90" per URL,
# one line each
lat() {
  : > "$tmp"
  i=0
  while [ $i -lt "$LAT_N" ]; do
    j=0
    for url in "$@"; do
      j=$((j + 1))
      curl -s -o /dev/null -w "$j %{http_code} %{time_total}\n" "$url" >> "$tmp"
    done
    i=$((i + 1))
  done
  bad=$(awk '$2 != 200' "$tmp" | wc -l)
  [ "$bad" -eq 0 ] || { echo "bench: $bad non-200 answers" >&2; exit 1; }
  j=0
  for url in "$@"; do
    j=$((j + 1))
    awk -v j=$j '$1 == j {print $3 * 1000}' "$tmp" | sort -n | awk '{a[NR]=$1} END {printf "%.1f %.1f\n", a[int((NR+1)/2)], a[int(NR*0.9+0.5)]}'
  done
}

echo "bench: fan-out latency" >&2
faults "latency=20,apis=GetRange"
adm "budget?capacity=500"
lat "$u/_admin/bucket?id=bench&b=3&limit=100" "$u/series/bench?limit=100" \
    "$u/series/bench?limit=100&fanout=sequential" "$u/events?limit=100" > "$tmp.lat" || exit 1
one=$(sed -n 1p "$tmp.lat"); par=$(sed -n 2p "$tmp.lat"); seq=$(sed -n 3p "$tmp.lat"); ev=$(sed -n 4p "$tmp.lat")
rm -f "$tmp.lat"
faults ""
one_m=${one% *}; par_m=${par% *}; seq_m=${seq% *}

wrk_run() { # $1: label -> fills WRK_* from wrk output
  wrk -t1 -c"$CONN" -d"${SECS}s" --latency "$u/series/bench?limit=100" > "$tmp" 2>&1
  cat "$tmp" >&2
  RPS=$(awk '/^Requests\/sec:/ {print $2}' "$tmp")
  P50=$(awk '$1 == "50%" {print $2}' "$tmp")
  P99=$(awk '$1 == "99%" {print $2}' "$tmp")
  REQS=$(awk '/requests in/ {print $1}' "$tmp")
  NON2XX=$(awk '/Non-2xx/ {print $NF}' "$tmp"); NON2XX=${NON2XX:-0}
  SOCK=$(awk '/Socket errors/ {gsub(",", ""); print $4 + $6 + $8 + $10}' "$tmp"); SOCK=${SOCK:-0}
}

echo "bench: wrk ${SECS}s, $CONN connections, no faults" >&2
adm reset
wrk_run clean
rps1=$RPS; p50_1=$P50; p99_1=$P99; reqs1=$REQS; err1=$((NON2XX + SOCK))

echo "bench: wrk ${SECS}s, $CONN connections, 5 % OTSServerBusy" >&2
adm "budget?capacity=500"
adm reset
faults "rate=0.05,code=OTSServerBusy,apis=GetRange"
wrk_run faults
faults ""
rps2=$RPS; p50_2=$P50; p99_2=$P99; reqs2=$REQS; err2=$((NON2XX + SOCK))
reads=$(stat calls); attempts=$(stat attempts); retries=$(stat retries)
failed=$(stat failed); refused=$(stat budget_refused); left=$(stat budget)

echo "bench: md5 hash prefix inside the worker" >&2
md5=$(curl -sf "$u/_admin/bench/md5?n=200000&reps=7")

luajit - "$md5" > "$tmp.md5" <<'LUA'
local j = require("cjson.safe").decode(arg[1])
print(("| ngx.md5(v):sub(1, 4) .. v | %.0f | 1.00× |"):format(j.ngx_md5_ns))
print(("| otskit hp:encode(v), FFI path (key.path = %s) | %.0f | %.2f× |"):format(j.path, j.otskit_ffi_ns, j.ffi_speedup))
print(("| otskit, Lua C API path (key._capi.prefix.encode) | %.0f | %.2f× |"):format(j.otskit_capi_ns, j.capi_speedup))
if j.c_loop_ns then -- otskit_bench.so (make bench)
  print(("| floor: the same prefixes built in a C loop (no Lua at all; MD5 is most of it) | %.0f | %.2f× |"):format(j.c_loop_ns, j.ngx_md5_ns / j.c_loop_ns))
end
LUA

amp=$(awk -v a="$attempts" -v r="$reads" 'BEGIN { if (r > 0) printf "%.4f", a / r; else print "n/a" }')
{
  echo "## openresty"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) vCPU shared with other jobs; $(nginx -v 2>&1 | sed 's/.*: //'), lua-nginx-module $(dpkg-query -W -f='${Version}' libnginx-mod-http-lua), LuaJIT $(dpkg-query -W -f='${Version}' luajit2)"
  echo "- gateway: examples/openresty, 2 workers, 127.0.0.1, otskit.client (transport nginx) to otskit serve (1 worker, in memory); series of 16000 points in 16 buckets; page = 100 newest rows"
  echo
  echo "### fan-out: 16 buckets × 20 ms serve adds to every GetRange (median / p90 of $LAT_N requests each, the four taken in turn, ms)"
  echo
  echo "| request | median ms | p90 ms | × one bucket read | × the 20 ms injected |"
  echo "|---|---|---|---|---|"
  awk -v p="$one_m" -v p9="${one#* }" 'BEGIN { printf "| one bucket read (GET /_admin/bucket: one GetRange through the client) | %s | %s | 1.00× | %.2f× |\n", p, p9, p / 20 }'
  awk -v p="$par_m" -v p9="${par#* }" -v o="$one_m" 'BEGIN { printf "| GET /series page, parallel (merge.read with the client: one capture_multi) | %s | %s | %.2f× | %.2f× |\n", p, p9, p / o, p / 20 }'
  awk -v p="$seq_m" -v p9="${seq#* }" -v o="$one_m" 'BEGIN { printf "| GET /series page, sequential (fanout=sequential) | %s | %s | %.2f× | %.2f× |\n", p, p9, p / o, p / 20 }'
  awk -v p="${ev% *}" -v p9="${ev#* }" -v o="$one_m" 'BEGIN { printf "| GET /events page (timeseries pattern, 1600 events, parallel) | %s | %s | %.2f× | %.2f× |\n", p, p9, p / o, p / 20 }'
  echo
  echo "### wrk: ${SECS} s, $CONN connections, 1 thread, GET /series/bench?limit=100 (no injected latency)"
  echo
  echo "| run | requests | req/s | p50 | p99 | client-visible errors |"
  echo "|---|---|---|---|---|---|"
  echo "| no faults | $reqs1 | $rps1 | $p50_1 | $p99_1 | $err1 |"
  echo "| 5 % OTSServerBusy on GetRange | $reqs2 | $rps2 | $p50_2 | $p99_2 | $err2 |"
  echo
  echo "Under 5 % faults: $reads client calls, $attempts attempts (retry amplification $amp; $retries retries), $failed failed requests, $refused refused by the budget; the shared budget (500 tokens, a retry costs 5, a success refunds 1) ended at $left tokens. The budget permits sustained retries up to 1/5 of successes (amplification 1.2): measured $amp."
  echo
  echo "### md5 hash prefix inside OpenResty's LuaJIT (ns per key, median of 7 × 200000; outputs checked equal)"
  echo
  echo "| implementation | ns/key | speedup vs ngx.md5 |"
  echo "|---|---|---|"
  cat "$tmp.md5"
} > "$out"
rm -f "$tmp.md5"
cat "$out"
