-- spec/search_knn_spec.lua -- the knn_vector query against brute force:
-- random vectors of random dimension, each metric, a filter, top_k and a
-- weight; the rows kept, their order and their scores. The model scores
-- the float32 values of both vectors (knn.f32) with knn.similarity; the
-- store scores them in C (otskit.core.vec). Half the rounds draw values on
-- a grid (ties), half any double (rounded to float32 by the index).
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
        for j = 1, dim do v[j] = round % 2 == 0 and math.random(-100, 100) / 64 or (math.random() * 2 - 1) * 10 ^ math.random(-3, 3) end
        local cols = { k = "k" .. math.random(1, 3) }
        ks[i] = cols.k
        if math.random() < 0.9 then
          vecs[i] = assert(knn.f32(v))
          local parts = {}
          for j, x in ipairs(v) do parts[j] = ("%.17g"):format(x) end
          cols.v = "[" .. table.concat(parts, ", ") .. "]"
        end
        assert(db:put_row{ table = "t", primary_key = { { "id", i } }, columns = cols })
      end
      local q = {}
      local qn = 0
      for j = 1, dim do q[j] = round % 2 == 0 and math.random(-100, 100) / 64 or math.random() * 2 - 1 end
      local q32 = assert(knn.f32(q))
      for j = 1, dim do qn = qn + q32[j] * q32[j] end
      local top_k, w = math.random(1, 20), math.random(1, 3)
      local fk = math.random() < 0.5 and "k" .. math.random(1, 3) or nil
      local want = {}
      for i, v in pairs(vecs) do
        if not fk or ks[i] == fk then want[#want + 1] = { i, knn.similarity(metric, q32, v, qn) * w } end
      end
      table.sort(want, function(a, b) if a[2] ~= b[2] then return a[2] > b[2] end return a[1] < b[1] end)
      local req = { table = "t", index = "ix", limit = 100, query = { knn_vector = { field_name = "v",
        top_k = top_k, float32_query_vector = q, weight = w, filter = fk and { term = { field_name = "k", term = fk } } or nil } } }
      local function check(res)
        assert.are.equal(math.min(top_k, #want), #res.rows)
        for i, r in ipairs(res.rows) do
          assert.are.equal(want[i][1], r.primary_key[1][2])
          assert(math.abs(res.search_hits[i].score - want[i][2]) <= 1e-12 * math.abs(want[i][2]), ("%.17g vs %.17g round %d"):format(res.search_hits[i].score, want[i][2], round))
        end
      end
      check(assert(db:search(req)))
      if round % 5 == 0 then
        -- an index made before the vec table: the rows' vectors are read instead
        assert(require("otskit.core").sql.exec(db.h, "DROP TABLE s1_vec"))
        db.sx = nil
        check(assert(db:search(req)))
        assert(db:put_row{ table = "t", primary_key = { { "id", 1000 } }, columns = { k = "x" } })
        check(assert(db:search(req)))
      end
      -- an independent check of the metric on one pair
      if want[1] then
        local v = vecs[want[1][1]]
        local dot, vn, dd = 0, 0, 0
        for j = 1, dim do dot = dot + q32[j] * v[j]; vn = vn + v[j] * v[j]; dd = dd + (q32[j] - v[j]) ^ 2 end
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
    bad{ knn_vector = { field_name = "v", top_k = 1, float32_query_vector = { 1, 1e39 } } }
    bad{ knn_vector = { field_name = "v", top_k = 1, float32_query_vector = { 1, 0 / 0 } } }
    bad{ knn_vector = { field_name = "v", top_k = 1, float32_query_vector = { 1, 2 },
      filter = { bool = { must = { { knn_vector = { field_name = "v", top_k = 1, float32_query_vector = { 1, 2 } } } } } } } }
    db:close()
  end)
end)

describe("otskit.core.vec", function()
  local vec = require("otskit.core").vec
  it("packs float32 exactly and refuses what float32 cannot hold", function()
    for _ = 1, 200 do
      local n = math.random(0, 40)
      local t = {}
      for i = 1, n do t[i] = (math.random() * 2 - 1) * 10 ^ math.random(-40, 38) end
      local b = assert(vec.pack(t))
      assert.are.equal(4 * n, #b)
      local u = vec.unpack(b)
      assert.are.equal(n, #u)
      for i = 1, n do
        -- the nearest float32: within half an ulp (2^-24 relative), and packing it again is exact
        assert(math.abs(u[i] - t[i]) <= math.abs(t[i]) * 2 ^ -24 + 2 ^ -149)
      end
      assert.are.equal(b, vec.pack(u))
    end
    assert.is_nil(vec.pack({ 1, 3.5e38 }))
    assert.is_nil(vec.pack({ 0 / 0 }))
    assert.is_nil(vec.pack({ 1, "2" }))
    assert.has_error(function() vec.unpack("abc") end)
  end)
  it("skips stored vectors of another length and refuses a bad k or metric", function()
    local db = assert(require("otskit.store").open{})
    local h = db.h
    assert(require("otskit.core").sql.exec(h, "CREATE TABLE v (doc INTEGER, v BLOB)"))
    local docs = require "otskit.store.search.docs"
    local q = vec.pack({ 1, 0 })
    docs.run(h, "INSERT INTO v VALUES (1, CAST(?1 AS BLOB)), (2, CAST(?2 AS BLOB)), (3, 'text'), (4, CAST(?3 AS BLOB))",
      { vec.pack({ 1, 0 }), vec.pack({ 1, 0, 0 }), vec.pack({ 0, 1 }) })
    local j = docs.run(h, "SELECT vec_topk(5, 0, CAST(?1 AS BLOB), v, doc) FROM v", { q })[1][1]
    assert.are.same({ k1 = 1, k4 = 1 / 3 }, require("cjson").decode(j))
    assert.has_error(function() docs.run(h, "SELECT vec_topk(0, 0, CAST(?1 AS BLOB), v, doc) FROM v", { q }) end)
    assert.has_error(function() docs.run(h, "SELECT vec_topk(1, 7, CAST(?1 AS BLOB), v, doc) FROM v", { q }) end)
    assert.are.equal("{}", docs.run(h, "SELECT vec_topk(1, 0, CAST(?1 AS BLOB), v, doc) FROM v WHERE 0", { q })[1][1])
    db:close()
  end)
end)
