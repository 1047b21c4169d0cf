-- The demo's index scenarios (files, combos, newest, devices) against
-- `otskit serve` (--endpoint: otskit.client), started here with delayed
-- global (200 ms) and search (0.5 s) indexes: every measure, finding,
-- per-query recommendation and piece of advice equals the embedded
-- store's run of the same workload, except the visibility delays, which
-- are measured on the server's own indexes (real time) and so follow its
-- settings, not the scenario's model of the service (20 ms, 1 s). The
-- workloads are scaled down (index_scenarios.build) to keep the run short.
local analyze = require "otskit.analyze"
local index_scenarios = require "otskit.analyze.index_scenarios"
local serve = require "support.serve"

local QUICK = os.getenv("OTSKIT_QUICK") == "1"
local GLOBAL_MS, SEARCH_MS = 200, 500
local VIS = "ms until a write is visible"

local srv
setup(function()
  srv = assert(serve.start { faults = ("index_delay=%d,search_delay=%g"):format(GLOBAL_MS, SEARCH_MS / 1000) })
end)
teardown(function() if srv then srv.stop() end end)

-- a copy without the measures that depend on the clock (the visibility delay)
local function without_delay(v)
  if type(v) ~= "table" then return v end
  local o = {}
  for k, x in pairs(v) do
    if k ~= VIS and k ~= "delay_ms" then o[k] = without_delay(x) end
  end
  return o
end

local function causes(d)
  local t = {}
  for i, f in ipairs(d.findings) do t[i] = f.cause end
  return t
end

describe("the index scenarios against otskit serve", function()
  for _, sc in ipairs(index_scenarios.build(QUICK and 0.1 or 0.25)) do
    it(sc.name .. ": the same measures, findings, recommendations and advice; delays measured on the server", function()
      local here = analyze.run(sc)
      local c = serve.client(srv)
      local there = analyze.run(sc, { client = c })
      assert.are.equal(#here.designs, #there.designs)
      for i, d in ipairs(here.designs) do
        local t = there.designs[i]
        local what = sc.name .. "/" .. d.name
        assert.are.same(without_delay(d.metrics), without_delay(t.metrics), what)
        assert.are.same(d.errors, t.errors, what)
        assert.are.same(causes(d), causes(t), what)
        for j, f in ipairs(d.findings) do
          local g = t.findings[j]
          assert.are.same(without_delay(f.evidence), without_delay(g.evidence), what .. " " .. f.cause)
          if f.cause == "index_visibility" then
            -- measured on the server: its delays, not the model's
            for _, x in ipairs(g.evidence.indexes) do
              assert.are.equal("measured", x.source)
              local want = x.path == "search index" and SEARCH_MS or GLOBAL_MS
              -- timed from before the write to the answer of the read that
              -- saw it: never below the server's delay, however loaded the
              -- machine (its clock is read in whole ms: 1 ms of slack)
              assert.is_true(x.delay_ms >= want - 1 and x.delay_ms < want + 3000,
                ("%s: %s %s visible after %s ms (server delay %d ms)"):format(what, x.path, x.index, tostring(x.delay_ms), want))
            end
          else
            assert.are.equal(f.text, g.text, what)
          end
        end
        -- the in-process run measured the scenario's model of the service
        local ms = d.metrics.extras[VIS]
        if ms ~= nil then assert.is_number(ms, what) end
      end
      for j, q in ipairs(here.queries) do
        assert.are.equal(q.kind, there.queries[j].kind)
        assert.are.equal(q.best, there.queries[j].best, q.kind)
        assert.are.same(q.tied, there.queries[j].tied, q.kind)
        assert.are.equal(q.text, there.queries[j].text, q.kind)
      end
      for j, a in ipairs(here.advice) do
        assert.are.equal(a.agree, there.advice[j].agree)
        assert.are.equal(a.text, there.advice[j].text)
      end
      -- what the scenarios are about shows up in both runs
      local d = {}
      for _, x in ipairs(there.designs) do d[x.name] = x end
      if sc.name == "files" then
        assert.are.same({ "scan_amplification", "index_missing", "index_missing" }, causes(d.sql))
        assert.are.same({ "md5" }, d.sql.findings[2].evidence.columns)
        assert.are.same({ "index_visibility" }, causes(d.global))
        assert.are.same({ "index_visibility" }, causes(d.search))
      elseif sc.name == "devices" then
        assert.are.equal(0, d.metadata.metrics.extras[VIS])      -- unindexed readings: visible at once
        assert.is_true(d.alldata.metrics.extras[VIS] >= SEARCH_MS - 1)
      end
      -- the run's tables (and their indexes) are gone from the server
      for _, name in ipairs(assert(c:list_table()).table_names) do
        assert.is_nil(name:find("^otskit_" .. sc.name), name)
      end
    end)
  end
end)
