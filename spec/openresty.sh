#!/bin/sh
# spec/openresty.sh -- `make openresty-test` (and part of `make test`):
# starts the gateway example in Debian's nginx (2 workers, a temporary
# prefix, a free 127.0.0.1 port) in front of its own `otskit serve`, runs
# spec/openresty/*_test.lua against it over HTTP (busted under LuaJIT,
# luasocket; faults are set on serve's admin endpoint), and always stops
# nginx and serve and removes the prefix, even when a test or the start
# fails. The last test checks error.log for Lua errors. Prints busted's
# counts line.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
B=${OTSKIT_BUILD:-build}
prefix=$(mktemp -d "${TMPDIR:-/tmp}/otskit-openresty.XXXXXX") # (spec/run.sh: under TMPDIR)
status=1
cleanup() {
  sh examples/openresty/run.sh stop "$prefix"
  if [ "$status" -ne 0 ] && [ -f "$prefix/logs/error.log" ]; then
    echo "-- error.log (last 30 lines):"; tail -30 "$prefix/logs/error.log"
  fi
  rm -rf "$prefix"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
if ! port=$(env -u OTSKIT_ENDPOINT OTSKIT_BUILD="$B" sh examples/openresty/run.sh start "$prefix" "" 2); then
  echo "openresty: nginx did not start"
  echo "0 successes / 0 failures / 1 error / 0 pending"
  exit 1
fi
# the ASan preload of `make check` is for the busted runs, not this client
unset LD_PRELOAD
OTSKIT_GW_URL="http://127.0.0.1:$port" OTSKIT_GW_PREFIX="$prefix" OTSKIT_SERVE_URL=$(cat "$prefix/serve.url") \
  LUA_PATH="lua/?.lua;lua/?/init.lua;./?.lua;spec/?.lua;;" LUA_CPATH="$B/jit/?.so;;" \
  luajit /usr/bin/busted -o utfTerminal --pattern=_test spec/openresty
status=$?
exit $status
