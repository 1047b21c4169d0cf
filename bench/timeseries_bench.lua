--- bench/timeseries_bench.lua -- the bucketed time-series read (16
-- buckets, pages of 100, newest first) end to end on the embedded store:
-- otskit.patterns.timeseries (one get_range per bucket, C merge, HMAC
-- cursors) against the same read done naively in Lua: fetch every bucket
-- whole, one after another, table.sort the concatenation, slice pages.
-- Both must return the same rows in the same order before anything is
-- timed. Reported: rows/s and store requests per page, for the first page
-- (what an API serves most) and for reading every page.
local bench = require "lib"
local store = require "otskit.store"
local key = require "otskit.key"
local timeseries = require "otskit.patterns.timeseries"

local N = bench.quick and 4000 or 16000     -- points, 16 buckets
local PAGE = 100
local INF_MIN, INF_MAX = store.INF_MIN, store.INF_MAX
local T0 = 1767225600

local db = assert(store.open { partitions = false })
local s = timeseries.new { store = db, table = "m", buckets = 16, secret = "bench secret of 16+ bytes",
                           retry = { budget = false } }
assert(s:create())
local pts = {}
for i = 1, N do pts[i] = { T0 + i, "sensor-" .. (i % 4), { v = i } } end
assert(s:put_many(pts))

-- a store wrapper counting requests
local requests = 0
local counted = setmetatable({ get_range = function(_, req) requests = requests + 1; return db:get_range(req) end },
  { __index = function(_, k) local f = db[k]; return function(_, ...) return f(db, ...) end end })
local ts_counted = timeseries.new { store = counted, table = "m", buckets = 16,
                                    secret = "bench secret of 16+ bytes", retry = { budget = false } }

-- otskit: pages through cursors; limit pages (nil: all)
local function otskit_read(maxpages, out)
  local c, pages = nil, 0
  repeat
    local rows, cur = ts_counted:read { limit = PAGE, cursor = c }
    assert(rows, cur)
    pages = pages + 1
    if out then for _, r in ipairs(rows) do out[#out + 1] = r.ts .. "/" .. r.id end end
    c = cur
  until not c or (maxpages and pages >= maxpages)
  return pages
end

-- naive: every bucket whole, sequentially, then one sort, then pages
local cmp = key.compare
local function naive_read(maxpages, out)
  local all = {}
  for b = 0, 15 do
    local start = { b, INF_MIN, INF_MIN }
    repeat
      requests = requests + 1
      local page = assert(db:get_range { table = "m", start = start, stop = { b, INF_MAX, INF_MAX } })
      for _, r in ipairs(page.rows) do
        all[#all + 1] = { ts = r.primary_key[2][2], id = r.primary_key[3][2], columns = r.columns }
      end
      start = page.next_start_primary_key
    until start == nil
  end
  table.sort(all, function(a, b)
    if a.ts ~= b.ts then return a.ts > b.ts end
    return cmp(a.id, b.id) > 0
  end)
  local pages = math.ceil(#all / PAGE)
  if maxpages and pages > maxpages then pages = maxpages end
  if out then
    for i = 1, math.min(#all, pages * PAGE) do out[#out + 1] = all[i].ts .. "/" .. all[i].id end
  end
  return pages
end

-- outputs first
local a, b = {}, {}
otskit_read(nil, a)
naive_read(nil, b)
bench.same(a, b, "timeseries rows (all pages)")
assert(#a == N)
local a1, b1 = {}, {}
otskit_read(1, a1)
naive_read(1, b1)
bench.same(a1, b1, "timeseries rows (first page)")

bench.title(("timeseries read: %d points in 16 buckets, pages of %d, newest first"):format(N, PAGE))
bench.table { "read", "variant", "rows/s", "store requests/page", "rows read/page", "ratio (rows/s vs naive)" }

-- rows read from the store per page, through a counting get_range
local rows_read = 0
local inner_get = counted.get_range
counted.get_range = function(self, req)
  local res, m, c = inner_get(self, req)
  if res then rows_read = rows_read + #res.rows end
  return res, m, c
end
local naive_get = db.get_range
local function naive_counting(maxp)
  local saved = db.get_range
  db.get_range = function(self, req)
    local res, m, c = naive_get(self, req)
    if res then rows_read = rows_read + #res.rows end
    return res, m, c
  end
  local pages = naive_read(maxp)
  db.get_range = saved
  return pages
end

-- requests and rows read per page, counted on one untimed read
local function counts(fn, maxp)
  requests, rows_read = 0, 0
  local pages = (fn == naive_read and naive_counting or fn)(maxp)
  return requests / pages, rows_read / pages, pages
end

-- first page: what an API serves most; otskit and naive take turns
local oreq1, orow1 = counts(otskit_read, 1)
local nreq1, nrow1 = counts(naive_read, 1)
local r1 = bench.run { name = "first page", unit = "rows/s", units = PAGE,
  variants = { { "otskit", function() otskit_read(1) end }, { "naive", function() naive_read(1) end } } }
local o1, n1 = r1.otskit, r1.naive
bench.row("first page", "otskit.patterns.timeseries", o1, oreq1, orow1, r1.ratio["otskit vs naive"])
bench.row("first page", "naive Lua (whole buckets, table.sort)", n1, nreq1, nrow1, "1.00")

-- every page: otskit pages statelessly with cursors; a stateless naive
-- server re-reads and re-sorts everything for each page (pages x the
-- first-page cost, measured above); a stateful one reads and sorts once
-- and holds every row in memory (the floor, not a paging design)
local oreqa, orowa, pages = counts(otskit_read, nil)
local nreqa, nrowa = counts(naive_read, nil)
local ra = bench.run { name = "every page", unit = "rows/s", units = N,
  variants = { { "otskit", function() otskit_read(nil) end }, { "naive stateful", function() naive_read(nil) end } } }
local oa, na = ra.otskit, ra["naive stateful"]
-- each stateless page costs one full read and yields PAGE rows, like the first page
bench.row("every page", "otskit.patterns.timeseries", oa, oreqa, orowa, ("%.2f"):format(oa.median / n1.median))
bench.row("every page", "naive Lua, stateless (re-read per page)", n1, nreq1, nrow1, "1.00")
bench.row("every page", "naive Lua, stateful (one read, all in memory)", na, nreqa, nrowa, ("%.2f"):format(na.median / n1.median))
bench.value("store requests per first page (otskit)", "requests", "lower", oreq1)
bench.value("rows read per first page (otskit)", "rows", "lower", orow1)
io.write(("\n%d pages. Median ±half the IQR of interleaved repetitions; the first-page ratio is per round, " ..
  "the others ratios of medians. Stateless naive: each page costs one full read (first-page row above). " ..
  "otskit reads about 2 x limit rows per page (first_rows = 32 per bucket), the same for page 1 and page %d.\n")
  :format(pages, pages))
db:close()
