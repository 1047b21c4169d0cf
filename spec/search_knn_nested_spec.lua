-- spec/search_knn_nested_spec.lua -- a knn_vector query as a clause of a
-- bool query (must, filter, should, must_not) against brute force: the
-- rows kept are the knn's top_k combined with the other clauses as the
-- bool says, scored as the sum of the scoring clauses; the same through
-- the wire; refused inside a nested query and inside a knn's filter.
local store = require "otskit.store"
local wire = require "otskit.wire"
local knn = require "otskit.store.search.knn"
local helper = require "helper"

describe("knn_vector inside bool vs brute force", function()
  it("combines the knn's top_k rows with the other clauses", function()
    local r = helper.rng(5150)
    for round = 1, helper.trials(60) do
      local dim = r.int(1, 6)
      local metric = ({ "EUCLIDEAN", "COSINE", "DOT_PRODUCT" })[r.int(1, 3)]
      local db = assert(store.open{})
      assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
      assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = {
        { field_name = "v", field_type = "VECTOR", vector_options = { dimension = dim, metric_type = metric } },
        { field_name = "k", field_type = "KEYWORD" } } } })
      local vecs, ks, n = {}, {}, r.int(0, 40)
      for i = 1, n do
        local cols = { k = "k" .. r.int(1, 3) }
        ks[i] = cols.k
        if r.int(1, 10) > 1 then
          local v, parts = {}, {}
          for j = 1, dim do v[j] = r.int(-100, 100) / 64; parts[j] = ("%.17g"):format(v[j]) end
          vecs[i] = v
          cols.v = "[" .. table.concat(parts, ", ") .. "]"
        end
        assert(db:put_row{ table = "t", primary_key = { { "id", i } }, columns = cols })
      end
      local q, qn = {}, 0
      for j = 1, dim do q[j] = r.int(-100, 100) / 64; qn = qn + q[j] * q[j] end
      local top_k = r.int(1, 15)
      local fk = r.int(1, 2) == 1 and "k" .. r.int(1, 3) or nil
      local kq = { knn_vector = { field_name = "v", top_k = top_k, float32_query_vector = q,
        filter = fk and { term = { field_name = "k", term = fk } } or nil } }
      -- brute force: the knn's rows and scores
      local cand = {}
      for i, v in pairs(vecs) do
        if not fk or ks[i] == fk then cand[#cand + 1] = { i, knn.similarity(metric, q, v, qn) } end
      end
      table.sort(cand, function(a, b) if a[2] ~= b[2] then return a[2] > b[2] end return a[1] < b[1] end)
      local kscore = {}
      for i = 1, math.min(top_k, #cand) do kscore[cand[i][1]] = cand[i][2] end
      local tk = "k" .. r.int(1, 3)
      local term = { term = { field_name = "k", term = tk } }
      local shape = r.int(1, 4)
      local bq, model
      if shape == 1 then
        bq = { must = { kq, term } }
        model = function(i) return kscore[i] and ks[i] == tk and kscore[i] + 1 or nil end
      elseif shape == 2 then
        bq = { filter = { kq }, must = { term } }
        model = function(i) return kscore[i] and ks[i] == tk and 1 or nil end
      elseif shape == 3 then
        bq = { should = { kq, term }, minimum_should_match = 1 }
        model = function(i)
          if not kscore[i] and ks[i] ~= tk then return nil end
          return (kscore[i] or 0) + (ks[i] == tk and 1 or 0)
        end
      else
        bq = { must_not = { kq } }
        model = function(i) return not kscore[i] and 0 or nil end
      end
      local req = { table = "t", index = "ix", limit = 100, query = { bool = bq },
        sort = { { score_sort = { order = "DESC" } } } }
      if round % 2 == 0 then req = assert(wire.decode_request("Search", assert(wire.encode_request("Search", req)))) end
      local res = assert(db:search(req))
      local want = 0
      for i = 1, n do if model(i) then want = want + 1 end end
      assert.equal(want, #res.rows)
      for j, row in ipairs(res.rows) do
        local id = row.primary_key[1][2]
        local m = model(id)
        assert(m, "row " .. id .. " is not the model's")
        assert(math.abs(res.search_hits[j].score - m) < 1e-9, ("row %d: %s vs %s"):format(id, res.search_hits[j].score, m))
      end
      db:close()
    end
  end)

  it("refuses a knn_vector inside a nested query or a knn's filter", function()
    local db = assert(store.open{})
    assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
    assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = {
      { field_name = "v", field_type = "VECTOR", vector_options = { dimension = 2 } },
      { field_name = "n", field_type = "NESTED", field_schemas = { { field_name = "x", field_type = "LONG" } } } } } })
    local kq = { knn_vector = { field_name = "v", top_k = 1, float32_query_vector = { 1, 2 } } }
    local res, msg, code = db:search{ table = "t", index = "ix", query = { nested = { path = "n", query = kq } } }
    assert.is_nil(res); assert.equal("OTSParameterInvalid", code); assert.is_truthy(msg:find("nested", 1, true))
    res, msg, code = db:search{ table = "t", index = "ix", query = { knn_vector = { field_name = "v", top_k = 1,
      float32_query_vector = { 1, 2 }, filter = { bool = { should = { kq } } } } } }
    assert.is_nil(res); assert.equal("OTSParameterInvalid", code); assert.is_truthy(msg:find("filter", 1, true))
    assert(db:search{ table = "t", index = "ix", query = { const_score = { filter = kq } } })
    db:close()
  end)
end)
