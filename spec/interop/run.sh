#!/bin/sh
# make interop: cross-checks otskit with the official Node.js Tablestore
# SDK. Installs nodejs/npm when missing (apt, as root), and tablestore@5.6.5
# with npm into build/node (never into the tree; skipped when there), then
# runs every spec/interop/*_test.sh; each prints "N passed, N failed", the
# last line sums them. Non-zero exit on any failure.
set -u
cd "$(dirname "$0")/../.."
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ]; then echo "make interop: install nodejs and npm (as root)" >&2; exit 1; fi
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -q && apt-get install -y -q --no-install-recommends nodejs npm; } >/dev/null || exit 1
fi
if [ ! -f build/node/node_modules/tablestore/package.json ] ||
   ! grep -q '"version": "5.6.5"' build/node/node_modules/tablestore/package.json; then
  mkdir -p build/node
  timeout -k 10 900 npm install --silent --no-audit --no-fund --prefix build/node tablestore@5.6.5 >build/node/install.log 2>&1 \
    || { cat build/node/install.log; echo "make interop: npm install tablestore@5.6.5 failed" >&2; exit 1; }
fi
pass=0; fail=0
for t in spec/interop/*_test.sh; do
  # never waits forever (as spec/run.sh: OTSKIT_SPEC_TIMEOUT seconds)
  out=$(timeout -k 10 "${OTSKIT_SPEC_TIMEOUT:-1800}" sh "$t" 2>&1); rc=$?
  printf '%s\n' "$out" | sed 's/^/  /'
  line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -1)
  if [ -n "$line" ]; then
    s=$(echo "$line" | cut -d' ' -f1); f=$(echo "$line" | cut -d' ' -f3)
    [ $rc -ne 0 ] && [ "$f" -eq 0 ] && f=1
  else
    s=0; f=1
  fi
  pass=$((pass + s)); fail=$((fail + f))
  echo "== interop ${t##*/}: $s passed, $f failed"
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
