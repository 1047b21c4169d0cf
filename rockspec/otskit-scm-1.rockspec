-- otskit rockspec: `luarocks make rockspec/otskit-scm-1.rockspec` builds
-- the C core and installs the Lua modules (no server needed).
-- Keep modules["otskit.core"].sources in step with csrc/*/*.c. The
-- protobuf messages are C that protoc-c generates from proto/*.proto into
-- build/proto/: `make rock` generates them, then runs luarocks make.
rockspec_format = "3.0"
package = "otskit"
version = "scm-1"
source = { url = "git+file:///dev/null" }
description = {
  summary = "Tablestore table-design best practices, fast, for Lua 5.4 and LuaJIT",
  detailed = [[Order-preserving key encoders, hash prefixes and buckets,
bucket fan-out merge readers, backoff schedules with retry budgets,
attribute compression and chunking, and an embedded store with Tablestore
semantics, in a C core for Lua.]],
  license = "MIT",
}
-- argparse: bin/otskit's command line (Debian: lua-argparse)
dependencies = { "lua >= 5.1, < 5.5", "argparse" }
external_dependencies = {
  OPENSSL = { header = "openssl/md5.h" },
  XXHASH = { header = "xxhash.h" },
  ZSTD = { header = "zstd.h" },
  LZ4 = { header = "lz4.h" },
  ZLIB = { header = "zlib.h" },
  SQLITE = { header = "sqlite3.h" },
  PROTOBUFC = { header = "protobuf-c/protobuf-c.h" },
}
build = {
  type = "builtin",
  modules = {
    ["otskit.core"] = {
      sources = {
        "csrc/core/backoff.c", "csrc/core/chunk.c", "csrc/core/frame.c",
        "csrc/core/hash.c", "csrc/core/kv.c", "csrc/core/merge.c",
        "csrc/core/num.c", "csrc/core/plainbuffer.c", "csrc/core/resume.c",
        "csrc/core/row.c", "csrc/core/sign.c", "csrc/core/splice.c",
        "csrc/core/tuple.c", "csrc/ffi/ffi.c", "csrc/lua/laux.c",
        "csrc/lua/lbackoff.c", "csrc/lua/lchunk.c", "csrc/lua/lframe.c",
        "csrc/lua/lhash.c", "csrc/lua/lkey.c", "csrc/lua/lkv.c",
        "csrc/lua/lmerge.c", "csrc/lua/lmpool.c", "csrc/lua/lpbmsg.c",
        "csrc/lua/lprefix.c", "csrc/lua/lresume.c", "csrc/lua/lrow.c",
        "csrc/lua/lsplice.c", "csrc/lua/ltuple.c", "csrc/lua/lwire.c",
        "csrc/lua/otskit.c",
        "build/proto/tablestore.pb-c.c", "build/proto/tablestore_filter.pb-c.c",
      },
      defines = { "_DEFAULT_SOURCE" },
      libraries = { "crypto", "xxhash", "zstd", "lz4", "z", "sqlite3", "protobuf-c", "m" },
      incdirs = { "csrc/core", "csrc/ffi", "csrc/lua", "build/proto", "$(PROTOBUFC_INCDIR)", "$(OPENSSL_INCDIR)", "$(XXHASH_INCDIR)", "$(ZSTD_INCDIR)",
                  "$(LZ4_INCDIR)", "$(ZLIB_INCDIR)", "$(SQLITE_INCDIR)" },
      libdirs = { "$(OPENSSL_LIBDIR)", "$(XXHASH_LIBDIR)", "$(ZSTD_LIBDIR)",
                  "$(LZ4_LIBDIR)", "$(ZLIB_LIBDIR)", "$(SQLITE_LIBDIR)", "$(PROTOBUFC_LIBDIR)" },
    },
    ["otskit"] = "lua/otskit/init.lua",
    ["otskit.hash"] = "lua/otskit/hash.lua",
    ["otskit.backoff"] = "lua/otskit/backoff.lua",
    ["otskit.retry"] = "lua/otskit/retry.lua",
    ["otskit.key"] = "lua/otskit/key.lua",
    ["otskit.ffi"] = "lua/otskit/ffi.lua",
    ["otskit.key_ffi"] = "lua/otskit/key_ffi.lua",
    ["otskit.blob"] = "lua/otskit/blob.lua",
    ["otskit.merge"] = "lua/otskit/merge.lua",
    ["otskit.wire"] = "lua/otskit/wire.lua",
    ["otskit.store"] = "lua/otskit/store/init.lua",
    ["otskit.store.values"] = "lua/otskit/store/values.lua",
    ["otskit.store.condition"] = "lua/otskit/store/condition.lua",
    ["otskit.store.partitions"] = "lua/otskit/store/partitions.lua",
    ["otskit.store.faults"] = "lua/otskit/store/faults.lua",
    ["otskit.store.base"] = "lua/otskit/store/base.lua",
    ["otskit.store.tables"] = "lua/otskit/store/tables.lua",
    ["otskit.store.schema"] = "lua/otskit/store/schema.lua",
    ["otskit.store.write"] = "lua/otskit/store/write.lua",
    ["otskit.store.read"] = "lua/otskit/store/read.lua",
    ["otskit.store.batch"] = "lua/otskit/store/batch.lua",
    ["otskit.store.txn"] = "lua/otskit/store/txn.lua",
    ["otskit.server"] = "lua/otskit/server/init.lua",
    ["otskit.server.auth"] = "lua/otskit/server/auth.lua",
    ["otskit.server.dispatch"] = "lua/otskit/server/dispatch.lua",
    ["otskit.server.faults"] = "lua/otskit/server/faults.lua",
    ["otskit.server.admin"] = "lua/otskit/server/admin.lua",
    ["otskit.server.respond"] = "lua/otskit/server/respond.lua",
    ["otskit.server.conf"] = "lua/otskit/server/conf.lua",
    ["otskit.cli"] = "lua/otskit/cli.lua",
    ["otskit.cmd.demo"] = "lua/otskit/cmd/demo.lua",
    ["otskit.analyze"] = "lua/otskit/analyze/init.lua",
    ["otskit.analyze.meter"] = "lua/otskit/analyze/meter.lua",
    ["otskit.analyze.report"] = "lua/otskit/analyze/report.lua",
    ["otskit.analyze.scenarios"] = "lua/otskit/analyze/scenarios.lua",
    ["otskit.analyze.svg"] = "lua/otskit/analyze/svg.lua",
    ["otskit.cmd.analyze"] = "lua/otskit/cmd/analyze.lua",
    ["otskit.cmd.keys"] = "lua/otskit/cmd/keys.lua",
    ["otskit.cmd.bench"] = "lua/otskit/cmd/bench.lua",
    ["otskit.cmd.bench_json"] = "lua/otskit/cmd/bench_json.lua",
    ["otskit.cmd.bench_stats"] = "lua/otskit/cmd/bench_stats.lua",
    ["otskit.cmd.bench_report"] = "lua/otskit/cmd/bench_report.lua",
    ["otskit.cmd.bench_plot"] = "lua/otskit/cmd/bench_plot.lua",
    ["otskit.cmd.serve"] = "lua/otskit/cmd/serve.lua",
    ["otskit.patterns.chunked"] = "lua/otskit/patterns/chunked.lua",
    ["otskit.patterns.colsplit"] = "lua/otskit/patterns/colsplit.lua",
    ["otskit.patterns.counter"] = "lua/otskit/patterns/counter.lua",
    ["otskit.patterns.hashprefix"] = "lua/otskit/patterns/hashprefix.lua",
    ["otskit.patterns.hotcold"] = "lua/otskit/patterns/hotcold.lua",
    ["otskit.patterns.import"] = "lua/otskit/patterns/import.lua",
    ["otskit.patterns.spliced"] = "lua/otskit/patterns/spliced.lua",
    ["otskit.patterns.common"] = "lua/otskit/patterns/common.lua",
    ["otskit.patterns.timeseries"] = "lua/otskit/patterns/timeseries.lua",
  },
  install = { bin = { otskit = "bin/otskit" } },
}
