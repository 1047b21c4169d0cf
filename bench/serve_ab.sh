#!/bin/sh
# bench/serve_ab.sh BASE -- `otskit serve` of another checkout (BASE: a
# directory with that version's tree, built with `make build`) against
# this checkout's, taken in alternating wrk runs (the same load weighs on
# both): one worker each, the requests of bench/serve_reqs.lua, per op the
# median (min-max) of wrk's req/s and of the worker's CPU time per request
# (user + system from /proc). Env: OPS ("GetRow PutRow GetRange"), ROUNDS
# (5), DUR (3 s per run), CONNS (8), THREADS (1).
set -eu
[ $# -eq 1 ] || { echo "usage: sh bench/serve_ab.sh BASE_CHECKOUT" >&2; exit 2; }
base=$(cd "$1" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
unset LD_PRELOAD
WORKERS=1; CONNS=${CONNS:-8}; THREADS=${THREADS:-1}; DUR=${DUR:-3}; ROUNDS=${ROUNDS:-5}
OPS=${OPS:-GetRow PutRow GetRange}
tmp=$(mktemp -d /tmp/otskit-serve-ab.XXXXXX)
chmod 755 "$tmp"
. bench/serve_lib.sh
pa=""; pb=""
stop() { [ -n "$1" ] && kill -TERM "$1" 2>/dev/null && wait "$1" 2>/dev/null; return 0; }
trap 'set +e; stop "$pa"; stop "$pb"; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP
# serve of checkout $1 on port $2, data and prefix under $3
start() {
  (cd "$1" && exec bin/otskit serve --listen "127.0.0.1:$2" --data "$3/data" --workers 1 --prefix "$3/ng" \
    --access-key-id bak --access-key-secret bsk --instance bench) >"$3.log" 2>&1 &
}
porta=$(free_port); portb=$(free_port)
mkdir -p "$tmp/a" "$tmp/b"
start "$base" "$porta" "$tmp/a"; pa=$!
start "$root" "$portb" "$tmp/b"; pb=$!
for p in "$porta" "$portb"; do
  i=0; until curl -sf -o /dev/null "http://127.0.0.1:$p/_otskit/health"; do
    i=$((i + 1)); [ $i -gt 100 ] && { cat "$tmp/a.log" "$tmp/b.log"; exit 1; }; sleep 0.1; done
done
for s in a b; do
  p=$porta; [ $s = b ] && p=$portb
  LUA_PATH="$LP" LUA_CPATH="build/jit/?.so;;" luajit bench/serve_reqs.lua "http://127.0.0.1:$p" bak bsk bench "$tmp/$s" >/dev/null
done
l0=$(load)
echo "otskit serve of $base (base) vs this checkout (new), 1 worker each, wrk -t$THREADS -c$CONNS -d${DUR}s, $ROUNDS alternating rounds; medians (min-max)"
echo
echo "| op | base req/s | new req/s | new / base | base CPU us/req | new CPU us/req |"
echo "|---|---|---|---|---|---|"
for op in $OPS; do
  f=$(op_file "$op")
  rounds "http://127.0.0.1:$porta" "$tmp/a/$f.lua" "$tmp/a/ng/logs/nginx.pid" "$tmp/ra" \
    "http://127.0.0.1:$portb" "$tmp/b/$f.lua" "$tmp/b/ng/logs/nginx.pid" "$tmp/rb"
  a=$(cut -d' ' -f1 "$tmp/ra" | med); b=$(cut -d' ' -f1 "$tmp/rb" | med)
  echo "| $op | $(cut -d' ' -f1 "$tmp/ra" | stat) | $(cut -d' ' -f1 "$tmp/rb" | stat) | $(awk "BEGIN { printf \"%.2f\", $b / $a }") | $(cut -d' ' -f2 "$tmp/ra" | stat) | $(cut -d' ' -f2 "$tmp/rb" | stat) |"
done
echo
echo "load average $l0 before, $(load) after"
