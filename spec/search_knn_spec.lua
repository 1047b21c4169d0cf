-- spec/search_knn_spec.lua -- the knn_vector query against brute force:
-- random vectors of random dimension, each metric, a filter, top_k and a
-- weight; the rows kept, their order and their scores.
local store = require "otskit.store"
local knn = require "otskit.store.search.knn"

local ROUNDS = os.getenv("OTSKIT_QUICK") and 6 or 30

describe("knn_vector vs brute force", function()
  it("keeps the top_k most similar rows of the filter, by the field's metric", function()
    for round = 1, ROUNDS do
      math.randomseed(round * 7777)
      local dim = math.random(1, 8)
      local metric = ({ "EUCLIDEAN", "COSINE", "DOT_PRODUCT" })[round % 3 + 1]
      local db = assert(store.open{})
      assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
      assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = {
        { field_name = "v", field_type = "VECTOR", vector_options = { dimension = dim, metric_type = metric } },
        { field_name = "k", field_type = "KEYWORD" } } } })
      local vecs, ks = {}, {}
      for i = 1, math.random(0, 60) do
        local v = {}
        for j = 1, dim do v[j] = math.random(-100, 100) / 64 end
        local cols = { k = "k" .. math.random(1, 3) }
        ks[i] = cols.k
        if math.random() < 0.9 then
          vecs[i] = v
          local parts = {}
          for j, x in ipairs(v) do parts[j] = ("%.17g"):format(x) end
          cols.v = "[" .. table.concat(parts, ", ") .. "]"
        end
        assert(db:put_row{ table = "t", primary_key = { { "id", i } }, columns = cols })
      end
      local q = {}
      local qn = 0
      for j = 1, dim do q[j] = math.random(-100, 100) / 64; qn = qn + q[j] * q[j] end
      local top_k, w = math.random(1, 20), math.random(1, 3)
      local fk = math.random() < 0.5 and "k" .. math.random(1, 3) or nil
      local want = {}
      for i, v in pairs(vecs) do
        if not fk or ks[i] == fk then want[#want + 1] = { i, knn.similarity(metric, q, v, qn) * w } end
      end
      table.sort(want, function(a, b) if a[2] ~= b[2] then return a[2] > b[2] end return a[1] < b[1] end)
      local res = assert(db:search{ table = "t", index = "ix", limit = 100, query = { knn_vector = { field_name = "v",
        top_k = top_k, float32_query_vector = q, weight = w, filter = fk and { term = { field_name = "k", term = fk } } or nil } } })
      assert.are.equal(math.min(top_k, #want), #res.rows)
      for i, r in ipairs(res.rows) do
        assert.are.equal(want[i][1], r.primary_key[1][2])
        assert(math.abs(res.search_hits[i].score - want[i][2]) < 1e-9)
      end
      -- an independent check of the metric on one pair
      if want[1] then
        local v = vecs[want[1][1]]
        local dot, vn, dd = 0, 0, 0
        for j = 1, dim do dot = dot + q[j] * v[j]; vn = vn + v[j] * v[j]; dd = dd + (q[j] - v[j]) ^ 2 end
        local s = metric == "EUCLIDEAN" and 1 / (1 + dd) or metric == "DOT_PRODUCT" and (1 + dot) / 2
          or (vn == 0 or qn == 0) and 0 or (1 + dot / math.sqrt(qn * vn)) / 2
        assert(math.abs(s * w - want[1][2]) < 1e-9)
      end
      db:close()
    end
  end)

  it("refuses bad queries with OTSParameterInvalid", function()
    local db = assert(store.open{})
    assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
    assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = {
      { field_name = "v", field_type = "VECTOR", vector_options = { dimension = 2 } }, { field_name = "k", field_type = "KEYWORD" } } } })
    local function bad(q)
      local r, msg, code = db:search{ table = "t", index = "ix", query = q }
      assert.is_nil(r); assert.are.equal("OTSParameterInvalid", code, msg)
    end
    bad{ knn_vector = { field_name = "v", top_k = 0, float32_query_vector = { 1, 2 } } }
    bad{ knn_vector = { field_name = "v", top_k = 1001, float32_query_vector = { 1, 2 } } }
    bad{ knn_vector = { field_name = "v", top_k = 1, float32_query_vector = { 1, 2, 3 } } }
    bad{ knn_vector = { field_name = "k", top_k = 1, float32_query_vector = { 1, 2 } } }
    bad{ knn_vector = { field_name = "v", top_k = 1, float32_query_vector = { 1, 2 },
      filter = { bool = { must = { { knn_vector = { field_name = "v", top_k = 1, float32_query_vector = { 1, 2 } } } } } } } }
    db:close()
  end)
end)
