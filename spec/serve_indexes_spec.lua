-- Indexes and local transactions through `otskit serve` with several
-- workers on one durable data directory (--data): every request may land
-- on another worker (a new connection each time), and a restart keeps
-- what was committed, including an open transaction.
local serve = require "support.serve"
local store = require "otskit.store"

local INF_MIN, INF_MAX = store.INF_MIN, store.INF_MAX

describe("otskit serve: indexes and local transactions across workers", function()
  local srv
  after_each(function() if srv then srv.stop(); srv = nil end end)

  it("keeps indexes right and runs a transaction whose requests hit different workers", function()
    srv = assert(serve.start{ workers = 2, data = true })
    -- a fresh client per request: a new connection, any worker
    local function c() return serve.client(srv, { retry = false }) end
    assert(c():create_table{ name = "t", primary_key = { { "pk1", "INTEGER" }, { "pk2", "STRING" } },
      defined_columns = { { "c1", "INTEGER" } }, index_metas = { { name = "g", primary_key = { "c1" } } } })
    for i = 1, 20 do
      assert(c():put_row{ table = "t", primary_key = { { "pk1", i % 4 }, { "pk2", "r" .. i } }, columns = { c1 = i % 5 } })
    end
    local tx = assert(c():start_local_transaction{ table = "t", key = { { "pk1", 1 } } }).transaction_id
    for i = 1, 6 do
      assert(c():put_row{ table = "t", primary_key = { { "pk1", 1 }, { "pk2", "x" .. i } }, columns = { c1 = 9 },
        transaction_id = tx })
    end
    local _, _, code = c():put_row{ table = "t", primary_key = { { "pk1", 1 }, { "pk2", "y" } }, columns = {} }
    assert.equal("OTSRowOperationConflict", code)
    local r = assert(c():get_range{ table = "g", start = { { "c1", 9 }, { "pk1", INF_MIN }, { "pk2", INF_MIN } },
      stop = { { "c1", INF_MAX }, { "pk1", INF_MAX }, { "pk2", INF_MAX } } })
    assert.equal(0, #r.rows)
    assert(c():commit_transaction{ transaction_id = tx })
    r = assert(c():get_range{ table = "g", start = { { "c1", 9 }, { "pk1", INF_MIN }, { "pk2", INF_MIN } },
      stop = { { "c1", INF_MAX }, { "pk1", INF_MAX }, { "pk2", INF_MAX } } })
    assert.equal(6, #r.rows)
    local all = assert(c():get_range{ table = "g", start = { INF_MIN, INF_MIN, INF_MIN }, stop = { INF_MAX, INF_MAX, INF_MAX } })
    assert.equal(26, #all.rows)
    -- index metadata made by one worker is seen by the other
    assert(c():create_index{ table = "t", include_base_data = true, index_meta = { name = "l", primary_key = { "pk1", "c1" },
      index_type = "LOCAL" } })
    for _ = 1, 4 do assert.equal(2, #assert(c():describe_table{ name = "t" }).index_metas) end
    assert.equal(26, #assert(c():get_range{ table = "l", start = { INF_MIN, INF_MIN, INF_MIN },
      stop = { INF_MAX, INF_MAX, INF_MAX } }).rows)
  end)
  it("the index_delay fault delays global indexes only", function()
    local faults = require "otskit.server.faults"
    assert.equal(250, assert(faults.parse("index_delay=250")).index_delay)
    assert.is_nil(faults.parse("index_delay=-1"))
    assert.is_nil(faults.parse("index_delay=soon"))
    srv = assert(serve.start{ faults = "index_delay=600" })
    local c = serve.client(srv, { retry = false })
    assert(c:create_table{ name = "d", primary_key = { { "pk1", "INTEGER" } }, defined_columns = { { "c1", "INTEGER" } },
      index_metas = { { name = "dg", primary_key = { "c1" } }, { name = "dl", primary_key = { "pk1", "c1" }, index_type = "LOCAL" } } })
    assert(c:put_row{ table = "d", primary_key = { { "pk1", 1 } }, columns = { c1 = 7 } })
    local function count(name)
      return #assert(c:get_range{ table = name, start = { INF_MIN, INF_MIN }, stop = { INF_MAX, INF_MAX } }).rows
    end
    assert.equal(0, count("dg"))
    assert.equal(1, count("dl"))
    require("socket").sleep(0.8)
    assert.equal(1, count("dg"))
  end)
end)
