--- otskit.store.search.knn -- the knn_vector query, computed exactly: the
-- rows matching its filter are read, each one's vector (the VECTOR field,
-- a "[f1, ...]" string of the field's dimension) compared with the query
-- vector by the field's metric, and the top_k most similar kept; their
-- scores are the service's: EUCLIDEAN 1 / (1 + distance^2), COSINE (1 +
-- cosine) / 2, DOT_PRODUCT (1 + dot) / 2, times weight. Registered as the
-- query kind knn_vector of otskit.store.search.query; a search orders by
-- score unless a sort is given. It may also be a clause of other queries
-- (bool must / filter / should / must_not, const_score, function_score,
-- functions_score), at the top level: its top_k rows then combine with
-- the other clauses' (and its score adds to a bool's as any clause's);
-- never inside a nested query or another knn_vector's filter.
--
-- { knn_vector = { field_name, top_k (1..1000), float32_query_vector = {
--   ... }, filter, weight = 1 } }
local cjson = require "cjson.safe"
local query = require "otskit.store.search.query"
local docs = require "otskit.store.search.docs"

local knn = {}
knn.LIMITS = { top_k = 1000 }

local function bad(msg) return nil, msg, "OTSParameterInvalid" end

local function nparams(text)
  local n = 0
  for d in text:gmatch("%?(%d+)") do
    local v = tonumber(d)
    if v > n then n = v end
  end
  return n
end

--- knn.similarity(metric, a, b) -> the score of vector b against a
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
  local an = 0
  for _, x in ipairs(v) do
    if type(x) ~= "number" or x ~= x or x == math.huge or x == -math.huge then return bad("knn_vector: the query vector holds numbers") end
    an = an + x * x
  end
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
  -- the candidates: rows with the field that match the filter
  local text = ("SELECT d.id, d.pk FROM %sdoc d WHERE d.parent IS NULL AND d.id IN (SELECT doc FROM %shas WHERE f = %s) AND (%s)")
    :format(self.p, self.p, self:bind(d.id), cond)
  -- in phases (knn.profile, when a table, sums each phase's CPU seconds)
  local prof, clock = knn.profile, os.clock
  local t0 = prof and clock()
  local rows = docs.run(self.h, text, self.binds, nparams(text))
  local t1 = prof and clock()
  local raw = {}
  for i, r in ipairs(rows) do raw[i] = self.read_vector(r[2], d.name) end
  local t2 = prof and clock()
  local vecs = {}
  for i, s in ipairs(raw) do vecs[i] = type(s) == "string" and cjson.decode(s) or false end
  local t3 = prof and clock()
  local best = {}
  local metric = d.vector.metric_type
  for i, r in ipairs(rows) do
    local vec = vecs[i]
    if type(vec) == "table" and #vec == #v then
      best[#best + 1] = { r[1], knn.similarity(metric, v, vec, an) * w }
    end
  end
  local t4 = prof and clock()
  table.sort(best, function(x, y) if x[2] ~= y[2] then return x[2] > y[2] end return x[1] < y[1] end)
  if prof then
    local t5 = clock()
    prof.scan = (prof.scan or 0) + t1 - t0
    prof.read = (prof.read or 0) + t2 - t1
    prof.decode = (prof.decode or 0) + t3 - t2
    prof.score = (prof.score or 0) + t4 - t3
    prof.sort = (prof.sort or 0) + t5 - t4
  end
  local ids, scores = {}, {}
  for i = 1, math.min(k, #best) do
    ids[i] = best[i][1]
    scores["k" .. best[i][1]] = best[i][2]
  end
  local jid, jsc = self:bind(cjson.encode(ids)), self:bind(cjson.encode(scores))
  if #ids == 0 then jid = self:bind("[]") end
  return ("%s.id IN (SELECT value FROM json_each(%s))"):format(a, jid),
    ("json_extract(%s, '$.k' || %s.id)"):format(jsc, a)
end

return knn
