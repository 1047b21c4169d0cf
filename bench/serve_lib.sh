# bench/serve_lib.sh -- what bench/serve_bench.sh and bench/rows_bench.sh
# share, sourced by both (`. bench/serve_lib.sh` from the checkout's root,
# after `tmp` names the run's scratch directory): an `otskit serve` with
# signed requests ready, nginx ceilings answering `return 200` with
# bodies of the same size, the wrk runs that measure them, their medians.
# A script calls serve_lib_cleanup PREFIX... from its EXIT trap.
LP="lua/?.lua;lua/?/init.lua;;"
spid=""

# stops the nginx whose prefix is $1 (if it started), waiting up to 5 s
stop_nginx() {
  [ -f "$1/logs/nginx.pid" ] || return 0
  m=$(cat "$1/logs/nginx.pid"); kill -TERM "$m" 2>/dev/null
  i=0; while kill -0 "$m" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
}

# the EXIT trap's work: serve, then each nginx prefix named, then $tmp
serve_lib_cleanup() {
  # no errexit here: serve's non-zero exit status must not skip the rest
  set +e
  [ -n "$spid" ] && kill -TERM "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
  for p in "$@"; do stop_nginx "$p"; done
  rm -rf "$tmp"
}

free_port() {
  luajit -e 'local s = assert(require("socket").bind("127.0.0.1", 0)); local _, p = s:getsockname(); print(p); s:close()'
}
load() { cut -d' ' -f1-3 /proc/loadavg; }

# `otskit serve` on 127.0.0.1:$1 with $WORKERS workers (data and nginx
# prefix in $tmp, keys bak/bsk, instance bench; --jit-log $JITLOG when set),
# healthy, and the signed
# requests and bodies of bench/serve_reqs.lua in $tmp; its pid in spid
start_serve() {
  bin/otskit serve --listen "127.0.0.1:$1" --data "$tmp/data" --workers "$WORKERS" --prefix "$tmp/ng" \
    --access-key-id bak --access-key-secret bsk --instance bench ${JITLOG:+--jit-log "$JITLOG"} >"$tmp/serve.log" 2>&1 &
  spid=$!
  i=0; until curl -sf -o /dev/null "http://127.0.0.1:$1/_otskit/health"; do
    i=$((i + 1)); [ $i -gt 100 ] && { cat "$tmp/serve.log"; exit 1; }; sleep 0.1; done
  LUA_PATH="$LP" LUA_CPATH="build/jit/?.so;;" luajit bench/serve_reqs.lua "http://127.0.0.1:$1" bak bsk bench "$tmp" >/dev/null
}

# the body in file $1 as `set $<$2>N "..."` lines of at most 4000 bytes
# (nginx's limit for one token) in $tmp/$2.sets, and the "$<$2>1$<$2>2..."
# return 200 answers with
fill() {
  n=$(wc -c <"$1"); k=0; vars=""
  while [ "$n" -gt 0 ]; do
    c=$n; [ "$c" -gt 4000 ] && c=4000
    k=$((k + 1)); echo "set \$$2$k \"$(head -c "$c" /dev/zero | tr '\0' x)\";" >>"$tmp/$2.sets"
    vars="$vars\$$2$k"; n=$((n - c))
  done
  echo "$vars"
}

# the lines every nginx.conf of a ceiling starts with ($WORKERS workers)
nginx_head() {
  [ "$(id -u)" = 0 ] && echo "user root root;"
  echo "worker_processes $WORKERS;
pid logs/nginx.pid;
error_log logs/error.log warn;
events { worker_connections 1024; }"
}

# the http block's settings every ceiling shares
NGINX_HTTP="access_log off;
  keepalive_requests 1000000;
  client_max_body_size 5m; client_body_buffer_size 5m;"

# an nginx at prefix $1 on 127.0.0.1:$2 answering /GetRow, /PutRow and
# /GetRange with `return 200` and bodies the size of serve's answers
# (the bodies bench/serve_reqs.lua left in $tmp); started
start_return200() {
  mkdir -p "$1/conf" "$1/logs"
  : >"$tmp/g.sets"; : >"$tmp/p.sets"; : >"$tmp/r.sets"
  gv=$(fill "$tmp/get.body" g); pv=$(fill "$tmp/put.body" p); rv=$(fill "$tmp/range.body" r)
  cat >"$1/conf/nginx.conf" <<CONF
$(nginx_head)
http {
  $NGINX_HTTP
  server {
    listen 127.0.0.1:$2;
    location = /GetRow { include $tmp/g.sets; return 200 "$gv"; }
    location = /PutRow { include $tmp/p.sets; return 200 "$pv"; }
    location = /GetRange { include $tmp/r.sets; return 200 "$rv"; }
  }
}
CONF
  nginx -p "$1" -c "$1/conf/nginx.conf"
}

# an nginx with the lua module at prefix $1 on 127.0.0.1:$2 whose
# `location /` runs the Lua $3 (content_by_lua), FIXED holding serve's
# answer bodies (the ones bench/serve_reqs.lua left in $tmp) by API name
# and by URI ("GetRow", "/GetRow"...); started
start_lua() {
  mkdir -p "$1/conf" "$1/logs"
  cat >"$1/conf/nginx.conf" <<CONF
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;
$(nginx_head)
http {
  $NGINX_HTTP
  init_by_lua_block {
    local function slurp(p) local f = assert(io.open(p, "rb")); local s = f:read("*a"); f:close(); return s end
    FIXED = { GetRow = slurp("$tmp/get.body"), PutRow = slurp("$tmp/put.body"), GetRange = slurp("$tmp/range.body") }
    for _, api in ipairs({ "GetRow", "PutRow", "GetRange" }) do FIXED["/" .. api] = FIXED[api] end
  }
  server {
    listen 127.0.0.1:$2;
    location / { content_by_lua_block { $3 } }
  }
}
CONF
  nginx -p "$1" -c "$1/conf/nginx.conf"
}

# the CPU ticks (utime + stime) of the workers of the nginx whose master
# pid is in $1
ticks() { for w in $(pgrep -P "$(cat "$1")"); do cut -d' ' -f14,15 "/proc/$w/stat"; done |
  awk '{ t += $1 + $2 } END { print t + 0 }'; }
hz=$(getconf CLK_TCK)

# url reqs pidfile -> "rps cpu_us_per_request": wrk -t$THREADS (1)
# -c$CONNS -d$DUR replaying the requests of file reqs
run() {
  t0=$(ticks "$3")
  SERVE_REQS=$2 timeout -k 5 $((DUR + 30)) wrk -t"${THREADS:-1}" -c"$CONNS" -d"${DUR}s" -s bench/serve_wrk.lua "$1" >"$tmp/wrk.out" 2>&1 || true
  t1=$(ticks "$3")
  awk -v dt=$((t1 - t0)) -v hz="$hz" '/^RESULT/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      if (v["non2xx"] + 0 > 0) print "non-2xx", v["non2xx"] > "/dev/stderr"
      printf "%s %.1f\n", v["rps"], dt / hz * 1e6 / v["requests"] }' "$tmp/wrk.out"
}

# op -> the name of its request file in $tmp (GetRow get, PutRow put,
# GetRange range); fails on any other op
op_file() {
  case $1 in GetRow) echo get;; PutRow) echo put;; GetRange) echo range;;
    *) echo "unknown op $1" >&2; return 2;; esac
}

# numbers, one a line -> "median (min-max)"; -> the median
# $ROUNDS alternating rounds of run, over the servers given as groups of
# four: URL, the wrk script, the nginx pid file, the file each run's line
# is appended to (emptied first)
rounds() {
  rd_i=0; for rd_a in "$@"; do [ $((rd_i % 4)) = 3 ] && : >"$rd_a"; rd_i=$((rd_i + 1)); done
  rd_r=0; while [ $rd_r -lt "$ROUNDS" ]; do
    rd_i=0
    for rd_a in "$@"; do
      case $((rd_i % 4)) in
        0) rd_u=$rd_a;; 1) rd_s=$rd_a;; 2) rd_p=$rd_a;;
        3) run "$rd_u" "$rd_s" "$rd_p" >>"$rd_a";;
      esac
      rd_i=$((rd_i + 1))
    done
    rd_r=$((rd_r + 1))
  done
}
stat() { sort -n | awk '{ a[NR] = $1 } END { printf "%.0f (%.0f-%.0f)", a[int((NR + 1) / 2)], a[1], a[NR] }'; }
med() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
