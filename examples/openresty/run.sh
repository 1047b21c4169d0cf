#!/bin/sh
# examples/openresty/run.sh start PREFIX [PORT [WORKERS]] | stop PREFIX
# Starts the otskit gateway in Debian's nginx from the temporary directory
# PREFIX (config, logs, pid), listening on 127.0.0.1:PORT only (default: a
# free port), and prints the port; `stop` stops it (QUIT, then KILL after
# 10 s) -- only the processes whose pid files are in PREFIX.
#
# The service: OTSKIT_ENDPOINT (http:// or https://host[:port]) with
# OTSKIT_INSTANCE, OTSKIT_ACCESS_KEY_ID and OTSKIT_ACCESS_KEY_SECRET; when
# OTSKIT_ENDPOINT is not set, start runs its own `bin/otskit serve` (in
# memory, on a free 127.0.0.1 port; its URL in PREFIX/serve.url, its log
# in PREFIX/logs/serve.log) and stop stops it. The gateway's tables are
# created (setup.lua) before nginx starts.
# OTSKIT_BUILD picks the build (default build/, relative to the repo).
# Everything it writes is in PREFIX; it says on stderr what it did.
set -eu
# make check preloads ASan for an ASan build of core.so: the gateway's
# nginx loads that core.so and needs it; curl hangs under it, and otskit
# serve and setup.lua (the service, not the code under test) run the plain
# build without it
preload=${LD_PRELOAD:-}
unset LD_PRELOAD
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cmd=${1:-}; prefix=${2:-}
[ -n "$cmd" ] && [ -n "$prefix" ] || { echo "usage: $0 start|stop PREFIX [PORT [WORKERS]]" >&2; exit 2; }

free_port() {
  luajit -e 'local s = assert(require("socket").bind("127.0.0.1", 0)); local _, p = s:getsockname(); print(p); s:close()'
}

# stop_pid PIDFILE SIGNAL: SIGNAL, then KILL (with its children) after 10 s
stop_pid() {
  [ -f "$1" ] || return 0
  pid=$(cat "$1")
  kill "-$2" "$pid" 2>/dev/null || { rm -f "$1"; return 0; }
  echo "run.sh: stopping $3 (pid $pid)" >&2
  i=0
  while kill -0 "$pid" 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt 100 ]; then
      # the workers too: they outlive a killed master
      kids=$(pgrep -P "$pid" || true)
      kill -KILL "$pid" $kids 2>/dev/null || true; break
    fi
    sleep 0.1
  done
  rm -f "$1"
}

stop_all() {
  stop_pid "$prefix/logs/nginx.pid" QUIT "the gateway's nginx"
  # otskit serve stops its nginx on TERM; should its nginx outlive it, TERM
  # that too (a KILLed master would leave its workers running)
  stop_pid "$prefix/serve.pid" TERM "otskit serve"
  stop_pid "$prefix/serve/logs/nginx.pid" TERM "otskit serve's nginx"
}

case $cmd in
start)
  port=${3:-$(free_port)}; workers=${4:-2}
  [ -n "$port" ] || port=$(free_port)
  build=${OTSKIT_BUILD:-build}
  case $build in /*) ;; *) build=$root/$build ;; esac
  plain=$build; [ -z "$preload" ] || plain=$root/build
  mkdir -p "$prefix/conf" "$prefix/logs" "$prefix/temp"
  # anything failing from here on leaves nothing running
  trap 'st=$?; [ $st -eq 0 ] || stop_all; exit $st' EXIT
  if [ -z "${OTSKIT_ENDPOINT:-}" ]; then
    sport=$(free_port)
    OTSKIT_INSTANCE=otskit OTSKIT_ACCESS_KEY_ID=otskit
    OTSKIT_ACCESS_KEY_SECRET=$(luajit -e 'local f = io.open("/dev/urandom", "rb"); print((f:read(18):gsub(".", function(c) return ("%02x"):format(c:byte()) end)))')
    OTSKIT_ENDPOINT=http://127.0.0.1:$sport
    OTSKIT_BUILD="$plain" "$root/bin/otskit" serve --listen "127.0.0.1:$sport" --prefix "$prefix/serve" \
      --instance "$OTSKIT_INSTANCE" --access-key-id "$OTSKIT_ACCESS_KEY_ID" \
      --access-key-secret "$OTSKIT_ACCESS_KEY_SECRET" </dev/null >"$prefix/logs/serve.log" 2>&1 &
    echo $! > "$prefix/serve.pid"
    i=0
    until curl -sf --max-time 2 -o /dev/null "$OTSKIT_ENDPOINT/_otskit/health"; do
      i=$((i + 1))
      if [ $i -gt 100 ] || ! kill -0 "$(cat "$prefix/serve.pid")" 2>/dev/null; then
        echo "run.sh: otskit serve did not start" >&2; cat "$prefix/logs/serve.log" >&2; exit 1
      fi
      sleep 0.1
    done
    echo "$OTSKIT_ENDPOINT" > "$prefix/serve.url"
    echo "run.sh: started otskit serve at $OTSKIT_ENDPOINT (pid $(cat "$prefix/serve.pid"), in memory; log $prefix/logs/serve.log)" >&2
  fi
  : "${OTSKIT_INSTANCE:?run.sh: set OTSKIT_INSTANCE with OTSKIT_ENDPOINT}"
  : "${OTSKIT_ACCESS_KEY_ID:?run.sh: set OTSKIT_ACCESS_KEY_ID with OTSKIT_ENDPOINT}"
  : "${OTSKIT_ACCESS_KEY_SECRET:?run.sh: set OTSKIT_ACCESS_KEY_SECRET with OTSKIT_ENDPOINT}"
  export OTSKIT_ENDPOINT OTSKIT_INSTANCE OTSKIT_ACCESS_KEY_ID OTSKIT_ACCESS_KEY_SECRET
  # the upstream and the internal location's TLS lines, from the endpoint
  scheme=${OTSKIT_ENDPOINT%%://*}
  hostport=${OTSKIT_ENDPOINT#*://}; hostport=${hostport%%/*}
  host=${hostport%%:*}
  case $scheme in
  http) ssl=""; [ "$host" = "$hostport" ] && hostport=$host:80 ;;
  https)
    [ "$host" = "$hostport" ] && hostport=$host:443
    ssl="      proxy_ssl_server_name on;\\
      proxy_ssl_name $host;\\
      proxy_ssl_verify on;\\
      proxy_ssl_trusted_certificate /etc/ssl/certs/ca-certificates.crt;" ;;
  *) echo "run.sh: OTSKIT_ENDPOINT must be http(s)://host[:port], got $OTSKIT_ENDPOINT" >&2; exit 2 ;;
  esac
  # workers run as nobody when nginx starts as root: they must read the
  # code and the module. The checkout may sit where nobody cannot read
  # (/root is 0700 on Debian), so they load a world-readable copy staged
  # in the prefix.
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
    echo "run.sh: copied lua/, the gateway and core.so to $prefix/code (readable by nobody, nginx's workers)" >&2
  fi
  sed -e "s|@ROOT@|$croot|g" -e "s|@CPATH@|$cpath|g" -e "s|@PORT@|$port|g" \
      -e "s|@WORKERS@|$workers|g" -e "s|@USER@|$user|g" -e "s|@ENDPOINT@|$OTSKIT_ENDPOINT|g" \
      -e "s|@INSTANCE@|$OTSKIT_INSTANCE|g" -e "s|@UPSTREAM@|$hostport|g" -e "s|@HOST@|$host|g" \
      -e "s|@SCHEME@|$scheme|g" -e "s|^@SSL@\$|$ssl|" \
      "$here/nginx.conf.in" > "$prefix/conf/nginx.conf"
  echo "run.sh: wrote $prefix/conf/nginx.conf" >&2
  LUA_PATH="$root/lua/?.lua;$root/lua/?/init.lua;$here/?.lua;;" LUA_CPATH="$plain/jit/?.so;;" \
    luajit "$here/setup.lua" >&2
  LD_PRELOAD="$preload" nginx -p "$prefix" -c "$prefix/conf/nginx.conf" -g "daemon on;" >"$prefix/logs/start.log" 2>&1 || {
    cat "$prefix/logs/start.log" "$prefix/logs/error.log" >&2 2>/dev/null; exit 1; }
  i=0
  until curl -sf --max-time 2 -o /dev/null "http://127.0.0.1:$port/healthz"; do
    i=$((i + 1))
    if [ $i -gt 50 ]; then echo "run.sh: nginx did not answer on port $port" >&2; cat "$prefix/logs/error.log" >&2; exit 1; fi
    sleep 0.1
  done
  echo "run.sh: nginx on 127.0.0.1:$port ($workers workers, pid $(cat "$prefix/logs/nginx.pid"), logs in $prefix/logs); stop it: sh $0 stop $prefix" >&2
  echo "$port" ;;
stop) stop_all ;;
*) echo "usage: $0 start|stop PREFIX [PORT [WORKERS]]" >&2; exit 2 ;;
esac
