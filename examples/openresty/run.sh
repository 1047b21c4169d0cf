#!/bin/sh
# examples/openresty/run.sh start PREFIX [PORT [WORKERS]] | stop PREFIX
# Starts the otskit gateway in Debian's nginx from the temporary directory
# PREFIX (config, logs, pid, the SQLite db), listening on 127.0.0.1:PORT
# only (default: a free port), and prints the port; `stop` stops it (QUIT,
# then KILL after 10 s) -- only the nginx whose pid file is in PREFIX.
# OTSKIT_BUILD picks the build (default build/, relative to the repo).
set -eu
# make check preloads ASan for an ASan build of core.so: nginx and the
# setup script load that core.so and need it; curl hangs under it
preload=${LD_PRELOAD:-}
unset LD_PRELOAD
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cmd=${1:-}; prefix=${2:-}
[ -n "$cmd" ] && [ -n "$prefix" ] || { echo "usage: $0 start|stop PREFIX [PORT [WORKERS]]" >&2; exit 2; }

free_port() {
  luajit -e 'local s = assert(require("socket").bind("127.0.0.1", 0)); local _, p = s:getsockname(); print(p); s:close()'
}

case $cmd in
start)
  port=${3:-$(free_port)}; workers=${4:-2}
  build=${OTSKIT_BUILD:-build}
  case $build in /*) ;; *) build=$root/$build ;; esac
  mkdir -p "$prefix/conf" "$prefix/logs" "$prefix/data"
  # workers run as nobody when nginx starts as root: they must read the
  # code and the module, and write the db directory (nothing else). The
  # checkout may sit where nobody cannot read (/root is 0700 on Debian), so
  # they load a world-readable copy staged in the prefix.
  user=""; croot=$root; cpath=$build/jit
  if [ "$(id -u)" = 0 ]; then
    user="user nobody nogroup;"
    chmod 755 "$prefix"
    mkdir -p "$prefix/code/examples/openresty" "$prefix/code/jit/otskit"
    cp -R "$root/lua" "$prefix/code/"
    cp -R "$here/gateway" "$prefix/code/examples/openresty/"
    cp "$build/jit/otskit/core.so" "$prefix/code/jit/otskit/"
    chmod -R a+rX "$prefix/code"
    croot=$prefix/code; cpath=$prefix/code/jit
  fi
  sed -e "s|@ROOT@|$croot|g" -e "s|@CPATH@|$cpath|g" -e "s|@PREFIX@|$prefix|g" \
      -e "s|@PORT@|$port|g" -e "s|@WORKERS@|$workers|g" -e "s|@USER@|$user|g" \
      "$here/nginx.conf.in" > "$prefix/conf/nginx.conf"
  LD_PRELOAD="$preload" LUA_PATH="$root/lua/?.lua;$root/lua/?/init.lua;;" LUA_CPATH="$build/jit/?.so;;" \
    luajit "$here/setup.lua" "$prefix/data/gateway.db"
  [ "$(id -u)" = 0 ] && chown -R nobody:nogroup "$prefix/data"
  LD_PRELOAD="$preload" nginx -p "$prefix" -c "$prefix/conf/nginx.conf" -g "daemon on;" >"$prefix/logs/start.log" 2>&1 || {
    cat "$prefix/logs/start.log" "$prefix/logs/error.log" >&2 2>/dev/null; exit 1; }
  i=0
  until curl -sf --max-time 2 -o /dev/null "http://127.0.0.1:$port/healthz"; do
    i=$((i + 1))
    if [ $i -gt 50 ]; then echo "run.sh: nginx did not answer on port $port" >&2; cat "$prefix/logs/error.log" >&2; exit 1; fi
    sleep 0.1
  done
  echo "$port" ;;
stop)
  pidf="$prefix/logs/nginx.pid"
  [ -f "$pidf" ] || exit 0
  pid=$(cat "$pidf")
  kill -QUIT "$pid" 2>/dev/null || exit 0
  i=0
  while kill -0 "$pid" 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt 100 ]; then
      # the workers too: they outlive a killed master
      kids=$(pgrep -P "$pid" || true)
      kill -KILL "$pid" $kids 2>/dev/null || true; break
    fi
    sleep 0.1
  done ;;
*) echo "usage: $0 start|stop PREFIX [PORT [WORKERS]]" >&2; exit 2 ;;
esac
