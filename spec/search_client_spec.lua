-- spec/search_client_spec.lua -- the search index through `otskit serve`
-- (2 workers, --data on disk) and otskit.client: the same rows, queries
-- and sorts give the embedded store's answers (rows, order, counts,
-- tokens page the same); errors keep their codes; the search_delay fault
-- delays visibility.
local serve = require "support.serve"
local store = require "otskit.store"
local helper = require "helper"

local FIELDS = {
  { field_name = "n", field_type = "LONG", enable_sort_and_agg = true },
  { field_name = "d", field_type = "DOUBLE", enable_sort_and_agg = true },
  { field_name = "k", field_type = "KEYWORD", enable_sort_and_agg = true },
  { field_name = "ka", field_type = "KEYWORD", is_array = true },
  { field_name = "txt", field_type = "TEXT", analyzer = "split", analyzer_parameter = { delimiter = "," } },
  { field_name = "fz", field_type = "TEXT", analyzer = "fuzzy", analyzer_parameter = { min_chars = 1, max_chars = 4 } },
  { field_name = "g", field_type = "GEO_POINT" },
  { field_name = "dt", field_type = "DATE", date_formats = { "yyyy-MM-dd HH:mm:ss" } },
  { field_name = "nest", field_type = "NESTED", field_schemas = { { field_name = "x", field_type = "LONG" } } },
}

local function ids(res)
  local o = {}
  for i, r in ipairs(res.rows) do o[i] = r.primary_key[1][2] .. "/" .. r.primary_key[2][2] end
  return table.concat(o, " ")
end

describe("search index through otskit serve and otskit.client", function()
  local srv, cl, db
  setup(function()
    srv = assert(serve.start{ workers = 2, data = true })
    cl = serve.client(srv)
    db = assert(store.open{})
  end)
  teardown(function()
    if srv then srv.stop() end
    if db then db:close() end
  end)

  it("answers as the embedded store does", function()
    local r = helper.rng(31)
    for _, s in ipairs({ cl, db }) do
      assert(s:create_table{ name = "st", primary_key = { { "p", "INTEGER" }, { "r", "STRING" } } })
    end
    local function row(i)
      local c = { n = r.int(0, 9), d = r.int(0, 40) / 8, k = "k" .. r.int(0, 5), ka = '["a","b' .. r.int(0, 2) .. '"]',
        txt = ({ "red,green", "blue", "red,blue,green" })[r.int(1, 3)], fz = "text " .. i,
        g = ("%d.5,%d.25"):format(r.int(-5, 5), r.int(-5, 5)), dt = ("2017-05-%02d 00:00:01"):format(r.int(1, 28)),
        nest = '[{"x":' .. r.int(0, 3) .. '},{"x":' .. r.int(0, 3) .. '}]' }
      if r.int(1, 5) == 1 then c.n = nil end
      return c
    end
    local rows = {}
    for i = 1, 40 do rows[i] = row(i) end
    for _, s in ipairs({ cl, db }) do
      for i = 1, 20 do assert(s:put_row{ table = "st", primary_key = { { "p", i }, { "r", "r" .. i % 2 } }, columns = rows[i] }) end
      assert(s:create_search_index{ table = "st", index = "ix", schema = { field_schemas = FIELDS,
        index_setting = { routing_fields = { "r" } } } })
      for i = 21, 40 do assert(s:put_row{ table = "st", primary_key = { { "p", i }, { "r", "r" .. i % 2 } }, columns = rows[i] }) end
      assert(s:delete_row{ table = "st", primary_key = { { "p", 3 }, { "r", "r1" } } })
    end
    local d1 = assert(cl:describe_search_index{ table = "st", index = "ix" })
    local d2 = assert(db:describe_search_index{ table = "st", index = "ix" })
    assert.equal(d2.row_count, d1.row_count)
    assert.equal("RUNNING", d1.index_status.status)
    assert.same(d2.schema, d1.schema)
    assert.same({ { table_name = "st", index_name = "ix" } }, assert(cl:list_search_index{ table = "st" }).indices)
    local queries = {
      { match_all = {} }, { term = { field_name = "k", term = "k1" } }, { terms = { field_name = "ka", terms = { "b1", "b2" } } },
      { range = { field_name = "n", from = 3, to = 7, include_lower = true } }, { range = { field_name = "d", from = 2.5 } },
      { prefix = { field_name = "k", prefix = "k" } }, { wildcard = { field_name = "k", value = "*3" } },
      { exists = { field_name = "n" } }, { match = { field_name = "txt", text = "red,blue", operator = "AND" } },
      { match_phrase = { field_name = "fz", text = "xt 1" } },
      { bool = { must = { { term = { field_name = "k", term = "k2" } } }, must_not = { { range = { field_name = "n", to = 2 } } },
        should = { { match = { field_name = "txt", text = "green" } } }, minimum_should_match = 0 } },
      { nested = { path = "nest", query = { term = { field_name = "nest.x", term = 2 } } } },
      { geo_distance = { field_name = "g", center_point = "0,0", distance = 400000 } },
      { geo_bounding_box = { field_name = "g", top_left = "3,-3", bottom_right = "-3,3" } },
      { geo_polygon = { field_name = "g", points = { "-5,-5", "5,-5", "0,5" } } },
      { const_score = { filter = { range = { field_name = "dt", from = "2017-05-10 00:00:00" } } } },
    }
    local sorts = { nil, { { field_sort = { field_name = "n", order = "DESC", missing_value = -1 } } },
      { { field_sort = { field_name = "k" } }, { pk_sort = { order = "DESC" } } },
      { { geo_distance_sort = { field_name = "g", points = { "1,1" } } } }, { { score_sort = {} } } }
    local nonempty = 0
    for _, q in ipairs(queries) do
      for si = 1, 5 do
        local req = { table = "st", index = "ix", query = q, sort = sorts[si], limit = 4, get_total_count = true,
          columns_to_get = { return_type = "RETURN_SPECIFIED", column_names = { "n", "k" } } }
        local a = assert(cl:search(req))
        local b = assert(db:search(req))
        assert.equal(b.total_count, a.total_count)
        assert.equal(ids(b), ids(a))
        for i, row in ipairs(b.rows) do assert.same(row.columns, a.rows[i].columns) end
        if b.total_count > 0 then nonempty = nonempty + 1 end
        -- every page through the server's tokens
        local got, res = {}, a
        while true do
          got[#got + 1] = ids(res)
          if not res.next_token then break end
          res = assert(cl:search{ table = "st", index = "ix", query = q, token = res.next_token, limit = 4 })
        end
        local all = assert(db:search{ table = "st", index = "ix", query = q, sort = sorts[si], limit = 100 })
        assert.equal(ids(all), (table.concat(got, " "):gsub("%s+", " "):gsub("^ ", ""):gsub(" $", "")))
      end
    end
    assert.is_true(nonempty > 40)
    -- routing
    local ra = assert(cl:search{ table = "st", index = "ix", routing_values = { { { "r", "r0" } } }, get_total_count = true, limit = 0 })
    assert.equal(20, ra.total_count)
    -- parallel scan
    local sp = assert(cl:compute_splits{ table = "st", index = "ix" })
    assert.is_true(sp.splits_size >= 1)
    local n, res = 0, nil
    repeat
      res = assert(cl:parallel_scan{ table = "st", index = "ix", session_id = sp.session_id, limit = 7, token = res and res.next_token,
        columns_to_get = { return_type = "RETURN_ALL_FROM_INDEX" } })
      n = n + #res.rows
    until not res.next_token
    assert.equal(39, n)
  end)

  it("keeps the store's errors", function()
    local function fails(code, res, msg, c)
      assert.is_nil(res)
      assert.equal(code, c, msg)
    end
    fails("OTSParameterInvalid", cl:search{ table = "st", index = "ix", query = { term = { field_name = "nope", term = 1 } } })
    fails("OTSParameterInvalid", cl:search{ table = "st", index = "ix", sort = { { field_sort = { field_name = "ka" } } } })
    fails("OTSParameterInvalid", cl:search{ table = "st", index = "ix", offset = 99990, limit = 20 })
    fails("OTSParameterInvalid", cl:search{ table = "st", index = "ix", token = ("x"):rep(40) })
    fails("OTSObjectNotExist", cl:search{ table = "st", index = "none" })
    fails("OTSObjectNotExist", cl:delete_search_index{ table = "st", index = "none" })
    fails("OTSObjectAlreadyExist", cl:create_search_index{ table = "st", index = "ix", schema = { field_schemas = FIELDS } })
    assert(cl:update_search_index{ table = "st", index = "ix", time_to_live = 8000000 })
    assert.equal(8000000, assert(cl:describe_search_index{ table = "st", index = "ix" }).time_to_live)
  end)

  it("delays visibility under the search_delay fault", function()
    local s2 = assert(serve.start{ faults = "search_delay=2" })
    local c2 = serve.client(s2)
    assert(c2:create_table{ name = "dl", primary_key = { { "p", "INTEGER" } } })
    assert(c2:create_search_index{ table = "dl", index = "ix", schema = { field_schemas = { { field_name = "k", field_type = "KEYWORD" } } } })
    assert(c2:put_row{ table = "dl", primary_key = { { "p", 1 } }, columns = { k = "v" } })
    local q = { table = "dl", index = "ix", get_total_count = true, limit = 0 }
    local first = assert(c2:search(q)).total_count
    os.execute("sleep 2.3")
    local later = assert(c2:search(q)).total_count
    s2.stop()
    assert.equal(0, first)
    assert.equal(1, later)
  end)
end)
