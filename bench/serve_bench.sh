#!/bin/sh
# bench/serve_bench.sh -- `otskit serve` under wrk beside its ceiling: the
# same nginx (same workers, lua module) answering every request with a fixed
# body of the same size (a real GetRow/PutRow answer), without parsing,
# checking, signing or storing anything. GetRow and PutRow requests are
# signed ahead of time (bench/serve_reqs.lua, with otskit.wire) and replayed
# by bench/serve_wrk.lua. Prints requests/s, p50 and p99 (medians of REPS
# runs of DUR seconds) and serve / ceiling ratios.
# Env: WORKERS (2), CONNS (16), THREADS (2), DUR (5), REPS (3), STORAGE
# (data | memory; memory needs WORKERS=1), OTSKIT_SERVE_WRITE_LOCK (0: no
# cross-worker write lock, concurrent writes wait in SQLite's busy handler).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
unset LD_PRELOAD
WORKERS=${WORKERS:-2}; CONNS=${CONNS:-16}; THREADS=${THREADS:-2}; DUR=${DUR:-5}; REPS=${REPS:-3}
STORAGE=${STORAGE:-data}
tmp=$(mktemp -d /tmp/otskit-serve-bench.XXXXXX)
spid=""
cleanup() {
  # no errexit here: serve's non-zero exit status must not skip the rest
  set +e
  [ -n "$spid" ] && kill -TERM "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
  if [ -f "$tmp/ceil/logs/nginx.pid" ]; then
    m=$(cat "$tmp/ceil/logs/nginx.pid"); kill -TERM "$m" 2>/dev/null
    i=0; while kill -0 "$m" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    kill -KILL "$m" $(pgrep -P "$m") 2>/dev/null
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
free_port() {
  luajit -e 'local s = assert(require("socket").bind("127.0.0.1", 0)); local _, p = s:getsockname(); print(p); s:close()'
}
port=$(free_port); cport=$(free_port)
store="--memory"; [ "$STORAGE" = data ] && store="--data $tmp/data"
bin/otskit serve --listen "127.0.0.1:$port" $store --workers "$WORKERS" --prefix "$tmp/ng" \
  --access-key-id bak --access-key-secret bsk --instance bench >"$tmp/serve.log" 2>&1 &
spid=$!
i=0; until curl -sf -o /dev/null "http://127.0.0.1:$port/_otskit/health"; do
  i=$((i + 1)); [ $i -gt 100 ] && { cat "$tmp/serve.log"; exit 1; }; sleep 0.1; done
LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="build/jit/?.so;;" \
  luajit bench/serve_reqs.lua "http://127.0.0.1:$port" bak bsk bench "$tmp"

mkdir -p "$tmp/ceil/conf" "$tmp/ceil/logs"
user=""; [ "$(id -u)" = 0 ] && user="user root root;"
cat >"$tmp/ceil/conf/nginx.conf" <<CONF
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;
$user
worker_processes $WORKERS;
pid logs/nginx.pid;
error_log logs/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_max_body_size 5m; client_body_buffer_size 5m;
  init_by_lua_block {
    local function slurp(p) local f = assert(io.open(p, "rb")); local s = f:read("*a"); f:close(); return s end
    FIXED = { ["/GetRow"] = slurp("$tmp/get.body"), ["/PutRow"] = slurp("$tmp/put.body") }
  }
  server {
    listen 127.0.0.1:$cport;
    location / { content_by_lua_block { ngx.req.read_body(); ngx.print(FIXED[ngx.var.uri]) } }
  }
}
CONF
nginx -p "$tmp/ceil" -c "$tmp/ceil/conf/nginx.conf"
sleep 0.3

run() { # target reqs -> "rps p50 p99"
  SERVE_REQS=$2 wrk -t"$THREADS" -c"$CONNS" -d"${DUR}s" -s bench/serve_wrk.lua "$1" 2>&1 |
    awk '/^RESULT/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                     if (v["non2xx"] + 0 > 0) print "non-2xx", v["non2xx"] > "/dev/stderr";
                     print v["rps"], v["p50"], v["p99"] }'
}
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
lock="one writer (shared-dict lock)"; [ "${OTSKIT_SERVE_WRITE_LOCK:-1}" = 0 ] && lock="SQLite busy timeout"
[ "$WORKERS" = 1 ] && lock="one worker"
echo "otskit serve vs the same nginx returning a fixed body: $WORKERS workers ($STORAGE, $lock), wrk -t$THREADS -c$CONNS, ${DUR}s x $REPS (medians; shared 2-core machine, noisy)"
echo "| op | serve req/s | p50 ms | p99 ms | ceiling req/s | p50 ms | p99 ms | serve / ceiling | range req/s serve |"
echo "|---|---|---|---|---|---|---|---|---|"
for op in GetRow PutRow; do
  f=$tmp/get.lua; [ $op = PutRow ] && f=$tmp/put.lua
  : >"$tmp/s"; : >"$tmp/c"
  r=0; while [ $r -lt "$REPS" ]; do
    run "http://127.0.0.1:$port" "$f" >>"$tmp/s"
    run "http://127.0.0.1:$cport" "$f" >>"$tmp/c"
    r=$((r + 1))
  done
  s1=$(cut -d' ' -f1 "$tmp/s" | median); s2=$(cut -d' ' -f2 "$tmp/s" | median); s3=$(cut -d' ' -f3 "$tmp/s" | median)
  c1=$(cut -d' ' -f1 "$tmp/c" | median); c2=$(cut -d' ' -f2 "$tmp/c" | median); c3=$(cut -d' ' -f3 "$tmp/c" | median)
  lo=$(cut -d' ' -f1 "$tmp/s" | sort -n | head -1); hi=$(cut -d' ' -f1 "$tmp/s" | sort -n | tail -1)
  echo "| $op | $s1 | $s2 | $s3 | $c1 | $c2 | $c3 | $(awk "BEGIN { printf \"%.2f\", $s1 / $c1 }") | $lo-$hi |"
done
