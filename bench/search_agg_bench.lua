--- bench/search_agg_bench.lua -- search analytics (aggregations and
-- group-bys of otskit.store's search index) against the same SQL asked of
-- SQLite directly over the same data (one table, one row per document,
-- B-tree indexes on the grouped columns): N documents of a LONG, a
-- DOUBLE, two KEYWORDs (1000 and 50 values), a DATE and a GEO_POINT; each question over
-- every document and over a filtered third, p50 of R runs, the ratio (a
-- question answered in under 2 ms is asked k times a run, its mean taken).
-- Every answer is checked equal to SQLite's before it is timed.
-- N: OTSKIT_SEARCH_AGG_BENCH_N (default 1 000 000; 20 000 in the quick
-- suite); R: OTSKIT_SEARCH_AGG_BENCH_R (default 5; 3 quick).
local bench = require "lib"
local store = require "otskit.store"
local core = require "otskit.core"
local sql, kv = core.sql, core.kv

local N = tonumber(os.getenv("OTSKIT_SEARCH_AGG_BENCH_N") or "") or (bench.quick and 20000 or 1000000)
local R = tonumber(os.getenv("OTSKIT_SEARCH_AGG_BENCH_R") or "") or (bench.quick and 3 or 5)
local clock = os.clock

local seed = 42
local function rnd(n) seed = (seed * 48271) % 2147483647; return seed % n end
local DAY0 = 1500000000000
local function doc(i)
  seed = (i * 2654435761) % 2147483647 + 1
  return { l = rnd(1000000), d = rnd(100000) / 8, k = "k" .. rnd(1000), c = "c" .. rnd(50), day = DAY0 + rnd(365 * 86400) * 1000,
    lat = rnd(1800000) / 10000 - 90, lon = rnd(3600000) / 10000 - 180 }
end
local function row_cols(x)
  return { l = x.l, d = x.d, k = x.k, c = x.c, day = x.day, g = ("%.4f,%.4f"):format(x.lat, x.lon) }
end

local db = assert(store.open{ partitions = false })
assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
local rows = {}
for i = 1, N do
  rows[#rows + 1] = { type = "PUT", primary_key = { { "id", i } }, columns = row_cols(doc(i)) }
  if #rows == 200 or i == N then
    assert(assert(db:batch_write_row{ tables = { { table = "t", rows = rows } } }).failed == 0)
    rows = {}
  end
end
assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = {
  { field_name = "l", field_type = "LONG", enable_sort_and_agg = true },
  { field_name = "d", field_type = "DOUBLE", enable_sort_and_agg = true },
  { field_name = "k", field_type = "KEYWORD", enable_sort_and_agg = true },
  { field_name = "c", field_type = "KEYWORD", enable_sort_and_agg = true },
  { field_name = "day", field_type = "DATE", enable_sort_and_agg = true },
  { field_name = "g", field_type = "GEO_POINT", enable_sort_and_agg = true },
} } })

local h = assert(kv.open(":memory:"))
local function exec(s) assert(sql.exec(h, s)) end
exec("CREATE TABLE docs (id INTEGER PRIMARY KEY, l, d, k, c, day, lat, lon)")
exec("BEGIN")
for i = 1, N do
  local x = doc(i)
  local g = row_cols(x).g -- the point as the index parses it
  local lat, lon = g:match("^(.-),(.*)$")
  sql.rows(h, "INSERT INTO docs VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)", { i, x.l, x.d, x.k, x.c, x.day, tonumber(lat), tonumber(lon) })
end
exec("CREATE INDEX docs_k ON docs(k); CREATE INDEX docs_c ON docs(c); CREATE INDEX docs_l ON docs(l)")
exec("COMMIT")

local function near(a, b) return math.abs(a - b) <= 1e-9 * math.max(1, math.abs(a)) end

local function same_counts(items, r)
  if #items ~= #r[1] then return false end
  for i, x in ipairs(items) do if x.row_count ~= r[1][i] then return false end end
  return true
end
-- the first group-by's items are SQL's rows { key, count } in order
local function same_keys(res, r)
  local it = res.group_bys[1].items
  if #it ~= #r then return false end
  for i, x in ipairs(it) do if x.key ~= r[i][1] or x.row_count ~= r[i][2] then return false end end
  return true
end
-- the value at rank p% of the sorted values vals (p / 100 * (n - 1) + 1,
-- interpolated), as otskit computes it
local PCT = { 5, 25, 50, 75, 95, 99 }
local function ranks(n)
  local out, set = {}, {}
  for _, p in ipairs(PCT) do
    local r = p / 100 * (n - 1) + 1
    local lo = math.floor(r)
    for _, x in ipairs({ lo, math.min(lo + 1, n) }) do
      if not set[x] then set[x] = true; out[#out + 1] = x end
    end
  end
  return out
end

-- { name, search request part, SQL (text with %s: the WHERE, or
-- function(filtered, h, binds) -> rows), check(res, rows) }
local AND = { [false] = "", [true] = " AND l >= ?1 AND l < ?2" }
local QS = {
  { "avg+min+max+sum", { aggs = { { name = "a", type = "avg", field_name = "l" }, { name = "mi", type = "min", field_name = "d" },
      { name = "ma", type = "max", field_name = "d" }, { name = "s", type = "sum", field_name = "l" } } },
    "SELECT avg(l), min(d), max(d), total(l) FROM docs %s",
    function(res, r)
      local a = res.aggs
      return near(a[1].value, r[1][1]) and near(a[2].value, r[1][2]) and near(a[3].value, r[1][3]) and near(a[4].value, r[1][4])
    end },
  { "distinct_count", { aggs = { { name = "dc", type = "distinct_count", field_name = "k" } } },
    "SELECT count(DISTINCT k) FROM docs %s",
    function(res, r) return res.aggs[1].value == r[1][1] end },
  { "group_by_field (top 10)", { group_bys = { { name = "g", type = "field", field_name = "k", size = 10 } } },
    "SELECT k, count(*) AS n FROM docs %s GROUP BY k ORDER BY n DESC, k LIMIT 10",
    same_keys },
  { "group_by_field + sub avg", { group_bys = { { name = "g", type = "field", field_name = "c", size = 50,
      sub_aggs = { { name = "a", type = "avg", field_name = "l" } } } } },
    "SELECT c, count(*) AS n, avg(l) FROM docs %s GROUP BY c ORDER BY n DESC, c LIMIT 50",
    function(res, r)
      local it = res.group_bys[1].items
      if #it ~= #r then return false end
      for i, x in ipairs(it) do
        if x.key ~= r[i][1] or x.row_count ~= r[i][2] or not near(x.sub_aggs[1].value, r[i][3]) then return false end
      end
      return true
    end },
  { "histogram", { group_bys = { { name = "h", type = "histogram", field_name = "l", interval = 100000, min_doc_count = 1 } } },
    "SELECT l / 100000 AS b, count(*) FROM docs %s GROUP BY b ORDER BY b",
    function(res, r)
      local it = res.group_bys[1].items
      if #it ~= #r then return false end
      for i, x in ipairs(it) do if x.key ~= r[i][1] * 100000 or x.row_count ~= r[i][2] then return false end end
      return true
    end },
  { "date_histogram (month)", { group_bys = { { name = "m", type = "date_histogram", field_name = "day",
      interval = { value = 1, unit = "MONTH" }, min_doc_count = 1 } } },
    "SELECT strftime('%%Y-%%m', day / 1000, 'unixepoch') AS b, count(*) FROM docs %s GROUP BY b ORDER BY b",
    function(res, r)
      local it = res.group_bys[1].items
      if #it ~= #r then return false end
      for i, x in ipairs(it) do
        if os.date("!%Y-%m", math.floor(x.timestamp / 1000)) ~= r[i][1] or x.row_count ~= r[i][2] then return false end
      end
      return true
    end },
  { "count", { aggs = { { name = "n", type = "count", field_name = "l" } } },
    "SELECT count(l) FROM docs %s",
    function(res, r) return res.aggs[1].value == r[1][1] end },
  { "percentiles", { aggs = { { name = "p", type = "percentiles", field_name = "d", percentiles = PCT } } },
    function(filtered, hh, binds) -- the values at the ranks the percentiles need, and their count
      local w = filtered and "WHERE l >= ?1 AND l < ?2" or ""
      local n = sql.rows(hh, "SELECT count(d) FROM docs " .. w, binds)[1][1]
      local rs = ranks(n)
      local vals = {}
      for _, r in ipairs(sql.rows(hh, ("SELECT r, v FROM (SELECT d AS v, row_number() OVER (ORDER BY d) AS r FROM docs %s) WHERE r IN (%s)")
        :format(w, table.concat(rs, ", ")), binds)) do vals[r[1]] = r[2] end
      local out = {}
      for i, p in ipairs(PCT) do
        local x = p / 100 * (n - 1) + 1
        local lo = math.floor(x)
        local v = vals[lo] + 0.0
        if x - lo > 0 then v = v + (vals[math.min(lo + 1, n)] - v) * (x - lo) end
        out[i] = { v }
      end
      return out
    end,
    function(res, r)
      for i, it in ipairs(res.aggs[1].items) do if not near(it.value, r[i][1]) then return false end end
      return #res.aggs[1].items == #PCT
    end },
  { "top_rows (10 by l desc)", { aggs = { { name = "t", type = "top_rows", limit = 10,
      sort = { { field_sort = { field_name = "l", order = "DESC" } } } } } },
    "SELECT * FROM docs %s ORDER BY l DESC, id LIMIT 10",
    function(res, r)
      local rows = res.aggs[1].rows
      if #rows ~= #r then return false end
      for i, x in ipairs(rows) do
        if tonumber(x.primary_key[1][2]) ~= r[i][1] then return false end
      end
      return true
    end },
  { "range (3 ranges)", { group_bys = { { name = "r", type = "range", field_name = "l",
      ranges = { { from = 0, to = 100000 }, { from = 100000, to = 500000 }, { from = 500000 } } } } },
    function(filtered, hh, binds)
      local a = AND[filtered]
      return sql.rows(hh, ("SELECT (SELECT count(*) FROM docs WHERE l >= 0 AND l < 100000%s), "
        .. "(SELECT count(*) FROM docs WHERE l >= 100000 AND l < 500000%s), (SELECT count(*) FROM docs WHERE l >= 500000%s)")
        :format(a, a, a), binds)
    end,
    function(res, r) return same_counts(res.group_bys[1].items, r) end },
  { "filter (2 filters)", { group_bys = { { name = "f", type = "filter", filters = {
      { term = { field_name = "c", term = "c7" } }, { range = { field_name = "d", to = 1000 } } } } } },
    function(filtered, hh, binds)
      local a = AND[filtered]
      return sql.rows(hh, ("SELECT (SELECT count(*) FROM docs WHERE c = 'c7'%s), (SELECT count(*) FROM docs WHERE d < 1000%s)")
        :format(a, a), binds)
    end,
    function(res, r) return same_counts(res.group_bys[1].items, r) end },
  { "geo_distance (3 rings)", { group_bys = { { name = "gd", type = "geo_distance", field_name = "g",
      origin = { lat = 30, lon = 120 }, ranges = { { from = 0, to = 1000000 }, { from = 1000000, to = 5000000 }, { from = 5000000 } } } } },
    "SELECT sum(x >= 0 AND x < 1000000), sum(x >= 1000000 AND x < 5000000), sum(x >= 5000000) "
      .. "FROM (SELECT geo_dist(lat, lon, 30, 120) AS x FROM docs %s)",
    function(res, r) return same_counts(res.group_bys[1].items, r) end },
  { "geo_grid (precision 2, top 10)", { group_bys = { { name = "gg", type = "geo_grid", field_name = "g", precision = 2, size = 10 } } },
    "SELECT geohash(lat, lon, 2) AS h, count(*) AS n FROM docs %s GROUP BY h ORDER BY n DESC, h LIMIT 10",
    same_keys },
  { "composite (c, histogram l; 100)", { group_bys = { { name = "cp", type = "composite", size = 100, sources = {
      { name = "c", type = "field", field_name = "c" }, { name = "h", type = "histogram", field_name = "l", interval = 100000 } } } } },
    "SELECT c, l / 100000 AS b, count(*) FROM docs %s GROUP BY c, b ORDER BY c, b LIMIT 100",
    function(res, r)
      local it = res.group_bys[1].items
      if #it ~= #r then return false end
      for i, x in ipairs(it) do
        if x.keys[1] ~= r[i][1] or tonumber(x.keys[2]) ~= r[i][2] * 100000 or x.row_count ~= r[i][3] then return false end
      end
      return true
    end },
}
-- OTSKIT_SEARCH_AGG_BENCH_ONLY: comma-separated Lua patterns; only the questions one finds
local ONLY = os.getenv("OTSKIT_SEARCH_AGG_BENCH_ONLY")
if ONLY == "" then ONLY = nil end
local function asked(name)
  if not ONLY then return true end
  for pat in ONLY:gmatch("[^,]+") do if name:find(pat) then return true end end
  return false
end

-- the design's floor of some questions: the SQL otskit runs, asked of its
-- own index tables directly (no search around it): what is left between
-- it and SQLite's own table is the index's layout
local ix = db:_search_defs().t.ix
local LF = ix.def.byname.l.id
local FLOOR = {
  ["range (3 ranges)"] = function(filtered) -- (filtered: each range intersected with the query's, as otskit does)
    for _, r in ipairs({ { 0, 100000 }, { 100000, 500000 }, { 500000, math.huge } }) do
      local lo, hi = r[1], r[2]
      if filtered then lo, hi = math.max(lo, 0), math.min(hi, 333333) end
      sql.rows(db.h, ("SELECT count(*) FROM %snum WHERE f = ?1 AND v >= ?2 AND v < ?3"):format(ix.p), { LF, lo, hi })
    end
  end,
  ["top_rows (10 by l desc)"] = function(filtered) -- (the value index walked backwards, each run of equal values put in key order)
    sql.top_keys(db.h, ("SELECT pk, v FROM %snum WHERE f = ?1%s ORDER BY v DESC, pk DESC"):format(ix.p,
      filtered and " AND v >= 0 AND v < 333333" or ""), { LF }, 1, 10, "i", { "id" })
  end,
  ["count"] = function(filtered)
    sql.rows(db.h, ("SELECT count(*) FROM %snum WHERE f = ?1%s"):format(ix.p, filtered and " AND v >= 0 AND v < 333333" or ""), { LF })
  end,
}

bench.title(("search analytics: %d documents"):format(N))
bench.table({ "question", "filter", "otskit p50 ms", "SQLite p50 ms", "ratio", "otskit's own SQL p50 ms (floor)" })
local function p50(xs) table.sort(xs); return xs[math.ceil(#xs / 2)] end
-- f(...) asked k times: the mean time of one (s), and f's last answer
local function timed(k, f, ...)
  local t0, res = clock()
  for _ = 1, k do res = f(...) end
  return (clock() - t0) / k, res
end
for _, q in ipairs(QS) do
  if not asked(q[1]) then goto next end
  for _, filtered in ipairs({ false, true }) do
    local req = { table = "t", index = "ix", limit = 0, aggs = q[2].aggs, group_bys = q[2].group_bys }
    local where = ""
    local binds = {}
    if filtered then
      req.query = { range = { field_name = "l", from = 0, to = 333333, include_lower = true } }
      where, binds = "WHERE l >= ?1 AND l < ?2", { 0, 333333 }
    end
    local text = type(q[3]) == "string" and q[3]:format(where)
    local ot, ft, lt = {}, {}, {}
    local floor = FLOOR[q[1]]
    -- a question answered in under 2 ms is asked k times a run (both
    -- sides), its time the run's mean: a timing well above the clock's grain
    local function search() return assert(db:search(req)) end
    local function ask() return text and sql.rows(h, text, binds) or q[3](filtered, h, binds) end
    local k = 1
    timed(3, search) -- (warm)
    local b1 = timed(1, search)
    if b1 < 0.002 then k = math.min(1000, math.ceil(0.002 / math.max(b1, 1e-6))) end
    for i = 1, R do
      local res, rows
      ot[i], res = timed(k, search)
      ft[i], rows = timed(k, ask)
      bench.same(true, q[4](res, rows), q[1])
      if floor then lt[i] = timed(k, floor, filtered) end
    end
    local o, f = p50(ot), p50(ft)
    bench.row(q[1], filtered and "l < 333333" or "all", o * 1e3, f * 1e3, o / f, floor and p50(lt) * 1e3 or "")
    bench.value(("search agg %s%s: vs SQLite"):format(q[1], filtered and " (filtered)" or ""), "x", "lower", o / f)
  end
  ::next::
end
db:close()
h:close()
