--- bench/merge_bench.lua -- merging k sorted buckets (100 000 rows, 24-byte
-- keys) that arrive in batches of `page` rows: otskit.merge (m:push/m:pull)
-- against a k-way merge on Debian's lua-binaryheap and against table.sort
-- of the concatenated batches; then the C loser tree alone (keys already in
-- C: the limit; "ingest" is what feeding the keys through merge_begin /
-- merge_add costs, "merge" the rest), the merge.read driver end to end,
-- and the peak Lua memory of a 1 M-row merged read.
local bench = require "lib"
local merge = require "otskit.merge"
local B = require "otskit_bench" -- bench/cbench.c (make bench)
local binaryheap = require "binaryheap"

local N = bench.quick and 20000 or 100000
local ONLY_MEM = os.getenv("MERGE_BENCH_MEM")

-- keys: 24 alphanumeric bytes (byte order == Lua's < in the C locale)
local seed = 42
local function rnd(n)
  seed = (seed * 48271) % 2147483647
  return seed % n
end
local alnum = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
local function key24()
  local t = {}
  for i = 1, 24 do
    local c = rnd(62) + 1
    t[i] = alnum:sub(c, c)
  end
  return table.concat(t)
end

-- k buckets of rows {k = key}, each sorted, then cut into batches
local function dataset(k, page)
  local buckets, keys = {}, {}
  for i = 1, k do buckets[i], keys[i] = {}, {} end
  for _ = 1, N do
    local b = rnd(k) + 1
    keys[b][#keys[b] + 1] = key24()
  end
  local batches = {}
  for i = 1, k do
    table.sort(keys[i])
    for j, key in ipairs(keys[i]) do buckets[i][j] = { k = key } end
    local list = {}
    for s = 1, #buckets[i], page do
      local b = {}
      for j = s, math.min(s + page - 1, #buckets[i]) do b[#b + 1] = buckets[i][j] end
      list[#list + 1] = b
    end
    batches[i] = list
  end
  return buckets, keys, batches
end

local function run_otskit(k, batches)
  local m = merge.new { sources = k, key = "k" }
  local next_b = {}
  for i = 1, k do next_b[i] = 1 end
  local out = {}
  while true do
    local _, state = m:pull(nil, out)
    if state == "done" then break end
    local i = state
    local b = batches[i][next_b[i]] or {}
    next_b[i] = next_b[i] + 1
    m:push(i, b, next_b[i] > #batches[i])
  end
  return out
end

local function run_heap(k, batches)
  local h = binaryheap.minUnique()
  local cur, pos, bi = {}, {}, {}
  for i = 1, k do
    bi[i], pos[i] = 1, 1
    cur[i] = batches[i][1]
    if cur[i] and cur[i][1] then h:insert(cur[i][1].k, i) end
  end
  local out, n = {}, 0
  while true do
    local i = h:pop()
    if not i then break end
    local b = cur[i]
    n = n + 1
    out[n] = b[pos[i]]
    pos[i] = pos[i] + 1
    if pos[i] > #b then -- next batch of this bucket ("fetch")
      bi[i] = bi[i] + 1
      b = batches[i][bi[i]]
      cur[i], pos[i] = b, 1
    end
    if b and b[pos[i]] then h:insert(b[pos[i]].k, i) end
  end
  return out
end

local function run_sort(k, batches)
  local all, n = {}, 0
  for i = 1, k do
    for _, b in ipairs(batches[i]) do
      for j = 1, #b do n = n + 1; all[n] = b[j] end
    end
  end
  table.sort(all, function(a, b) return a.k < b.k end)
  return all
end

-- merge.read end to end: in-memory fetch, pages of `page` rows, cursors
local function run_read(k, buckets, page)
  local function fetch(_, after, want, i)
    local t = buckets[i]
    local p = 1
    if type(after) == "number" then p = after
    elseif after then
      local lo, hi = 1, #t + 1 -- first row after the key
      while lo < hi do
        local mid = math.floor((lo + hi) / 2)
        if t[mid].k < after.key or (t[mid].k == after.key and not after.inclusive) then lo = mid + 1 else hi = mid end
      end
      p = lo
    end
    local rows = {}
    local e = math.min(#t, p + math.min(want, page) - 1)
    for j = p, e do rows[j - p + 1] = t[j] end
    return rows, e < #t and e + 1 or nil
  end
  local out, n, cursor = {}, 0, nil
  repeat
    local rows, c = assert(merge.read { sources = k, fetch = fetch, key = "k", limit = page, cursor = cursor })
    for j = 1, #rows do out[n + j] = rows[j] end
    n = n + #rows
    cursor = c
  until not cursor
  return out
end

local function keys_of(rows)
  local t = {}
  for i = 1, #rows do t[i] = rows[i].k end
  return t
end

-- (each section in its own function, so its data is garbage once it ends:
-- dead locals of a main chunk stay referenced from its stack)
local function timings()
bench.title(("merge of k sorted buckets, %d rows, 24-byte keys"):format(N))
bench.table { "k", "page", "otskit ns/row", "binaryheap ns/row", "table.sort ns/row",
  "vs heap", "vs sort", "C limit ns/row", "C Mrows/s", "C ingest ns/row", "C merge ns/row",
  "otskit / C", "merge.read ns/row" }
-- quick: k = 16 and k = 64 at one page size each
local CONFIGS = bench.quick and { { 16, 100 }, { 64, 1000 } } or { { 16, 100 }, { 16, 1000 }, { 64, 100 }, { 64, 1000 } }
for _, kp in ipairs(ONLY_MEM and {} or CONFIGS) do
  local k, page = kp[1], kp[2]
  do
    local buckets, keys, batches = dataset(k, page)
    local want = keys_of(run_sort(k, batches))
    bench.same(want, keys_of(run_otskit(k, batches)), "otskit vs sort")
    bench.same(want, keys_of(run_heap(k, batches)), "binaryheap vs sort")
    bench.same(want, keys_of(run_read(k, buckets, page)), "merge.read vs sort")
    local h = B.merge_keys(keys)
    local cnt, order = h:run(page, true)
    assert(cnt == N)
    bench.same(want, order, "C loser tree vs sort")
    assert(h:run(page, false, "ingest") == N)
    local name = ("k=%d page=%d"):format(k, page)
    -- the Lua-level merges take turns; the C loop and its ingest part too
    -- (collector stopped while timed: a repetition allocates a few MB at
    -- most, and LuaJIT's GC steps made the spread of these 4x wide)
    local r = bench.run { name = name, unit = "ns/row", units = N, gc = "stop",
      variants = { { "otskit", function() run_otskit(k, batches) end },
                   { "binaryheap", function() run_heap(k, batches) end },
                   { "table.sort", function() run_sort(k, batches) end },
                   { "merge.read", function() run_read(k, buckets, page) end } },
      ratios = { { "otskit", "binaryheap" }, { "otskit", "table.sort" } } }
    local c = bench.run { name = name .. " C", unit = "ns/row", units = N, gc = "stop",
      variants = { { "loser tree", function() h:run(page) end },
                   { "ingest", function() h:run(page, false, "ingest") end } }, ratios = false }
    local t_c, t_in = c["loser tree"], c.ingest
    bench.row(k, page, r.otskit, r.binaryheap, r["table.sort"],
      r.ratio["otskit vs binaryheap"], r.ratio["otskit vs table.sort"],
      t_c, 1e3 / t_c.median, t_in, t_c.median - t_in.median, ("%.2fx"):format(r.otskit.median / t_c.median),
      r["merge.read"])
  end
end
io.write("\nMedian ±half the IQR of interleaved repetitions (otskit, binaryheap, table.sort and\n",
  "merge.read take turns; the C loop and its ingest part too); \"vs heap\"/\"vs sort\": time of the\n",
  "peer / time of otskit per round. C merge = C limit - C ingest; otskit / C = ratio of medians.\n")

-- the same rows through the binding with nothing to merge (k = 1: every
-- pull emits a whole batch): what moving rows in and out of the C merge
-- through the Lua API costs, the part of the Lua-level time the merge
-- algorithm cannot reduce
bench.title(("the binding alone: k = 1, %d rows, 24-byte keys"):format(N))
bench.table { "page", "otskit k=1 ns/row", "C k=1 ns/row", "binding I/O ns/row (Lua-level - C)" }
for _, page in ipairs(ONLY_MEM and {} or bench.quick and { 1000 } or { 100, 1000 }) do
  local _, keys, batches = dataset(1, page)
  bench.same(keys[1], keys_of(run_otskit(1, batches)), "k=1 order")
  local h = B.merge_keys(keys)
  local r = bench.run { name = ("k=1 page=%d"):format(page), unit = "ns/row", units = N, gc = "stop",
    variants = { { "otskit", function() run_otskit(1, batches) end }, { "C", function() h:run(page) end } },
    ratios = false }
  bench.row(page, r.otskit, r.C, r.otskit.median - r.C.median)
end

end

-- Peak Lua memory of a 1 M-row merged read: 16 buckets generated on the
-- fly, read through merge.read in pages of 1000 rows; each page is
-- consumed and dropped, as a gateway streaming the read would.
local function memory()
  local M = bench.quick and 100000 or 1000000
  local k, page = 16, 1000
  local per = M / k
  local function keyat(i, j) return ("%024d"):format(j * k + i - 1) end
  local peak, live_peak, calls = 0, 0, 0
  local function fetch(_, after, want, i)
    local j = 0
    if type(after) == "number" then j = after
    elseif after then
      j = math.max(0, math.floor((tonumber(after.key) - (i - 1)) / k) - 1)
      while j < per and (keyat(i, j) < after.key or (keyat(i, j) == after.key and not after.inclusive)) do j = j + 1 end
    end
    local rows = {}
    local e = math.min(per, j + want) - 1
    for x = j, e do rows[#rows + 1] = { k = keyat(i, x), v = "payload" } end
    calls = calls + 1
    if calls % 64 == 0 then
      collectgarbage("collect")
      live_peak = math.max(live_peak, collectgarbage("count"))
    end
    peak = math.max(peak, collectgarbage("count"))
    return rows, e + 1 < per and e + 1 or nil
  end
  -- full collections until the heap stops shrinking: objects with
  -- finalizers go in two cycles, and Lua 5.4 halves an oversized string
  -- table once per cycle
  local function settle()
    local c = collectgarbage("count") + 1
    while collectgarbage("count") < c do
      c = collectgarbage("count")
      collectgarbage("collect")
    end
  end
  -- the size of one fetched page of rows, measured the same way
  settle()
  local before = collectgarbage("count")
  local one = { fetch(nil, nil, page, 1) }
  collectgarbage("collect")
  local page_kib = collectgarbage("count") - before
  one = nil
  for _, first in ipairs { false, page } do
    peak, live_peak, calls = 0, 0, 0
    settle()
    local base = collectgarbage("count")
    local n, cursor, last = 0, nil, ""
    repeat
      local rows, c = assert(merge.read { sources = k, fetch = fetch, key = "k", limit = page,
        cursor = cursor, first_rows = first or nil })
      for j = 1, #rows do assert(rows[j].k > last); last = rows[j].k end
      n = n + #rows
      cursor = c
    until not cursor
    assert(n == M and one == nil)
    -- an exact value on Lua 5.4 only: under LuaJIT it varies run to run
    if not jit then
      bench.value(("peak live Lua memory, %d-row merged read, first_rows=%s"):format(M, first and tostring(first) or "default"),
        "KiB", "lower", math.floor(live_peak - base + 0.5))
    end
    io.write(("\nPeak Lua memory of a %d-row merged read (k = %d, pages of %d rows, first_rows = %s, " ..
      "each page dropped after use): live data at most %.0f KiB above the baseline (sampled after " ..
      "a full GC every 64 fetches); %.0f KiB with garbage (incremental GC). One fetched page of " ..
      "rows is %.0f KiB, so k pages + the output page = %.0f KiB.\n"):format(M, k, page,
      first and tostring(first) or "default", live_peak - base, peak - base, page_kib,
      (k + 1) * page_kib))
  end
end

timings()
if bench.first_process() then memory() end -- exact values: the same in every process
