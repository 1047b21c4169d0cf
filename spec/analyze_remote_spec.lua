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
  it("creates the server's tables as the design asks: pre-split, prefixed, deleted at close", function()
    local store = require "otskit.store"
    local remote = require "otskit.analyze.remote"
    local c = serve.client(srv)
    local db = remote.new(assert(store.open{}), c, "otskit_rt_")
    assert(db:create_table{ name = "t", primary_key = {{"p", "STRING"}}, splits = { "g", "p" },
      partition = { split_rows = 100 } })   -- partition: the local store's own, not sent
    assert.same({ "g", "p" }, assert(c:describe_table{ name = "otskit_rt_t" }).shard_splits)
    db:close()
    assert.is_nil(c:describe_table{ name = "otskit_rt_t" })
  end)

  it("prefixes the run's table and index names in SQL text, not in string literals", function()
    local remote = require "otskit.analyze.remote"
    local self = { prefix = "p_", names = { files = true, files_by_md5 = true } }
    assert.are.equal("SELECT path FROM p_files WHERE md5 = 'files' AND `p_files`.size > 1 AND \"p_files_by_md5\" = 'it''s files'",
      remote._prefix_sql(self, "SELECT path FROM files WHERE md5 = 'files' AND `files`.size > 1 AND \"files_by_md5\" = 'it''s files'"))
    assert.are.equal("CREATE TABLE p_files (path VARCHAR(1024), files2 BIGINT, PRIMARY KEY (path))",
      remote._prefix_sql(self, "CREATE TABLE files (path VARCHAR(1024), files2 BIGINT, PRIMARY KEY (path))"))
  end)

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
