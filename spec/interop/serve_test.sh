#!/bin/sh
# spec/interop/serve_test.sh -- the official Node SDK (tablestore@5.6.5,
# in build/node) against `otskit serve --data DIR --workers 2` on a free
# 127.0.0.1 port: the scripted session (serve_session.js), 100 000 fuzzed
# requests (serve_fuzz.js; OTSKIT_FUZZ_N), error.log free of Lua errors and
# crashed workers, then kill -9 of every nginx process in the middle of
# acknowledged writes and a restart on the same data (serve_durable.js).
# Every server is stopped and the temporary directory removed, whatever
# fails. Ends with one "N passed, N failed" line.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
unset LD_PRELOAD
node_dir=$root/build/node
if [ ! -d "$node_dir/node_modules/tablestore" ]; then
  mkdir -p "$node_dir"
  (cd "$node_dir" && npm install --no-audit --no-fund --silent tablestore@5.6.5) >/dev/null 2>&1 || {
    echo "serve: npm install tablestore@5.6.5 failed"; echo "0 passed, 1 failed"; exit 1; }
fi
tmp=$(mktemp -d /tmp/otskit-serve-test.XXXXXX)
passed=0; failed=0; pid=""
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
tally() { # adds the "N passed, N failed" line of $1 (a log file)
  line=$(grep -aE '^[0-9]+ passed, [0-9]+ failed$' "$1" | tail -1)
  if [ -z "$line" ]; then failed=$((failed + 1)); echo "serve: no result line from $2"; tail -20 "$1"; return; fi
  p=${line%% passed*}; f=${line#*passed, }; f=${f%% failed*}
  passed=$((passed + p)); failed=$((failed + f))
  grep -aE '^(FAIL|fuzz:|durable:)' "$1" | head -40
}
free_port() {
  luajit -e 'local s = assert(require("socket").bind("127.0.0.1", 0)); local _, p = s:getsockname(); print(p); s:close()'
}
port=$(free_port)
export OTSKIT_URL="http://127.0.0.1:$port" OTSKIT_AK=ak-test OTSKIT_SK=sk-test OTSKIT_INSTANCE=inst
# the token of the admin endpoint (serve reads it from the environment)
OTSKIT_ADMIN_TOKEN=interop-admin-$(date +%s)-$$-token; export OTSKIT_ADMIN_TOKEN
# started as root, the workers run as nobody: the data directory's parent must be searchable
chmod 711 "$tmp"
export NODE_PATH="$node_dir/node_modules"
start_server() {
  bin/otskit serve --listen "127.0.0.1:$port" --data "$tmp/data" --workers "${OTSKIT_SERVE_WORKERS:-2}" --prefix "$tmp/ng" \
    --instance inst --access-key-id ak-test --access-key-secret sk-test >>"$tmp/serve.log" 2>&1 &
  pid=$!
  i=0
  until curl -sf --max-time 2 -o /dev/null "$OTSKIT_URL/_otskit/health"; do
    i=$((i + 1))
    if [ $i -gt 100 ] || ! kill -0 "$pid" 2>/dev/null; then echo "serve: the server did not start"; cat "$tmp/serve.log"; return 1; fi
    sleep 0.1
  done
}
if ! start_server; then echo "0 passed, 1 failed"; exit 1; fi

node spec/interop/serve_session.js >"$tmp/session.log" 2>&1; tally "$tmp/session.log" session
node spec/interop/serve_fuzz.js >"$tmp/fuzz.log" 2>&1; tally "$tmp/fuzz.log" fuzz
# no Lua error, no crashed worker; nginx's own note on a refused large body is expected
bad=$(grep -E '\[(error|alert|crit|emerg)\]|signal [0-9]+|exited on' "$tmp/ng/logs/error.log" | grep -v 'client intended to send too large body' | head -5)
if [ -n "$bad" ]; then failed=$((failed + 1)); echo "FAIL error.log:"; echo "$bad"; else passed=$((passed + 1)); fi

# durability: kill -9 every nginx process while writes are being acknowledged
node spec/interop/serve_durable.js write "$tmp/acked" >"$tmp/durable_w.log" 2>&1 &
wpid=$!
sleep 4
m=$(cat "$tmp/ng/logs/nginx.pid")
kill -KILL "$m" $(pgrep -P "$m") 2>/dev/null
wait $wpid; tally "$tmp/durable_w.log" durable-write
wait "$pid" 2>/dev/null; pid=""; rm -f "$tmp/ng/logs/nginx.pid"
if start_server; then
  node spec/interop/serve_durable.js verify "$tmp/acked" >"$tmp/durable_v.log" 2>&1; tally "$tmp/durable_v.log" durable-verify
else
  failed=$((failed + 1))
fi
stop_server
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
