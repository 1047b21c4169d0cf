--- bench/index_bench.lua -- what secondary indexes cost in otskit.store:
-- put_row on a table with two global indexes against the same puts on a
-- table without indexes (three rows written per put instead of one; the
-- target is at most 3.5 times the time), and a full get_range over an
-- index against one over a table of the same shape (the index's key
-- columns as its primary key, the same attribute column; target: within
-- 10%). Outputs are checked equal first: the indexed table holds the same
-- rows as the plain one, and the index the same rows as the table of its
-- shape.
local bench = require "lib"
local store = require "otskit.store"

local N = bench.quick and 5000 or 50000
local INF_MIN, INF_MAX = store.INF_MIN, store.INF_MAX
local payload = ("p"):rep(32)

-- spread keys (a multiplicative permutation of 0..N-1)
local uids = {}
for i = 1, N do uids[i] = (i * 7919) % N end
local function c1_of(i) return (i * 104729) % 1000003 end
local function c2_of(i) return ("name%07d"):format((i * 31) % N) end

local function new_db(indexed)
  local db = assert(store.open{})
  local req = { name = "t", primary_key = { { "uid", "INTEGER" }, { "kind", "STRING" } } }
  if indexed then
    req.defined_columns = { { "c1", "INTEGER" }, { "c2", "STRING" } }
    req.index_metas = { { name = "by_c1", primary_key = { "c1" }, defined_columns = { "c2" } },
                        { name = "by_c2", primary_key = { "c2" }, defined_columns = { "c1" } } }
  end
  assert(db:create_table(req))
  return db
end

local function load(db)
  for i = 1, N do
    assert(db:put_row{ table = "t", primary_key = { uids[i], "k" },
      columns = { c1 = c1_of(i), c2 = c2_of(i), s = payload } })
  end
end

-- every row of a table (n key columns) through get_range pages
local function scan(db, name, n, out)
  local s, e = {}, {}
  for i = 1, n do s[i], e[i] = INF_MIN, INF_MAX end
  local count = 0
  repeat
    local res = assert(db:get_range{ table = name, start = s, stop = e })
    for _, r in ipairs(res.rows) do
      count = count + 1
      if out then
        local k = {}
        for j, c in ipairs(r.primary_key) do k[j] = tostring(c[2]) end
        out[count] = table.concat(k, "/") .. "=" .. tostring(r.columns.c2 or r.columns.c1)
      end
    end
    s = res.next_start_primary_key
  until not s
  return count
end

-- outputs agree
local plain, indexed = new_db(false), new_db(true)
load(plain); load(indexed)
local a, b = {}, {}
scan(plain, "t", 2, a); scan(indexed, "t", 2, b)
bench.same(a, b, "indexed vs plain table rows")
-- the table of the index's shape: (c1, uid, kind) -> c2
-- (an index table keeps no partition accounting: the like-for-like peer
-- is a table without it; the table with it is measured too)
local function new_shape(accounting)
  local db = assert(store.open{ partitions = accounting })
  assert(db:create_table{ name = "s", primary_key = { { "c1", "INTEGER" }, { "uid", "INTEGER" }, { "kind", "STRING" } } })
  for i = 1, N do
    assert(db:put_row{ table = "s", primary_key = { c1_of(i), uids[i], "k" }, columns = { c2 = c2_of(i) } })
  end
  return db
end
local shape, shape_on = new_shape(false), new_shape(true)
local ix, sh, sh2 = {}, {}, {}
scan(indexed, "by_c1", 3, ix); scan(shape, "s", 3, sh); scan(shape_on, "s", 3, sh2)
bench.same(ix, sh, "index by_c1 vs table of its shape")
bench.same(ix, sh2, "index by_c1 vs table of its shape (accounting on)")
assert(#ix == N)
plain:close()

bench.title(("secondary indexes: %d rows"):format(N))
bench.table({ "operation", "variant A rows/s", "variant B rows/s", "B time / A time" })

local put = bench.run { name = "put_row", unit = "rows/s", units = N, warmup = 0, min_reps = bench.reps(bench.quick and 5 or 7),
  variants = {
    { "no index", function() local db = new_db(false); load(db); db:close() end },
    { "two global indexes", function() local db = new_db(true); load(db); db:close() end },
  } }
bench.row("put_row: no index (A), two global indexes (B)", put["no index"], put["two global indexes"],
  put.ratio["no index vs two global indexes"])

local rng = bench.run { name = "get_range", unit = "rows/s", units = N, warmup = 1, min_reps = bench.reps(bench.quick and 5 or 9),
  variants = {
    { "table of the same shape", function() assert(scan(shape, "s", 3) == N) end },
    { "index", function() assert(scan(indexed, "by_c1", 3) == N) end },
    { "table, accounting on", function() assert(scan(shape_on, "s", 3) == N) end },
  } }
bench.row("get_range (5000/page): table (A), index (B)", rng["table of the same shape"], rng.index,
  rng.ratio["table of the same shape vs index"])
bench.row("get_range (5000/page): table (A), table with partition accounting (B)", rng["table of the same shape"],
  rng["table, accounting on"], rng.ratio["table of the same shape vs table, accounting on"])
indexed:close(); shape:close(); shape_on:close()
