#!/bin/sh
# spec/run.sh MODE -- the test driver behind `make test`, `make check`,
# `make valgrind` and `make openresty-test`. MODE: all (C tests, every spec
# under lua5.4 and luajit, then the gateway and otskit serve in nginx),
# check (all but otskit serve's tests), c, valgrind, openresty, serve,
# spec [FILE...] (those spec files, default all, under both VMs).
# Ends with one line: "N passed, N failed".
#
# The runs (a busted run per interpreter, the C tests, each nginx script)
# go OTSKIT_JOBS at a time (default: one per CPU), each printed whole when
# it finished, in start order. Every run works in a scratch directory of
# its own (a temporary directory, removed at the end): it holds a symbolic
# link to each entry of the checkout, so specs read the tree as usual, but
# a file a spec creates at a relative path ("5", "out.db") lands in the
# scratch directory, not in the checkout nor in another run's; TMPDIR
# points inside it too. A run that
# still leaves anything new in the checkout (a new, ignored or changed path
# by `git status --porcelain --ignored`, or a new path outside git; build/
# excluded) fails, and the offending paths are printed.
set -u
mode=${1:-all}
case $mode in all|check|c|valgrind|openresty|serve|spec) ;;
  *) echo "usage: spec/run.sh all|check|c|valgrind|openresty|serve|spec [FILE...]" >&2; exit 2 ;;
esac
[ $# -gt 0 ] && shift
root=$(cd "$(dirname "$0")/.." && pwd)
B=${OTSKIT_BUILD:-build}
pass=0; fail=0

# The state of the checkout, one path a line (build/ left out).
tree_state() {
  if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$root" status --porcelain --ignored --untracked-files=all 2>/dev/null |
      grep -vE '^.. "?build/' | sort
  else
    (cd "$root" && find . -path ./build -prune -o -print | sed 's|^\./||' | sort)
  fi
}
before=$(tree_state)
work=$(mktemp -d "${TMPDIR:-/tmp}/otskit-spec.XXXXXX") || exit 1
chmod 755 "$work" # nginx workers (another user) read lua/ through it
nj=0; nprinted=0
# on any exit: stop the runs still going (every process under each: its
# timeout, busted, what those started), then remove the scratch
# directories. (A background run ignores Ctrl-C: sh's rule.)
kill_tree() {
  for c in $(env -u LD_PRELOAD pgrep -P "$1" 2>/dev/null); do kill_tree "$c"; done
  kill -TERM "$1" 2>/dev/null
}
# $1 and every process under it, one a line
tree_of() {
  echo "$1"
  for c in $(env -u LD_PRELOAD pgrep -P "$1" 2>/dev/null); do tree_of "$c"; done
}
# Stops what a run left running outside its process tree: servers a spec
# started in a session of their own (setsid: otskit serve, its nginx, a
# daemonized nginx), which neither timeout's signal to its process group
# nor kill_tree reaches. Each holds its prefix under the run's TMPDIR, so
# the path of the run's scratch directory ($1) is in its command line:
# those processes and every process under them (nginx workers) get TERM,
# then KILL after 5 s. Says what it stopped.
reap() {
  left=$(for p in $(env -u LD_PRELOAD pgrep -f -- "$1/" 2>/dev/null); do tree_of "$p"; done | sort -un)
  [ -n "$left" ] || return 0
  echo "== stopped what the run left running: $(echo $left)"
  kill -TERM $left 2>/dev/null
  k=0
  while [ $k -lt 50 ]; do
    alive=""; for p in $left; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
    [ -z "$alive" ] && return 0
    sleep 0.1; k=$((k + 1))
  done
  kill -KILL $alive 2>/dev/null
}
stop_jobs() {
  i=1
  while [ "$i" -le "$nj" ]; do
    [ -f "$work/j$i.done" ] || { kill_tree "$(cat "$work/j$i.pid")"; reap "$work/s$i"; }
    i=$((i + 1))
  done
}
trap 'stop_jobs; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
# git inside a scratch directory (bench facts: revision, dirty tree)
# answers about the checkout
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
  GIT_DIR=$(git -C "$root" rev-parse --absolute-git-dir); GIT_WORK_TREE=$root
  export GIT_DIR GIT_WORK_TREE
fi
# Makes the scratch directory $1 (links to the checkout's entries and a
# tmp/ for TMPDIR) and enters it.
enter_scratch() {
  mkdir -m 755 "$1" || exit 1
  for e in "$root"/* "$root"/.[!.]*; do
    [ -e "$e" ] || [ -L "$e" ] || continue
    [ "${e##*/}" = .git ] && continue
    ln -s "$e" "$1/${e##*/}"
  done
  mkdir -m 1777 "$1/tmp"
  TMPDIR="$1/tmp"; export TMPDIR
  cd "$1" || exit 1
}
LPATH="lua/?.lua;lua/?/init.lua;spec/?.lua;;"
# No run waits forever: each busted run, C test and nginx script is
# stopped after OTSKIT_SPEC_TIMEOUT seconds (then counted as not finished).
T=${OTSKIT_SPEC_TIMEOUT:-1800}
limit() { timeout -k 10 "$T" "$@"; }
t0=$(date +%s)
took() { echo "$(($(date +%s) - t0)) s"; }

# Adds the counts of one run to the totals. $1: its name, $2: its output.
tally() {
  name=$1; out=$2
  line=$(printf '%s\n' "$out" | sed 's/\x1b\[[0-9;]*m//g' | grep -E '[0-9]+ success(es)? / [0-9]+ failures? / [0-9]+ errors?' | tail -1)
  if [ -n "$line" ]; then
    s=$(echo "$line" | sed -E 's/^([0-9]+) success.*/\1/')
    f=$(echo "$line" | sed -E 's/.* ([0-9]+) failures?.*/\1/')
    e=$(echo "$line" | sed -E 's/.* ([0-9]+) errors?.*/\1/')
    pass=$((pass + s)); fail=$((fail + f + e))
    echo "== $name: $s passed, $((f + e)) failed ($(took))"
  else
    fail=$((fail + 1))
    echo "== $name: did not finish in $(took) (counted as 1 failure)"
  fi
}

# Adds the "N ok, N failed" line of a C program (check.h) to the totals.
# $1: its name, $2: its output, $3: its exit status.
tally_c() {
  printf '%s\n' "$2" | grep -v ' ok, ' | grep -v '^# ' | sed 's/^/  /' | tail -n 40
  line=$(printf '%s\n' "$2" | grep -E '^[0-9]+ ok, [0-9]+ failed' | tail -1)
  if [ -n "$line" ]; then
    s=$(echo "$line" | sed -E 's/^([0-9]+) ok.*/\1/')
    f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed/\1/')
    [ "$3" -ne 0 ] && [ "$f" -eq 0 ] && f=1
    pass=$((pass + s)); fail=$((fail + f))
    echo "== $1: $s passed, $f failed ($(took))"
  else
    fail=$((fail + 1)); echo "== $1: crashed (rc $3, counted as 1 failure)"
  fi
}

# Runs in parallel: up to OTSKIT_JOBS runs at once (default: the number
# of CPUs; 1 runs one after the other). Each run works in a scratch
# directory of its own (specs write relative paths) and on its own free
# ports; its output goes to a file, printed with its counts added to the
# totals once it and every run started before it finished, so the output
# reads in start order whatever finishes first.
J=${OTSKIT_JOBS:-$(nproc 2>/dev/null || echo 1)}
# job CMD...: runs CMD (a function below) as the next run.
# (Polled with builtins: under make check every command started has the
# ASan runtime preloaded.)
full() {
  set -- "$work"/j*.done; [ -e "$1" ] || set --
  [ $((nj - $#)) -ge "$J" ]
}
job() {
  while full; do flush; sleep 1; done
  nj=$((nj + 1))
  ( i=$nj; enter_scratch "$work/s$i"; pass=0; fail=0
    "$@" >"$work/j$i.out" 2>&1
    reap "$work/s$i" >>"$work/j$i.out" 2>&1
    echo "$pass $fail" >"$work/j$i.count"; : >"$work/j$i.done" ) &
  echo $! >"$work/j$nj.pid"
}
# Prints the runs finished in start order, adding their counts; a run that
# died without its counts counts as 1 failure.
flush() {
  while [ "$nprinted" -lt "$nj" ]; do
    i=$((nprinted + 1))
    if [ ! -f "$work/j$i.done" ]; then
      read -r jp <"$work/j$i.pid"
      kill -0 "$jp" 2>/dev/null && return
      [ -f "$work/j$i.done" ] || { cat "$work/j$i.out" 2>/dev/null
        echo "== run $i died without its counts (counted as 1 failure)"; fail=$((fail + 1)); nprinted=$i; continue; }
    fi
    cat "$work/j$i.out"
    read -r p f <"$work/j$i.count"
    pass=$((pass + p)); fail=$((fail + f)); nprinted=$i
  done
}
# Waits for every run, printing each as above.
finish() {
  flush
  while [ "$nprinted" -lt "$nj" ]; do sleep 1; flush; done
}

# The C tests (build/ctest: ASan+UBSan builds). OTSKIT_SKIP_C=reason skips
# them, and says so (CI: make check after make test, which ran them).
# $1: which (alloc: the two alloc hosts, the longest; other: the rest).
run_c() {
  if [ -n "${OTSKIT_SKIP_C:-}" ]; then
    echo "== C tests ($1): skipped (${OTSKIT_SKIP_C})"; return
  fi
  for t in build/ctest/*_test; do
    [ -x "$t" ] || continue
    case ${t##*/} in alloc*) [ "$1" = alloc ] || continue ;; *) [ "$1" = alloc ] && continue ;; esac
    t0=$(date +%s)
    out=$(limit "$t" 2>&1); rc=$?
    tally_c "C ${t##*/}" "$out" $rc
  done
}

run_busted() { # $1: interpreter, $2: abi dir; extra args: spec files
  interp=$1; abi=$2; shift 2
  if [ "$interp" = lua5.4 ]; then
    t0=$(date +%s)
    out=$(LUA_PATH_5_4="$LPATH" LUA_CPATH_5_4="$B/$abi/?.so;;" \
          limit lua5.4 /usr/bin/busted -o utfTerminal "$@" 2>&1)
  else
    t0=$(date +%s)
    out=$(LUA_PATH="$LPATH" LUA_CPATH="$B/$abi/?.so;;" \
          limit luajit /usr/bin/busted -o utfTerminal "$@" 2>&1)
  fi
  printf '%s\n' "$out" | sed 's/\x1b\[[0-9;]*m//g' | grep -vE '^[●◌✱✖○]+$' | tail -n 60
  tally "busted $interp" "$out"
}

# spec/alloc/host.c (every binding under failing allocations) under
# memcheck, for both interpreters: its checks, plus any leak or error.
run_alloc_valgrind() {
  for h in build/alloc/alloc54 build/alloc/allocjit; do
    t0=$(date +%s)
    out=$(OTSKIT_BUILD="$B" limit valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
          --show-leak-kinds=definite,indirect --error-exitcode=99 "$h" 2>&1); rc=$?
    tally_c "valgrind ${h##*/}" "$out" $rc
  done
}

# The gateway example in a real nginx (spec/openresty.sh starts and always
# stops it). OTSKIT_SKIP_OPENRESTY=1 skips it, and says so.
run_openresty() {
  if [ -n "${OTSKIT_SKIP_OPENRESTY:-}" ]; then
    echo "== openresty: skipped (${OTSKIT_SKIP_OPENRESTY})"; return
  fi
  t0=$(date +%s)
  out=$(OTSKIT_BUILD="$B" limit sh spec/openresty.sh 2>&1)
  printf '%s\n' "$out" | sed 's/\x1b\[[0-9;]*m//g' | grep -vE '^[●◌✱✖○◼]+$' | cut -c1-400 | tail -n 60
  tally "openresty (nginx, 2 workers)" "$out"
}

# otskit serve in a real nginx (spec/serve.sh starts and always stops it).
run_serve() {
  if [ -n "${OTSKIT_SKIP_OPENRESTY:-}" ]; then
    echo "== serve: skipped (${OTSKIT_SKIP_OPENRESTY})"; return
  fi
  t0=$(date +%s)
  out=$(OTSKIT_BUILD="$B" limit sh spec/serve.sh 2>&1)
  printf '%s\n' "$out" | sed 's/\x1b\[[0-9;]*m//g' | grep -vE '^[●◌✱✖○◼]+$' | cut -c1-400 | tail -n 60
  tally "serve (nginx, 2 workers)" "$out"
}

# memcheck on Lua 5.4 over the specs with fewer property trials; a
# definite or indirect leak, or any memory error, fails the run.
run_valgrind() {
  t0=$(date +%s)
  out=$(OTSKIT_QUICK=1 LUA_PATH_5_4="$LPATH" LUA_CPATH_5_4="$B/5.4/?.so;;" \
        limit valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
        --show-leak-kinds=definite,indirect --error-exitcode=99 \
        lua5.4 /usr/bin/busted -o utfTerminal ${VALGRIND_SPECS:-spec} 2>&1); rc=$?
  printf '%s\n' "$out" | sed 's/\x1b\[[0-9;]*m//g' | grep -vE '^[●◌✱✖○]+$' | tail -n 60
  tally "valgrind lua5.4" "$out"
  if [ $rc -eq 99 ]; then fail=$((fail + 1)); echo "== valgrind reported errors or leaks"; fi
}

# The longest runs first: with two at once, the two busted runs share the
# machine, then the rest.
case $mode in
  all)
    job run_busted lua5.4 5.4 spec
    job run_busted luajit jit spec
    job run_c alloc
    job run_c other
    job run_openresty
    job run_serve ;;
  check)
    # make check (ASan+UBSan build in $B, runtime preloaded): as all, but
    # not otskit serve's tests: spec/serve.sh runs the plain build in any
    # case, so under make check they would repeat make test's run exactly.
    # Nor the specs that check text and tooling, not memory: the docs'
    # examples, the bench tools, the install, the Makefile, the file layout
    # and the rockspec (make test runs them on both VMs; every C binding
    # they reach is exercised by the other specs here).
    set -- $(ls spec/*_spec.lua | grep -vE '/(readme|nginx_readme|bench|install|make|layout|rockspec)_spec\.lua$')
    job run_busted lua5.4 5.4 "$@"
    job run_busted luajit jit "$@"
    job run_c alloc
    job run_c other
    job run_openresty
    job echo "== serve: not repeated (spec/serve.sh runs the plain build: make test runs it)" ;;
  serve)
    job run_serve ;;
  c)
    job run_c alloc
    job run_c other ;;
  openresty)
    job run_openresty ;;
  spec)
    # the given spec files (default: all) under lua5.4 and luajit
    job run_busted lua5.4 5.4 "${@:-spec}"
    job run_busted luajit jit "${@:-spec}" ;;
  valgrind)
    job run_valgrind
    job run_alloc_valgrind ;;
esac
finish

# Nothing new in the checkout.
left=$(printf '%s\n' "$(tree_state)" | grep -vxF -e "$before" | grep -v '^$')
if [ -n "$left" ]; then
  fail=$((fail + 1))
  echo "== the run left new or changed paths in the checkout (counted as 1 failure):"
  printf '%s\n' "$left" | sed 's/^/  /'
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
