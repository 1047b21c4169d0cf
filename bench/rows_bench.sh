#!/bin/sh
# bench/rows_bench.sh [decode] [jit] [serve] [client] [phases] -- issue 30's
# figures (all five parts when none is named; bench/ROWS.md has the results and
# what they mean). Needs `make build` and, for decode and client, `make
# interop` (the Node SDK in build/node); serve and client need nginx with
# the lua module and wrk. Everything listens on 127.0.0.1 only and every
# load is bounded (wrk -d, timeouts); the processes started are stopped.
#   decode  bench/rows_decode.lua under lua5.4 and luajit: a 5000-row
#           GetRange response (4 key + 6 attribute columns), otskit.wire
#           vs the SDK's decoder, interleaved rounds (ROUNDS, REPS)
#   jit     bench/serve_jit.lua under `luajit -jv`: serve's request path
#           without nginx, its calls/s and its aborted traces by reason
#   serve   `otskit serve` (WORKERS, default 1) vs the same nginx answering
#           `return 200` with a body of the same size, GetRow, PutRow and a
#           100-row GetRange, wrk -t1 -c$CONNS -d${DUR}s, ROUNDS rounds
#           alternating the two servers; medians, ranges, load average
#   client  otskit.client vs the SDK's client: GetRange of 5000-row pages
#           against the same serve, rows/s, interleaved rounds
#   phases  otskit.client's CPU per 5000-row page by phase (transport, MD5
#           and signature, decode, GetRange check), both VMs, PAGES (20);
#           then the client's paths before and after, alternating (ROUNDS)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
unset LD_PRELOAD
parts=${*:-decode jit serve client phases}
ROUNDS=${ROUNDS:-5}; REPS=${REPS:-5}; WORKERS=${WORKERS:-1}; CONNS=${CONNS:-8}; DUR=${DUR:-3}
has() { case " $parts " in *" $1 "*) return 0;; esac; return 1; }
. bench/serve_lib.sh

if has decode; then
  LUA_PATH_5_4="$LP" LUA_CPATH_5_4="build/5.4/?.so;;" lua5.4 bench/rows_decode.lua "$ROUNDS" "$REPS"
  LUA_PATH="$LP" LUA_CPATH="build/jit/?.so;;" luajit bench/rows_decode.lua "$ROUNDS" "$REPS"
fi

if has jit; then
  mkdir -p build/bench
  echo "### serve's request path without nginx (bench/serve_jit.lua, LuaJIT, load $(load))"
  echo
  echo '```'
  LUA_PATH="$LP" LUA_CPATH="build/jit/?.so;;" luajit -jv=build/bench/serve_jit.txt bench/serve_jit.lua
  echo '```'
  echo "(trace log: build/bench/serve_jit.txt)"
  echo
fi

has serve || has client || has phases || exit 0
tmp=$(mktemp -d /tmp/otskit-rows-bench.XXXXXX)
chmod 755 "$tmp" # the workers may run as nobody
trap 'serve_lib_cleanup "$tmp/ceil"' EXIT
trap 'exit 1' INT TERM HUP
port=$(free_port); cport=$(free_port)
start_serve "$port"

if has serve; then
  start_return200 "$tmp/ceil" "$cport"
  sleep 0.3
  l0=$(load)
  echo "### otskit serve vs nginx \`return 200\` (same body size), $WORKERS worker(s), wrk -t1 -c$CONNS -d${DUR}s, $ROUNDS alternating rounds"
  echo
  echo "req/s: wrk's; CPU: the workers' user + system time per request (/proc, clock ticks: coarse for short runs)."
  echo
  echo "| op | body B | serve req/s: median (min-max) | ceiling req/s | req/s serve / ceiling | serve CPU us/req | ceiling CPU us/req | CPU ceiling / serve |"
  echo "|---|---|---|---|---|---|---|---|"
  for op in GetRow PutRow GetRange; do
    f=$(op_file "$op")
    rounds "http://127.0.0.1:$port" "$tmp/$f.lua" "$tmp/ng/logs/nginx.pid" "$tmp/s" \
      "http://127.0.0.1:$cport" "$tmp/$f.lua" "$tmp/ceil/logs/nginx.pid" "$tmp/c"
    sr=$(cut -d' ' -f1 "$tmp/s" | med); cr=$(cut -d' ' -f1 "$tmp/c" | med)
    sc=$(cut -d' ' -f2 "$tmp/s" | med); cc=$(cut -d' ' -f2 "$tmp/c" | med)
    echo "| $op | $(wc -c <"$tmp/$f.body") | $(cut -d' ' -f1 "$tmp/s" | stat) | $(cut -d' ' -f1 "$tmp/c" | stat) | $(awk "BEGIN { printf \"%.2f\", $sr / $cr }") | $(cut -d' ' -f2 "$tmp/s" | stat) | $(cut -d' ' -f2 "$tmp/c" | stat) | $(awk "BEGIN { printf \"%.2f\", $cc / $sc }") |"
  done
  echo
  echo "load average $l0 before, $(load) after"
  echo
fi

if has client; then
  LUA_PATH="$LP" LUA_CPATH="build/jit/?.so;;" luajit bench/rows_client.lua "http://127.0.0.1:$port" "$ROUNDS" "$tmp"
  LUA_PATH_5_4="$LP" LUA_CPATH_5_4="build/5.4/?.so;;" lua5.4 bench/rows_client.lua "http://127.0.0.1:$port" "$ROUNDS" "$tmp"
fi

if has phases; then
  # the table (ROUNDS 0: rows_client.lua only fills it, when the client part did not)
  has client || LUA_PATH="$LP" LUA_CPATH="build/jit/?.so;;" luajit bench/rows_client.lua "http://127.0.0.1:$port" 0 "$tmp"
  LUA_PATH="$LP" LUA_CPATH="build/jit/?.so;;" luajit bench/rows_client_phases.lua "http://127.0.0.1:$port" "${PAGES:-20}" "$ROUNDS"
  LUA_PATH_5_4="$LP" LUA_CPATH_5_4="build/5.4/?.so;;" lua5.4 bench/rows_client_phases.lua "http://127.0.0.1:$port" "${PAGES:-20}" "$ROUNDS"
fi
