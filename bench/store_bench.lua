--- bench/store_bench.lua -- rows/s of put_row, batch_write_row and
-- get_range on 100 000 rows, with the partition accounting on and off,
-- against the raw kv layer (SQLite through otskit.core.kv with the same
-- tuple keys) as the floor. Every variant must end with the same rows.
local bench = require "lib"
local store = require "otskit.store"
local key = require "otskit.key"
local kv = require("otskit.core").kv

local N = bench.quick and 5000 or 100000
local INF_MIN, INF_MAX = store.INF_MIN, store.INF_MAX
local PART = { split_rows = bench.quick and 1000 or 10000 } -- ~10+ partitions by the end: real lookups and splits

-- spread partition keys (a multiplicative permutation of 0..N-1)
local pks, payload = {}, ("p"):rep(32)
for i = 1, N do pks[i] = (i * 7919) % N end

local function new_db(on)
  local db = assert(store.open{ partitions = on, partition = PART })
  assert(db:create_table{ name = "t", primary_key = {{"uid", "INTEGER"}, {"kind", "STRING"}} })
  return db
end

local function load_put(db)
  for i = 1, N do
    assert(db:put_row{ table = "t", primary_key = { pks[i], "k" }, columns = { v = i, s = payload } })
  end
end

local function load_batch(db)
  local rows = {}
  for i = 1, N do
    rows[#rows + 1] = { type = "PUT", primary_key = { pks[i], "k" }, columns = { v = i, s = payload } }
    if #rows == 200 or i == N then
      local res = assert(db:batch_write_row{ tables = {{ table = "t", rows = rows }} })
      assert(res.failed == 0)
      rows = {}
    end
  end
end

-- every row's (uid, v) through get_range pages, as one checksum-able list
local function scan(db, out)
  local start, n = { INF_MIN, INF_MIN }, 0
  repeat
    local res = assert(db:get_range{ table = "t", start = start, stop = { INF_MAX, INF_MAX } })
    for _, r in ipairs(res.rows) do
      n = n + 1
      if out then out[n] = r.primary_key[1][2] .. ":" .. r.columns.v end
    end
    start = res.next_start_primary_key
  until not start
  return n
end

local function raw_put(h)
  for i = 1, N do
    assert(h:put("t", key.pack({ pks[i], "k" }), "v=" .. i .. ";s=" .. payload))
  end
end

local function raw_scan(h, out)
  local cur, n = h:scan("t"), 0
  while true do
    local ks, vs, got = cur:fetch(256)
    if got == 0 then break end
    for j = 1, got do
      n = n + 1
      if out then out[n] = key.unpack(ks[j])[1] .. ":" .. vs[j]:match("^v=(%d+)") end
    end
  end
  return n
end

-- outputs agree: the same rows from every loader and reader
local ref, on_db, off_db = {}, new_db(true), new_db(false)
load_put(on_db)
load_batch(off_db)
scan(on_db, ref)
local other = {}
scan(off_db, other)
bench.same(ref, other, "put_row+on vs batch_write_row+off rows")
local h = assert(kv.open())
h:create("t")
raw_put(h)
local raw = {}
raw_scan(h, raw)
bench.same(ref, raw, "store vs raw kv rows")
assert(#ref == N)
local nparts = #on_db:partitions("t")
on_db:close(); off_db:close(); h:close()

local function loader(on, load)
  return function()
    local db = new_db(on)
    load(db)
    db:close()
  end
end

bench.title(("store: %d rows, %d partitions at the end (split_rows %d)"):format(N, nparts, PART.split_rows))
bench.table({ "operation", "accounting on rows/s", "accounting off rows/s", "on/off time", "raw kv rows/s", "off/raw time" })

local h2 = assert(kv.open()); h2:create("t")
local function raw_load() h2:drop("t"); h2:create("t"); raw_put(h2) end
-- each operation: the three variants take turns (ABBA), ratios per round
local function op(name, fns)
  return bench.run { name = name, unit = "rows/s", units = N, warmup = 0, min_reps = bench.reps(bench.quick and 5 or 7),
    variants = { { "accounting on", fns[1] }, { "accounting off", fns[2] }, { "raw kv", fns[3] } },
    ratios = { { "accounting off", "accounting on" }, { "raw kv", "accounting off" } } }
end
local function row(label, r)
  bench.row(label, r["accounting on"], r["accounting off"], r.ratio["accounting off vs accounting on"],
    r["raw kv"], r.ratio["raw kv vs accounting off"])
end
row("put_row", op("put_row", { loader(true, load_put), loader(false, load_put), raw_load }))
row("batch_write_row (200/req)", op("batch_write_row", { loader(true, load_batch), loader(false, load_batch), raw_load }))

local dbs = { new_db(true), new_db(false) }
load_batch(dbs[1]); load_batch(dbs[2])
row("get_range (5000/page)", op("get_range", {
  function() assert(scan(dbs[1]) == N) end,
  function() assert(scan(dbs[2]) == N) end,
  function() assert(raw_scan(h2) == N) end }))

-- a filtered get_range: every row is scanned (and costs the page budget),
-- 1 in 10 passes; reported in rows scanned per second. Checked against
-- the unfiltered scan filtered in Lua.
local CUT = math.floor(N / 10)
local FILTER = { column = "v", comparator = "LESS_EQUAL", value = CUT }
local function fscan(db, out)
  local start, n = { INF_MIN, INF_MIN }, 0
  repeat
    local res = assert(db:get_range{ table = "t", start = start, stop = { INF_MAX, INF_MAX }, filter = FILTER })
    for _, r in ipairs(res.rows) do
      n = n + 1
      if out then out[n] = r.primary_key[1][2] .. ":" .. r.columns.v end
    end
    start = res.next_start_primary_key
  until not start
  return n
end
local fref, fgot = {}, {}
for _, line in ipairs(ref) do
  if tonumber(line:match(":(%d+)$")) <= CUT then fref[#fref + 1] = line end
end
fscan(dbs[2], fgot)
bench.same(fref, fgot, "filtered get_range vs the scan filtered in Lua")
bench.title("store: filtered get_range (1 row in 10 passes; every row scanned)")
bench.table({ "operation", "rows scanned/s", "unfiltered rows/s", "filtered/unfiltered time" })
local fr = bench.run { name = "get_range_filtered", unit = "rows/s", units = N, warmup = 0, min_reps = bench.reps(bench.quick and 5 or 7),
  variants = { { "filtered", function() assert(fscan(dbs[2]) == CUT) end },
               { "unfiltered", function() assert(scan(dbs[2]) == N) end } },
  ratios = { { "filtered", "unfiltered" } } }
bench.row("get_range + filter (accounting off)", fr.filtered, fr.unfiltered, fr.ratio["filtered vs unfiltered"])
h2:close(); dbs[1]:close(); dbs[2]:close()

-- update_table lowering max_versions 3 -> 1 rewrites every row (purge.lua):
-- its cost is the difference of a load followed by the purge and the same
-- load alone, interleaved. Checked: afterwards each row holds one version.
local PN = math.floor(N / 5)
local function versioned()
  local db = assert(store.open{ partitions = false, clock = function() return 1700000000 end })
  assert(db:create_table{ name = "t", primary_key = {{"uid", "INTEGER"}}, options = { max_versions = 3 } })
  local ms, rows = 1700000000000, {}
  for i = 1, PN do
    rows[#rows + 1] = { type = "PUT", primary_key = { pks[i] },
      columns = {{ "v", i, ms - 2 }, { "v", i + 1, ms - 1 }, { "v", i + 2, ms }, { "s", payload, ms }} }
    if #rows == 200 or i == PN then
      assert(assert(db:batch_write_row{ tables = {{ table = "t", rows = rows }} }).failed == 0)
      rows = {}
    end
  end
  return db
end
do
  local db = versioned()
  assert(db:update_table{ name = "t", options = { max_versions = 1 } })
  assert(db:update_table{ name = "t", options = { max_versions = 3 } })
  local start, n = { INF_MIN }, 0
  repeat
    local res = assert(db:get_range{ table = "t", start = start, stop = { INF_MAX }, max_versions = 3 })
    for _, r in ipairs(res.rows) do -- "s", then the newest "v" alone
      assert(#r.cells == 2 and r.cells[2][1] == "v" and r.cells[2][3] == 1700000000000)
      n = n + 1
    end
    start = res.next_start_primary_key
  until not start
  assert(n == PN)
  db:close()
end
bench.title(("store: update_table max_versions 3 -> 1 over %d rows of 3 versions"):format(PN))
bench.table({ "operation", "load + purge rows/s", "load alone rows/s", "load/(load + purge) time" })
local pr = bench.run { name = "update_table_purge", unit = "rows/s", units = PN, warmup = 0, min_reps = bench.quick and 5 or 7,
  variants = { { "load + purge", function()
                   local db = versioned()
                   assert(db:update_table{ name = "t", options = { max_versions = 1 } })
                   db:close()
                 end },
               { "load alone", function() versioned():close() end } },
  ratios = { { "load + purge", "load alone" } } }
bench.row("batch_write_row, then update_table", pr["load + purge"], pr["load alone"], pr.ratio["load + purge vs load alone"])

io.write("\nMedian ±half the IQR of interleaved repetitions (on, off and raw take turns); the time\n",
  "ratios are per round: on/off = time on / time off, off vs raw = time off / time raw.\n")
