--- otskit.store.search.score -- the functions_score query: the rows of
-- its query, scored by functions (field_value_factor, decay, random, each
-- times its weight, each applied to the rows matching its filter),
-- combined by score_mode (SUM, AVG, MAX, MIN, MULTIPLY, FIRST; a row no
-- function applies to scores 1), capped at max_score, combined with the
-- query's score by combine_mode (MULTIPLY, SUM, AVG, MAX, MIN, REPLACE);
-- rows scoring below min_score are left out. All of it is one SQL
-- expression per row (SQLite's math functions). Registered as the query
-- kind functions_score of otskit.store.search.query.
--
-- { functions_score = { query, functions = { { weight, filter,
--   field_value_factor = { field_name, factor = 1, modifier = "NONE",
--   missing } | decay = { field_name, math_function = "GAUSS"|"EXP"|
--   "LINEAR", param_type, param, decay = 0.5, multi_value_mode =
--   "MIN"|"MAX"|"AVG"|"SUM" } | random = {} } },
--   score_mode = "MULTIPLY", combine_mode = "MULTIPLY", min_score,
--   max_score } }
-- A decay's param_type and param, by the field's type (param_type
-- defaults to the field's):
--   NUMERIC (LONG, DOUBLE; DATE in ms): { origin, scale (> 0), offset = 0 }
--   DATE: { origin (ms, or a string in the field's date_formats), scale =
--     { value, unit }, offset = { value, unit } } (units MILLISECOND..WEEK;
--     a month or a year has no fixed length: refused)
--   GEO (GEO_POINT): { origin = "lat,lon", scale (metres, > 0), offset
--     (metres) = 0 }: the distance on the sphere, as geo_distance
local base = require "otskit.store.base"
local query = require "otskit.store.search.query"
local docs = require "otskit.store.search.docs"
local dates = require "otskit.store.search.dates"

local score = {}

local function bad(msg) return nil, msg, "OTSParameterInvalid" end
local function isnum(v) return type(v) == "number" and v == v and v > -math.huge and v < math.huge end

local MODIFIERS = { NONE = "%s", LOG = "log10(%s)", LOG1P = "log10(1 + %s)", LOG2P = "log10(2 + %s)", LN = "ln(%s)",
  LN1P = "ln(1 + %s)", LN2P = "ln(2 + %s)", SQUARE = "((%s) * (%s))", SQRT = "sqrt(%s)", RECIPROCAL = "(1.0 / (%s))" }
local MVM = { MIN = "min", MAX = "max", AVG = "avg", SUM = "total" }
score.LIMITS = { functions = 5 }

-- the keys of each part (a key outside them is refused, never ignored)
query.body_keys("functions_score", { "query", "functions", "score_mode", "combine_mode", "min_score", "max_score" })
local KEYS = {
  ["functions_score.functions"] = base.set{ "weight", "filter", "field_value_factor", "decay", "random" },
  ["functions_score.field_value_factor"] = base.set{ "field_name", "factor", "modifier", "missing" },
  ["functions_score.decay"] = base.set{ "field_name", "math_function", "param_type", "param", "decay", "multi_value_mode" },
  ["functions_score.decay.param"] = base.set{ "origin", "scale", "offset" },
  ["functions_score.random"] = {},
}

-- v is a table holding only the keys of part `what` -> true | nil, msg, code
local function known(v, what)
  if type(v) ~= "table" then return bad(what .. " must be a table") end
  return base.known(v, KEYS[what], what)
end

local function numeric_field(ctx, name, path, what)
  local d, m, c = ctx:field(name, path, what)
  if not d then return nil, m, c end
  if d.type ~= "LONG" and d.type ~= "DOUBLE" and d.type ~= "DATE" then
    return bad(("%s: field [%s] is %s, not LONG, DOUBLE or DATE"):format(what, d.name, d.type))
  end
  return d
end

local function fvf(ctx, b, a, path)
  local what = "functions_score.field_value_factor"
  local ok, km, kc = known(b, what)
  if not ok then return nil, km, kc end
  local d, m, c = numeric_field(ctx, b.field_name, path, what)
  if not d then return nil, m, c end
  local factor = b.factor == nil and 1 or b.factor
  if not isnum(factor) then return bad(what .. ": factor must be a number") end
  local mod = MODIFIERS[b.modifier or "NONE"]
  if not mod then return bad(what .. ": modifier must be NONE, LOG, LOG1P, LOG2P, LN, LN1P, LN2P, SQUARE, SQRT or RECIPROCAL") end
  if b.missing ~= nil and not isnum(b.missing) then return bad(what .. ": missing must be a number") end
  local v = ("(SELECT max(v) FROM %snum WHERE doc = %s.id AND f = %s)"):format(ctx.p, a, ctx:bind(d.id))
  if b.missing ~= nil then v = ("coalesce(%s, %s)"):format(v, ctx:bind(b.missing)) end
  local x = ("(%s * 1.0 * %s)"):format(v, ctx:bind(factor))
  return ("coalesce(" .. mod .. ", 0)"):format(x, x)
end

-- a decay's param -> origin, scale, offset (numbers: the field's unit,
-- ms for DATE, metres for GEO_POINT) and the SQL of a value's distance
-- from the origin | nil, msg, code
local function decay_param(ctx, d, b, a, what)
  local p = b.param
  if type(p) ~= "table" then return bad(what .. ": param is missing") end
  local ok, km, kc = known(p, what .. ".param")
  if not ok then return nil, km, kc end
  local pt = b.param_type or (d.type == "DATE" and (type(p.scale) == "table" and "DATE" or "NUMERIC"))
    or (d.type == "GEO_POINT" and "GEO") or "NUMERIC"
  if pt == "GEO" then
    if d.type ~= "GEO_POINT" then return bad(("%s: a GEO param needs a GEO_POINT field; [%s] is %s"):format(what, d.name, d.type)) end
    local lat, lon = docs.geo(p.origin)
    if not lat then return bad(what .. ": origin must be \"lat,lon\" with lat in [-90, 90] and lon in [-180, 180]") end
    if not isnum(p.scale) or p.scale <= 0 then return bad(what .. ": scale must be a number of metres > 0") end
    local off = p.offset or 0
    if not isnum(off) or off < 0 then return bad(what .. ": offset must be a number of metres >= 0") end
    return p.scale, off, function(agg)
      return ("(SELECT %s(geo_dist(g.lat, g.lon, %s, %s)) FROM %sgpt g WHERE g.doc = %s.id AND g.f = %s)"):format(agg,
        ctx:bind(lat), ctx:bind(lon), ctx.p, a, ctx:bind(d.id))
    end
  end
  if d.type ~= "LONG" and d.type ~= "DOUBLE" and d.type ~= "DATE" then
    return bad(("%s: field [%s] is %s, not LONG, DOUBLE, DATE or GEO_POINT"):format(what, d.name, d.type))
  end
  local origin, scale, off
  if pt == "DATE" then
    if d.type ~= "DATE" then return bad(("%s: a DATE param needs a DATE field; [%s] is %s"):format(what, d.name, d.type)) end
    origin = p.origin
    if type(origin) == "string" then
      origin = docs.date(origin, d.date_formats)
      if not origin then return bad(what .. ": origin does not match the field's date_formats") end
    elseif not isnum(origin) or origin ~= math.floor(origin) then
      return bad(what .. ": origin must be milliseconds since the epoch or a date string")
    end
    local sc, sm, scode = dates.interval(p.scale, what .. ".scale", false)
    if not sc then return nil, sm, scode end
    if not sc.ms then return bad(what .. ": scale must be a fixed length (MILLISECOND..WEEK)") end
    local of, om, ocode = dates.interval(p.offset, what .. ".offset", true)
    if not of then return nil, om, ocode end
    if of.ms < 0 then return bad(what .. ": offset must be >= 0") end
    scale, off = sc.ms, of.ms
  elseif pt == "NUMERIC" then
    if not isnum(p.origin) or not isnum(p.scale) or p.scale <= 0 then
      return bad(what .. ": param must be { origin, scale (> 0), offset } numbers")
    end
    origin, scale, off = p.origin, p.scale, p.offset or 0
    if not isnum(off) or off < 0 then return bad(what .. ": offset must be a number >= 0") end
  else
    return bad(what .. ": param_type must be NUMERIC, DATE or GEO")
  end
  return scale, off, function(agg)
    return ("(SELECT %s(abs(v - %s)) FROM %snum WHERE doc = %s.id AND f = %s)"):format(agg, ctx:bind(origin), ctx.p, a,
      ctx:bind(d.id))
  end
end

local function decay(ctx, b, a, path)
  local what = "functions_score.decay"
  local ok, km, kc = known(b, what)
  if not ok then return nil, km, kc end
  local d, m, c = ctx:field(b.field_name, path, what)
  if not d then return nil, m, c end
  local scale, off, dist_of = decay_param(ctx, d, b, a, what)
  if not scale then return nil, off, dist_of end
  local dk = b.decay == nil and 0.5 or b.decay
  if not isnum(dk) or dk <= 0 or dk >= 1 then return bad(what .. ": decay must be in (0, 1)") end
  local mv = MVM[b.multi_value_mode or "MIN"]
  if not mv then return bad(what .. ": multi_value_mode must be MIN, MAX, AVG or SUM") end
  -- the distance past the offset, of the values chosen by multi_value_mode
  local dist = ("max(0, %s - %s)"):format(dist_of(mv), ctx:bind(off))
  local fn = b.math_function or "GAUSS"
  local e
  if fn == "GAUSS" then -- exp(-dist^2 / (2 sigma^2)), sigma^2 = -scale^2 / (2 ln decay)
    local s2 = -scale * scale / (2 * math.log(dk))
    e = ("exp(-(%s) * (%s) / (2.0 * %s))"):format(dist, dist, ctx:bind(s2))
  elseif fn == "EXP" then
    e = ("exp(%s * 1.0 * (%s))"):format(ctx:bind(math.log(dk) / scale), dist)
  elseif fn == "LINEAR" then
    e = ("max(0, (%s - (%s)) * 1.0 / %s)"):format(ctx:bind(scale / (1 - dk)), dist, ctx:bind(scale / (1 - dk)))
  else
    return bad(what .. ": math_function must be GAUSS, EXP or LINEAR")
  end
  return ("coalesce(%s, 1)"):format(e) -- a row without the field: no decay
end

-- a deterministic random number in [0, 1) per document
local function random(_, _, a)
  return ("(((%s.id * 2654435761) %% 4294967291) / 4294967291.0)"):format(a)
end

local COMBINE = { MULTIPLY = "(%s) * (%s)", SUM = "(%s) + (%s)", AVG = "((%s) + (%s)) / 2.0", MAX = "max(%s, %s)",
  MIN = "min(%s, %s)", REPLACE = "0 * (%s) + (%s)" }
local MODES = { SUM = true, AVG = true, MAX = true, MIN = true, MULTIPLY = true, FIRST = true }

query.KINDS.functions_score = function(self, q, a, path, depth)
  if q.query == nil then return bad("functions_score: query is missing") end
  local fs = q.functions
  if type(fs) ~= "table" or #fs == 0 or #fs > score.LIMITS.functions then
    return bad("functions_score: functions must list 1.." .. score.LIMITS.functions .. " functions")
  end
  local lok, lm, lc = base.list(fs, "functions_score: functions")
  if not lok then return nil, lm, lc end
  local smode, cmode = q.score_mode or "MULTIPLY", q.combine_mode or "MULTIPLY"
  if not MODES[smode] then return bad("functions_score: score_mode must be SUM, AVG, MAX, MIN, MULTIPLY or FIRST") end
  if not COMBINE[cmode] then return bad("functions_score: combine_mode must be MULTIPLY, SUM, AVG, MAX, MIN or REPLACE") end
  for _, k in ipairs({ "min_score", "max_score" }) do
    if q[k] ~= nil and not isnum(q[k]) then return bad("functions_score: " .. k .. " must be a number") end
  end
  local want = self.want_score
  self.want_score = true -- the score decides which rows match (min_score)
  local e, s, c = self:compile(q.query, a, path, depth + 1)
  if not e then self.want_score = want; return nil, s, c end
  local vals = {}
  for i, f in ipairs(fs) do
    if type(f) ~= "table" then self.want_score = want; return bad("functions_score: each function is a table") end
    local ok, km, kc = known(f, "functions_score.functions")
    if ok and f.random ~= nil then ok, km, kc = known(f.random, "functions_score.random") end
    if not ok then self.want_score = want; return nil, km, kc end
    local n, v, m2, c2 = 0, nil, nil, nil
    if f.field_value_factor ~= nil then n = n + 1; v, m2, c2 = fvf(self, f.field_value_factor, a, path) end
    if f.decay ~= nil then n = n + 1; v, m2, c2 = decay(self, f.decay, a, path) end
    if f.random ~= nil then n = n + 1; v = random(self, f.random, a) end
    local w = f.weight
    if w ~= nil and not isnum(w) then self.want_score = want; return bad("functions_score: weight must be a number") end
    if n == 0 and w == nil then self.want_score = want; return bad("functions_score: a function needs a kind or a weight") end
    if n > 1 then self.want_score = want; return bad("functions_score: a function has one kind") end
    if n == 1 and not v then self.want_score = want; return nil, m2, c2 end
    v = v or "1"
    if w ~= nil then v = ("(%s) * %s"):format(v, self:bind(w)) end
    if f.filter ~= nil then
      local fe, fm, fc = self:compile(f.filter, a, path, depth + 1)
      if not fe then self.want_score = want; return nil, fm, fc end
      v = ("(CASE WHEN %s THEN %s END)"):format(fe, v)
    end
    vals[i] = v
  end
  self.want_score = want
  local applied = {}
  for i, v in ipairs(vals) do applied[i] = ("(%s IS NOT NULL)"):format(v) end
  local cnt = "(" .. table.concat(applied, " + ") .. ")"
  local fsc
  local function list(fmt, none)
    local t = {}
    for i, v in ipairs(vals) do t[i] = (fmt):format(v, none) end
    return t
  end
  if smode == "SUM" then fsc = ("CASE WHEN %s = 0 THEN 1 ELSE %s END"):format(cnt, table.concat(list("coalesce(%s, %s)", 0), " + "))
  elseif smode == "AVG" then
    fsc = ("CASE WHEN %s = 0 THEN 1 ELSE (%s) * 1.0 / %s END"):format(cnt, table.concat(list("coalesce(%s, %s)", 0), " + "), cnt)
  elseif smode == "MULTIPLY" then fsc = table.concat(list("coalesce(%s, %s)", 1), " * ")
  elseif smode == "FIRST" then fsc = #vals == 1 and ("coalesce(%s, 1)"):format(vals[1]) or ("coalesce(%s, 1)"):format(table.concat(vals, ", "))
  elseif smode == "MAX" then
    fsc = ("CASE WHEN %s = 0 THEN 1 ELSE %s END"):format(cnt, #vals == 1 and vals[1] or "max(" .. table.concat(list("coalesce(%s, %s)", -1e308), ", ") .. ")")
  else
    fsc = ("CASE WHEN %s = 0 THEN 1 ELSE %s END"):format(cnt, #vals == 1 and vals[1] or "min(" .. table.concat(list("coalesce(%s, %s)", 1e308), ", ") .. ")")
  end
  if q.max_score ~= nil then fsc = ("min(%s, %s)"):format(fsc, self:bind(q.max_score)) end
  local total = (COMBINE[cmode]):format(s, fsc)
  if cmode == "REPLACE" then total = ("(%s)"):format(fsc) end
  if q.min_score ~= nil then e = ("(%s) AND (%s) >= %s"):format(e, total, self:bind(q.min_score)) end
  return e, total
end

return score
