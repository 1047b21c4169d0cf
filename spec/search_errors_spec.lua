-- spec/search_errors_spec.lua -- bad input to the store's search index:
-- each gets nil, message, the service's code; random malformed queries
-- never raise; index management and the write hook.
local store = require "otskit.store"
local helper = require "helper"

local function fresh()
  local db = assert(store.open{})
  assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" }, { "r", "STRING" } } })
  for i = 1, 30 do
    assert(db:put_row{ table = "t", primary_key = { { "id", i }, { "r", "r" .. (i % 3) } },
      columns = { l = i, k = "k" .. i, txt = "some text " .. i, nosort = i } })
  end
  assert(db:create_search_index{ table = "t", index = "ix", time_to_live = -1, schema = {
    field_schemas = {
      { field_name = "l", field_type = "LONG", enable_sort_and_agg = true },
      { field_name = "k", field_type = "KEYWORD", enable_sort_and_agg = true },
      { field_name = "txt", field_type = "TEXT", analyzer = "fuzzy", analyzer_parameter = { min_chars = 1, max_chars = 5 } },
      { field_name = "nosort", field_type = "LONG" },
    },
    index_setting = { routing_fields = { "r" } } } })
  return db
end

local function fails(code, pattern, res, msg, c)
  assert.is_nil(res)
  assert.equal(code, c, msg)
  if pattern then assert.matches(pattern, msg) end
end

describe("otskit.store search index: bad input", function()
  local db
  before_each(function() db = fresh() end)
  after_each(function() db:close() end)

  it("refuses an unknown field, a wrong type, a sort without enable_sort_and_agg", function()
    fails("OTSParameterInvalid", "nope", db:search{ table = "t", index = "ix", query = { term = { field_name = "nope", term = 1 } } })
    fails("OTSParameterInvalid", "LONG", db:search{ table = "t", index = "ix", query = { term = { field_name = "l", term = "x" } } })
    fails("OTSParameterInvalid", "LONG", db:search{ table = "t", index = "ix", query = { range = { field_name = "l", from = 1.5 } } })
    fails("OTSParameterInvalid", "enable_sort_and_agg",
      db:search{ table = "t", index = "ix", sort = { { field_sort = { field_name = "nosort" } } } })
    fails("OTSParameterInvalid", "TEXT", db:search{ table = "t", index = "ix", query = { range = { field_name = "txt", from = "a" } } })
    fails("OTSParameterInvalid", "unknown query kind", db:search{ table = "t", index = "ix", query = { fuzzy = {} } })
    fails("OTSParameterInvalid", "parameters", db:search{ table = "t", index = "ix", highlight = {} })
  end)

  it("answers a bool nested at any depth exactly or refuses it as the query's fault", function()
    for _, shape in ipairs { "must", "filter", "should", "must_not" } do
      for _, depth in ipairs { 1, 20, 40, 64, 65 } do
        local q = { term = { field_name = "k", term = "k7" } }
        for _ = 1, depth do q = { bool = { [shape] = { q, { range = { field_name = "l", from = 0 } } } } } end
        local r, msg, code = db:search{ table = "t", index = "ix", query = q, limit = 100, get_total_count = true }
        if r then
          -- must/filter keep only k7; should: every row (l >= 0 matches
          -- all); must_not excludes every row (l >= 0) at each level
          local want = (shape == "must" or shape == "filter") and 1 or shape == "should" and 30 or 0
          assert.equal(want, r.total_count, shape .. " " .. depth)
        else
          assert.equal("OTSParameterInvalid", code, shape .. " " .. depth .. ": " .. tostring(msg))
        end
      end
    end
  end)

  it("enforces limit and offset + limit maxima", function()
    fails("OTSParameterInvalid", "100", db:search{ table = "t", index = "ix", limit = 101,
      columns_to_get = { return_type = "RETURN_ALL" } })
    assert(db:search{ table = "t", index = "ix", limit = 1000 }) -- RETURN_NONE: index-only
    fails("OTSParameterInvalid", "1000", db:search{ table = "t", index = "ix", limit = 1001 })
    fails("OTSParameterInvalid", "100000", db:search{ table = "t", index = "ix", offset = 99999, limit = 2 })
    assert(db:search{ table = "t", index = "ix", offset = 99999, limit = 1 })
  end)

  it("refuses a forged or altered token, and a token of another index", function()
    local res = assert(db:search{ table = "t", index = "ix", limit = 2 })
    assert.is_string(res.next_token)
    local tok = res.next_token
    local altered = tok:sub(1, -3) .. (tok:sub(-2, -2) == "1" and "2" or "1") .. tok:sub(-1)
    fails("OTSParameterInvalid", "token", db:search{ table = "t", index = "ix", token = altered })
    fails("OTSParameterInvalid", "token", db:search{ table = "t", index = "ix", token = "x" })
    local r = helper.rng(4)
    for _ = 1, 50 do
      local i = r.int(1, #tok)
      local bad = tok:sub(1, i - 1) .. string.char((tok:byte(i) + r.int(1, 255)) % 256) .. tok:sub(i + 1)
      fails("OTSParameterInvalid", nil, db:search{ table = "t", index = "ix", token = bad })
    end
    assert(db:create_search_index{ table = "t", index = "ix2", schema = { field_schemas = {
      { field_name = "l", field_type = "LONG" } } } })
    fails("OTSParameterInvalid", "token", db:search{ table = "t", index = "ix2", token = tok })
    -- the genuine token pages on
    local res2 = assert(db:search{ table = "t", index = "ix", token = tok, limit = 100 })
    assert.equal(28, #res2.rows)
  end)

  it("checks schemas, TTLs and names", function()
    local function create(s, ttl, name)
      return db:create_search_index{ table = "t", index = name or "bad", schema = s, time_to_live = ttl }
    end
    fails("OTSParameterInvalid", "field_type", create{ field_schemas = { { field_name = "a", field_type = "INT" } } })
    fails("OTSParameterInvalid", "analyzer", create{ field_schemas = { { field_name = "a", field_type = "LONG", analyzer = "split" } } })
    fails("OTSParameterInvalid", "max_chars", create{ field_schemas = { { field_name = "a", field_type = "TEXT", analyzer = "fuzzy",
      analyzer_parameter = { max_chars = 9 } } } })
    fails("OTSParameterInvalid", "enable_sort_and_agg", create{ field_schemas = { { field_name = "a", field_type = "TEXT",
      enable_sort_and_agg = true } } })
    fails("OTSParameterInvalid", "NESTED", create{ field_schemas = { { field_name = "n", field_type = "NESTED",
      field_schemas = { { field_name = "a", field_type = "LONG" } } } }, index_sort = { { pk_sort = {} } } })
    fails("OTSParameterInvalid", "routing", create{ field_schemas = { { field_name = "a", field_type = "LONG" } },
      index_setting = { routing_fields = { "l" } } })
    fails("OTSParameterInvalid", "time_to_live", create({ field_schemas = { { field_name = "a", field_type = "LONG" } } }, 5))
    fails("OTSObjectAlreadyExist", nil, create({ field_schemas = { { field_name = "a", field_type = "LONG" } } }, nil, "ix"))
    fails("OTSObjectNotExist", nil, db:describe_search_index{ table = "t", index = "none" })
    fails("OTSObjectNotExist", "does not exist", db:list_search_index{ table = "none" })
    fails("OTSObjectNotExist", nil, db:delete_search_index{ table = "t", index = "none" })
    fails("OTSParameterInvalid", "unsupported option", db:search{ table = "t", index = "ix", bogus = 1 })
  end)

  it("describes, updates the TTL, lists, deletes; follows writes; routes", function()
    local d = assert(db:describe_search_index{ table = "t", index = "ix" })
    assert.equal(30, d.row_count)
    assert.equal("RUNNING", d.index_status.status)
    assert.equal("INCR", d.sync_stat.sync_phase)
    assert.equal(-1, d.time_to_live)
    assert.equal(4, #d.schema.field_schemas)
    assert.same({ "r" }, d.schema.index_setting.routing_fields)
    assert(db:update_search_index{ table = "t", index = "ix", time_to_live = 8000000 })
    assert.equal(8000000, assert(db:describe_search_index{ table = "t", index = "ix" }).time_to_live)
    local function count(q, extra)
      local req = { table = "t", index = "ix", query = q, get_total_count = true, limit = 0 }
      for k, v in pairs(extra or {}) do req[k] = v end
      return assert(db:search(req)).total_count
    end
    assert.equal(10, count(nil, { routing_values = { { { "r", "r1" } } } }))
    assert.equal(20, count(nil, { routing_values = { { { "r", "r1" } }, { { "r", "r2" } } } }))
    -- a key, a primary key or a cell with more than it takes is refused, never ignored
    for _, rv in ipairs({ { { { "r", "r1" } }, x = 1 }, { { { "r", "r1" }, x = 1 } }, { { { "r", "r1", "r2" } } },
      { { { "r", "r1", x = 1 } } } }) do
      fails("OTSParameterInvalid", "routing_values", db:search{ table = "t", index = "ix", routing_values = rv })
    end
    -- a range drives the search; the routing and the index TTL are the document's
    local res = assert(db:search{ table = "t", index = "ix", query = { range = { field_name = "l", from = 5, to = 20 } },
      routing_values = { { { "r", "r1" } } }, get_total_count = true, limit = 3 })
    assert.equal(5, res.total_count) -- l in 6..19 with id % 3 == 1: 7 10 13 16 19
    local ids = {}
    for i, row in ipairs(res.rows) do ids[i] = row.primary_key[1][2] end
    assert.same({ 7, 10, 13 }, ids)
    res = assert(db:search{ table = "t", index = "ix", token = res.next_token, get_total_count = true,
      query = { range = { field_name = "l", from = 5, to = 20 } }, routing_values = { { { "r", "r1" } } } })
    ids = {}
    for i, row in ipairs(res.rows) do ids[i] = row.primary_key[1][2] end
    assert.same({ 16, 19 }, ids)
    assert.equal(5, res.total_count)
    -- fuzzy: contains
    assert.equal(11, count({ match_phrase = { field_name = "txt", text = "t 1" } })) -- 1, 10..19
    assert.equal(1, count({ match_phrase = { field_name = "txt", text = "text 25" } }))
    assert(db:delete_row{ table = "t", primary_key = { { "id", 25 }, { "r", "r1" } } })
    assert.equal(0, count({ match_phrase = { field_name = "txt", text = "text 25" } }))
    assert(db:update_row{ table = "t", primary_key = { { "id", 24 }, { "r", "r0" } }, update = { PUT = { k = "new" } } })
    assert.equal(1, count({ term = { field_name = "k", term = "new" } }))
    -- a delayed index
    db:search_delay(3600)
    assert(db:put_row{ table = "t", primary_key = { { "id", 99 }, { "r", "r0" } }, columns = { k = "late" } })
    assert.equal(0, count({ term = { field_name = "k", term = "late" } }))
    db:search_delay(nil)
    assert.equal(0, count({ term = { field_name = "k", term = "late" } }))
    assert(db:put_row{ table = "t", primary_key = { { "id", 99 }, { "r", "r0" } }, columns = { k = "late" } })
    assert.equal(1, count({ term = { field_name = "k", term = "late" } }))
    assert.same({ { table_name = "t", index_name = "ix" } }, assert(db:list_search_index{ table = "t" }).indices)
    assert(db:delete_search_index{ table = "t", index = "ix" })
    assert.same({}, assert(db:list_search_index{ table = "t" }).indices)
  end)

  it("never raises on random malformed queries and sorts", function()
    local r = helper.rng(99)
    local atoms = { 1, -1, 0.5, "x", "", true, false, {}, { 1, 2 }, "l", "k", "txt", "nosort", "1,2", "91,0", "*" }
    local kinds = { "match_all", "match", "match_phrase", "term", "terms", "range", "prefix", "wildcard", "exists", "bool",
      "nested", "geo_distance", "geo_bounding_box", "geo_polygon", "const_score", "knn_vector", "nope" }
    local keys = { "field_name", "text", "term", "terms", "from", "to", "include_lower", "prefix", "value", "must", "should",
      "filter", "must_not", "minimum_should_match", "path", "query", "center_point", "distance", "top_left",
      "bottom_right", "points", "operator", "order", "mode", "missing_value", "missing_field", "inner_hits", "highlight",
      "parameters", "sort", "offset", "limit", "fragment_size", "number_of_fragments", "pre_tag", "encoder" }
    local function junk(depth)
      local k = r.int(1, depth > 0 and 4 or 3)
      if k <= 2 then return atoms[r.int(1, #atoms)] end
      local t = {}
      if k == 3 then
        t[kinds[r.int(1, #kinds)]] = {}
        return t
      end
      local body = {}
      for _ = 1, r.int(0, 4) do body[keys[r.int(1, #keys)]] = junk(depth - 1) end
      if r.int(1, 3) == 1 then body = { junk(depth - 1), junk(depth - 1) } end
      t[kinds[r.int(1, #kinds)]] = body
      return t
    end
    local answered, refused = 0, 0
    for _ = 1, helper.trials(3000) do
      local req = { table = "t", index = "ix", query = junk(3), limit = 3 }
      if r.int(1, 3) == 1 then
        req.sort = { { [({ "field_sort", "pk_sort", "score_sort", "geo_distance_sort", "doc_sort" })[r.int(1, 5)]] = junk(1) } }
      end
      if r.int(1, 4) == 1 then
        req.highlight = r.int(1, 2) == 1 and junk(1) or { parameters = { { field_name = "txt",
          number_of_fragments = atoms[r.int(1, #atoms)], fragment_size = atoms[r.int(1, #atoms)] } } }
      end
      local ok, res, msg, code = pcall(db.search, db, req)
      assert(ok, res)
      if res then answered = answered + 1 else
        assert.equal("OTSParameterInvalid", code, msg)
        refused = refused + 1
      end
    end
    assert.is_true(answered > 0 and refused > 0)
  end)
end)
