--- bench/search_bench.lua -- the store's search index against SQLite
-- asked directly (the floor): N documents of 16 fields (6 LONG, 3 DOUBLE,
-- 4 KEYWORD, a TEXT, a BOOLEAN, a GEO_POINT); the index build in rows/s
-- (create_search_index over the rows already in the table) beside the
-- same rows inserted into one SQLite table with B-tree indexes, FTS5 and
-- an R*Tree; then term, range, bool, match and geo queries, each asked of
-- both (first 100 matches in primary key order and the total count), p50
-- and p99 latency over Q random instances, and the ratio; R rounds of the
-- same Q instances, otskit and the floor alternating query by query,
-- medians over the rounds. Every answer is checked equal to the floor's.
-- A third column, "otskit SQL", replays the very statements otskit ran
-- for each query (captured at its first round) straight on the same
-- connection: what otskit costs beyond that is building the Lua answer.
-- The bool is answered with doc values (otskit.store.search.docvalues)
-- from its QUIET-th search on; their read time and memory are printed.
-- N: OTSKIT_SEARCH_BENCH_N (default 1 000 000; 20 000 in the quick suite);
-- Q: OTSKIT_SEARCH_BENCH_Q (default 200; 50 quick); R:
-- OTSKIT_SEARCH_BENCH_ROUNDS (default 5; 2 quick); builds:
-- OTSKIT_SEARCH_BENCH_BUILDS (default 1: rounds of the index build, each
-- deleting the index and the floor's tables first).
local bench = require "lib"
local store = require "otskit.store"
local core = require "otskit.core"
local sql, kv = core.sql, core.kv

local N = tonumber(os.getenv("OTSKIT_SEARCH_BENCH_N") or "") or (bench.quick and 20000 or 1000000)
local Q = tonumber(os.getenv("OTSKIT_SEARCH_BENCH_Q") or "") or (bench.quick and 50 or 200)
local R = tonumber(os.getenv("OTSKIT_SEARCH_BENCH_ROUNDS") or "") or (bench.quick and 2 or 5)
local B = tonumber(os.getenv("OTSKIT_SEARCH_BENCH_BUILDS") or "") or 1
local function loadavg()
  local f = io.open("/proc/loadavg")
  local l = f and f:read("*l") or "?"
  if f then f:close() end
  return l:match("^(%S+ %S+ %S+)") or l
end
local load0 = loadavg()
local clock = os.clock

-- a deterministic generator (Park-Miller), the same on both interpreters
local seed = 42
local function rnd(n) seed = (seed * 48271) % 2147483647; return seed % n end
local WORDS = {}
for i = 1, 5000 do WORDS[i] = ("w%04d"):format(i) end

local function doc(i)
  seed = (i * 2654435761) % 2147483647 + 1
  local w = {}
  for j = 1, 8 do w[j] = WORDS[rnd(5000) + 1] end
  return { l1 = rnd(1000000), l2 = rnd(1000000), l3 = rnd(1000), l4 = rnd(100), l5 = i, l6 = rnd(10),
    d1 = rnd(100000) / 7, d2 = rnd(1000) / 3, d3 = rnd(100) / 9,
    k1 = "k" .. rnd(1000), k2 = "c" .. rnd(50), k3 = "x" .. rnd(100000), k4 = "y" .. rnd(7),
    t1 = table.concat(w, " "), b1 = rnd(2) == 1,
    g1 = ("%.5f,%.5f"):format(30 + rnd(100000) / 10000, 120 + rnd(100000) / 10000) }
end

local FIELDS = {}
for _, f in ipairs({ "l1", "l2", "l3", "l4", "l5", "l6" }) do FIELDS[#FIELDS + 1] = { field_name = f, field_type = "LONG", enable_sort_and_agg = true } end
for _, f in ipairs({ "d1", "d2", "d3" }) do FIELDS[#FIELDS + 1] = { field_name = f, field_type = "DOUBLE" } end
for _, f in ipairs({ "k1", "k2", "k3", "k4" }) do FIELDS[#FIELDS + 1] = { field_name = f, field_type = "KEYWORD" } end
FIELDS[#FIELDS + 1] = { field_name = "t1", field_type = "TEXT" }
FIELDS[#FIELDS + 1] = { field_name = "b1", field_type = "BOOLEAN" }
FIELDS[#FIELDS + 1] = { field_name = "g1", field_type = "GEO_POINT" }

-- otskit: the rows, then the index over them
local db = assert(store.open{ partitions = false })
assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
local t0 = clock()
local rows = {}
for i = 1, N do
  rows[#rows + 1] = { type = "PUT", primary_key = { { "id", i } }, columns = doc(i) }
  if #rows == 200 or i == N then
    assert(assert(db:batch_write_row{ tables = { { table = "t", rows = rows } } }).failed == 0)
    rows = {}
  end
end
local load_s = clock() - t0

-- the floor: one SQLite table on the same library, with the indexes
-- these questions need
local h = assert(kv.open(":memory:"))
local function exec(q) assert(sql.exec(h, q)) end
local INS = "INSERT INTO docs VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)"
local function floor_build()
  exec([[DROP TABLE IF EXISTS docs; DROP TABLE IF EXISTS docs_fts; DROP TABLE IF EXISTS docs_geo;
CREATE TABLE docs (id INTEGER PRIMARY KEY, l1, l2, l3, l4, l5, l6, d1, d2, d3, k1, k2, k3, k4, t1, b1, lat, lon);
CREATE VIRTUAL TABLE docs_fts USING fts5(t1);
CREATE VIRTUAL TABLE docs_geo USING rtree(id, lat0, lat1, lon0, lon1);]])
  local f0 = clock()
  exec("BEGIN")
  for i = 1, N do
    local d = doc(i)
    local lat, lon = d.g1:match("^(.-),(.*)$")
    lat, lon = tonumber(lat), tonumber(lon)
    sql.rows(h, INS, { i, d.l1, d.l2, d.l3, d.l4, d.l5, d.l6, d.d1, d.d2, d.d3, d.k1, d.k2, d.k3, d.k4, d.t1,
      d.b1 and 1 or 0, lat, lon })
    sql.rows(h, "INSERT INTO docs_fts (rowid, t1) VALUES (?1, ?2)", { i, d.t1 })
    sql.rows(h, "INSERT INTO docs_geo VALUES (?1, ?2, ?2, ?3, ?3)", { i, lat, lon })
  end
  exec([[CREATE INDEX docs_k1 ON docs(k1); CREATE INDEX docs_k2 ON docs(k2, l2); CREATE INDEX docs_l1 ON docs(l1);]])
  exec("COMMIT")
  return clock() - f0
end
local function median(xs)
  local c = {}
  for i, x in ipairs(xs) do c[i] = x end
  table.sort(c)
  local n = #c
  return n % 2 == 1 and c[(n + 1) / 2] or (c[n / 2] + c[n / 2 + 1]) / 2
end
local builds, floor_builds, build_ratios = {}, {}, {}
for r = 1, B do -- otskit and the floor alternate
  if r > 1 then assert(db:delete_search_index{ table = "t", index = "ix" }) end
  collectgarbage()
  t0 = clock()
  assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = FIELDS } })
  builds[r] = clock() - t0
  collectgarbage()
  floor_builds[r] = floor_build()
  build_ratios[r] = builds[r] / floor_builds[r]
end
local build_s, floor_build_s = median(builds), median(floor_builds)

bench.title(("search index: %d documents of 16 fields (load average at the start %s)"):format(N, load0))
bench.table({ "build", "otskit rows/s", "SQLite direct rows/s", "time ratio (median, range)" })
table.sort(build_ratios)
bench.row("index the rows (" .. B .. (B == 1 and " build)" or " builds, medians)"), N / build_s, N / floor_build_s,
  ("%.2f (%.2f-%.2f)"):format(median(build_ratios), build_ratios[1], build_ratios[#build_ratios]))
bench.row("(load: batch_write_row)", N / load_s, "", "")
bench.value("search build: otskit", "rows/s", "higher", N / build_s)
bench.value("search build: SQLite direct", "rows/s", "higher", N / floor_build_s)

-- the questions: { name, otskit query, floor WHERE + binds } from a random draw
local function box(lat, lon, m)
  local dlat = m / 111194.9 + 1e-6
  local dlon = dlat / math.cos(math.rad(lat + dlat))
  return lat - dlat, lat + dlat, lon - dlon, lon + dlon
end
local QUERIES = {
  { "term", function()
      local k = "k" .. rnd(1000)
      return { term = { field_name = "k1", term = k } }, "k1 = ?1", { k }
    end },
  { "range", function()
      local lo = rnd(990000)
      return { range = { field_name = "l1", from = lo, to = lo + 10000, include_lower = true } }, "l1 >= ?1 AND l1 < ?2", { lo, lo + 10000 }
    end },
  { "bool", function()
      local k, lo = "c" .. rnd(50), rnd(900000)
      return { bool = { must = { { term = { field_name = "k2", term = k } } },
          filter = { { range = { field_name = "l2", from = lo, to = lo + 100000, include_lower = true } } },
          must_not = { { term = { field_name = "b1", term = true } } } } },
        "k2 = ?1 AND l2 >= ?2 AND l2 < ?3 AND NOT b1", { k, lo, lo + 100000 }
    end },
  { "match", function()
      local w = WORDS[rnd(5000) + 1]
      return { match = { field_name = "t1", text = w } }, "id IN (SELECT rowid FROM docs_fts WHERE docs_fts MATCH ?1)", { w }
    end },
  { "geo", function()
      local lat, lon = 30 + rnd(100000) / 10000, 120 + rnd(100000) / 10000
      local a, b, c, d = box(lat, lon, 10000)
      return { geo_distance = { field_name = "g1", center_point = ("%.5f,%.5f"):format(lat, lon), distance = 10000 } },
        "id IN (SELECT id FROM docs_geo WHERE lat0 <= ?4 AND lat1 >= ?3 AND lon0 <= ?6 AND lon1 >= ?5) AND geo_dist(lat, lon, ?1, ?2) <= 10000",
        { lat, lon, a, b, c, d }
    end },
}

local function pct(xs, p)
  table.sort(xs)
  return xs[math.max(1, math.ceil(#xs * p))]
end

-- the statements otskit runs for one search (docs.run), to replay them
local sdocs = require "otskit.store.search.docs"
-- (and docs.keys, a page's keys decoded in C)
local capture
local function capturing(name, fn)
  sdocs[name] = function(hh, text, binds, n, ...)
    if capture then
      local b, nb = {}, n or (binds and #binds or 0)
      for i = 1, nb do b[i] = binds[i] end
      capture[#capture + 1] = { fn = sql[name == "run" and "rows" or "keys"], text, b, nb, ... }
    end
    return fn(hh, text, binds, n, ...)
  end
end
capturing("run", sdocs.run)
capturing("keys", sdocs.keys)
local kvh = db.h

bench.table({ "query", "matches (mean)", "otskit p50 ms", "otskit p99 ms", "otskit SQL p50 ms", "SQLite p50 ms",
  "SQLite p99 ms", "p50 ratio (median, range)", "p99 ratio", "SQL p50 ratio" })
for _, spec in ipairs(QUERIES) do
  local name, draw = spec[1], spec[2]
  local r50, r99, s50r, o50s, o99s, f50s, f99s, s50s, total = {}, {}, {}, {}, {}, {}, {}, {}, 0
  local stmts = {}
  for round = 1, R do
    seed = 7
    local ot, ft, st = {}, {}, {}
    for q = 1, Q do
      local query, where, binds = draw()
      local function mine()
        if round == 1 then capture = {} end
        local a0 = clock()
        local res = assert(db:search{ table = "t", index = "ix", query = query, limit = 100, get_total_count = true })
        ot[q] = clock() - a0
        if round == 1 then stmts[q], capture = capture, nil end
        return res
      end
      local function floor()
        local a0 = clock()
        local ids = sql.rows(h, "SELECT id FROM docs WHERE " .. where .. " ORDER BY id LIMIT 100", binds)
        local cnt = sql.rows(h, "SELECT count(*) FROM docs WHERE " .. where, binds)
        ft[q] = clock() - a0
        return ids, cnt
      end
      local res, ids, cnt
      if (q + round) % 2 == 0 then res = mine(); ids, cnt = floor() else ids, cnt = floor(); res = mine() end
      -- otskit's own statements, straight (inside a read transaction, as the search runs them)
      assert(kvh:begin(true))
      local a0 = clock()
      for _, c in ipairs(stmts[q]) do assert(c.fn(kvh, c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8])) end
      st[q] = clock() - a0
      assert(kvh:commit())
      if round == 1 then
        local got, want = {}, {}
        for i, r in ipairs(res.rows) do got[i] = r.primary_key[1][2] end
        for i, r in ipairs(ids) do want[i] = r[1] end
        bench.same(want, got, name .. " rows")
        bench.same(cnt[1][1], res.total_count, name .. " count")
        total = total + res.total_count
      end
    end
    local o50, o99, f50, f99, s50 = pct(ot, 0.5), pct(ot, 0.99), pct(ft, 0.5), pct(ft, 0.99), pct(st, 0.5)
    o50s[round], o99s[round], f50s[round], f99s[round], s50s[round] = o50, o99, f50, f99, s50
    r50[round], r99[round], s50r[round] = o50 / f50, o99 / f99, s50 / f50
  end
  local m50 = median(r50)
  table.sort(r50)
  bench.row(name, total / Q, median(o50s) * 1e3, median(o99s) * 1e3, median(s50s) * 1e3, median(f50s) * 1e3,
    median(f99s) * 1e3, ("%.2f (%.2f-%.2f)"):format(m50, r50[1], r50[#r50]), median(r99), median(s50r))
  bench.value("search " .. name .. ": otskit p50", "ms", "lower", median(o50s) * 1e3)
  bench.value("search " .. name .. ": otskit p99", "ms", "lower", median(o99s) * 1e3)
  bench.value("search " .. name .. ": p50 vs SQLite", "x", "lower", m50)
  bench.value("search " .. name .. ": otskit SQL p50 vs SQLite", "x", "lower", median(s50r))
end
-- the doc values bool read (otskit.store.search.docvalues: its columns,
-- read once the index is quiet, and the memory they hold)
local dvs = require("otskit.store.search.docvalues")
print(("doc values: %d columns read in %.0f ms (CPU), %.1f MB held; %d searches answered with them")
  :format(dvs.stats.builds, dvs.stats.ms, dvs.bytes(db) / 1e6, dvs.stats.hits))
bench.value("search doc values: read", "ms", "lower", dvs.stats.ms)
bench.value("search doc values: memory", "MB", "lower", dvs.bytes(db) / 1e6)
print(("load average at the end: %s"):format(loadavg()))
db:close()
h:close()
