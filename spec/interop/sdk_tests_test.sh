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
interop_name="sdk tests" interop_mocha=1
. "$(dirname "$0")/lib.sh"
start_server || { echo "0 passed, 1 failed"; exit 1; }
export endpoint="$OTSKIT_URL" accessKeyId=ak-test secretAccessKey=sk-test instancename=inst
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
bad=$(error_log_bad)
if [ -n "$bad" ]; then f=$((f + 1)); echo "FAIL error.log:"; echo "$bad"; fi
echo "$p passed, $f failed"
[ "$f" -eq 0 ]
