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
LP="lua/?.lua;lua/?/init.lua;;"
tmp=$(mktemp -d /tmp/otskit-serve-bench.XXXXXX)
chmod 755 "$tmp" # the workers may run as nobody
spid=""
stop_nginx() { # prefix
  [ -f "$1/logs/nginx.pid" ] || return 0
  m=$(cat "$1/logs/nginx.pid"); kill -TERM "$m" 2>/dev/null
  i=0; while kill -0 "$m" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
}
cleanup() {
  # no errexit here: serve's non-zero exit status must not skip the rest
  set +e
  [ -n "$spid" ] && kill -TERM "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
  stop_nginx "$tmp/ret"; stop_nginx "$tmp/lua"
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
free_port() {
  luajit -e 'local s = assert(require("socket").bind("127.0.0.1", 0)); local _, p = s:getsockname(); print(p); s:close()'
}
load() { cut -d' ' -f1-3 /proc/loadavg; }
port=$(free_port); rport=$(free_port); lport=$(free_port)
bin/otskit serve --listen "127.0.0.1:$port" --data "$tmp/data" --workers "$WORKERS" --prefix "$tmp/ng" \
  --access-key-id bak --access-key-secret bsk --instance bench ${JITLOG:+--jit-log "$JITLOG"} >"$tmp/serve.log" 2>&1 &
spid=$!
i=0; until curl -sf -o /dev/null "http://127.0.0.1:$port/_otskit/health"; do
  i=$((i + 1)); [ $i -gt 100 ] && { cat "$tmp/serve.log"; exit 1; }; sleep 0.1; done
LUA_PATH="$LP" LUA_CPATH="build/jit/?.so;;" luajit bench/serve_reqs.lua "http://127.0.0.1:$port" bak bsk bench "$tmp" >/dev/null

user=""; [ "$(id -u)" = 0 ] && user="user root root;"
# return 200: the body as `set $bN "..."` lines of at most 4000 bytes
# (nginx's limit for one token) and the "$b1$b2..." it answers with
fill() { # file prefix
  n=$(wc -c <"$1"); k=0; vars=""
  while [ "$n" -gt 0 ]; do
    c=$n; [ "$c" -gt 4000 ] && c=4000
    k=$((k + 1)); echo "set \$$2$k \"$(head -c "$c" /dev/zero | tr '\0' x)\";" >>"$tmp/$2.sets"
    vars="$vars\$$2$k"; n=$((n - c))
  done
  echo "$vars"
}
gv=$(fill "$tmp/get.body" g); pv=$(fill "$tmp/put.body" p); rv=$(fill "$tmp/range.body" r)
mkdir -p "$tmp/ret/conf" "$tmp/ret/logs" "$tmp/lua/conf" "$tmp/lua/logs"
common="$user
worker_processes $WORKERS;
pid logs/nginx.pid;
error_log logs/error.log warn;
events { worker_connections 1024; }"
cat >"$tmp/ret/conf/nginx.conf" <<CONF
$common
http {
  access_log off;
  keepalive_requests 1000000;
  client_max_body_size 5m; client_body_buffer_size 5m;
  server {
    listen 127.0.0.1:$rport;
    location = /GetRow { include $tmp/g.sets; return 200 "$gv"; }
    location = /PutRow { include $tmp/p.sets; return 200 "$pv"; }
    location = /GetRange { include $tmp/r.sets; return 200 "$rv"; }
  }
}
CONF
cat >"$tmp/lua/conf/nginx.conf" <<CONF
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;
$common
http {
  access_log off;
  keepalive_requests 1000000;
  client_max_body_size 5m; client_body_buffer_size 5m;
  init_by_lua_block {
    local function slurp(p) local f = assert(io.open(p, "rb")); local s = f:read("*a"); f:close(); return s end
    FIXED = { ["/GetRow"] = slurp("$tmp/get.body"), ["/PutRow"] = slurp("$tmp/put.body"),
              ["/GetRange"] = slurp("$tmp/range.body") }
  }
  server {
    listen 127.0.0.1:$lport;
    location / { content_by_lua_block { ngx.req.read_body(); ngx.print(FIXED[ngx.var.uri]) } }
  }
}
CONF
nginx -p "$tmp/ret" -c "$tmp/ret/conf/nginx.conf"
nginx -p "$tmp/lua" -c "$tmp/lua/conf/nginx.conf"
sleep 0.3

# the CPU ticks (utime + stime) of the workers of the nginx whose master
# pid is in $1
ticks() { for w in $(pgrep -P "$(cat "$1")"); do cut -d' ' -f14,15 "/proc/$w/stat"; done |
  awk '{ t += $1 + $2 } END { print t + 0 }'; }
hz=$(getconf CLK_TCK)
run() { # url reqs pidfile -> "rps cpu_us_per_request"
  t0=$(ticks "$3")
  SERVE_REQS=$2 timeout -k 5 $((DUR + 30)) wrk -t"$THREADS" -c"$CONNS" -d"${DUR}s" -s bench/serve_wrk.lua "$1" >"$tmp/wrk.out" 2>&1 || true
  t1=$(ticks "$3")
  awk -v dt=$((t1 - t0)) -v hz="$hz" '/^RESULT/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      if (v["non2xx"] + 0 > 0) print "non-2xx", v["non2xx"] > "/dev/stderr"
      printf "%s %.1f\n", v["rps"], dt / hz * 1e6 / v["requests"] }' "$tmp/wrk.out"
}
stat() { sort -n | awk '{ a[NR] = $1 } END { printf "%.0f (%.0f-%.0f)", a[int((NR + 1) / 2)], a[1], a[NR] }'; }
med() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
l0=$(load)
echo "otskit serve vs nginx \`return 200\` and vs a minimal content_by_lua handler (same body size), $WORKERS worker(s) each, wrk -t$THREADS -c$CONNS -d${DUR}s, $ROUNDS alternating rounds; medians (min-max)"
echo
echo "| op | body B | serve req/s | return 200 req/s | lua floor req/s | serve / return 200 | serve / lua floor | serve CPU us/req | return 200 CPU us/req | lua floor CPU us/req |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for op in $OPS; do
  case $op in GetRow) f=get;; PutRow) f=put;; GetRange) f=range;; *) echo "unknown op $op" >&2; exit 2;; esac
  : >"$tmp/s"; : >"$tmp/r"; : >"$tmp/l"
  r=0; while [ $r -lt "$ROUNDS" ]; do
    run "http://127.0.0.1:$port" "$tmp/$f.lua" "$tmp/ng/logs/nginx.pid" >>"$tmp/s"
    run "http://127.0.0.1:$rport" "$tmp/$f.lua" "$tmp/ret/logs/nginx.pid" >>"$tmp/r"
    run "http://127.0.0.1:$lport" "$tmp/$f.lua" "$tmp/lua/logs/nginx.pid" >>"$tmp/l"
    r=$((r + 1))
  done
  s=$(cut -d' ' -f1 "$tmp/s" | med); rr=$(cut -d' ' -f1 "$tmp/r" | med); l=$(cut -d' ' -f1 "$tmp/l" | med)
  echo "| $op | $(wc -c <"$tmp/$f.body") | $(cut -d' ' -f1 "$tmp/s" | stat) | $(cut -d' ' -f1 "$tmp/r" | stat) | $(cut -d' ' -f1 "$tmp/l" | stat) | $(awk "BEGIN { printf \"%.2f\", $s / $rr }") | $(awk "BEGIN { printf \"%.2f\", $s / $l }") | $(cut -d' ' -f2 "$tmp/s" | stat) | $(cut -d' ' -f2 "$tmp/r" | stat) | $(cut -d' ' -f2 "$tmp/l" | stat) |"
done
echo
echo "load average $l0 before, $(load) after"
