#!/bin/sh
# spec/interop/sdk_tests_test.sh -- the official Node SDK's own mocha tests
# (the test/ folder the npm package tablestore@5.6.5 ships, in build/node;
# never copied into the tree, never edited) against `otskit serve --data
# DIR --workers 2` on a free 127.0.0.1 port: table.test.js,
# data_opration.test.js, globalIndex.test.js, long.test.js, sql.test.js and
# protocol/.
# The tests read the environment variables endpoint, accessKeyId,
# secretAccessKey and instancename. mocha is installed into build/node
# with npm when missing. Ends with one "N passed, N failed" line (mocha's
# passing and failing test counts).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
unset LD_PRELOAD
node_dir=$root/build/node
sdk=$node_dir/node_modules/tablestore
if [ ! -d "$sdk/test" ] || [ ! -x "$node_dir/node_modules/.bin/mocha" ]; then
  mkdir -p "$node_dir"
  (cd "$node_dir" && timeout -k 10 900 npm install --no-audit --no-fund --silent tablestore@5.6.5 mocha@10.8.2) >/dev/null 2>&1 || {
    echo "sdk tests: npm install tablestore@5.6.5 mocha@10.8.2 failed"; echo "0 passed, 1 failed"; exit 1; }
fi
if [ ! -d "$sdk/test" ]; then echo "sdk tests: the npm package ships no test/ folder"; echo "0 passed, 1 failed"; exit 1; fi
tmp=$(mktemp -d /tmp/otskit-sdk-tests.XXXXXX)
chmod 711 "$tmp" # the workers (nobody when started as root) reach --data inside
pid=""
stop_server() {
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null
  i=0; while kill -0 "$pid" 2>/dev/null && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done
  kill -KILL "$pid" 2>/dev/null; pid=""
  if [ -f "$tmp/ng/logs/nginx.pid" ]; then
    m=$(cat "$tmp/ng/logs/nginx.pid"); kill -KILL "$m" $(pgrep -P "$m") 2>/dev/null; rm -f "$tmp/ng/logs/nginx.pid"
  fi
  return 0
}
cleanup() { stop_server; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
port=$(luajit -e 'local s = assert(require("socket").bind("127.0.0.1", 0)); local _, p = s:getsockname(); print(p); s:close()')
bin/otskit serve --listen "127.0.0.1:$port" --data "$tmp/data" --workers 2 --prefix "$tmp/ng" \
  --instance inst --access-key-id ak-test --access-key-secret sk-test >"$tmp/serve.log" 2>&1 &
pid=$!
i=0
until curl -sf --max-time 2 -o /dev/null "http://127.0.0.1:$port/_otskit/health"; do
  i=$((i + 1))
  if [ $i -gt 100 ] || ! kill -0 "$pid" 2>/dev/null; then
    echo "sdk tests: the server did not start"; cat "$tmp/serve.log"; echo "0 passed, 1 failed"; exit 1
  fi
  sleep 0.1
done
export endpoint="http://127.0.0.1:$port" accessKeyId=ak-test secretAccessKey=sk-test instancename=inst
cd "$sdk"
"$node_dir/node_modules/.bin/mocha" --reporter dot --timeout 60000 --exit \
  test/table.test.js test/data_opration.test.js test/globalIndex.test.js test/long.test.js test/sql.test.js test/protocol \
  >"$tmp/mocha.log" 2>&1
cd "$root"
p=$(grep -aE '^ *[0-9]+ passing' "$tmp/mocha.log" | tail -1 | awk '{print $1}')
f=$(grep -aE '^ *[0-9]+ failing' "$tmp/mocha.log" | tail -1 | awk '{print $1}')
p=${p:-0}; f=${f:-0}
if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then f=1; tail -30 "$tmp/mocha.log"; fi
if [ "$f" -gt 0 ]; then sed -n '/failing/,$p' "$tmp/mocha.log" | head -80; fi
bad=$(grep -E '\[(error|alert|crit|emerg)\]|signal [0-9]+|exited on' "$tmp/ng/logs/error.log" | head -5)
if [ -n "$bad" ]; then f=$((f + 1)); echo "FAIL error.log:"; echo "$bad"; fi
echo "$p passed, $f failed"
[ "$f" -eq 0 ]
