-- spec/search_oracle.lua -- a brute-force evaluation of search queries over
-- the rows as written (plain Lua, no SQL): the model the search index's
-- property spec compares otskit.store's answers with.
local cjson = require "cjson.safe"
local analyzers = require "otskit.store.search.analyzers"

local oracle = {}

local function haversine(lat1, lon1, lat2, lon2)
  local r = math.rad
  local dlat, dlon = r(lat2 - lat1), r(lon2 - lon1)
  local a = math.sin(dlat / 2) ^ 2 + math.cos(r(lat1)) * math.cos(r(lat2)) * math.sin(dlon / 2) ^ 2
  return 2 * 6371008.8 * math.asin(math.sqrt(math.min(1, a)))
end
oracle.haversine = haversine

local function in_poly(lat, lon, pts)
  local inside, j = false, #pts
  for i = 1, #pts do
    local yi, xi, yj, xj = pts[i][1], pts[i][2], pts[j][1], pts[j][2]
    if ((yi > lat) ~= (yj > lat)) and (lon < (xj - xi) * (lat - yi) / (yj - yi) + xi) then inside = not inside end
    j = i
  end
  return inside
end

local function geo(s)
  local a, b = s:match("^([^,]+),([^,]+)$")
  return tonumber(a), tonumber(b)
end

-- the values of field f (schema entry) in scope obj (name -> raw value)
local function vals(f, obj)
  local raw = obj[f.short]
  if raw == nil or raw == cjson.null then return {} end
  local list = { raw }
  if f.is_array then
    list = type(raw) == "string" and cjson.decode(raw) or raw
  end
  local out = {}
  for _, v in ipairs(list) do
    if f.type == "TEXT" then out[#out + 1] = analyzers.tokens(f.analyzer or "single_word", f.params or {}, v)
    elseif f.type == "BOOLEAN" then out[#out + 1] = v and 1 or 0
    elseif f.type == "GEO_POINT" then local la, lo = geo(v); out[#out + 1] = { la, lo }
    else out[#out + 1] = v end
  end
  return out
end
oracle.vals = vals

local function has_seq(toks, seq)
  for i = 1, #toks - #seq + 1 do
    local ok = true
    for j = 1, #seq do if toks[i + j - 1] ~= seq[j] then ok = false; break end end
    if ok then return true end
  end
  return false
end

local function glob(p)
  return "^" .. p:gsub("[%^%$%(%)%%%.%[%]%+%-]", "%%%0"):gsub("%*", ".*"):gsub("%?", ".") .. "$"
end

local function msm(v, n)
  if type(v) == "string" then
    local pct = tonumber(v:sub(1, -2))
    local k = math.floor(n * math.abs(pct) / 100)
    return pct < 0 and n - k or k
  end
  return v
end

--- oracle.eval(schema, q, obj) -> boolean: does obj (a row's columns, or a
-- nested object) match q. schema: name -> { short, type, is_array,
-- analyzer, params, kids }
function oracle.eval(S, q, obj)
  local kind, b = next(q)
  local f = b.field_name and S[b.field_name]
  if kind == "match_all" then return true
  elseif kind == "term" or kind == "terms" then
    local want = kind == "term" and { b.term } or b.terms
    for _, v in ipairs(vals(f, obj)) do
      for _, w in ipairs(want) do
        if f.type == "TEXT" then
          for _, tk in ipairs(v) do if tk == w then return true end end
        elseif v == (f.type == "BOOLEAN" and (w and 1 or 0) or w) then return true end
      end
    end
    return false
  elseif kind == "range" then
    for _, v in ipairs(vals(f, obj)) do
      local ok = true
      if b.from ~= nil then ok = ok and (b.include_lower and v >= b.from or v > b.from) end
      if b.to ~= nil then ok = ok and (b.include_upper and v <= b.to or v < b.to) end
      if ok then return true end
    end
    return false
  elseif kind == "prefix" then
    for _, v in ipairs(vals(f, obj)) do if v:sub(1, #b.prefix) == b.prefix then return true end end
    return false
  elseif kind == "wildcard" then
    for _, v in ipairs(vals(f, obj)) do if v:match(glob(b.value)) then return true end end
    return false
  elseif kind == "exists" then
    if f.type == "NESTED" then
      local raw = obj[f.short]
      local list = type(raw) == "string" and cjson.decode(raw) or raw
      return type(list) == "table" and #list > 0
    end
    return #vals(f, obj) > 0
  elseif kind == "match" or kind == "match_phrase" then
    local qt = analyzers.tokens(f.analyzer or "single_word", f.params or {}, b.text)
    local vs = vals(f, obj)
    if kind == "match_phrase" then
      if #qt == 0 then return false end
      for _, toks in ipairs(vs) do if has_seq(toks, qt) then return true end end
      return false
    end
    local all = {}
    for _, toks in ipairs(vs) do for _, tk in ipairs(toks) do all[tk] = true end end
    local uniq, seen, hit = {}, {}, 0
    for _, tk in ipairs(qt) do if not seen[tk] then seen[tk] = true; uniq[#uniq + 1] = tk end end
    if #uniq == 0 then return false end
    for _, tk in ipairs(uniq) do if all[tk] then hit = hit + 1 end end
    if b.operator == "AND" then return hit == #uniq end
    local need = b.minimum_should_match and msm(b.minimum_should_match, #uniq) or 1
    return hit >= math.max(1, need)
  elseif kind == "bool" then
    for _, s in ipairs(b.must or {}) do if not oracle.eval(S, s, obj) then return false end end
    for _, s in ipairs(b.filter or {}) do if not oracle.eval(S, s, obj) then return false end end
    for _, s in ipairs(b.must_not or {}) do if oracle.eval(S, s, obj) then return false end end
    local should = b.should or {}
    if #should > 0 then
      local default = ((b.must and #b.must > 0) or (b.filter and #b.filter > 0)) and 0 or 1
      local need = b.minimum_should_match and msm(b.minimum_should_match, #should) or default
      local n = 0
      for _, s in ipairs(should) do if oracle.eval(S, s, obj) then n = n + 1 end end
      return n >= need
    end
    return true
  elseif kind == "const_score" then return oracle.eval(S, b.filter, obj)
  elseif kind == "function_score" or kind == "functions_score" then
    return oracle.eval(S, b.query, obj) -- (functions_score: without min_score)
  elseif kind == "knn_vector" then -- (when top_k is at least the rows having the vector)
    return #vals(f, obj) > 0 and (b.filter == nil or oracle.eval(S, b.filter, obj))
  elseif kind == "nested" then
    local nf = S[b.path]
    local raw = obj[nf.short]
    local list = type(raw) == "string" and cjson.decode(raw) or raw
    if type(list) ~= "table" then return false end
    for _, child in ipairs(list) do if oracle.eval(S, b.query, child) then return true end end
    return false
  elseif kind == "geo_distance" then
    local la, lo = geo(b.center_point)
    for _, p in ipairs(vals(f, obj)) do if haversine(p[1], p[2], la, lo) <= b.distance then return true end end
    return false
  elseif kind == "geo_bounding_box" then
    local top, left = geo(b.top_left)
    local bottom, right = geo(b.bottom_right)
    for _, p in ipairs(vals(f, obj)) do
      if p[1] <= top and p[1] >= bottom and p[2] >= left and p[2] <= right then return true end
    end
    return false
  elseif kind == "geo_polygon" then
    local pts = {}
    for i, s in ipairs(b.points) do pts[i] = { geo(s) } end
    for _, p in ipairs(vals(f, obj)) do if in_poly(p[1], p[2], pts) then return true end end
    return false
  end
  error("oracle: unknown query kind " .. tostring(kind))
end

--- oracle.sort(ids, rows, sorters) -> ids in the order of sorters (a list
-- of field_sort { field_name, order, missing_value, missing_field } on
-- single-valued fields, pk_sort, geo_distance_sort from "0,0"): rows
-- without a key last in either order, then ascending id.
function oracle.sort(ids, rows, s)
  local function key(so, c)
    if so.pk_sort then return nil end
    if so.geo_distance_sort then
      if not c.g then return nil end
      local a, b = c.g:match("^([^,]+),([^,]+)$")
      return haversine(tonumber(a), tonumber(b), 0, 0)
    end
    local f = so.field_sort
    local v = c[f.field_name]
    if v == nil and f.missing_field then v = c[f.missing_field] end
    if v == nil then v = f.missing_value end
    return v
  end
  table.sort(ids, function(x, y)
    for _, so in ipairs(s) do
      local desc = ((so.field_sort or so.pk_sort or so.geo_distance_sort).order == "DESC")
      if so.pk_sort then
        if x ~= y then return (x < y) ~= desc end
      else
        local a, b = key(so, rows[x]), key(so, rows[y])
        if a ~= b then
          if a == nil then return false end
          if b == nil then return true end
          return (a < b) ~= desc
        end
      end
    end
    return x < y
  end)
  return ids
end

return oracle
