#!/bin/sh
# bench/rows_bench.sh [decode] [jit] [serve] [client] -- issue 30's figures
# (all four parts when none is named; bench/ROWS.md has the results and
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
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
unset LD_PRELOAD
parts=${*:-decode jit serve client}
ROUNDS=${ROUNDS:-5}; REPS=${REPS:-5}; WORKERS=${WORKERS:-1}; CONNS=${CONNS:-8}; DUR=${DUR:-3}
LP="lua/?.lua;lua/?/init.lua;;"
has() { case " $parts " in *" $1 "*) return 0;; esac; return 1; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

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

has serve || has client || exit 0
tmp=$(mktemp -d /tmp/otskit-rows-bench.XXXXXX)
chmod 755 "$tmp" # the workers may run as nobody
spid=""
cleanup() {
  set +e
  [ -n "$spid" ] && kill -TERM "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
  if [ -f "$tmp/ceil/logs/nginx.pid" ]; then
    m=$(cat "$tmp/ceil/logs/nginx.pid"); kill -TERM "$m" 2>/dev/null
    i=0; while kill -0 "$m" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
free_port() {
  luajit -e 'local s = assert(require("socket").bind("127.0.0.1", 0)); local _, p = s:getsockname(); print(p); s:close()'
}
port=$(free_port); cport=$(free_port)
bin/otskit serve --listen "127.0.0.1:$port" --data "$tmp/data" --workers "$WORKERS" --prefix "$tmp/ng" \
  --access-key-id bak --access-key-secret bsk --instance bench >"$tmp/serve.log" 2>&1 &
spid=$!
i=0; until curl -sf -o /dev/null "http://127.0.0.1:$port/_otskit/health"; do
  i=$((i + 1)); [ $i -gt 100 ] && { cat "$tmp/serve.log"; exit 1; }; sleep 0.1; done
LUA_PATH="$LP" LUA_CPATH="build/jit/?.so;;" luajit bench/serve_reqs.lua "http://127.0.0.1:$port" bak bsk bench "$tmp" >/dev/null

if has serve; then
  mkdir -p "$tmp/ceil/conf" "$tmp/ceil/logs"
  # the body as `set $bN "..."` lines of at most 4000 bytes (nginx's limit
  # for one token) and the "$b1$b2..." that return 200 answers with
  fill() { # file prefix
    n=$(wc -c <"$1"); k=0; vars=""
    while [ "$n" -gt 0 ]; do
      c=$n; [ "$c" -gt 4000 ] && c=4000
      k=$((k + 1)); echo "set \$$2$k \"$(head -c "$c" /dev/zero | tr '\0' x)\";" >>"$tmp/$2.sets"
      vars="$vars\$$2$k"; n=$((n - c))
    done
    echo "$vars"
  }
  user=""; [ "$(id -u)" = 0 ] && user="user root root;"
  gv=$(fill "$tmp/get.body" g); pv=$(fill "$tmp/put.body" p); rv=$(fill "$tmp/range.body" r)
  cat >"$tmp/ceil/conf/nginx.conf" <<CONF
$user
worker_processes $WORKERS;
pid logs/nginx.pid;
error_log logs/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_max_body_size 5m; client_body_buffer_size 5m;
  server {
    listen 127.0.0.1:$cport;
    location = /GetRow { include $tmp/g.sets; return 200 "$gv"; }
    location = /PutRow { include $tmp/p.sets; return 200 "$pv"; }
    location = /GetRange { include $tmp/r.sets; return 200 "$rv"; }
  }
}
CONF
  nginx -p "$tmp/ceil" -c "$tmp/ceil/conf/nginx.conf"
  sleep 0.3
  # the CPU ticks (utime + stime) of the workers of the nginx whose master
  # pid is in $1
  ticks() { for w in $(pgrep -P "$(cat "$1")"); do cut -d' ' -f14,15 "/proc/$w/stat"; done |
    awk '{ t += $1 + $2 } END { print t + 0 }'; }
  hz=$(getconf CLK_TCK)
  run() { # url reqs pidfile -> "rps cpu_us_per_request"
    t0=$(ticks "$3")
    SERVE_REQS=$2 timeout -k 5 $((DUR + 30)) wrk -t1 -c"$CONNS" -d"${DUR}s" -s bench/serve_wrk.lua "$1" >"$tmp/wrk.out" 2>&1 || true
    t1=$(ticks "$3")
    awk -v dt=$((t1 - t0)) -v hz="$hz" '/^RESULT/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        if (v["non2xx"] + 0 > 0) print "non-2xx", v["non2xx"] > "/dev/stderr"
        printf "%s %.1f\n", v["rps"], dt / hz * 1e6 / v["requests"] }' "$tmp/wrk.out"
  }
  stat() { sort -n | awk '{ a[NR] = $1 } END { printf "%d (%d-%d)", a[int((NR + 1) / 2)], a[1], a[NR] }'; }
  statf() { sort -n | awk '{ a[NR] = $1 } END { printf "%.0f (%.0f-%.0f)", a[int((NR + 1) / 2)], a[1], a[NR] }'; }
  med() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
  l0=$(load)
  echo "### otskit serve vs nginx \`return 200\` (same body size), $WORKERS worker(s), wrk -t1 -c$CONNS -d${DUR}s, $ROUNDS alternating rounds"
  echo
  echo "req/s: wrk's; CPU: the workers' user + system time per request (/proc, clock ticks: coarse for short runs)."
  echo
  echo "| op | body B | serve req/s: median (min-max) | ceiling req/s | req/s serve / ceiling | serve CPU us/req | ceiling CPU us/req | CPU ceiling / serve |"
  echo "|---|---|---|---|---|---|---|---|"
  for op in GetRow PutRow GetRange; do
    case $op in GetRow) f=get;; PutRow) f=put;; GetRange) f=range;; esac
    : >"$tmp/s"; : >"$tmp/c"
    r=0; while [ $r -lt "$ROUNDS" ]; do
      run "http://127.0.0.1:$port" "$tmp/$f.lua" "$tmp/ng/logs/nginx.pid" >>"$tmp/s"
      run "http://127.0.0.1:$cport" "$tmp/$f.lua" "$tmp/ceil/logs/nginx.pid" >>"$tmp/c"
      r=$((r + 1))
    done
    sr=$(cut -d' ' -f1 "$tmp/s" | med); cr=$(cut -d' ' -f1 "$tmp/c" | med)
    sc=$(cut -d' ' -f2 "$tmp/s" | med); cc=$(cut -d' ' -f2 "$tmp/c" | med)
    echo "| $op | $(wc -c <"$tmp/$f.body") | $(cut -d' ' -f1 "$tmp/s" | stat) | $(cut -d' ' -f1 "$tmp/c" | stat) | $(awk "BEGIN { printf \"%.2f\", $sr / $cr }") | $(cut -d' ' -f2 "$tmp/s" | statf) | $(cut -d' ' -f2 "$tmp/c" | statf) | $(awk "BEGIN { printf \"%.2f\", $cc / $sc }") |"
  done
  echo
  echo "load average $l0 before, $(load) after"
  echo
fi

if has client; then
  LUA_PATH="$LP" LUA_CPATH="build/jit/?.so;;" luajit bench/rows_client.lua "http://127.0.0.1:$port" "$ROUNDS" "$tmp"
  LUA_PATH_5_4="$LP" LUA_CPATH_5_4="build/5.4/?.so;;" lua5.4 bench/rows_client.lua "http://127.0.0.1:$port" "$ROUNDS" "$tmp"
fi
