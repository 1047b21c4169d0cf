#!/bin/sh
# bench/acceptance.sh [DIR] -- the acceptance of the regression gate
# (docs/bench.md, bench/NOTES.md "Acceptance"): two quick runs of the same code must
# compare "within noise" for at least 90 % of the measures, and a run with
# a 25 % slowdown injected into one code path (OTSKIT_BENCH_SLOW, see
# bench/lib.lua) must be reported as a regression (exit 1) on both
# interpreters. Writes a.json, b.json, slow.json and the comparisons into
# DIR (default bench/results/acceptance-<UTC time>) and prints a summary
# with the load averages. Environment: PIN (CPU, default 1; empty: not
# pinned), SLOW (default "64 KB lz4 pack: otskit=0.25"), PROCS (see run.sh).
set -u
dir=${1:-bench/results/acceptance-$(date -u +%Y%m%dT%H%M%SZ)}
pin=${PIN-1}
slow=${SLOW:-64 KB lz4 pack: otskit=0.25}
mkdir -p "$dir" || exit 2
load() { cut -d' ' -f1-3 /proc/loadavg; }
run() { # name [env...]
  out=$dir/$1.json; shift
  l0=$(load); t0=$(date +%s)
  env "$@" make -s bench PIN="$pin" OUT="$out" > "$out.log" 2>&1 || { echo "bench run failed: $out.log" >&2; exit 2; }
  echo "$(basename "$out"): $(( $(date +%s) - t0 )) s wall, load average $l0 -> $(load)"
}
run a
run b
run slow OTSKIT_BENCH_SLOW="$slow"
echo
for k in all ratio time; do
  lua5.4 bench/runs.lua compare --kind $k "$dir/a.json" "$dir/b.json" > "$dir/same.$k.txt"
  echo "same code, --kind $k: exit $? ($(grep -E '^[0-9]+ measures:' "$dir/same.$k.txt"))"
done
grep -A100 '^REGRESSION' "$dir/same.all.txt"
echo
lua5.4 bench/runs.lua compare "$dir/b.json" "$dir/slow.json" > "$dir/slow.txt"
code=$?
echo "injected slowdown ($slow): exit $code"
text=${slow%=*}
for abi in lua5.4 luajit; do
  if grep -F "$text" "$dir/slow.txt" | grep -F "| $abi:" | grep -q .; then
    echo "  $abi: reported as a regression"
  else
    echo "  $abi: NOT reported as a regression"
  fi
done
grep -A100 '^REGRESSION' "$dir/slow.txt"
