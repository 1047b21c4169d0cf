--- otskit.wire.search_knn -- the knn_vector query (QueryType
-- KNN_VECTOR_QUERY) in the store's vocabulary (otskit.store.search.knn)
-- <-> KnnVectorQuery (proto/search_score.proto); registered with
-- otskit.wire.search_query.
local sq = require "otskit.wire.search_query"

local function enc_knn(b)
  local f
  if b.filter ~= nil then
    local m, c
    f, m, c = sq.encode_query(b.filter)
    if not f then return nil, m, c end
  end
  return { field_name = b.field_name, top_k = b.top_k, float32_query_vector = b.float32_query_vector, filter = f,
    weight = b.weight }
end

local function dec_knn(m, depth)
  local f
  if m.filter then
    local e, c
    f, e, c = sq.decode_query(m.filter, depth + 1)
    if not f then return nil, e, c end
  end
  return { field_name = m.field_name, top_k = m.top_k, float32_query_vector = m.float32_query_vector or {}, filter = f,
    weight = m.weight }
end

sq.register("knn_vector", "KNN_VECTOR_QUERY", "KnnVectorQuery", enc_knn, dec_knn,
  { "field_name", "top_k", "float32_query_vector", "filter", "weight" })

return {}
