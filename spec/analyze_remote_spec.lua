-- `otskit analyze` / `demo` against a server (--endpoint): the designs
-- keep their data on `otskit serve` through otskit.client, and the
-- results equal those on the embedded store (the same workload, the
-- same answers, the same simulated partitions); the run's tables are
-- deleted from the server afterwards.
local analyze = require "otskit.analyze"
local scenarios = require "otskit.analyze.scenarios"
local serve = require "support.serve"

local srv
setup(function() srv = assert(serve.start{}) end)
teardown(function() if srv then srv.stop() end end)

local function by_name(n)
  for _, s in ipairs(scenarios) do if s.name == n then return s end end
end

describe("otskit analyze with a client", function()
  for _, name in ipairs({ "orders", "timeseries" }) do
    it(name .. ": the same results as on the embedded store", function()
      local sc = by_name(name)
      local here = analyze.run(sc)
      local c = serve.client(srv)
      local there = analyze.run(sc, { client = c })
      for i, d in ipairs(here.designs) do
        assert.same(d.metrics, there.designs[i].metrics)
      end
      local left = assert(c:list_table()).table_names
      for _, t in ipairs(left) do assert.is_nil(t:find("^otskit_" .. name)) end
    end)
  end
end)
