--- otskit.store.search.knn -- the knn_vector query, computed exactly: every
-- vector of the VECTOR field whose row matches the filter is scored
-- against the query vector by the field's metric in C (the index keeps
-- each vector as a BLOB of float32 in its table p.."vec"; the SQL
-- aggregate vec_topk of otskit.core.vec scores them and keeps the top_k
-- in a heap: one SQLite statement, no Lua per document), and the top_k
-- most similar rows match. Scores are the service's, computed in double
-- over the float32 values of both vectors: EUCLIDEAN 1 / (1 + distance^2),
-- COSINE (1 + cosine) / 2 (0 when a vector is all zeros), DOT_PRODUCT
-- (1 + dot) / 2, times weight; ties keep the row indexed first.
-- Registered as the query kind knn_vector of otskit.store.search.query; a
-- search orders by score unless a sort is given. It may also be a clause
-- of other queries
-- (bool must / filter / should / must_not, const_score, function_score,
-- functions_score), at the top level: its top_k rows then combine with
-- the other clauses' (and its score adds to a bool's as any clause's);
-- never inside a nested query or another knn_vector's filter.
--
-- { knn_vector = { field_name, top_k (1..1000), float32_query_vector = {
--   ... }, filter, weight = 1 } }
local cjson = require "cjson.safe"
local base = require "otskit.store.base"
local query = require "otskit.store.search.query"
local docs = require "otskit.store.search.docs"
local vec = require("otskit.core").vec

local knn = {}
knn.LIMITS = { top_k = 1000 }

local function bad(msg) return nil, msg, "OTSParameterInvalid" end

query.body_keys("knn_vector", { "field_name", "top_k", "float32_query_vector", "filter" })

local nparams = query.nparams

--- knn.similarity(metric, a, b, an) -> the score of vector b against a
-- (an: a's squared norm), in Lua: the model the C scoring is checked
-- against (give it float32 values, knn.f32, to get the same numbers)
function knn.similarity(metric, a, b, an)
  local n = #a
  if metric == "EUCLIDEAN" then
    local s = 0
    for i = 1, n do local d = a[i] - b[i]; s = s + d * d end
    return 1 / (1 + s)
  end
  local dot, bn = 0, 0
  for i = 1, n do local y = b[i]; dot = dot + a[i] * y; bn = bn + y * y end
  if metric == "DOT_PRODUCT" then return (1 + dot) / 2 end
  if bn == 0 or an == 0 then return 0 end
  return (1 + dot / math.sqrt(an * bn)) / 2
end

--- knn.f32(list) -> the list's numbers rounded to float32 | nil, msg
function knn.f32(list)
  local b, m = vec.pack(list)
  if not b then return nil, m end
  return vec.unpack(b)
end

-- an index made before the vec table: each row's vector read and decoded,
-- scored in Lua -> best = { {doc, score} } in order
local function legacy(self, d, q, cond)
  local text = ("SELECT d.id, d.pk FROM %sdoc d WHERE d.parent IS NULL AND d.id IN (SELECT doc FROM %shas WHERE f = %s) AND (%s)")
    :format(self.p, self.p, self:bind(d.id), cond)
  local an = 0
  for _, x in ipairs(q) do an = an + x * x end
  local best = {}
  for _, r in ipairs(docs.run(self.h, text, self.binds, nparams(text))) do
    local s = self.read_vector(r[2], d.name)
    local v = type(s) == "string" and cjson.decode(s)
    v = type(v) == "table" and #v == #q and knn.f32(v)
    if v then best[#best + 1] = { r[1], knn.similarity(d.vector.metric_type, q, v, an) } end
  end
  table.sort(best, function(x, y) if x[2] ~= y[2] then return x[2] > y[2] end return x[1] < y[1] end)
  return best
end

query.KINDS.knn_vector = function(self, q, a, path, depth)
  if not self.read_vector then return bad("knn_vector: only a search runs a knn_vector query") end
  if path ~= nil then return bad("knn_vector: not inside a nested query (a VECTOR field is a top-level field)") end
  if self.in_knn then return bad("knn_vector: a knn_vector filter holds no knn_vector query") end
  local d, m, c = self:field(q.field_name, path, "knn_vector")
  if not d then return nil, m, c end
  if d.type ~= "VECTOR" then return bad(("knn_vector: field [%s] is %s, not VECTOR"):format(d.name, d.type)) end
  local k = q.top_k
  if type(k) ~= "number" or k ~= math.floor(k) or k < 1 or k > knn.LIMITS.top_k then
    return bad("knn_vector: top_k must be an integer in 1.." .. knn.LIMITS.top_k)
  end
  local v = q.float32_query_vector
  if type(v) ~= "table" or #v ~= d.vector.dimension then
    return bad(("knn_vector: float32_query_vector must have %d numbers (the field's dimension)"):format(d.vector.dimension))
  end
  local lok, lm, lc = base.list(v, "knn_vector: float32_query_vector")
  if not lok then return nil, lm, lc end
  for _, x in ipairs(v) do
    if type(x) ~= "number" or x ~= x or x == math.huge or x == -math.huge then return bad("knn_vector: the query vector holds numbers") end
  end
  local qb = vec.pack(v)
  if not qb then return bad("knn_vector: the query vector's numbers must be within the float32 range") end
  local w = q.weight == nil and 1 or q.weight
  if type(w) ~= "number" or not (w > 0) then return bad("knn_vector: weight must be a number > 0") end
  local cond = "1"
  if q.filter ~= nil then
    local drive = self.drive
    self.in_knn, self.drive = true, true
    local e, fm, fc = self:compile(q.filter, "d", nil, depth + 1)
    self.in_knn, self.drive = nil, drive
    if not e then return nil, fm, fc end
    cond = e
  end
  local prof, clock = knn.profile, os.clock
  local t0 = prof and clock()
  local j
  if not self.def.vec then
    local best, parts = legacy(self, d, vec.unpack(qb), cond), {}
    for i = 1, math.min(k, #best) do parts[i] = ('"k%d":%.17g'):format(best[i][1], best[i][2]) end
    j = "{" .. table.concat(parts, ",") .. "}"
  elseif d.parent then
    j = "{}" -- a vector inside a NESTED field is no row's: nothing matches
  else
    -- the candidates: the field's vectors of rows matching the filter
    local text = ("SELECT vec_topk(%s, %s, CAST(%s AS BLOB), v.v, v.doc) FROM %svec v WHERE v.f = %s"):format(
      self:bind(k), self:bind(vec.METRIC[d.vector.metric_type]), self:bind(qb), self.p, self:bind(d.id))
    if cond ~= "1" then
      text = text .. (" AND v.doc IN (SELECT d.id FROM %sdoc d WHERE d.parent IS NULL AND (%s))"):format(self.p, cond)
    end
    j = docs.run(self.h, text, self.binds, nparams(text))[1][1]
  end
  if prof then prof.topk = (prof.topk or 0) + clock() - t0 end
  local jb = self:bind(j)
  return ("%s.id IN (SELECT CAST(substr(key, 2) AS INTEGER) FROM json_each(%s))"):format(a, jb),
    ("(json_extract(%s, '$.k' || %s.id) * %s)"):format(jb, a, self:bind(w))
end

return knn
