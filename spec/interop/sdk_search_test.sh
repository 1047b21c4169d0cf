#!/bin/sh
# spec/interop/sdk_search_test.sh -- the official Node SDK's own search
# tests (the test/ folder the npm package tablestore@5.6.5 ships, in
# build/node; never copied into the tree, never edited) against `otskit
# serve --data DIR --workers 2` on a free 127.0.0.1 port:
# test/search_old.test.js and test/search.test.js in full, every test
# counted; each of these must have run: create_and_describe_with_ttl_and_reindex_and_update_ttl,
# agg_and_group_by, group_by_date_histogram, group_by_geo_grid,
# field_sort_missing_field_query, group_by_composite, "collapse test ",
# functions_score_query, knn_vector_query, highlight_query, weight,
# compute_splits and parallel_scan. Ends with one "N passed, N failed"
# line over the tests (mocha's JSON report).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
unset LD_PRELOAD
node_dir=$root/build/node
sdk=$node_dir/node_modules/tablestore
if [ ! -d "$sdk/test" ] || [ ! -x "$node_dir/node_modules/.bin/mocha" ]; then
  mkdir -p "$node_dir"
  (cd "$node_dir" && timeout -k 10 900 npm install --no-audit --no-fund --silent tablestore@5.6.5 mocha@10.8.2) >/dev/null 2>&1 || {
    echo "sdk search tests: npm install tablestore@5.6.5 mocha@10.8.2 failed"; echo "0 passed, 1 failed"; exit 1; }
fi
if [ ! -d "$sdk/test" ]; then echo "sdk search tests: the npm package ships no test/ folder"; echo "0 passed, 1 failed"; exit 1; fi
tmp=$(mktemp -d /tmp/otskit-sdk-search.XXXXXX); chmod 755 "$tmp"
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
    echo "sdk search tests: the server did not start"; cat "$tmp/serve.log"; echo "0 passed, 1 failed"; exit 1
  fi
  sleep 0.1
done
export endpoint="http://127.0.0.1:$port" accessKeyId=ak-test secretAccessKey=sk-test instancename=inst
mocha=$node_dir/node_modules/.bin/mocha
(cd "$sdk" && "$mocha" --reporter json --reporter-option output="$tmp/old.json" --timeout 200000 --exit test/search_old.test.js >"$tmp/old.log" 2>&1)
(cd "$sdk" && "$mocha" --reporter json --reporter-option output="$tmp/new.json" --timeout 200000 --exit \
  test/search.test.js >"$tmp/new.log" 2>&1)
# counted: every test of both files; the named ones must have run
node -e '
const fs = require("fs");
const want = new Set(["create_and_describe_with_ttl_and_reindex_and_update_ttl", "field_sort_missing_field_query",
  "compute_splits", "parallel_scan", "agg_and_group_by", "group_by_date_histogram", "group_by_geo_grid",
  "group_by_composite", "collapse test ", "functions_score_query", "knn_vector_query", "highlight_query", "weight"]);
let p = 0, f = 0;
function report(file, all) {
  let r;
  try { r = JSON.parse(fs.readFileSync(file, "utf8")); }
  catch (e) { console.log(file + ": no JSON report"); f++; return; }
  for (const t of r.passes) if (all || want.has(t.title)) { p++; want.delete(t.title); }
    else console.log("not counted, passed: " + t.title);
  for (const t of r.failures) {
    const why = (t.err && t.err.message || "").replace(/\s+/g, " ").slice(0, 200);
    if (all || want.has(t.title)) { f++; want.delete(t.title); console.log("FAIL " + t.fullTitle + ": " + why); }
    else console.log("not counted, failed: " + t.title + ": " + why);
  }
}
report(process.argv[1], true);
report(process.argv[2], true);
for (const t of want) { f++; console.log("FAIL not run: " + t); }
console.log(p + " passed, " + f + " failed");
process.exit(f ? 1 : 0);
' "$tmp/old.json" "$tmp/new.json" >"$tmp/summary" 2>&1
bad=$(grep -E '\[(error|alert|crit|emerg)\]|signal [0-9]+|exited on' "$tmp/ng/logs/error.log" | head -5)
sed '$d' "$tmp/summary"
p=$(tail -1 "$tmp/summary" | awk '{print $1}'); f=$(tail -1 "$tmp/summary" | awk '{print $3}')
if [ -n "$bad" ]; then f=$((f + 1)); echo "FAIL error.log:"; echo "$bad"; fi
echo "$p passed, $f failed"
[ "$f" -eq 0 ]
