-- otskit.analyze.diagnose, the index causes, on generated designs whose
-- truth is known by construction: a table of random size with attribute
-- columns a, b, c (random cardinalities), queried by a (and by b) through
--   * a filter scan of the table (index_missing for each query kind, naming
--     the filtered column): filtered in Lua with the column declared by the
--     query item, or by a read filter, or by SQL (SELECT ... WHERE), the
--     column then read from the request itself,
--   * global indexes on the queried columns (no finding; index_visibility
--     with the delay the store is set to: declared, or measured by polling
--     the query after a write),
--   * the primary key, with 2-4 global indexes nobody queries
--     (index_write_amplification naming exactly those indexes),
--   * one index queried and others not (index_write_amplification naming
--     the unused ones, the used one with the query kind that read it).
local analyze = require "otskit.analyze"
local diagnose = require "otskit.analyze.diagnose"
local sim = require "otskit.analyze.sim"
local store = require "otskit.store"
local json = require "otskit.analyze.json"
local cjson = require "cjson"

local QUICK = os.getenv("OTSKIT_QUICK") == "1"
local INF_MIN, INF_MAX = store.INF_MIN, store.INF_MAX
local COLS = { "a", "b", "c" }

-- every store request retried as the patterns retry theirs (all idempotent here)
local IDEMPOTENT = { idempotent = true }

local function causes(findings)
  local out = {}
  for _, f in ipairs(findings) do out[#out + 1] = f.cause end
  table.sort(out)
  return out
end

-- the distinct causes (index_missing comes once per scanned query kind)
local function cause_set(findings)
  local out, seen = {}, {}
  for _, c in ipairs(causes(findings)) do if not seen[c] then seen[c] = true; out[#out + 1] = c end end
  return out
end

local function make_table(env, indexed, delay, sql)
  assert(env.store:create_table { name = "t", primary_key = { { "id", "STRING" } },
    defined_columns = { { "a", "INTEGER" }, { "b", "INTEGER" }, { "c", "INTEGER" } } })
  if sql then assert(env.store:sql("CREATE TABLE t (id VARCHAR(64), a BIGINT, b BIGINT, c BIGINT, PRIMARY KEY (id))")) end
  if delay and env.store.set_index_delay then env.store:set_index_delay(delay) end
  for _, col in ipairs(indexed) do
    assert(env.store:create_index { table = "t", index_meta = { name = "t_by_" .. col, primary_key = { col } } })
  end
end

-- the rows whose col is value, by a scan of the table: filtered here
-- (how = "lua"), by a read filter ("filter") or by SQL ("sql")
local function scan(env, col, value, how)
  if how == "sql" then
    local res = env.store:sql(("SELECT id, %s FROM t WHERE %s = %d"):format(col, col, value))
    return res and res.rows
  end
  local found, start = {}, { INF_MIN }
  local filter = how == "filter" and { column = col, comparator = "EQUAL", value = value } or nil
  repeat
    local page = sim.call(env, "get_range", { table = "t", start = start, stop = { INF_MAX }, filter = filter },
      "GetRange", IDEMPOTENT)
    if not page then return nil end
    for _, row in ipairs(page.rows) do if row.columns[col] == value then found[#found + 1] = row end end
    start = page.next_start_primary_key
  until start == nil
  return found
end

local function via_index(env, col, value)
  local page = sim.call(env, "get_range", { table = "t_by_" .. col, start = { value, INF_MIN }, stop = { value, INF_MAX } },
    "GetRange", IDEMPOTENT)
  return page and page.rows
end

local SHAPES = { "filter", "indexed", "unused", "partly" }

-- gen(r, n) -> { scenario, truth = sorted causes, shape, unused (sorted index names), delay }
local function gen(r, n)
  local shape = SHAPES[(n - 1) % #SHAPES + 1]
  local N = r.int(300, 700)
  local card = { a = r.int(10, 40), b = r.int(10, 40), c = r.int(5, 20) }
  local queried = r.int(0, 1) == 1 and { "a", "b" } or { "a" }
  -- every other indexed design has a delay (the store's eventually consistent
  -- global index), in 10 ms steps (the probe's); every other of those
  -- measures it (a report polling the query after a write), the rest declare it
  local delay = (shape == "indexed" and (n - 2) % 8 == 0) and r.int(1, 5) / 100 or nil
  local measured = delay ~= nil and (n - 2) % 16 == 0
  -- how a filter design scans: in Lua (the item declares the column), by
  -- a read filter or by SQL (the column read from the request)
  local how = ({ "lua", "filter", "sql" })[math.floor((n - 1) / #SHAPES) % 3 + 1]
  local indexed, truth, unused = {}, {}, {}
  if shape == "indexed" then
    indexed = queried
    if delay then truth[#truth + 1] = "index_visibility" end
  elseif shape == "filter" then
    truth[#truth + 1] = "index_missing"
    truth[#truth + 1] = "scan_amplification"   -- the whole table read per query, >= 10 rows per row kept
  elseif shape == "unused" then
    local k = r.int(2, 3)
    for i = 1, k do indexed[i] = COLS[i] end
    for i = 1, k do unused[i] = "t_by_" .. COLS[i] end
    truth[#truth + 1] = "index_write_amplification"
  else -- partly: the first queried column through its index, two others unused
    indexed = { "a", "b", "c" }
    queried = { "a" }
    unused = { "t_by_b", "t_by_c" }
    truth[#truth + 1] = "index_write_amplification"
  end
  table.sort(truth)
  local design = { name = shape, label = shape,
    setup = function(env) make_table(env, indexed, delay, shape == "filter" and how == "sql"); return { env = env } end,
    write = function(st, it)
      return sim.call(st.env, "put_row", { table = "t", primary_key = { it.id }, columns = { a = it.a, b = it.b, c = it.c } },
        "PutRow", IDEMPOTENT)
    end,
    query = function(st, q)
      if q.col == "id" then
        local res = sim.call(st.env, "get_row", { table = "t", primary_key = { q.value } }, "GetRow", IDEMPOTENT)
        return res and (res.row and { res.row } or {})
      end
      if shape == "filter" then return scan(st.env, q.col, q.value, how) end
      return via_index(st.env, q.col, q.value)
    end }
  if measured then
    design.report = function(st, env)
      assert(design.write(st, { id = "fresh", a = 1000, b = 1000, c = 1000 }))
      return { ["ms until a write is visible"] = env.visible(function()
        return #assert(design.query(st, { col = queried[1], value = 1000 })) > 0
      end) }
    end
  end
  local sc = { name = "gen" .. n, ops = N, rate = 10,   -- well under a partition's capacity: no partition cause
    queries = 6, seed = r.int(1, 1000000),
    item = function(i, rr)
      return { id = ("id%05d"):format(i), a = rr.int(1, card.a), b = rr.int(1, card.b), c = rr.int(1, card.c) }
    end,
    query_item = function(q, rr)
      if shape == "unused" then return { kind = "by id", col = "id", value = ("id%05d"):format(rr.int(1, N)) } end
      local col = queried[(q - 1) % #queried + 1]
      return { kind = "by " .. col, col = col, value = rr.int(1, card[col]),
               columns = (shape ~= "filter" or how == "lua") and { col } or nil }
    end,
    designs = { design } }
  table.sort(unused)
  return { scenario = sc, truth = truth, shape = shape, unused = unused, delay = delay, queried = queried,
           measured = measured, how = how,
           what = ("%s%s, %d rows, queried by %s%s"):format(shape, shape == "filter" and (" (" .. how .. ")") or "", N,
             table.concat(queried, "+"), delay and (", delay %g s, %s"):format(delay, measured and "measured" or "declared") or "") }
end

describe("otskit.analyze.diagnose: index causes on generated designs", function()
  it("names exactly the index causes each design was built with, with their evidence", function()
    local r = analyze.rng(tonumber(os.getenv("OTSKIT_SEED") or "") or 2929)
    local n = QUICK and 12 or 24   -- every shape, every way of scanning, both kinds of delay
    local seen = {}
    for c = 1, n do
      local case = gen(r, c)
      local res = analyze.run(case.scenario)
      local d = res.designs[1]
      local lines = {}
      for _, f in ipairs(d.findings) do lines[#lines + 1] = f.cause .. ": " .. f.text end
      local msg = ("case %d (%s): want {%s}\n%s"):format(c, case.what, table.concat(case.truth, ", "),
        table.concat(lines, "\n"))
      assert.are.same(case.truth, cause_set(d.findings), msg)
      assert.are.equal(0, d.metrics.failed_ops, msg)
      if #case.truth == 0 then
        assert.are.same({}, d.findings, msg)      -- a design without a problem gets no finding
        seen.healthy = true
      end
      for _, f in ipairs(d.findings) do
        seen[f.cause] = true
        if f.cause == "index_missing" then seen["index_missing " .. case.how] = true end
        if f.cause == "index_visibility" then seen["visibility " .. f.evidence.indexes[1].source] = true end
        assert.is_string(f.text)
        local e = f.evidence
        if f.cause == "index_missing" then
          assert.are.equal(case.how == "sql" and "SQL (full scan)" or "filter (scan)", e.path, msg)
          assert.is_true(e.read_per_returned >= diagnose.SCAN, msg)
          assert.is_true(e.rows_read_per_query >= diagnose.SCAN_ROWS, msg)
          assert.matches("global secondary index", f.text, 1, true)
          assert.matches("search index", f.text, 1, true)
          -- the filtered column the query item declared is named
          assert.are.same({ e.kind:match("^by (%a+)$") }, e.columns)
          assert.matches("same columns (" .. e.columns[1] .. ")", f.text, 1, true)
        elseif f.cause == "index_write_amplification" then
          local names = {}
          for i, u in ipairs(e.unused) do names[i] = u.index; assert.is_true(u.rows > 0) end
          table.sort(names)
          assert.are.same(case.unused, names, msg)
          assert.is_true(e.rows_kept_per_row >= diagnose.AMPLIFY, msg)
          if case.shape == "partly" then
            assert.are.same({ { index = "t_by_a", kind = "global index", queries = { "by a" } } }, e.used)
          else
            assert.are.same({}, e.used)
          end
        elseif f.cause == "index_visibility" then
          assert.are.equal(#case.queried, #e.indexes)
          for _, x in ipairs(e.indexes) do
            assert.are.equal(case.measured and "measured" or "declared", x.source)
            assert.is_true(math.abs(x.delay_ms - case.delay * 1000) < 1e-6, msg)
          end
        end
      end
      -- each index-missing finding names a query kind that was scanned
      local missing = 0
      for _, f in ipairs(d.findings) do if f.cause == "index_missing" then missing = missing + 1 end end
      if case.shape == "filter" then assert.are.equal(#case.queried, missing, msg) end
      -- the JSON document carries them
      local doc = cjson.decode(json.encode(json.document({ res })))
      local jc = {}
      for i, f in ipairs(doc.scenarios[1].designs[1].findings) do jc[i] = f.cause end
      table.sort(jc)
      assert.are.same(causes(d.findings), jc)
    end
    for _, cause in ipairs { "index_missing", "index_write_amplification", "index_visibility" } do
      assert.is_true(seen[cause] == true, "no generated design had " .. cause)
    end
    for _, how in ipairs { "lua", "filter", "sql" } do
      assert.is_true(seen["index_missing " .. how] == true, "no index_missing found on a scan by " .. how)
    end
    assert.is_true(seen["visibility measured"] and seen["visibility declared"], "both kinds of delay")
    assert.is_true(seen.healthy, "no generated design without a problem")
  end)

  it("reads the columns a request conditions on or sorts by", function()
    local columns = require "otskit.analyze.columns"
    assert.are.same({ "a", "b" }, columns.of("get_range", { filter = { logical = "AND", conditions = {
      { column = "a", comparator = "EQUAL", value = 1 },
      { logical = "NOT", conditions = { { column = "b", comparator = "EQUAL", value = 2 } } },
      { column = "a", comparator = "GREATER_THAN", value = 0 } } } }))
    assert.are.same({ "c" }, columns.of("batch_get_row", { tables = { { table = "t", filter = { column = "c" } } } }))
    assert.are.same({ "md5", "sha1", "size" }, columns.of("sql",
      "SELECT path, size FROM files WHERE md5 = 'a where b' AND `sha1` > 3 ORDER BY size DESC LIMIT 5"))
    assert.are.same({ "name", "city" }, columns.of("sql_query",
      { query = "select count(*) from t where lower(name) like 'a%' and t.city in ('x', 'y') group by z" }))
    assert.are.same({}, columns.of("sql", "CREATE TABLE files (path VARCHAR(9), PRIMARY KEY (path))"))
    assert.are.same({ "seller", "price", "at" }, columns.of("search", { query = { bool = { must = {
      { term = { field_name = "seller", term = "x" } }, { range = { field_name = "price", from = 1 } } } } },
      sort = { { field_sort = { field_name = "at", order = "DESC" } } } }))
    assert.are.same({}, columns.of("get_row", { table = "t", primary_key = { "x" } }))
    assert.are.same({}, columns.of("get_range", "not a request"))
  end)

  it("states no index cause for measures without the problem", function()
    local kinds = { { kind = "q", results_per_query = 10, paths = {
      { path = "filter (scan)", name = "t", rows_per_query = 49, requests_per_query = 1 } } } }
    -- under SCAN_ROWS rows per query: no index_missing
    assert.are.same({}, diagnose.indexes({ query_kinds = kinds, rows_kept_per_row = 1, extras = {} }, {}, {}))
    -- a global index read, no delay measured or declared: no visibility finding
    kinds[1].paths[1] = { path = "global index", name = "ix", rows_per_query = 10, requests_per_query = 1 }
    assert.are.same({}, diagnose.indexes({ query_kinds = kinds, rows_kept_per_row = 4, extras = {} },
      { { name = "ix", kind = "global index", table = "t", rows = 30 } }, { global = 0 }))
    -- measured 0 ms: none either; a measured delay wins over the declared one
    assert.are.same({}, diagnose.indexes({ query_kinds = kinds, rows_kept_per_row = 2,
      extras = { ["ms until a write is visible"] = 0 } }, {}, { global = 0.5 }))
    local f = diagnose.indexes({ query_kinds = kinds, rows_kept_per_row = 2,
      extras = { ["ms until a write is visible"] = 20 } }, {}, { global = 0.5 })
    assert.are.same({ "index_visibility" }, causes(f))
    assert.are.same({ { index = "ix", path = "global index", query = "q", delay_ms = 20, source = "measured" } },
      f[1].evidence.indexes)
    assert.matches("20 ms", f[1].text, 1, true)
    -- an unused index with few rows kept per row written: no amplification
    assert.are.same({}, diagnose.indexes({ query_kinds = kinds, rows_kept_per_row = 2.5, extras = {} },
      { { name = "other", kind = "global index", table = "t", rows = 30 } }, {}))
  end)
  it("sim.visible: 0 when the first read sees the write, else timed from o.since when given", function()
    for _ = 1, 50 do
      local now, due = math.random(0, 1000) / 10, math.random(1, 300) / 100
      local since = now - math.random(0, 50) / 100      -- the write took that long to answer
      local o = { now = function() return now end, set_time = function(t) now = t end }
      local start = now
      local function probe() return now >= start + due end
      local plain = sim.visible(probe, o)
      -- seen at the first probe at or past the due time, 10 ms steps
      assert.are.equal(math.floor(math.ceil(due / 0.01 - 1e-9) * 10 + 0.5), plain)
      now = start
      o.since = since
      local timed = sim.visible(probe, o)
      assert.is_true(math.abs(timed - (plain + (start - since) * 1000)) <= 1, ("%s vs %s"):format(timed, plain))
      now = start
      assert.are.equal(0, sim.visible(function() return true end, o))
    end
  end)
end)
