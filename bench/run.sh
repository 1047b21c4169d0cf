#!/bin/sh
# bench/run.sh [NAME...] -- runs bench/*_bench.lua (or the named ones) under
# lua5.4 and luajit through bench/runner.lua and writes ONE JSON run
# document (every measure's repetitions, medians, spread, and the run's
# facts). Environment (the make variables of `make bench`):
#   FULL=1   the full suite (default: the quick one, under 90 s)
#   OUT=path the run document (default bench/results/<UTC time>-<rev>.json)
#   PIN=cpu  pin every bench process to this CPU (taskset)
#   RESULTS=path  also rewrite these sections of a markdown file
#            (default for FULL=1: bench/RESULTS.md; a partial run replaces
#            only the named benches' sections, the others stay)
#   PROCS=k  run every bench in k separate processes per interpreter
#            (default 2; the repetitions are divided among them, so the
#            run takes about as long): compare needs the spread between
#            processes, which is much larger than that within one
#   OTSKIT_BENCH_BUDGET  CPU seconds per measure; OTSKIT_BENCH_SLOW: see lib.lua
set -u
B=${OTSKIT_BUILD:-build}
LPATH="lua/?.lua;lua/?/init.lua;bench/?.lua;;"
# lua-binaryheap is pure Lua packaged for 5.1-5.3: 5.4 loads it from the 5.3 path
LPATH54="$LPATH;/usr/share/lua/5.3/?.lua"
if [ "${FULL:-0}" = 1 ]; then mode=full; unset OTSKIT_BENCH_QUICK; else mode=quick; export OTSKIT_BENCH_QUICK=1; fi
rev=$(git rev-parse --short HEAD 2>/dev/null || echo norev)
out=${OUT:-bench/results/$(date -u +%Y%m%dT%H%M%SZ)-$rev.json}
results=${RESULTS:-}
[ -z "$results" ] && [ $mode = full ] && results=bench/RESULTS.md
pin=""
if [ -n "${PIN:-}" ]; then
  command -v taskset >/dev/null || { echo "bench: PIN needs taskset (util-linux)" >&2; exit 2; }
  pin="taskset -c $PIN"
  export OTSKIT_BENCH_PIN=$PIN
fi
if [ $# -gt 0 ]; then files=$(for n in "$@"; do echo "bench/${n%_bench.lua}_bench.lua"; done)
else files=$(ls bench/*_bench.lua); fi
for f in $files; do [ -f "$f" ] || { echo "bench: no $f" >&2; exit 2; }; done
procs=${PROCS:-2}
case $procs in ''|*[!0-9]*|0) echo "bench: PROCS must be a positive integer, got '$procs'" >&2; exit 2;; esac
export OTSKIT_BENCH_PROCS=$procs
mkdir -p "$(dirname "$out")"
parts=$(mktemp -d)
trap 'rm -rf "$parts"' EXIT
trap 'exit 130' INT TERM
export OTSKIT_BENCH_LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
status=0
# the processes of one bench are spread over the run (all the benches in
# process 1, then all in process 2, ...): a drift of the machine during the
# run shows up as spread between processes, as it would between runs
p=1
while [ $p -le $procs ]; do
  export OTSKIT_BENCH_PROCESS=$p
  for f in $files; do
    name=$(basename "$f" _bench.lua)
    echo "bench: $name ($mode, process $p of $procs)" >&2
    LUA_PATH_5_4="$LPATH54" LUA_CPATH_5_4="$B/5.4/?.so;;" $pin lua5.4 bench/runner.lua "$f" "$parts/$name.5.4.$p.json" \
      || status=1
    LUA_PATH="$LPATH" LUA_CPATH="$B/jit/?.so;;" $pin luajit bench/runner.lua "$f" "$parts/$name.jit.$p.json" \
      || status=1
  done
  p=$((p + 1))
done
lua5.4 bench/runs.lua collect --mode $mode -o "$out" $(ls "$parts"/*.json) || exit 1
echo "bench: wrote $out ($(( $(date +%s) - start )) s)" >&2
if [ -n "$results" ]; then
  lua5.4 bench/runs.lua report "$out" -o "$results" || status=1
fi
exit $status
