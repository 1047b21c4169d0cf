-- spec/search_wire_spec.lua -- the search messages: random queries, sorts
-- and schemas survive encode -> decode unchanged; the server's decoder of
-- SearchRequest / ParallelScanRequest / CreateSearchIndexRequest, fed
-- random mutations of valid bodies, never raises (an answer or nil,
-- message, OTSParameterInvalid), and the store never raises on what it
-- decodes.
local wire = require "otskit.wire"
local store = require "otskit.store"
local helper = require "helper"

local function rand_query(r, depth)
  local k = r.int(1, depth > 0 and 16 or 13)
  local f = ({ "n", "k", "t", "g" })[r.int(1, 4)]
  if k == 1 then return { term = { field_name = f, term = ({ 1, "x", true, 2.5 })[r.int(1, 4)] } }
  elseif k == 2 then return { terms = { field_name = f, terms = { "a", "b" } } }
  elseif k == 3 then return { range = { field_name = "n", from = r.int(0, 9), to = r.int(0, 9), include_lower = true } }
  elseif k == 4 then return { prefix = { field_name = "k", prefix = "a" } }
  elseif k == 5 then return { wildcard = { field_name = "k", value = "a*?" } }
  elseif k == 6 then return { exists = { field_name = f } }
  elseif k == 7 then return { match = { field_name = "t", text = "a b", operator = "AND", minimum_should_match = 1 } }
  elseif k == 8 then return { match_phrase = { field_name = "t", text = "a b" } }
  elseif k == 9 then return { geo_distance = { field_name = "g", center_point = "1,2", distance = 1000.5 } }
  elseif k == 10 then return { geo_bounding_box = { field_name = "g", top_left = "5,0", bottom_right = "0,5" } }
  elseif k == 11 then return { geo_polygon = { field_name = "g", points = { "0,0", "1,1", "0,1" } } }
  elseif k == 12 then return { match_all = {} }
  elseif k == 13 then return { range = { field_name = "k", from = "a" } }
  elseif k == 14 then return { const_score = { filter = rand_query(r, depth - 1) } }
  elseif k == 15 then return { nested = { path = "ns", query = rand_query(r, depth - 1), score_mode = "MAX" } }
  end
  return { bool = { must = { rand_query(r, depth - 1) }, must_not = { rand_query(r, depth - 1) },
    filter = {}, should = { rand_query(r, depth - 1), rand_query(r, depth - 1) }, minimum_should_match = r.int(0, 2) } }
end

local SCHEMA = { field_schemas = {
  { field_name = "n", field_type = "LONG", enable_sort_and_agg = true, index = true, store = true, is_array = false },
  { field_name = "k", field_type = "KEYWORD", enable_sort_and_agg = true, index = true, store = true, is_array = true },
  { field_name = "t", field_type = "TEXT", analyzer = "single_word", analyzer_parameter = { case_sensitive = true, delimit_word = true },
    index = true, store = true, is_array = false, enable_highlighting = true },
  { field_name = "s", field_type = "TEXT", analyzer = "split", analyzer_parameter = { delimiter = "," }, index = true },
  { field_name = "f", field_type = "TEXT", analyzer = "fuzzy", analyzer_parameter = { min_chars = 2, max_chars = 3 } },
  { field_name = "g", field_type = "GEO_POINT" }, { field_name = "dt", field_type = "DATE", date_formats = { "yyyy-MM-dd" } },
  { field_name = "v", field_type = "VECTOR", vector_options = { dimension = 3, metric_type = "COSINE", data_type = "FLOAT_32" } },
  { field_name = "ns", field_type = "NESTED", field_schemas = { { field_name = "x", field_type = "LONG" } } },
}, index_setting = { routing_fields = { "p" } } }

describe("search messages", function()
  it("carry random queries and sorts unchanged", function()
    local r = helper.rng(5)
    for _ = 1, helper.trials(300) do
      local req = { table = "t", index = "ix", query = rand_query(r, 3), offset = r.int(0, 5), limit = r.int(0, 50),
        get_total_count = r.int(0, 1) == 1, sort = { { field_sort = { field_name = "n", order = "DESC", mode = "MAX",
          missing_value = r.int(0, 9), missing_field = "k" } }, { geo_distance_sort = { field_name = "g", points = { "1,1" },
          order = "ASC", mode = "MIN", distance_type = "ARC" } }, { score_sort = { order = "ASC" } }, { pk_sort = { order = "DESC" } } },
        columns_to_get = { return_type = "RETURN_SPECIFIED", column_names = { "a", "b" } },
        routing_values = { { { "p", "x" } } } }
      local body = assert(wire.encode_request("Search", req))
      local back = assert(wire.decode_request("Search", body))
      assert.same(req, back)
    end
    local c = { table = "t", index = "ix", schema = SCHEMA, time_to_live = 86400 }
    SCHEMA.index_sort = { { field_sort = { field_name = "n", order = "DESC" } } }
    local back = assert(wire.decode_request("CreateSearchIndex", assert(wire.encode_request("CreateSearchIndex", c))))
    assert.same(c, back)
    SCHEMA.index_sort = nil
  end)

  it("decode random mutations without raising; the store answers or refuses", function()
    local r = helper.rng(77)
    local db = assert(store.open{})
    assert(db:create_table{ name = "t", primary_key = { { "p", "STRING" } } })
    assert(db:create_search_index{ table = "t", index = "ix", schema = SCHEMA })
    for i = 1, 10 do
      assert(db:put_row{ table = "t", primary_key = { { "p", "r" .. i } }, columns = { n = i, k = '["a","b"]', t = "a b c",
        g = "1,1", ns = '[{"x":1}]' } })
    end
    local seeds = {}
    for _ = 1, 20 do
      seeds[#seeds + 1] = { "Search", assert(wire.encode_request("Search", { table = "t", index = "ix", query = rand_query(r, 3),
        limit = 5, sort = { { pk_sort = { order = "DESC" } } } })) }
    end
    seeds[#seeds + 1] = { "ParallelScan", assert(wire.encode_request("ParallelScan", { table = "t", index = "ix", query = rand_query(r, 2), limit = 3 })) }
    seeds[#seeds + 1] = { "CreateSearchIndex", assert(wire.encode_request("CreateSearchIndex", { table = "t", index = "iy", schema = SCHEMA })) }
    local methods = { Search = "search", ParallelScan = "parallel_scan", CreateSearchIndex = "create_search_index" }
    local decoded, refused = 0, 0
    for _ = 1, helper.trials(4000) do
      local s = seeds[r.int(1, #seeds)]
      local b = s[2]
      for _ = 1, r.int(1, 4) do
        local op, i = r.int(1, 3), r.int(1, #b)
        if op == 1 then b = b:sub(1, i - 1) .. string.char(r.int(0, 255)) .. b:sub(i + 1)
        elseif op == 2 then b = b:sub(1, i - 1) .. b:sub(i + 1)
        else b = b:sub(1, i) .. string.char(r.int(0, 255)) .. b:sub(i + 1) end
      end
      local ok, req, msg, code = pcall(wire.decode_request, s[1], b)
      assert(ok, req)
      if req then
        decoded = decoded + 1
        local ok2, res, m2, c2 = pcall(db[methods[s[1]]], db, req)
        assert(ok2, res)
        if not res then assert.is_string(m2); assert.is_string(c2) end
        if s[1] == "CreateSearchIndex" and res then assert(db:delete_search_index{ table = "t", index = req.index }) end
      else
        refused = refused + 1
        assert.equal("OTSParameterInvalid", code, msg)
      end
    end
    assert.is_true(decoded > 0 and refused > 0)
    db:close()
  end)
end)
