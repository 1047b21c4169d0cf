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
interop_name="sdk search tests" interop_mocha=1
. "$(dirname "$0")/lib.sh"
start_server || { echo "0 passed, 1 failed"; exit 1; }
export endpoint="$OTSKIT_URL" accessKeyId=ak-test secretAccessKey=sk-test instancename=inst
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
bad=$(error_log_bad)
sed '$d' "$tmp/summary"
p=$(tail -1 "$tmp/summary" | awk '{print $1}'); f=$(tail -1 "$tmp/summary" | awk '{print $3}')
if [ -n "$bad" ]; then f=$((f + 1)); echo "FAIL error.log:"; echo "$bad"; fi
echo "$p passed, $f failed"
[ "$f" -eq 0 ]
