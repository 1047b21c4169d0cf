--- bench/search_knn_bench.lua -- the exact knn_vector query of the
-- store's search index: N vectors of D dimensions (COSINE), Q queries of
-- top_k 10, queries/s, and where the time goes: the vec_topk statement
-- (SQLite reading the float32 BLOBs + scoring and the heap in C), split
-- by a plain read of the same BLOBs (SELECT max(length(v))), and the
-- rest (the outer query, the page's row fetch); beside the floor: the
-- same brute force in Lua over vectors already decoded in Lua arrays (the
-- float32 values). The answers are checked equal.
-- N: OTSKIT_KNN_BENCH_N (default 100 000; 5 000 quick), D:
-- OTSKIT_KNN_BENCH_D (default 128), Q: OTSKIT_KNN_BENCH_Q (default 10).
local bench = require "lib"
local store = require "otskit.store"
local knn = require "otskit.store.search.knn"

local N = tonumber(os.getenv("OTSKIT_KNN_BENCH_N") or "") or (bench.quick and 5000 or 100000)
local D = tonumber(os.getenv("OTSKIT_KNN_BENCH_D") or "") or 128
local Q = tonumber(os.getenv("OTSKIT_KNN_BENCH_Q") or "") or (bench.quick and 5 or 10)
local clock = os.clock

local seed = 42
local function rnd() seed = (seed * 48271) % 2147483647; return (seed % 20001 - 10000) / 10000 end

local db = assert(store.open{ partitions = false })
assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = {
  { field_name = "v", field_type = "VECTOR", vector_options = { dimension = D, metric_type = "COSINE" } } } } })
local floor = {}
local rows = {}
for i = 1, N do
  local v, parts = {}, {}
  for j = 1, D do
    local x = rnd()
    v[j] = x
    parts[j] = ("%.4f"):format(x)
  end
  for j = 1, D do v[j] = tonumber(parts[j]) end
  floor[i] = knn.f32(v)
  rows[#rows + 1] = { type = "PUT", primary_key = { { "id", i } }, columns = { v = "[" .. table.concat(parts, ",") .. "]" } }
  if #rows == 200 or i == N then
    assert(assert(db:batch_write_row{ tables = { { table = "t", rows = rows } } }).failed == 0)
    rows = {}
  end
end

local function brute(q)
  q = knn.f32(q)
  local qn = 0
  for j = 1, D do qn = qn + q[j] * q[j] end
  local best = {}
  for i = 1, N do best[i] = { i, knn.similarity("COSINE", q, floor[i], qn) } end
  table.sort(best, function(a, b) if a[2] ~= b[2] then return a[2] > b[2] end return a[1] < b[1] end)
  local out = {}
  for i = 1, 10 do out[i] = best[i][1] end
  return out
end

local docs = require "otskit.store.search.docs"
local p = db:_search_defs().t.ix.p
knn.profile = {}
local ot, ft, rt = 0, 0, 0
local per = {}
for qi = 1, Q do
  local q = {}
  for j = 1, D do q[j] = rnd() end
  local a0 = clock()
  local res = assert(db:search{ table = "t", index = "ix", limit = 10, query = { knn_vector = { field_name = "v", top_k = 10,
    float32_query_vector = q } } })
  local a1 = clock()
  local want = brute(q)
  local a2 = clock()
  assert(docs.run(db.h, ("SELECT max(length(v)) FROM %svec WHERE f = 1"):format(p))[1][1] == 4 * D)
  local a3 = clock()
  ot, ft, rt = ot + a1 - a0, ft + a2 - a1, rt + a3 - a2
  per[qi] = a1 - a0
  local got = {}
  for i, r in ipairs(res.rows) do got[i] = r.primary_key[1][2] end
  bench.same(want, got, "knn top 10")
end
local topk = knn.profile.topk
knn.profile = nil
bench.title(("knn_vector: %d vectors of %d dimensions, top 10, %d queries"):format(N, D, Q))
table.sort(per)
local med = per[math.ceil(Q / 2)]
bench.table({ "", "queries/s", "ms per query" })
bench.row("otskit search (exact), median query", 1 / med, med * 1e3)
bench.row("otskit search (exact), mean", Q / ot, ot / Q * 1e3)
bench.row("floor: brute force over Lua arrays", Q / ft, ft / Q * 1e3)
bench.table({ "phase of the otskit query", "ms per query", "share" })
bench.row("read the float32 BLOBs (SQLite scan)", rt / Q * 1e3, rt / ot)
bench.row("score + top-k heap (C, in the same statement)", (topk - rt) / Q * 1e3, (topk - rt) / ot)
bench.row("rest (outer query, row fetch of the page)", (ot - topk) / Q * 1e3, (ot - topk) / ot)
bench.value("knn exact: otskit", "queries/s", "higher", 1 / med)
bench.value("knn exact: brute force floor", "queries/s", "higher", Q / ft)
db:close()
