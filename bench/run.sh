#!/bin/sh
# bench/run.sh [NAME...] -- runs bench/*_bench.lua (or the named ones) under
# lua5.4 and luajit and writes bench/RESULTS.md: machine, date, medians, ratios.
set -u
B=${OTSKIT_BUILD:-build}
LPATH="lua/?.lua;lua/?/init.lua;bench/?.lua;;"
# lua-binaryheap is pure Lua packaged for 5.1-5.3: 5.4 loads it from the 5.3 path
LPATH54="$LPATH;/usr/share/lua/5.3/?.lua"
out=bench/RESULTS.md
if [ $# -gt 0 ]; then files=$(for n in "$@"; do echo "bench/${n%_bench.lua}_bench.lua"; done)
else files=$(ls bench/*_bench.lua); fi
tmp=$(mktemp)
{
  echo "# otskit benchmark results"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- machine: $(nproc) vCPU, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(free -g | awk '/Mem:/{print $2}') GiB"
  echo "- compiler: $(cc --version | head -1)"
  echo "- interpreters: $(lua5.4 -v 2>&1 | head -1); $(luajit -v | head -1)"
  echo "- method: medians of repeated runs (CPU time); every bench checks that"
  echo "  otskit and its peers give identical output before timing."
} > "$tmp"
status=0
for f in $files; do
  name=$(basename "$f" _bench.lua)
  echo "bench: $name" >&2
  echo "\n## $name" >> "$tmp"
  LUA_PATH_5_4="$LPATH54" LUA_CPATH_5_4="$B/5.4/?.so;;" lua5.4 "$f" >> "$tmp" 2>&1 || { status=1; echo "(lua5.4 run failed)" >> "$tmp"; }
  LUA_PATH="$LPATH" LUA_CPATH="$B/jit/?.so;;" luajit "$f" >> "$tmp" 2>&1 || { status=1; echo "(luajit run failed)" >> "$tmp"; }
done
if [ $# -gt 0 ] && [ -f "$out" ]; then
  # partial run: keep the other sections, replace the named ones
  cat "$tmp" > "$out.partial"; echo "bench: partial results in $out.partial" >&2
else
  mv "$tmp" "$out"; echo "bench: wrote $out" >&2
fi
rm -f "$tmp"
exit $status
