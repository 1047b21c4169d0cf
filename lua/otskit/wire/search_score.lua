--- otskit.wire.search_score -- the functions_score query (QueryType
-- FUNCTIONS_SCORE_QUERY) in the store's vocabulary (otskit.store.search.
-- score) <-> FunctionsScoreQuery (proto/search_score.proto); registered
-- with otskit.wire.search_query. A decay's param travels as the bytes of
-- DecayFuncNumericParam, DecayFuncDateParam (origin_long or origin_string,
-- scale and offset DateTimeValues) or DecayFuncGeoParam (origin "lat,lon",
-- scale and offset in metres), named by param_type.
local common = require "otskit.wire.common"
local sq = require "otskit.wire.search_query"

local invalid, strip = common.invalid, sq.strip
local dec, enc = sq.decode_message, sq.encode_message

local function pre(v, p) return v ~= nil and p .. v or nil end

-- the keys of each part that travel
local FN, FVF = sq.set{ "weight", "filter", "field_value_factor", "decay", "random" },
  sq.set{ "field_name", "factor", "modifier", "missing" }
local DECAY = sq.set{ "field_name", "math_function", "param_type", "param", "decay", "multi_value_mode" }
local PARAM, RANDOM = sq.set{ "origin", "scale", "offset" }, {}

local function enc_fs(b)
  local q, m, c = sq.encode_query(b.query)
  if not q then return nil, m, c end
  local fns = {}
  for i, f in ipairs(type(b.functions) == "table" and b.functions or {}) do
    if type(f) ~= "table" then return invalid("functions_score: each function is a table") end
    local ok, km, kc = sq.known(f, FN, "functions_score.functions")
    if ok and f.random ~= nil then ok, km, kc = sq.known(f.random, RANDOM, "functions_score.random") end
    if ok and f.field_value_factor ~= nil then ok, km, kc = sq.known(f.field_value_factor, FVF, "functions_score.field_value_factor") end
    if ok and f.decay ~= nil then ok, km, kc = sq.known(f.decay, DECAY, "functions_score.decay") end
    if ok and f.decay ~= nil and f.decay.param ~= nil then
      ok, km, kc = sq.known(f.decay.param, PARAM, "functions_score.decay.param")
    end
    if not ok then return nil, km, kc end
    local o = { weight = f.weight, random = f.random and {} or nil }
    if f.filter ~= nil then
      local fq, fm, fc = sq.encode_query(f.filter)
      if not fq then return nil, fm, fc end
      o.filter = fq
    end
    local v = f.field_value_factor
    if v then o.field_value_factor = { field_name = v.field_name, factor = v.factor, modifier = pre(v.modifier, "FM_"), missing = v.missing } end
    local d = f.decay
    if d then
      local p = type(d.param) == "table" and d.param or {}
      -- without param_type: a { value, unit } scale is DATE's, a string
      -- origin with a number scale GEO's
      local pt = d.param_type or (type(p.scale) == "table" and "DATE") or (type(p.origin) == "string" and "GEO")
        or "NUMERIC"
      local msg, m2 = "DecayFuncNumericParam", { origin = p.origin, scale = p.scale, offset = p.offset }
      if pt == "DATE" then
        msg = "DecayFuncDateParam"
        m2 = { scale = p.scale, offset = p.offset }
        if type(p.origin) == "string" then m2.origin_string = p.origin else m2.origin_long = p.origin end
      elseif pt == "GEO" then msg = "DecayFuncGeoParam"
      elseif pt ~= "NUMERIC" then return invalid("decay: param_type must be NUMERIC, DATE or GEO") end
      local pb, pm, pc = enc(msg, m2)
      if not pb then return nil, pm, pc end
      o.decay = { field_name = d.field_name, math_function = d.math_function, param_type = "DF_" .. pt .. "_PARAM", param = pb,
        decay = d.decay, multi_value_mode = pre(d.multi_value_mode, "MVM_") }
    end
    fns[i] = o
  end
  return { query = q, functions = fns, score_mode = pre(b.score_mode, "FSM_"), combine_mode = pre(b.combine_mode, "FCM_"),
    min_score = b.min_score, max_score = b.max_score }
end

local function dec_fs(m, depth)
  if m.query == nil then return invalid("FunctionsScoreQuery: query is missing") end
  local q, qm, qc = sq.decode_query(m.query, depth + 1)
  if not q then return nil, qm, qc end
  local fns = {}
  for i, f in ipairs(m.functions or {}) do
    local o = { weight = f.weight, random = f.random and {} or nil }
    if f.filter then
      local fq, fm, fc = sq.decode_query(f.filter, depth + 1)
      if not fq then return nil, fm, fc end
      o.filter = fq
    end
    local v = f.field_value_factor
    if v then o.field_value_factor = { field_name = v.field_name, factor = v.factor, modifier = strip(v.modifier, "FM_"), missing = v.missing } end
    local d = f.decay
    if d then
      local pt = d.param_type or "DF_NUMERIC_PARAM"
      local msg = ({ DF_NUMERIC_PARAM = "DecayFuncNumericParam", DF_DATE_PARAM = "DecayFuncDateParam",
        DF_GEO_PARAM = "DecayFuncGeoParam" })[pt]
      if not msg then return invalid("DecayFunction: unknown param_type " .. tostring(pt)) end
      local p, pm, pc = dec(msg, d.param or "")
      if not p then return nil, pm, pc end
      local param = { origin = p.origin, scale = p.scale, offset = p.offset }
      if pt == "DF_DATE_PARAM" then
        param.origin = p.origin_string
        if p.origin_long ~= nil then param.origin = p.origin_long end
        if p.origin_long ~= nil and p.origin_string ~= nil then
          return invalid("DecayFuncDateParam: origin_long or origin_string, not both")
        end
      end
      -- NUMERIC is what a param without param_type means: left out, so a
      -- decoded request equals the one encoded
      local ptype = pt:match("^DF_(%u+)_PARAM$")
      o.decay = { field_name = d.field_name, math_function = d.math_function, decay = d.decay,
        param_type = ptype ~= "NUMERIC" and ptype or nil,
        multi_value_mode = strip(d.multi_value_mode, "MVM_"), param = param }
    end
    fns[i] = o
  end
  return { query = q, functions = fns, score_mode = strip(m.score_mode, "FSM_"), combine_mode = strip(m.combine_mode, "FCM_"),
    min_score = m.min_score, max_score = m.max_score }
end

sq.register("functions_score", "FUNCTIONS_SCORE_QUERY", "FunctionsScoreQuery", enc_fs, dec_fs,
  { "query", "functions", "score_mode", "combine_mode", "min_score", "max_score" })

return {}
