--- otskit.analyze.diagnose -- why a design's run went wrong, from what the
-- meter measured (otskit.analyze.meter), never from the design's name or
-- shape. A finding is { cause, text, evidence }: cause one of
-- monotonic_key, few_partitions, hot_key, shared_bucket, errors,
-- scan_amplification, fanout, index_missing, index_write_amplification,
-- index_visibility; evidence the numbers the text states. A
-- design whose run shows no problem gets no finding.
--
-- Partition causes need throttling: a partition asked for more rows in a
-- second than `capacity` (a "hot cell"). Each hot cell is classified by
-- the rows asked of it in that second:
--   * one partition-key value made >= SINGLE of them: no split can help
--     (a partition holds whole values). If that value was written in at
--     most BUCKET_SECS of the table's write seconds it is a time bucket
--     every writer of the moment shares (shared_bucket: a timestamp, a
--     day, ts mod N); otherwise it is one hot value (hot_key).
--   * several values: if >= TAIL of the table's new rows landed at its
--     current end (a partition key >= every one written before), the keys
--     grow with time and the end partition takes them all, however the
--     table is split (monotonic_key); otherwise the keys are spread and
--     the table simply had too few partitions for the rate (few_partitions:
--     pre-split, with split points at the quantiles of the keys written).
-- A cause is stated when it explains >= MIN_CAUSE of a table's throttled
-- rows and the table throttled >= MIN_REFUSED of the rows asked of it
-- (a lone burst is not a design problem).
local key = require "otskit.key"

local diagnose = {
  SINGLE = 0.75, BUCKET_SECS = 0.5, TAIL = 0.5, MIN_REFUSED = 0.01, MIN_CAUSE = 0.2,
  FANOUT = 4,        -- key ranges opened per query
  SCAN = 5,          -- rows read per row returned ...
  SCAN_ROWS = 50,    -- ... with at least this many rows read per query
  AMPLIFY = 3,       -- rows kept per row written, with an index no query used
  HEADROOM = 2,      -- pre-split so the peak rate fills 1 / HEADROOM of the partitions' capacity
}

diagnose.CAUSES = { "monotonic_key", "few_partitions", "hot_key", "shared_bucket", "errors",
                    "scan_amplification", "fanout", "index_missing", "index_write_amplification",
                    "index_visibility" }

local function table_of(id) return id:match("^(.*)#[^#]*$") or id end

-- a total order on partition-key values (numbers before strings)
local function before(a, b)
  local ta, tb = type(a), type(b)
  if ta ~= tb then return ta == "number" end
  if ta == "number" or ta == "string" then return a < b end
  return tostring(a) < tostring(b)
end

local function pct(x) return math.floor(100 * x + 0.5) end

local function show(v)
  if type(v) == "string" then return ("%q"):format(v) end
  return ("%.17g"):format(v)
end

-- what the workload asked of a cell: its first attempts by value (the
-- rows new in that second, retries aside), or every attempt when the
-- second held retries only
local function asked(c)
  if c.fn > 0 then return c.fvals, c.fn, c.fnv end
  return c.vals, c.n, c.nv
end

-- the value that made the most of a cell's new rows (ties: the lowest)
local function top_value(c)
  local vals = asked(c)
  local best, bn = nil, -1
  for v, n in pairs(vals) do
    if n > bn or (n == bn and before(v, best)) then best, bn = v, n end
  end
  return best, math.max(bn, 0)
end

local function range_of(c)
  local vals, _, nv = asked(c)
  local lo, hi = nil, nil
  for v in pairs(vals) do
    if lo == nil or before(v, lo) then lo = v end
    if hi == nil or before(hi, v) then hi = v end
  end
  return lo, hi, nv
end

--- diagnose.split_points(ts, n) -> up to n - 1 partition-key values that
-- cut the rows written to a table (ts: meter.tstats[table]) into n parts
-- of about equal rows, in key order.
function diagnose.split_points(ts, n)
  local list, total = {}, 0
  for v, s in pairs(ts.vals) do list[#list + 1] = { v = v, rows = s.rows, packed = s.packed }; total = total + s.rows end
  table.sort(list, function(a, b) return key.compare(a.packed, b.packed) < 0 end)
  local out, cum, k = {}, 0, 1
  for i, e in ipairs(list) do
    if i > 1 and k < n and cum >= k * total / n then
      out[#out + 1] = e.v
      while k < n and cum >= k * total / n do k = k + 1 end
    end
    cum = cum + e.rows
  end
  return out
end

-- the partitions a table had in second s (the meter's birth record)
local function parts_at(m, name, s)
  local n = 0
  for id, w in pairs(m.born) do
    if table_of(id) == name and w * m.window <= s then n = n + 1 end
  end
  return math.max(n, 1)
end

local function peak(t)
  local p = 0
  for _, n in pairs(t) do if n > p then p = n end end
  return p
end

-- classify one hot cell: cause, and what it measured
local function classify(m, name, c)
  local ts = m.tstats[name]
  local v, vn = top_value(c)
  local _, n = asked(c)
  if v ~= nil and vn >= diagnose.SINGLE * n then
    local vs = ts and ts.vals[v]
    local frac = (vs and ts.nsecs > 0) and vs.secs / ts.nsecs or 1
    return frac <= diagnose.BUCKET_SECS and "shared_bucket" or "hot_key", v, vn
  end
  local tail = ts and ts.first > 1 and ts.tail / (ts.first - 1) or 0
  return tail >= diagnose.TAIL and "monotonic_key" or "few_partitions", v, vn
end

local TEXT = {}

function TEXT.monotonic_key(e)
  return ("table %s: %d%% of the new rows landed at the table's current end (a partition key >= every one "
    .. "written before): the keys grow with time, so whichever partition holds the end takes every write. "
    .. "In second %d partition %s was asked for %d new rows (%d attempts with retries; capacity %d per second) "
    .. "over %d neighbouring values %s .. %s. Splitting cannot help (the next writes land past any split point): start the key "
    .. "with a hash of it (a hash prefix) or with hash(id) mod N.")
    :format(e.table, pct(e.tail_share), e.second, e.partition, e.new_rows, e.attempts, e.capacity, e.values,
      show(e.low), show(e.high))
end

function TEXT.few_partitions(e)
  local sp = {}
  for i, v in ipairs(e.split_points) do sp[i] = show(v) end
  return ("table %s was created with %d partition%s and asked for up to %d new rows per second, spread over "
    .. "the key space (%d distinct partition keys %s .. %s in one partition in second %d; only %d%% of new rows "
    .. "landed at the table's end). A partition takes %d rows per second, so it throttled until the store "
    .. "split it (%d partition%s in second %d). Pre-split it into %d partitions: create_table{ splits = { %s } }.")
    :format(e.table, e.initial_partitions, e.initial_partitions == 1 and "" or "s", e.peak_rate, e.values,
      show(e.low), show(e.high), e.second, pct(e.tail_share), e.capacity, e.partitions,
      e.partitions == 1 and "" or "s", e.second, e.partitions_needed, table.concat(sp, ", "))
end

function TEXT.hot_key(e)
  return ("table %s: one partition-key value, %s, made %d%% of the new rows asked of partition %s in second %d "
    .. "(%d of %d; %d attempts with retries, capacity %d per second), and %d%% of all rows written to the "
    .. "table, in %d of %d seconds. "
    .. "A partition holds whole partition-key values, so no split can spread it: spread the value "
    .. "(a suffix: %s#0 .. %s#N-1, read back by merging) or its traffic (sharded counters, a cache).")
    :format(e.table, show(e.value), pct(e.share_of_partition), e.partition, e.second, e.value_rows,
      e.new_rows, e.attempts, e.capacity, pct(e.share_of_table), e.seconds_written, e.seconds, tostring(e.value), tostring(e.value))
end

function TEXT.shared_bucket(e)
  return ("table %s: in second %d, %d of the %d new rows asked of the table (%d%%) shared one partition-key "
    .. "value, %s (capacity %d per second), and that value was written in only %d of %d seconds: a time "
    .. "bucket (a timestamp, a day, ts mod N) that every writer of the moment shares. Start the key with "
    .. "something that differs between writers at the same moment, e.g. hash(device) mod N "
    .. "(patterns.timeseries: by = \"id\").")
    :format(e.table, e.second, e.value_rows, e.table_new_rows, pct(e.share_of_second), show(e.value),
      e.capacity, e.seconds_written, e.seconds)
end

-- the partition findings of one table
local function table_findings(m, name, capacity, cells)
  local ts = m.tstats[name] or { first = 0, tail = 0, vals = {}, nsecs = 0, offered = {}, rows = 0 }
  -- (vals, nsecs, offered: first attempts, the keys as the workload writes them)
  local attempts, refused = 0, 0
  for _, per in pairs(m.demand) do
    for id, c in pairs(per) do
      if table_of(id) == name then attempts, refused = attempts + c.n, refused + c.refused end
    end
  end
  if refused == 0 or refused < diagnose.MIN_REFUSED * attempts then return {} end
  local by = {}
  for _, cell in ipairs(cells) do
    local cause, v, vn = classify(m, name, cell.c)
    local b = by[cause]
    if not b then b = { refused = 0, cells = 0 }; by[cause] = b end
    b.refused, b.cells = b.refused + cell.c.refused, b.cells + 1
    if not b.worst or cell.c.refused > b.worst.c.refused then b.worst, b.v, b.vn = cell, v, vn end
  end
  local tail = ts.first > 1 and ts.tail / (ts.first - 1) or 0
  local out = {}
  for _, cause in ipairs(diagnose.CAUSES) do
    local b = by[cause]
    if b and b.refused >= diagnose.MIN_CAUSE * refused then
      local w, c = b.worst, b.worst.c
      local lo, hi, nv = range_of(c)
      local _, fresh = asked(c)
      local e = { table = name, second = w.s, partition = w.id, attempts = c.n, new_rows = fresh,
                  refused_in_second = c.refused,
                  capacity = capacity, throttled = refused, asked = attempts, hot_seconds = b.cells,
                  explains = b.refused / refused }
      if cause == "monotonic_key" or cause == "few_partitions" then
        e.tail_share, e.values, e.low, e.high = tail, nv, lo, hi
      end
      if cause == "few_partitions" then
        e.initial_partitions = ts.initial or 1
        e.partitions = parts_at(m, name, w.s)
        e.peak_rate = peak(ts.offered)
        local need = math.max(2, math.ceil(diagnose.HEADROOM * e.peak_rate / capacity))
        e.split_points = diagnose.split_points(ts, need)
        e.partitions_needed = #e.split_points + 1
      elseif cause == "hot_key" or cause == "shared_bucket" then
        local vs = ts.vals[b.v] or { rows = 0, secs = 0 }
        e.value, e.value_rows = b.v, b.vn
        e.share_of_partition = b.vn / fresh
        e.share_of_table = ts.first > 0 and vs.rows / ts.first or 0
        e.seconds_written, e.seconds = vs.secs, ts.nsecs
        if cause == "shared_bucket" then
          local tot = 0
          for id, cc in pairs(m.demand[w.s]) do if table_of(id) == name then tot = tot + cc.fn end end
          e.table_new_rows = tot
          e.share_of_second = tot > 0 and b.vn / tot or 0
        end
      end
      out[#out + 1] = { cause = cause, text = TEXT[cause](e), evidence = e }
    end
  end
  return out
end

--- diagnose.partitions(m, capacity) -> findings: the partition causes of
-- every table the meter saw (tables in name order).
function diagnose.partitions(m, capacity)
  if not capacity then return {} end
  local cells = {}
  for s, per in pairs(m.demand) do
    for id, c in pairs(per) do
      if c.refused > 0 then
        local name = table_of(id)
        local l = cells[name]
        if not l then l = {}; cells[name] = l end
        l[#l + 1] = { s = s, id = id, c = c }
      end
    end
  end
  local names = {}
  for name, l in pairs(cells) do
    names[#names + 1] = name
    table.sort(l, function(a, b) if a.s ~= b.s then return a.s < b.s end return a.id < b.id end)
  end
  table.sort(names)
  local out = {}
  for _, name in ipairs(names) do
    for _, f in ipairs(table_findings(m, name, capacity, cells[name])) do out[#out + 1] = f end
  end
  return out
end

--- diagnose.errors(failures, ops, queries) -> findings: one per error code
-- that made an operation (or a query) fail for good, throttling aside.
-- failures: list of { code, message, operations, queries, store_answers }.
function diagnose.errors(failures, ops, queries)
  local out = {}
  for _, f in ipairs(failures) do
    local parts = {}
    if f.operations > 0 then parts[#parts + 1] = ("%d of %d operations"):format(f.operations, ops) end
    if f.queries > 0 then parts[#parts + 1] = ("%d of %d queries"):format(f.queries, queries) end
    local text
    if f.code == "(no code)" and f.message == "(no message)" then
      text = ("%s failed without an error code or message (the design's function returned nil)")
        :format(table.concat(parts, " and "))
    else
      text = ("%s failed with %s: %s"):format(table.concat(parts, " and "), f.code, f.message)
    end
    if f.store_answers > 0 then
      text = text .. (" (the store answered %s %d times)"):format(f.code, f.store_answers)
    end
    out[#out + 1] = { cause = "errors", text = text, evidence = { code = f.code, message = f.message,
      failed_operations = f.operations, failed_queries = f.queries, store_answers = f.store_answers } }
  end
  return out
end

--- diagnose.reads(metrics) -> findings: fan-out and scan amplification of
-- the queries (metrics: the per-query measures of analyze.run).
function diagnose.reads(mt)
  if (mt.queries or 0) == 0 then return {} end
  local e = { ranges_per_query = mt.ranges_per_query, requests_per_query = mt.requests_per_query,
              rows_read_per_query = mt.rows_per_query, rows_returned_per_query = mt.results_per_query }
  e.read_per_returned = mt.rows_per_query / math.max(mt.results_per_query, 1)
  local function num(x) return x == math.floor(x) and ("%d"):format(x) or ("%.1f"):format(x) end
  if mt.ranges_per_query >= diagnose.FANOUT then
    return { { cause = "fanout", evidence = e, text = ("each query opened %s key ranges (%s requests) and read %s rows "
      .. "to return %s: a read fans out over every bucket or table the key design spreads it across, each range "
      .. "a request reading up to the limit, most of it discarded by the merge. Use fewer buckets if the write "
      .. "rate allows, or keep this query to one key range."):format(num(e.ranges_per_query),
      num(e.requests_per_query), num(e.rows_read_per_query), num(e.rows_returned_per_query)) } }
  end
  if e.read_per_returned >= diagnose.SCAN and mt.rows_per_query >= diagnose.SCAN_ROWS then
    return { { cause = "scan_amplification", evidence = e, text = ("each query read %s rows to return %s (%s rows "
      .. "read per row returned): it filters on something the primary key does not lead with, so it reads past "
      .. "what it keeps. Put the queried column first in the key (or splice it into the partition key), or "
      .. "query it through an index."):format(num(e.rows_read_per_query), num(e.rows_returned_per_query),
      num(e.read_per_returned)) } }
  end
  return {}
end

local function num(x) return x == math.floor(x) and ("%d"):format(x) or ("%.1f"):format(x) end

--- diagnose.indexes(metrics, list, delays) -> findings: the index causes.
-- metrics: the per-design measures of analyze.run (query_kinds with their
-- access paths, rows_kept_per_row, extras); list: the design's indexes
-- ({ name, kind, table, rows }, meter:index_footprint().list); delays:
-- { global = s, search = s } the store's declared visibility delays (nil
-- or 0: none). Stated only from what was measured:
--   index_missing: a query kind read through a filter scan or an SQL full
--     scan, >= SCAN rows read per row returned and >= SCAN_ROWS per query;
--   index_write_amplification: rows kept per row written >= AMPLIFY and
--     some index no measured query read;
--   index_visibility: a query kind read through a global or search index
--     whose visibility delay (measured: the design's "ms until a write is
--     visible" measure; else declared) is not zero.
function diagnose.indexes(mt, list, delays)
  local out = {}
  local kinds = mt.query_kinds or {}
  for _, e in ipairs(kinds) do
    for _, p in ipairs(e.paths) do
      if (p.path == "filter (scan)" or p.path == "SQL (full scan)")
         and p.rows_per_query >= diagnose.SCAN * math.max(e.results_per_query, 1)
         and p.rows_per_query >= diagnose.SCAN_ROWS then
        local ev = { kind = e.kind, path = p.path, name = p.name, rows_read_per_query = p.rows_per_query,
                     rows_returned_per_query = e.results_per_query,
                     read_per_returned = p.rows_per_query / math.max(e.results_per_query, 1),
                     columns = e.columns }
        local cols = {}
        for i, c in ipairs(e.columns or {}) do cols[i] = tostring(c) end
        local on = #cols > 0 and (" (" .. table.concat(cols, ", ") .. ")") or ""
        out[#out + 1] = { cause = "index_missing", evidence = ev, text = ("query %q read %s rows per query by %s %s "
          .. "to return %s (%s rows read per row returned): no index answers it. If it always filters on the "
          .. "same columns%s, add a global secondary index keyed by them (covering the columns it reads); if "
          .. "it combines conditions freely, add a search index over them."):format(e.kind, num(p.rows_per_query),
          p.path, p.name, num(e.results_per_query), num(ev.read_per_returned), on) }
        break
      end
    end
  end
  -- which query kinds read each index
  local users = {}
  for _, e in ipairs(kinds) do
    for _, p in ipairs(e.paths) do
      if p.path:match("index$") then
        local u = users[p.name] or {}
        users[p.name] = u
        u[#u + 1] = e.kind
      end
    end
  end
  if (mt.rows_kept_per_row or 0) >= diagnose.AMPLIFY and #kinds > 0 then
    local unused, used, unused_rows = {}, {}, 0
    for _, ix in ipairs(list or {}) do
      if users[ix.name] then
        used[#used + 1] = { index = ix.name, kind = ix.kind, queries = users[ix.name] }
      else
        unused[#unused + 1] = { index = ix.name, kind = ix.kind, rows = ix.rows }
        unused_rows = unused_rows + ix.rows
      end
    end
    if #unused > 0 then
      local names, unames = {}, {}
      for i, u in ipairs(unused) do names[i] = ("%s %s (%d rows)"):format(u.kind, u.index, u.rows) end
      for i, u in ipairs(used) do unames[i] = ("%s (read by %s)"):format(u.index, table.concat(u.queries, ", ")) end
      out[#out + 1] = { cause = "index_write_amplification", evidence = { rows_kept_per_row = mt.rows_kept_per_row,
          unused = unused, used = used, unused_rows = unused_rows },
        text = ("each row written was kept %s times (table and indexes), and no measured query read %s; "
          .. "%s. Drop the indexes no query needs (each costs a write per row written and its storage).")
          :format(num(mt.rows_kept_per_row), table.concat(names, ", "),
            #unames > 0 and ("the indexes queried: " .. table.concat(unames, ", ")) or "no query read any index") }
    end
  end
  -- measured: a number of ms, or "over N" (not visible within N ms); a
  -- measure that failed ("not measured: ...") falls back to the declared
  local measured = mt.extras and mt.extras["ms until a write is visible"]
  if type(measured) ~= "number" and not (type(measured) == "string" and measured:match("^over %d+$")) then
    measured = nil
  end
  local seen, list_ev, parts = {}, {}, {}
  for _, e in ipairs(kinds) do
    for _, p in ipairs(e.paths) do
      local cls = p.path == "global index" and "global" or p.path == "search index" and "search" or nil
      if cls and not seen[p.name] then
        seen[p.name] = true
        local ms, how
        if measured ~= nil then ms, how = measured, "measured"
        elseif delays and (delays[cls] or 0) > 0 then ms, how = delays[cls] * 1000, "declared" end
        if ms ~= nil and ms ~= 0 then
          list_ev[#list_ev + 1] = { index = p.name, path = p.path, query = e.kind, delay_ms = ms, source = how }
          parts[#parts + 1] = ("%s %s (query %q): %s ms, %s"):format(p.path, p.name, e.kind,
            type(ms) == "number" and num(ms) or tostring(ms), how)
        end
      end
    end
  end
  if #list_ev > 0 then
    out[#out + 1] = { cause = "index_visibility", evidence = { indexes = list_ev },
      text = ("queries read through eventually consistent indexes, a write becoming visible to them only after "
        .. "a delay: %s. Readers must tolerate it, or read what must be current by primary key.")
        :format(table.concat(parts, "; ")) }
  end
  return out
end

return diagnose
