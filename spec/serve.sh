#!/bin/sh
# spec/serve.sh -- part of `make test`: starts `otskit serve --data DIR
# --workers 2 --jit-log FILE` (a temporary directory, a free 127.0.0.1 port), runs
# spec/serve/*_test.lua against it with otskit's own codec (busted under
# LuaJIT, luasocket), and always stops it and removes the directory. The
# last tests check error.log and that SIGTERM stops every process. Prints
# busted's counts line.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
B=${OTSKIT_BUILD:-build}
# Under make check (the ASan build), the server and its client run the
# plain build: a forked nginx worker and this luajit client cannot load an
# ASan module without the runtime preloaded, and the preload hangs curl.
# The same Lua and C code runs under ASan in the specs and the gateway test.
case $B in *asan*) B=build; echo "serve: plain build (ASan build not loadable here)";; esac
unset LD_PRELOAD
tmp=$(mktemp -d "${TMPDIR:-/tmp}/otskit-serve-spec.XXXXXX") # (spec/run.sh: under TMPDIR)
pid=""
cleanup() {
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null
    i=0; while kill -0 "$pid" 2>/dev/null && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done
  fi
  if [ -f "$tmp/ng/logs/nginx.pid" ]; then m=$(cat "$tmp/ng/logs/nginx.pid"); kill -KILL "$m" $(pgrep -P "$m") 2>/dev/null; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
port=$(luajit -e 'local s = assert(require("socket").bind("127.0.0.1", 0)); local _, p = s:getsockname(); print(p); s:close()')
# started as root, the workers run as nobody: the data directory's parent must be searchable
chmod 711 "$tmp"
OTSKIT_ADMIN_TOKEN=$(luajit -e 'local f = io.open("/dev/urandom", "rb"); print((f:read(16):gsub(".", function(c) return ("%02x"):format(c:byte()) end)))')
export OTSKIT_ADMIN_TOKEN
OTSKIT_BUILD="$B" bin/otskit serve --listen "127.0.0.1:$port" --data "$tmp/data" --workers 2 --prefix "$tmp/ng" \
  --instance spec --access-key-id spec-ak --access-key-secret spec-sk --jit-log "$tmp/jit.log" >"$tmp/serve.log" 2>&1 &
pid=$!
i=0
until curl -sf --max-time 2 -o /dev/null "http://127.0.0.1:$port/_otskit/health"; do
  i=$((i + 1))
  if [ $i -gt 100 ] || ! kill -0 "$pid" 2>/dev/null; then
    echo "serve: did not start"; cat "$tmp/serve.log"; echo "0 successes / 0 failures / 1 error / 0 pending"; exit 1
  fi
  sleep 0.1
done
OTSKIT_SERVE_PORT=$port OTSKIT_SERVE_PREFIX="$tmp/ng" OTSKIT_SERVE_PID=$pid OTSKIT_SERVE_JITLOG="$tmp/jit.log" \
  LUA_PATH="lua/?.lua;lua/?/init.lua;./?.lua;spec/?.lua;;" LUA_CPATH="$B/jit/?.so;;" \
  luajit /usr/bin/busted -o utfTerminal --pattern=_test spec/serve
