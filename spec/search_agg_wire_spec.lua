-- spec/search_agg_wire_spec.lua -- search analytics on the wire: random
-- aggregations and group-bys survive the client's encode -> the server's
-- decode unchanged; the store's results survive the server's encode -> the
-- client's decode unchanged (nested AggregationsResult / GroupBysResult
-- bytes); mutated bodies never raise.
local wire = require "otskit.wire"
local store = require "otskit.store"
local helper = require "helper"

local function rand_aggs(r)
  local out = {}
  for i = 1, r.int(1, 4) do
    local ty = ({ "avg", "max", "min", "sum", "count", "distinct_count", "percentiles", "top_rows" })[r.int(1, 8)]
    local a = { name = "a" .. i, type = ty }
    if ty == "top_rows" then
      a.limit = r.int(1, 3)
      a.sort = { { field_sort = { field_name = "n", order = "DESC" } } }
    else
      a.field_name = ty == "distinct_count" and "k" or "n"
      if ty ~= "count" and ty ~= "distinct_count" and r.int(0, 1) == 1 then a.missing = r.int(-5, 5) end
      if ty == "percentiles" then a.percentiles = { 10, 50.5, 99 } end
    end
    out[i] = a
  end
  return out
end

local function rand_gbs(r, depth)
  local out = {}
  for i = 1, r.int(1, 3) do
    local ty = r.int(1, 8)
    local g = { name = "g" .. i }
    if ty == 1 then g.type, g.field_name, g.size = "field", "k", r.int(1, 5)
      g.sort = { { row_count_sort = { order = "DESC" } }, { group_key_sort = { order = "ASC" } } }
    elseif ty == 2 then g.type, g.field_name, g.ranges = "range", "n", { { from = 1, to = 5 }, { from = 3 } }
    elseif ty == 3 then g.type, g.filters = "filter", { { match_all = {} }, { term = { field_name = "k", term = "a" } } }
    elseif ty == 4 then g.type, g.field_name, g.origin, g.ranges = "geo_distance", "g", { lat = 1, lon = 2 }, { { from = 0, to = 1e6 } }
    elseif ty == 5 then g.type, g.field_name, g.interval, g.offset, g.min_doc_count = "histogram", "n", r.int(1, 4), 1, 1
    elseif ty == 6 then g.type, g.field_name, g.interval, g.time_zone = "date_histogram", "d", { value = r.int(1, 3), unit = "DAY" }, "+05:30"
    elseif ty == 7 then g.type, g.field_name, g.precision, g.size = "geo_grid", "g", r.int(1, 6), 10
    else g.type, g.size = "composite", r.int(1, 3)
      g.sources = { { name = "s1", type = "field", field_name = "k" }, { name = "s2", type = "histogram", field_name = "n", interval = 3 } }
    end
    if depth > 0 and ty ~= 8 and r.int(0, 2) == 0 then g.sub_aggs = rand_aggs(r) end
    if depth > 0 and ty ~= 8 and r.int(0, 3) == 0 then g.sub_group_bys = rand_gbs(r, depth - 1) end
    out[i] = g
  end
  return out
end

local SCHEMA = { field_schemas = {
  { field_name = "n", field_type = "LONG", enable_sort_and_agg = true },
  { field_name = "k", field_type = "KEYWORD", enable_sort_and_agg = true, is_array = true },
  { field_name = "g", field_type = "GEO_POINT", enable_sort_and_agg = true },
  { field_name = "d", field_type = "DATE", enable_sort_and_agg = true },
} }

describe("search analytics on the wire", function()
  local db
  setup(function()
    db = assert(store.open{})
    assert(db:create_table{ name = "t", primary_key = { { "p", "STRING" } } })
    assert(db:create_search_index{ table = "t", index = "ix", schema = SCHEMA })
    for i = 1, 25 do
      assert(db:put_row{ table = "t", primary_key = { { "p", "r" .. i } }, columns = { n = i % 9, k = ('["%s","b%d"]'):format(
        ({ "a", "c", "e" })[i % 3 + 1], i % 4), g = ("%d,%d"):format(i % 5, i % 7), d = 1500000000000 + i * 3600000 * 7 } })
    end
  end)
  teardown(function() db:close() end)

  it("requests and results survive encode -> decode", function()
    local r = helper.rng(2701)
    for _ = 1, helper.trials(150) do
      local req = { table = "t", index = "ix", limit = 0, aggs = rand_aggs(r), group_bys = rand_gbs(r, 2) }
      if r.int(0, 3) == 0 then req.collapse = { field_name = "n" }; req.limit = 5 end
      local back = assert(wire.decode_request("Search", assert(wire.encode_request("Search", req))))
      assert.same(req, back)
      local res = assert(db:search(back))
      local res2 = assert(wire.decode_response("Search", assert(wire.encode_response("Search", res)), req))
      res2.consumed = nil
      assert.same(res.aggs, res2.aggs)
      assert.same(res.group_bys, res2.group_bys)
      assert.is_true(#res2.aggs > 0 and #res2.group_bys > 0)
    end
  end)

  it("functions_score and knn_vector queries survive encode -> decode", function()
    local qs = {
      { functions_score = { query = { match_all = {} }, score_mode = "SUM", combine_mode = "REPLACE", min_score = 0.5,
        max_score = 8, functions = {
          { weight = 2, filter = { term = { field_name = "k", term = "a" } },
            decay = { field_name = "n", math_function = "LINEAR", decay = 0.5, multi_value_mode = "MIN",
              param = { origin = 1.25, scale = 2, offset = 0.5 } } },
          { random = {} },
          { field_value_factor = { field_name = "n", factor = 0.5, modifier = "LOG1P", missing = 1 } } } } },
      { knn_vector = { field_name = "v", top_k = 7, float32_query_vector = { 0.5, -1.25, 2 }, weight = 2,
        filter = { exists = { field_name = "k" } } } },
    }
    for _, q in ipairs(qs) do
      local req = { table = "t", index = "ix", query = q, limit = 3 }
      local back = assert(wire.decode_request("Search", assert(wire.encode_request("Search", req))))
      assert.same(req, back)
    end
  end)

  it("mutated bodies never raise", function()
    local r = helper.rng(99)
    local seeds = {}
    for i = 1, 10 do
      seeds[i] = assert(wire.encode_request("Search", { table = "t", index = "ix", limit = 0, aggs = rand_aggs(r),
        group_bys = rand_gbs(r, 2) }))
    end
    local decoded, refused = 0, 0
    for _ = 1, helper.trials(2000) do
      local b = seeds[r.int(1, #seeds)]
      for _ = 1, r.int(1, 4) do
        local op, i = r.int(1, 3), r.int(1, #b)
        if op == 1 then b = b:sub(1, i - 1) .. string.char(r.int(0, 255)) .. b:sub(i + 1)
        elseif op == 2 then b = b:sub(1, i - 1) .. b:sub(i + 1)
        else b = b:sub(1, i) .. string.char(r.int(0, 255)) .. b:sub(i + 1) end
      end
      local ok, req, msg, code = pcall(wire.decode_request, "Search", b)
      assert(ok, req)
      if req then
        decoded = decoded + 1
        local ok2, res, m2, c2 = pcall(db.search, db, req)
        assert(ok2, res)
        if not res then assert.is_string(m2); assert.is_string(c2) end
      else
        refused = refused + 1
        assert.equal("OTSParameterInvalid", code, msg)
      end
    end
    assert.is_true(decoded > 0 and refused > 0)
  end)
end)
