#!/bin/sh
# bench/serve_bench.sh -- `otskit serve` under wrk beside two ceilings with
# the same worker count, taken in alternating rounds (a load change on the
# shared machine weighs on all three alike):
#   return200  the same nginx answering `return 200` with a body of the
#              same size: no Lua at all (issue 30's yardstick)
#   lua        the same nginx and lua module answering with a fixed body
#              (a real answer's bytes) from content_by_lua after reading
#              the request body: the floor of any Lua request handler
# GetRow, PutRow and a 100-row GetRange, signed ahead of time
# (bench/serve_reqs.lua) and replayed by bench/serve_wrk.lua. Prints, per
# op, the median (min-max) of wrk's req/s and of the workers' CPU time per
# request (user + system from /proc, clock ticks), and the ratios.
# Env: WORKERS (1), CONNS (8), THREADS (1), DUR (3 s per run), ROUNDS (5),
# OPS ("GetRow PutRow GetRange"), JITLOG (a file: serve runs with
# --jit-log FILE, LuaJIT's trace events of its workers, as -jv prints them).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
unset LD_PRELOAD
WORKERS=${WORKERS:-1}; CONNS=${CONNS:-8}; THREADS=${THREADS:-1}; DUR=${DUR:-3}; ROUNDS=${ROUNDS:-5}
OPS=${OPS:-GetRow PutRow GetRange}
tmp=$(mktemp -d /tmp/otskit-serve-bench.XXXXXX)
chmod 755 "$tmp" # the workers may run as nobody
. bench/serve_lib.sh
trap 'serve_lib_cleanup "$tmp/ret" "$tmp/lua" "$tmp/luaio"' EXIT
trap 'exit 1' INT TERM HUP
port=$(free_port); rport=$(free_port); lport=$(free_port); xport=$(free_port)
start_serve "$port"
start_return200 "$tmp/ret" "$rport"
start_lua "$tmp/lua" "$lport" 'ngx.req.read_body(); ngx.print(FIXED[ngx.var.uri])'
start_lua "$tmp/luaio" "$xport" '
      local api = ngx.req.raw_header():match("^POST /(%w+)")
      ngx.req.read_body()
      if ngx.req.get_body_data() == nil then return ngx.exit(400) end
      local body = FIXED[api]
      local h = ngx.header
      h["x-ots-contentmd5"] = "IjpgaUwGKkfuEgyLaDq1mg=="
      h["x-ots-requestid"] = "0005af6b-5f18-e605-2bc1-720b17615fbe"
      h["x-ots-date"] = "2026-11-28T06:00:00.000Z"
      h["x-ots-contenttype"] = "protocol buffer"
      h["authorization"] = "OTS bak:LQ1pIcPfC9NHZWMR9vrydXG4U4A="
      h["content-length"] = #body
      ngx.print(body)
'
sleep 0.3

l0=$(load)
echo "otskit serve vs nginx \`return 200\`, vs a minimal content_by_lua handler and vs that handler with the nginx-facing I/O of a Tablestore answer (lua+io; same body size), $WORKERS worker(s) each, wrk -t$THREADS -c$CONNS -d${DUR}s, $ROUNDS alternating rounds; medians (min-max)"
echo
echo "| op | body B | serve req/s | return 200 req/s | lua floor req/s | serve / return 200 | serve / lua floor | lua+io req/s | serve / lua+io | serve CPU us/req | return 200 CPU us/req | lua floor CPU us/req | lua+io CPU us/req |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for op in $OPS; do
  case $op in GetRow) f=get;; PutRow) f=put;; GetRange) f=range;; *) echo "unknown op $op" >&2; exit 2;; esac
  rounds "http://127.0.0.1:$port" "$tmp/$f.lua" "$tmp/ng/logs/nginx.pid" "$tmp/s" \
    "http://127.0.0.1:$rport" "$tmp/$f.lua" "$tmp/ret/logs/nginx.pid" "$tmp/r" \
    "http://127.0.0.1:$lport" "$tmp/$f.lua" "$tmp/lua/logs/nginx.pid" "$tmp/l" \
    "http://127.0.0.1:$xport" "$tmp/$f.lua" "$tmp/luaio/logs/nginx.pid" "$tmp/x"
  s=$(cut -d' ' -f1 "$tmp/s" | med); rr=$(cut -d' ' -f1 "$tmp/r" | med); l=$(cut -d' ' -f1 "$tmp/l" | med); x=$(cut -d' ' -f1 "$tmp/x" | med)
  echo "| $op | $(wc -c <"$tmp/$f.body") | $(cut -d' ' -f1 "$tmp/s" | stat) | $(cut -d' ' -f1 "$tmp/r" | stat) | $(cut -d' ' -f1 "$tmp/l" | stat) | $(awk "BEGIN { printf \"%.2f\", $s / $rr }") | $(awk "BEGIN { printf \"%.2f\", $s / $l }") | $(cut -d' ' -f1 "$tmp/x" | stat) | $(awk "BEGIN { printf \"%.2f\", $s / $x }") | $(cut -d' ' -f2 "$tmp/s" | stat) | $(cut -d' ' -f2 "$tmp/r" | stat) | $(cut -d' ' -f2 "$tmp/l" | stat) | $(cut -d' ' -f2 "$tmp/x" | stat) |"
done
echo
echo "load average $l0 before, $(load) after"
