-- otskit analyze: the index choice. The demo's files and combos scenarios
-- (filter scan vs global indexes vs a search index on the same workload):
-- every design returns the same rows, the measures say which access path
-- each query took and what it cost (rows read, requests, rows kept per row
-- written, bytes, visibility delay), and the best practices' advice is
-- checked against them; advice the measures contradict is reported so.
local analyze = require "otskit.analyze"
local json = require "otskit.analyze.json"
local report = require "otskit.analyze.report"
local cjson = require "cjson"

local function scenario(name)
  for _, s in ipairs(require "otskit.analyze.scenarios") do if s.name == name then return s end end
  error("no scenario " .. name)
end

local function by_name(res)
  local t = {}
  for _, d in ipairs(res.designs) do t[d.name] = d end
  return t
end

local function kind(res, k)
  for _, q in ipairs(res.queries) do if q.kind == k then return q end end
end

describe("otskit analyze: the index choice", function()
  local files, combos
  setup(function()
    files = analyze.run(scenario("files"))
    combos = analyze.run(scenario("combos"))
  end)

  it("files by digest: a scan reads the table, an index one row; the costs of each index", function()
    local d = by_name(files)
    for _, n in ipairs { "filter", "global", "sql", "search" } do
      assert.are.equal(0, d[n].metrics.failed_ops)
      assert.are.equal(1, d[n].metrics.results_per_query)       -- every design finds the file
    end
    assert.are.equal(2000, d.filter.metrics.rows_per_query)
    assert.are.equal(2000, d.sql.metrics.rows_per_query)        -- SQL scans: the engine does not use the index here
    assert.are.equal(1, d.global.metrics.rows_per_query)
    assert.are.equal(1, d.search.metrics.rows_per_query)
    -- two global indexes keep two rows per row; one search index one
    assert.are.equal(1, d.filter.metrics.rows_kept_per_row)
    assert.are.equal(3, d.global.metrics.rows_kept_per_row)
    assert.are.equal(2, d.search.metrics.rows_kept_per_row)
    assert.is_true(d.global.metrics.index_bytes > d.search.metrics.index_bytes)
    assert.are.equal(0, d.filter.metrics.index_bytes)
    -- visibility, measured by polling each design's own query after a write
    -- (the scenario models the service: index_delay_ms 20, search_delay_ms 1000):
    -- at once, after the global index's delay, after the search index's
    local vis = "ms until a write is visible"
    assert.are.same({ 0, 20, 1000 }, { d.filter.metrics.extras[vis], d.global.metrics.extras[vis], d.search.metrics.extras[vis] })
    -- the access paths each query kind took
    local md5 = assert(kind(files, "a file by MD5"))
    local paths = {}
    for _, x in ipairs(md5.designs) do paths[x.design] = x.paths[1].path .. " " .. x.paths[1].name end
    assert.are.same({ filter = "filter (scan) files", global = "global index files_by_md5",
                      sql = "SQL (full scan) SELECT", search = "search index files_search" }, paths)
    table.sort(md5.tied)
    assert.are.same({ "global", "search" }, md5.tied)
    assert.are.equal("search", md5.best)                       -- fewer rows kept per row written
    -- the scans are flagged (an index is missing for each query kind); the
    -- indexed designs only get their indexes' visibility delays, as measured
    local function causes(x)
      local t = {}
      for i, f in ipairs(x.findings) do t[i] = f.cause end
      return t
    end
    assert.are.same({ "scan_amplification", "index_missing", "index_missing" }, causes(d.filter))
    assert.are.same({ "scan_amplification", "index_missing", "index_missing" }, causes(d.sql))
    assert.are.same({ "a file by MD5", "a file by SHA1" }, { d.sql.findings[2].evidence.kind, d.sql.findings[3].evidence.kind })
    -- the columns to index come from the SELECT's WHERE clause (the item declares none);
    -- the filter design filters in Lua: its requests name no column
    assert.are.same({ "md5" }, d.sql.findings[2].evidence.columns)
    assert.are.same({ "sha1" }, d.sql.findings[3].evidence.columns)
    assert.matches("same columns (sha1)", d.sql.findings[3].text, 1, true)
    assert.is_nil(d.filter.findings[2].evidence.columns)
    -- the rows carry the content's MD5 and SHA1 (otskit.hash), the queries find them
    local sha1 = assert(kind(files, "a file by SHA1"))
    for _, x in ipairs(sha1.designs) do assert.are.equal(1, x.results_per_query, x.design) end
    assert.are.same({ "index_visibility" }, causes(d.global))
    assert.are.same({ "index_visibility" }, causes(d.search))
    assert.are.same({ { index = "files_search", path = "search index", query = "a file by MD5", delay_ms = 1000,
      source = "measured" } }, d.search.findings[1].evidence.indexes)
    assert.are.equal(2, #d.global.findings[1].evidence.indexes)
    assert.are.equal(20, d.global.findings[1].evidence.indexes[1].delay_ms)
    -- the advice (a global index) and the measures agree
    assert.is_true(files.advice[1].agree)
    assert.matches("the measures agree", files.advice[1].text, 1, true)
  end)

  it("orders by any combination: one search index reads what an index per combination reads, at half the rows kept", function()
    local d = by_name(combos)
    local returned
    for _, q in ipairs(combos.queries) do
      local r = {}
      for _, x in ipairs(q.designs) do r[x.design] = x.results_per_query; assert.are.equal(0, x.failed) end
      -- every design answers every combination with the same rows
      assert.are.equal(r.percombo, r.onefilter, q.kind)
      assert.are.equal(r.percombo, r.search, q.kind)
      returned = true
      local rows = {}
      for _, x in ipairs(q.designs) do rows[x.design] = x.rows_per_query end
      assert.are.equal(rows.percombo, rows.search, q.kind)           -- both read exactly what they return
      assert.are.equal(r.search, rows.search, q.kind)
      if not q.kind:find("seller", 1, true) then
        assert.are.equal(3000, rows.onefilter, q.kind)               -- no seller: the filter scans the table
      end
    end
    assert.is_true(returned)
    assert.are.equal(6, #combos.queries)
    assert.are.equal(4, d.percombo.metrics.rows_kept_per_row)
    assert.are.equal(2, d.search.metrics.rows_kept_per_row)
    assert.is_true(combos.advice[1].agree)
    assert.are.equal("scan_amplification", d.onefilter.findings[1].cause)
    local text = table.concat(report.text(combos, 10), "\n")
    assert.matches('query "type": percombo: global index orders_by_type_price', text, 1, true)
    assert.matches("advice: for orders by any combination of seller, type and price the best practices advise search", text, 1, true)
  end)

  it("newest first and devices: the figures docs/analyze.md quotes, and the advice agrees", function()
    local newest = analyze.run(scenario("newest"))
    local d = by_name(newest)
    local function fig(x) local m = x.metrics return { m.rows_per_query, m.requests_per_query, m.failed_ops } end
    assert.are.same({ 100, 1, 1817 }, fig(d.tsfirst))
    assert.are.same({ 256, 16, 0 }, fig(d.buckets))
    assert.are.same({ 100, 1, 0 }, fig(d.search))
    assert.are.equal("monotonic_key", d.tsfirst.findings[1].cause)
    assert.are.equal("fanout", d.buckets.findings[1].cause)
    assert.are.equal(1, #d.search.findings)                   -- only its search index's delay
    assert.are.equal("index_visibility", d.search.findings[1].cause)
    assert.are.equal(1000, d.search.findings[1].evidence.indexes[1].delay_ms)
    assert.are.equal(1000, d.search.metrics.extras["ms until a write is visible"])
    assert.is_true(newest.advice[1].agree)
    -- the design that lost writes is not recommended, though it reads as little
    assert.are.equal("search", newest.queries[1].best)
    assert.matches("over the data left after 1817 of 3000 writes failed", newest.queries[1].text, 1, true)
    local devices = analyze.run(scenario("devices"))
    d = by_name(devices)
    assert.are.same({ 160, 11, 0 }, fig(d.metadata))
    assert.are.same({ 20, 1, 0 }, fig(d.alldata))
    assert.are.equal(("%.1f"):format(d.metadata.metrics.rows_kept_per_row), "1.1")
    assert.are.equal(("%.1f"):format(d.alldata.metrics.rows_kept_per_row), "1.9")
    assert.is_true(devices.advice[1].agree)
    assert.are.equal("alldata", devices.queries[1].best)       -- reads: the measures say what the advice costs
    assert.are.equal(20, devices.queries[1].designs[1].results_per_query)
    assert.are.equal(20, devices.queries[1].designs[2].results_per_query)
  end)

  it("measures the visibility delay the store is set to, whatever it is (no figure is built in)", function()
    local vis = "ms until a write is visible"
    local small = require("otskit.analyze.index_scenarios").build(0.1)
    local r = analyze.rng(tonumber(os.getenv("OTSKIT_SEED") or "") or 41)
    for round = 1, 2 do
      local gms, sms = r.int(1, 30) * 10, r.int(1, 30) * 10     -- multiples of the 10 ms probe step
      if round == 2 then gms, sms = 0, 0 end
      for _, sc in ipairs { small[1], small[4] } do            -- files, devices
        local copy = {}
        for k, v in pairs(sc) do copy[k] = v end
        copy.index_delay_ms, copy.search_delay_ms, copy.queries = gms, sms, 4
        local d = by_name(analyze.run(copy))
        local function visibility(x)
          for _, f in ipairs(x.findings) do if f.cause == "index_visibility" then return f end end
        end
        if sc.name == "files" then
          assert.are.same({ 0, gms, sms }, { d.filter.metrics.extras[vis], d.global.metrics.extras[vis],
                                             d.search.metrics.extras[vis] })
          if gms == 0 then
            assert.is_nil(visibility(d.global))
            assert.is_nil(visibility(d.search))
          else
            assert.are.equal(gms, visibility(d.global).evidence.indexes[1].delay_ms)
            assert.are.equal(sms, visibility(d.search).evidence.indexes[1].delay_ms)
            assert.matches(("%d ms, measured"):format(sms), visibility(d.search).text, 1, true)
          end
        else
          -- readings beside a metadata search index are visible at once; in
          -- a search index over all readings after its delay
          assert.are.same({ 0, sms }, { d.metadata.metrics.extras[vis], d.alldata.metrics.extras[vis] })
          assert.is_nil(visibility(d.metadata))
        end
      end
    end
    assert.has_error(function()
      local copy = {}
      for k, v in pairs(small[1]) do copy[k] = v end
      copy.search_delay_ms = -1
      analyze.check(copy)
    end, "otskit.analyze: scenario files: search_delay_ms must be milliseconds in 0..3600000")
  end)

  it("reports advice the measures contradict, and refuses malformed advice", function()
    local sc = scenario("files")
    local copy = {}
    for k, v in pairs(sc) do copy[k] = v end
    copy.ops, copy.queries = 300, 4
    copy.advice = { { query = "one file by its MD5", design = "filter", why = "(wrong on purpose)",
                      by = { "rows_per_query", "ms until a write is visible" } } }
    local res = analyze.run(copy)
    assert.is_false(res.advice[1].agree)
    assert.matches("but global has rows read per query [%d.]+, search has rows read per query [%d.]+: the measures do not agree",
      res.advice[1].text)
    copy.advice = { { query = "x", design = "nope", why = "y", by = { "rows_per_query" } } }
    assert.has_error(function() analyze.check(copy) end)
    copy.advice = { { query = "x", design = "filter", why = "y", by = {} } }
    assert.has_error(function() analyze.check(copy) end)
    copy.advice = { { query = "x", design = "filter", why = "y", by = { "no such measure" } } }
    assert.has_error(function() analyze.run(copy) end, "otskit.analyze: scenario files: advice measure 'no such measure' is not a number for design filter")
  end)

  it("the JSON document carries the per-query choice and the advice", function()
    local doc = cjson.decode(json.encode(json.document({ files, combos })))
    local f = doc.scenarios[1]
    assert.are.equal("files", f.name)
    assert.are.equal(true, f.advice[1].agree)
    assert.are.equal("global", f.advice[1].design)
    assert.are.equal(2, #f.queries)
    assert.are.equal("a file by MD5", f.queries[1].kind)
    assert.are.equal("filter (scan)", f.queries[1].designs[1].paths[1].path)
    assert.are.equal(3, f.designs[2].measures.rows_kept_per_row)
    assert.are.equal("SQL (full scan)", f.queries[1].designs[3].paths[1].path)
    assert.are.equal(6, #doc.scenarios[2].queries)
  end)
end)
