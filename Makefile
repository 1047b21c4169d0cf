# otskit -- build, test and run on Debian 12. `make` (build) only
# compiles: it never installs anything. The README's two commands,
# `make demo` and `make test` (and CI, .ci/run), run `make deps` first,
# which installs the Debian packages still missing (as root), so they work
# on a fresh machine. Quiet by default: one line per compiled file, the
# compiler's messages in full; V=1 shows the command lines.

CC        ?= cc
CFLAGS    ?= -O2 -g
WARN       = -std=c99 -Wall -Wextra -Wpedantic -D_DEFAULT_SOURCE
PIC        = -fPIC -fvisibility=hidden
LIBS       = -lcurl -lcrypto -lxxhash -lzstd -llz4 -lz -lsqlite3 -lprotobuf-c -lm
LUA54_INC ?= /usr/include/lua5.4
JIT_INC   ?= /usr/include/luajit-2.1

# proto/*.proto: the Tablestore messages, compiled by protoc-c into
# build/proto/ (plain C, built with the core).
PROTO      = $(sort $(wildcard proto/*.proto))
PROTO_C    = $(patsubst proto/%.proto,build/proto/%.pb-c.c,$(PROTO))
PROTO_H    = $(PROTO_C:.c=.h)

# csrc/core: plain C parts (no Lua headers); csrc/ffi: the LuaJIT FFI ABI
# (plain C too); csrc/lua: the Lua bindings and luaopen_otskit_core.
PLAIN_SRC  = $(sort $(wildcard csrc/core/*.c csrc/ffi/*.c)) $(PROTO_C)
BIND_SRC   = $(sort $(wildcard csrc/lua/*.c))
SRC        = $(PLAIN_SRC) $(BIND_SRC)
HDR        = $(wildcard csrc/*/*.h) $(PROTO_H)
INC        = -Icsrc/core -Icsrc/ffi -Ibuild/proto
LUA_INC    = $(INC) -Icsrc/lua
# spec/alloc/host.c: every binding under failing allocations, one host per
# interpreter (the host links liblua5.4 / libluajit; core.so never does).
ALLOC_TESTS = build/ctest/alloc54_test build/ctest/allocjit_test
BENCH_SO   = build/5.4/otskit_bench.so build/jit/otskit_bench.so
CTESTS     = $(patsubst spec/c/%.c,build/ctest/%,$(wildcard spec/c/*_test.c))
FUZZERS    = $(patsubst fuzz/%.c,build/fuzz/%,$(wildcard fuzz/*_fuzz.c))
FUZZ_SECONDS ?= 60
# files compiled at once by make test, check and test-builds
NPROC     ?= $(shell nproc 2>/dev/null || echo 1)
# what make check runs: the C tests and the modules with ASan+UBSan
SAN_BUILDS = $(CTESTS) $(ALLOC_TESTS) build/asan/5.4/otskit/core.so build/asan/jit/otskit/core.so

SAN        = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
SAN_ENV    = LD_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)" \
             ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# Debian packages the build, tests, benches and demo need. luarocks (make
# rock) pulls lua5.1 and points /usr/bin/lua at it: nothing here runs a bare
# `lua`; every script names lua5.4 or luajit. luajit2 (not
# luajit): OpenResty's branch, which does not conflict with nginx's lua module.
# nginx & co. run the gateway example (make openresty-test); their Debian
# service must never start (it would listen on 0.0.0.0:80): make deps
# installs with a policy-rc.d that refuses every service start.
DEB_PKGS   = build-essential clang libclang-rt-14-dev valgrind \
             lua5.4 liblua5.4-dev luajit2 libluajit2-5.1-dev lua-busted \
             libssl-dev libxxhash-dev libzstd-dev liblz4-dev zlib1g-dev \
             libsqlite3-dev protobuf-c-compiler libprotobuf-c-dev lua-luaossl lua-binaryheap lua-zlib lua-argparse \
             nginx libnginx-mod-http-lua lua-resty-core lua-socket curl wrk \
             lua-cjson luarocks libcurl4-openssl-dev python3 openssl

# V=1: echo every command line; otherwise a short "CC target" line each
V         ?=
Q          = $(if $(V),,@)
say        = $(if $(V),,@printf '  %-6s %s\n' $(1) $(2))
SUBMAKE    = $(MAKE) --no-print-directory $(if $(V),,-s)

.PHONY: all deps build test-builds interop test ctest spec check valgrind fuzz bench bench-compare demo install clean rock openresty-test serve

all: build

deps:
	@missing=$$(for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing$$(echo $$missing | sed 's/^/ /')"; \
	  if [ "$$(id -u)" != 0 ]; then echo "make deps: run as root, or install: $$missing" >&2; exit 1; fi; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  if [ ! -e /usr/sbin/policy-rc.d ]; then \
	    trap 'rm -f /usr/sbin/policy-rc.d' EXIT INT TERM; \
	    printf '#!/bin/sh\n# make deps: no service starts while installing\nexit 101\n' > /usr/sbin/policy-rc.d; \
	    chmod 755 /usr/sbin/policy-rc.d; \
	  fi; \
	  apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends $$missing >/dev/null || exit 1; \
	fi

build: build/5.4/otskit/core.so build/jit/otskit/core.so

build/proto/%.pb-c.c build/proto/%.pb-c.h: proto/%.proto
	@mkdir -p $(@D)
	$(call say,PROTO,$<)
	$(Q)protoc-c --proto_path=proto --c_out=build/proto $<

build/5.4/otskit/core.so: $(SRC) $(HDR) Makefile
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(WARN) $(CFLAGS) $(PIC) $(LUA_INC) -I$(LUA54_INC) -shared -o $@ $(SRC) $(LIBS)

build/jit/otskit/core.so: $(SRC) $(HDR) Makefile
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(WARN) $(CFLAGS) $(PIC) $(LUA_INC) -I$(JIT_INC) -shared -o $@ $(SRC) $(LIBS)

# C tests link the plain parts compiled once (with the sanitizers).
CT_OBJ     = $(patsubst %.c,build/ctest/obj/%.o,$(PLAIN_SRC))
.SECONDARY: $(CT_OBJ)
build/ctest/obj/%.o: %.c $(HDR)
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(WARN) $(CFLAGS) $(SAN) $(INC) -c -o $@ $<

build/ctest/%: spec/c/%.c $(CT_OBJ) $(HDR) spec/c/check.h
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(WARN) $(CFLAGS) $(SAN) $(INC) -o $@ $< $(CT_OBJ) $(LIBS)

build/ctest/alloc54_test: spec/alloc/host.c spec/c/check.h
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(WARN) $(CFLAGS) $(SAN) -Ispec/c -I$(LUA54_INC) -o $@ $< -llua5.4

build/ctest/allocjit_test: spec/alloc/host.c spec/c/check.h
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(WARN) $(CFLAGS) $(SAN) -Ispec/c -I$(JIT_INC) -o $@ $< -lluajit-5.1

# the same hosts without ASan, for valgrind
build/alloc/alloc54: spec/alloc/host.c spec/c/check.h
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(WARN) $(CFLAGS) -Ispec/c -I$(LUA54_INC) -o $@ $< -llua5.4

build/alloc/allocjit: spec/alloc/host.c spec/c/check.h
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(WARN) $(CFLAGS) -Ispec/c -I$(JIT_INC) -o $@ $< -lluajit-5.1

# The README's test command: C tests, every spec under lua5.4 and under
# luajit (the runs side by side, see spec/run.sh), the gateway and serve
# in nginx; the last line sums all runs as "N passed, N failed". What it
# needs is compiled NPROC files at a time.
test: deps
	@$(SUBMAKE) -j$(NPROC) build $(CTESTS) $(ALLOC_TESTS)
	@sh spec/run.sh all

# Everything make test, make check and make interop run, compiled NPROC
# files at a time (CI builds it once, then runs those three side by side).
test-builds:
	@$(SUBMAKE) -j$(NPROC) build $(SAN_BUILDS)

# The gateway example in Debian's nginx: 2 workers, a temporary prefix, a
# free 127.0.0.1 port; nginx is always stopped (also part of make test).
openresty-test: build
	@sh spec/run.sh openresty

# otskit serve: a local Tablestore-protocol server on SERVE_ARGS (default
# 127.0.0.1:8800, in memory); Ctrl-C stops it.
SERVE_ARGS ?=
serve: build
	@bin/otskit serve $(SERVE_ARGS)

ctest: build $(CTESTS) $(ALLOC_TESTS)
	@sh spec/run.sh c

# Sanitizers: the C tests (ASan+UBSan builds), then every spec on both VMs
# and the gateway in nginx against an ASan+UBSan build of the module (see
# spec/run.sh check). QUICK=1: property tests with 1/20 of their trials
# (OTSKIT_QUICK; what CI runs, after make test ran them in full).
QUICK     ?=
check:
	@$(SUBMAKE) -j$(NPROC) build $(SAN_BUILDS)
	@$(SAN_ENV) OTSKIT_BUILD=build/asan $(if $(QUICK),OTSKIT_QUICK=1) sh spec/run.sh check

build/asan/5.4/otskit/core.so: $(SRC) $(HDR) Makefile
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(WARN) -O1 -g $(SAN) $(PIC) $(LUA_INC) -I$(LUA54_INC) -shared -o $@ $(SRC) $(LIBS)

build/asan/jit/otskit/core.so: $(SRC) $(HDR) Makefile
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(WARN) -O1 -g $(SAN) $(PIC) $(LUA_INC) -I$(JIT_INC) -shared -o $@ $(SRC) $(LIBS)

valgrind: build build/alloc/alloc54 build/alloc/allocjit
	@sh spec/run.sh valgrind

build/fuzz/%: fuzz/%.c $(PLAIN_SRC) $(HDR)
	@mkdir -p $(@D)
	$(call say,CLANG,$@)
	$(Q)clang -g -O1 -fsanitize=fuzzer,address,undefined $(INC) -o $@ $< $(PLAIN_SRC) $(LIBS)

fuzz: deps $(FUZZERS)
	@for f in $(FUZZERS); do \
	  n=$$(basename $$f); mkdir -p build/corpus/$$n; \
	  [ -d fuzz/corpus/$$n ] && cp -n fuzz/corpus/$$n/* build/corpus/$$n/ 2>/dev/null; \
	  echo "fuzz: $$n for $(FUZZ_SECONDS) s"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 build/corpus/$$n 2>build/fuzz/$$n.log \
	    || { tail -40 build/fuzz/$$n.log; exit 1; }; \
	  grep -E 'stat::number_of_executed_units' build/fuzz/$$n.log; \
	done

# bench/cbench.c: the C limits the benches compare against, a module of
# its own (require "otskit_bench"), never part of core.so.
BENCH_C    = bench/cbench.c $(PLAIN_SRC) csrc/lua/laux.c
build/5.4/otskit_bench.so: $(BENCH_C) $(HDR) Makefile
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(WARN) $(CFLAGS) $(PIC) $(LUA_INC) -I$(LUA54_INC) -shared -o $@ $(BENCH_C) $(LIBS)

build/jit/otskit_bench.so: $(BENCH_C) $(HDR) Makefile
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(WARN) $(CFLAGS) $(PIC) $(LUA_INC) -I$(JIT_INC) -shared -o $@ $(BENCH_C) $(LIBS)


# The codec cross-check against the official Node.js SDK (tablestore@5.6.5
# from npm into build/node): spec/interop/run.sh.
interop: build
	@sh spec/interop/run.sh

# make bench: the quick suite (under 90 s) -> one JSON run document in
# bench/results/ (git-ignored); FULL=1 the full suite, which also rewrites
# its sections of bench/RESULTS.md. BENCH="key merge" runs only those;
# OUT=file, PIN=cpu (taskset), PROCS=k (processes per bench, default 2),
# RESULTS=file: see bench/run.sh.
bench: build $(BENCH_SO)
	@FULL="$(FULL)" OUT="$(OUT)" PIN="$(PIN)" PROCS="$(PROCS)" RESULTS="$(RESULTS)" \
	  OTSKIT_BENCH_CFLAGS="$(WARN) $(CFLAGS) $(PIC)" sh bench/run.sh $(BENCH)

# make bench-compare [BASE=run.json NEW=run.json]: default the two newest
# runs in bench/results/; exit 1 when a measure regresses by more than
# THRESHOLD % (default 10) with significance; KIND=ratio gates only on the
# otskit-vs-peer ratios (robust on a shared machine).
THRESHOLD ?= 10
KIND      ?= all
bench-compare:
	@new="$(NEW)"; base="$(BASE)"; \
	[ -n "$$new" ] || new=$$(ls -t bench/results/*.json 2>/dev/null | sed -n 1p); \
	[ -n "$$base" ] || base=$$(ls -t bench/results/*.json 2>/dev/null | grep -vxF "$$new" | sed -n 1p); \
	if [ -z "$$base" ] || [ -z "$$new" ]; then echo "bench-compare: need two runs (make bench twice, or BASE= NEW=)" >&2; exit 2; fi; \
	lua5.4 bench/runs.lua compare --threshold $(THRESHOLD) --kind $(KIND) "$$base" "$$new"

demo: deps
	@$(SUBMAKE) build
	@lua5.4 bin/otskit demo

# luarocks into ~/.luarocks (ROCK_TREE=dir for another tree). Its
# dependencies (argparse) come from Debian (make deps), not the network.
ROCK_TREE ?=
# luarocks compiles each source into an object beside it: removed after.
rock: deps $(PROTO_C)
	luarocks --lua-version=5.4 $(if $(ROCK_TREE),--tree $(ROCK_TREE),--local) make --deps-mode=none rockspec/otskit-scm-1.rockspec; \
	  rc=$$?; rm -f $(SRC:.c=.o); exit $$rc

# Modules for Lua 5.4 (share/lua/5.4, lib/lua/5.4) and LuaJIT / OpenResty
# (share/lua/5.1, lib/lua/5.1), and bin/otskit, which finds them from its
# own location (PREFIX/bin). /usr/local is on both VMs' default paths.
PREFIX ?= /usr/local
install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 bin/otskit $(DESTDIR)$(PREFIX)/bin/otskit
	for v in 5.4:5.4 5.1:jit; do \
	  lv=$${v%%:*}; abi=$${v##*:}; \
	  install -d $(DESTDIR)$(PREFIX)/lib/lua/$$lv/otskit $(DESTDIR)$(PREFIX)/share/lua/$$lv/otskit || exit 1; \
	  install -m 644 build/$$abi/otskit/core.so $(DESTDIR)$(PREFIX)/lib/lua/$$lv/otskit/core.so || exit 1; \
	  (cd lua && find otskit -name '*.lua' -exec install -D -m 644 {} $(DESTDIR)$(PREFIX)/share/lua/$$lv/{} \;) || exit 1; \
	done

clean:
	rm -rf build
