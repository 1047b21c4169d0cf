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
interop_name=serve
. "$(dirname "$0")/lib.sh"
passed=0; failed=0
tally() { # adds the "N passed, N failed" line of $1 (a log file)
  line=$(grep -aE '^[0-9]+ passed, [0-9]+ failed$' "$1" | tail -1)
  if [ -z "$line" ]; then failed=$((failed + 1)); echo "serve: no result line from $2"; tail -20 "$1"; return; fi
  p=${line%% passed*}; f=${line#*passed, }; f=${f%% failed*}
  passed=$((passed + p)); failed=$((failed + f))
  grep -aE '^(FAIL|fuzz:|durable:)' "$1" | head -40
}
export OTSKIT_URL OTSKIT_AK=ak-test OTSKIT_SK=sk-test OTSKIT_INSTANCE=inst
# the token of the admin endpoint (serve reads it from the environment)
OTSKIT_ADMIN_TOKEN=interop-admin-$(date +%s)-$$-token; export OTSKIT_ADMIN_TOKEN
export NODE_PATH="$node_dir/node_modules"
if ! start_server; then echo "0 passed, 1 failed"; exit 1; fi

node spec/interop/serve_session.js >"$tmp/session.log" 2>&1; tally "$tmp/session.log" session
node spec/interop/serve_fuzz.js >"$tmp/fuzz.log" 2>&1; tally "$tmp/fuzz.log" fuzz
# no Lua error, no crashed worker; nginx's own note on a refused large body is expected
bad=$(error_log_bad 'client intended to send too large body')
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
