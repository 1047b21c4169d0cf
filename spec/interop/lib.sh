# spec/interop/lib.sh -- sourced (never run) by the interop runners that
# talk to `otskit serve --data DIR --workers N` through the official Node
# SDK. Sourcing it: cd to the checkout, drop make check's ASan preload
# (node, curl and nginx's workers run without it), make sure the SDK
# (tablestore@5.6.5, and mocha@10.8.2 when $interop_mocha is set) is in
# build/node, create $tmp (a temporary directory the workers, nobody when
# started as root, can reach), and arrange that the server and every nginx
# process it started are stopped and $tmp removed on any exit.
# Then the runner calls start_server (free port in $port, $OTSKIT_URL),
# runs its clients, and reads error_log_bad.
# $interop_name names the runner in messages.
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
unset LD_PRELOAD
node_dir=$root/build/node
sdk=$node_dir/node_modules/tablestore

# Prints "0 passed, 1 failed" after the reason and exits 1.
interop_fail() { echo "$interop_name: $*"; echo "0 passed, 1 failed"; exit 1; }

if [ ! -f "$sdk/package.json" ] || { [ -n "${interop_mocha:-}" ] && [ ! -x "$node_dir/node_modules/.bin/mocha" ]; }; then
  mkdir -p "$node_dir"
  (cd "$node_dir" && timeout -k 10 900 npm install --no-audit --no-fund --silent tablestore@5.6.5 \
     ${interop_mocha:+mocha@10.8.2}) >/dev/null 2>&1 ||
    interop_fail "npm install tablestore@5.6.5 ${interop_mocha:+mocha@10.8.2 }failed"
fi
if [ -n "${interop_mocha:-}" ] && [ ! -d "$sdk/test" ]; then interop_fail "the npm package ships no test/ folder"; fi

tmp=$(mktemp -d /tmp/otskit-interop.XXXXXX) || exit 1
# started as root, the workers run as nobody: --data inside must be reachable
chmod 711 "$tmp"
pid=""
stop_server() {
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null
  i=0; while kill -0 "$pid" 2>/dev/null && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done
  kill -KILL "$pid" 2>/dev/null; pid=""
  # nothing of ours may survive: the master from the pid file and its workers
  if [ -f "$tmp/ng/logs/nginx.pid" ]; then
    m=$(cat "$tmp/ng/logs/nginx.pid"); kill -KILL "$m" $(pgrep -P "$m") 2>/dev/null; rm -f "$tmp/ng/logs/nginx.pid"
  fi
  return 0
}
cleanup() { stop_server; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

port=$(luajit -e 'local s = assert(require("socket").bind("127.0.0.1", 0)); local _, p = s:getsockname(); print(p); s:close()')
OTSKIT_URL="http://127.0.0.1:$port"

# Starts serve on $port with the data in $tmp/data (kept across restarts),
# ${OTSKIT_SERVE_WORKERS:-2} workers, instance inst, keys ak-test/sk-test;
# waits for /_otskit/health. Returns 1 (the log printed) if it did not start.
start_server() {
  bin/otskit serve --listen "127.0.0.1:$port" --data "$tmp/data" --workers "${OTSKIT_SERVE_WORKERS:-2}" \
    --prefix "$tmp/ng" --instance inst --access-key-id ak-test --access-key-secret sk-test >>"$tmp/serve.log" 2>&1 &
  pid=$!
  i=0
  until curl -sf --max-time 2 -o /dev/null "$OTSKIT_URL/_otskit/health"; do
    i=$((i + 1))
    if [ $i -gt 100 ] || ! kill -0 "$pid" 2>/dev/null; then
      echo "$interop_name: the server did not start"; cat "$tmp/serve.log"; return 1
    fi
    sleep 0.1
  done
}

# The first lines (up to 5) of error.log that show a Lua error or a crashed
# worker; $1: an extended regex of lines to leave out (optional).
error_log_bad() {
  grep -E '\[(error|alert|crit|emerg)\]|signal [0-9]+|exited on' "$tmp/ng/logs/error.log" |
    grep -vE "${1:-^\$}" | head -5
}
