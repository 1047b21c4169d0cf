#!/bin/sh
# bench/serve_bench.sh -- `otskit serve` under wrk beside two ceilings with
# the same worker count, taken in alternating rounds (a load change on the
# shared machine weighs on all three alike):
#   return200  the same nginx answering `return 200` with a body of the
#              same size: no Lua at all (issue 30's yardstick)
#   lua        the same nginx and lua module answering with a fixed body
#              (a real answer's bytes) from content_by_lua after reading
#              the request body: the floor of any Lua request handler
#   lua+io     that handler with the response headers a Tablestore answer
#              carries (fixed values)
#   lua+io+C   lua+io doing, per request, the work of serve's request in
#              C alone on serve's own store file (otskit_bench's
#              serve_limit_open / run, bench/cbench.c: the body's MD5 and
#              signature, the protobuf request, one transaction reading or
#              writing the row(s), the protobuf answer and its headers:
#              MD5, the date, a request id of its own, the signature),
#              the answer and those headers handed to nginx as Lua
#              strings: what any server built on this nginx, this lua
#              module and this store could reach
# GetRow, PutRow and a 100-row GetRange, signed ahead of time
# (bench/serve_reqs.lua) and replayed by bench/serve_wrk.lua. Prints, per
# op, the median (min-max) of wrk's req/s and of the workers' CPU time per
# request (user + system from /proc, clock ticks), and the ratios.
# Env: WORKERS (1), CONNS (8), THREADS (1), DUR (3 s per run), ROUNDS (5),
# OPS ("GetRow PutRow GetRange"), VERBOSE (1: every round's figures on
# stderr), JITLOG (a file: serve runs with
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
trap 'serve_lib_cleanup "$tmp/ret" "$tmp/lua" "$tmp/luaio" "$tmp/luac"' EXIT
trap 'exit 1' INT TERM HUP
port=$(free_port); rport=$(free_port); lport=$(free_port); xport=$(free_port); cport=$(free_port)
start_serve "$port"
start_return200 "$tmp/ret" "$rport"
start_lua "$tmp/lua" "$lport" 'ngx.req.read_body(); ngx.print(FIXED[ngx.var.uri])'
# lua+io: the request line, the body, the headers of an answer, its body
IO_READ='
      local api = ngx.req.raw_header():match("^POST /(%w+)")
      ngx.req.read_body()
      if ngx.req.get_body_data() == nil then return ngx.exit(400) end'
IO_FIXED='
      local body, md5, authz = FIXED[api], "IjpgaUwGKkfuEgyLaDq1mg==", "OTS bak:LQ1pIcPfC9NHZWMR9vrydXG4U4A="
      local date, rid = "2026-11-28T06:00:00.000Z", "0005af6b-5f18-e605-2bc1-720b17615fbe"'
IO_SEND='
      local h = ngx.header
      h["x-ots-contentmd5"] = md5
      h["x-ots-requestid"] = rid
      h["x-ots-date"] = date
      h["x-ots-contenttype"] = "protocol buffer"
      h["authorization"] = authz
      h["content-length"] = #body
      ngx.print(body)'
# lua+io+C: the C-alone work of each API, opened on serve's store file once
C_OPEN='
      if LIMIT == nil then
        package.cpath = "'"$root"'/build/jit/?.so;" .. package.cpath
        local bench = require "otskit_bench"
        LIMIT = {}
        for api, m in pairs({ GetRow = "get", PutRow = "put", GetRange = "range" }) do
          local r = dofile("'"$tmp"'/" .. m .. ".lua")[1]
          LIMIT[api] = bench.serve_limit_open("'"$tmp"'/data/otskit.db", "t_bench", m, r.body, r.headers, "bsk", "bak")
        end
      end'
start_lua "$tmp/luaio" "$xport" "$IO_READ $IO_FIXED $IO_SEND"
# (the answer C made and its headers -- MD5, date, signature, request id
# -- handed to nginx as serve's are)
start_lua "$tmp/luac" "$cport" "$C_OPEN $IO_READ
      LIMIT[api]:run(1)
      local body, md5, date, authz, rid = LIMIT[api]:answer() $IO_SEND"
sleep 0.3

l0=$(load)
echo "otskit serve vs nginx \`return 200\`, vs a minimal content_by_lua handler, vs that handler with the nginx-facing I/O of a Tablestore answer (lua+io; same body size) and vs lua+io doing serve's work in C alone (lua+io+C), $WORKERS worker(s) each, wrk -t$THREADS -c$CONNS -d${DUR}s, $ROUNDS alternating rounds; medians (min-max)"
echo
echo "| op | body B | serve req/s | return 200 req/s | **serve / return 200** | lua+io+C req/s | **lua+io+C / return 200** | lua floor req/s | lua+io req/s | serve CPU us/req | return 200 CPU | lua floor CPU | lua+io CPU | lua+io+C CPU |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for op in $OPS; do
  f=$(op_file "$op")
  rounds "http://127.0.0.1:$port" "$tmp/$f.lua" "$tmp/ng/logs/nginx.pid" "$tmp/s" \
    "http://127.0.0.1:$rport" "$tmp/$f.lua" "$tmp/ret/logs/nginx.pid" "$tmp/r" \
    "http://127.0.0.1:$lport" "$tmp/$f.lua" "$tmp/lua/logs/nginx.pid" "$tmp/l" \
    "http://127.0.0.1:$xport" "$tmp/$f.lua" "$tmp/luaio/logs/nginx.pid" "$tmp/x" \
    "http://127.0.0.1:$cport" "$tmp/$f.lua" "$tmp/luac/logs/nginx.pid" "$tmp/c"
  s=$(cut -d' ' -f1 "$tmp/s" | med); rr=$(cut -d' ' -f1 "$tmp/r" | med); c=$(cut -d' ' -f1 "$tmp/c" | med)
  # VERBOSE=1: each round's "req/s CPU" per server on stderr
  [ -n "${VERBOSE:-}" ] && for v in s r l x c; do echo "$op $v: $(tr '\n' ',' <"$tmp/$v")" >&2; done
  rps() { cut -d' ' -f1 "$tmp/$1" | stat; }
  cpu() { cut -d' ' -f2 "$tmp/$1" | stat; }
  echo "| $op | $(wc -c <"$tmp/$f.body") | $(rps s) | $(rps r) | $(awk "BEGIN { printf \"%.2f\", $s / $rr }") | $(rps c) | $(awk "BEGIN { printf \"%.2f\", $c / $rr }") | $(rps l) | $(rps x) | $(cpu s) | $(cpu r) | $(cpu l) | $(cpu x) | $(cpu c) |"
done
echo
echo "load average $l0 before, $(load) after"
