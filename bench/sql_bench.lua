--- bench/sql_bench.lua -- a SELECT with a primary-key range and a filter
-- (db:sql: SQLite over the otskit_map virtual table, which reads the key
-- range from the store) beside the same range read through get_range
-- with the same filter, page after page. Both return the same rows
-- (checked); reported in rows of the range per second, and the ratio.
-- OTSKIT_SQL_ROWS sets the table size (default 1 000 000; 20 000 with
-- OTSKIT_BENCH_QUICK); the range is the middle half of the table and the
-- filter keeps one row in ten.
local bench = require "lib"
local store = require "otskit.store"

local N = math.floor(tonumber(os.getenv("OTSKIT_SQL_ROWS") or "") or (bench.quick and 20000 or 1000000))
local LO, HI = math.floor(N / 4), math.floor(N / 4) + math.floor(N / 2)
local INF_MIN = store.INF_MIN

local db = assert(store.open{ partitions = false })
assert(db:create_table{ name = "t", primary_key = { { "k", "INTEGER" } } })
local rows = {}
for i = 0, N - 1 do
  rows[#rows + 1] = { type = "PUT", primary_key = { { "k", i } }, columns = { { "m", (i * 7) % 10 }, { "v", i * 3 },
    { "s", "row" .. i } } }
  if #rows == 200 or i == N - 1 then
    local w = assert(db:batch_write_row{ tables = { { table = "t", rows = rows } } })
    assert(w.failed == 0, "a write failed")
    rows = {}
  end
end
assert(db:sql("CREATE TABLE t (k BIGINT, m BIGINT, v BIGINT, s MEDIUMTEXT, PRIMARY KEY (k))"))

local Q = ("SELECT k, v, s FROM t WHERE k >= %d AND k < %d AND m = 3"):format(LO, HI)
local function by_sql(out)
  local res = assert(db:sql(Q, { max_scan_rows = N, max_rows = N }))
  if out then for i, r in ipairs(res.rows) do out[i] = r[1] .. ":" .. r[2] .. ":" .. r[3] end end
  return #res.rows, res
end

local FILTER = { column = "m", comparator = "EQUAL", value = 3 }
local function by_range(out)
  local start, n = { { "k", LO } }, 0
  repeat
    local res = assert(db:get_range{ table = "t", start = start, stop = { { "k", HI } }, filter = FILTER,
      columns = { "v", "s", "m" } })
    for _, r in ipairs(res.rows) do
      n = n + 1
      if out then out[n] = r.primary_key[1][2] .. ":" .. r.columns.v .. ":" .. r.columns.s end
    end
    start = res.next_start_primary_key
  until not start
  return n
end

local a, b = {}, {}
local n, res = by_sql(a)
assert(by_range(b) == n)
bench.same(a, b, "SELECT vs get_range rows")
assert(res.full_scans == 0 and res.range_reads == 1 and res.scanned == HI - LO, "the SELECT read the key range only")
local _ = INF_MIN

bench.title(("sql: SELECT with a key range and a filter, %d rows, range of %d, %d returned"):format(N, HI - LO, n))
bench.table({ "read", "SELECT rows/s", "get_range rows/s", "SELECT/get_range time" })
local r = bench.run { name = "key range + filter", unit = "rows/s", units = HI - LO, warmup = 1,
  min_reps = bench.reps(bench.quick and 5 or 7),
  variants = { { "SELECT", function() return by_sql() end }, { "get_range", function() return by_range() end } },
  ratios = { { "get_range", "SELECT" } } }
bench.row("middle half, 1 in 10", r.SELECT, r.get_range, r.ratio["get_range vs SELECT"])
db:close()
