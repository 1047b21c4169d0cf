--- otskit.store.search.sort -- a search's order (sorters compiled into
-- SQL key expressions; the primary key always ends the order, so it is
-- total) and its paging tokens: a token carries the sort and the last
-- returned document's keys (search after), signed with the store's
-- secret (HMAC-SHA1), so a page after it is exact however many pages
-- came before and however the data changed; a token that was not made
-- by this store, or was altered, is refused.
--
-- Sorters: { field_sort = { field_name, order = "ASC"|"DESC", mode =
-- "MIN"|"MAX"|"AVG", missing_value, missing_field } }, { pk_sort = { order
-- } }, { score_sort = { order (default DESC) } }, { geo_distance_sort = {
-- field_name, points = { "lat,lon", ... }, order, mode } }. Rows without
-- the sort field sort last in either order (unless missing_value or
-- missing_field gives them a value).
local cjson = require("cjson").new()
local base = require "otskit.store.base"
local docs = require "otskit.store.search.docs"
local wire = require("otskit.core").wire

cjson.encode_sparse_array(true)

-- numbers travel as exact text (this cjson keeps at most 14 digits)
local function wrap(v)
  if type(v) == "number" then
    if math.type and math.type(v) == "integer" then return { ["#i"] = ("%d"):format(v) } end -- (5.4: beyond 2^53 too)
    if v == math.floor(v) and v > -2^63 and v < 2^63 then return { ["#i"] = ("%.0f"):format(v) } end
    return { ["#d"] = ("%.17g"):format(v) }
  end
  if type(v) ~= "table" then return v end
  local o = {}
  for k, x in pairs(v) do o[k] = wrap(x) end
  return o
end
local function unwrap(v)
  if type(v) ~= "table" then return v end
  if v["#i"] then return math.tointeger and math.tointeger(tonumber(v["#i"])) or tonumber(v["#i"]) end
  if v["#d"] then return tonumber(v["#d"]) end
  local o = {}
  for k, x in pairs(v) do o[k] = unwrap(x) end
  return o
end

local sort = {}

local function bad(msg) return nil, msg, "OTSParameterInvalid" end

local ORDERS = { ASC = true, DESC = true }
local MODES = { MIN = "min", MAX = "max", AVG = "avg" }

--- sort.KEYS[kind]: the keys of a sorter's body (another is refused, never
-- ignored; field_sort.nested_filter is refused by name)
sort.KEYS = { pk_sort = base.set{ "order" }, score_sort = base.set{ "order" },
  field_sort = base.set{ "field_name", "order", "mode", "missing_value", "missing_field", "nested_filter" },
  geo_distance_sort = base.set{ "field_name", "points", "order", "mode", "distance_type" } }

-- a value for a sort on field d -> SQL literal bind | nil, msg, code
local function sort_value(ctx, d, v, what)
  local ty = d.type
  if ty == "BOOLEAN" then
    if type(v) ~= "boolean" then return bad(what .. ": field " .. d.name .. " is BOOLEAN") end
    return ctx:bind(v and 1 or 0)
  elseif ty == "KEYWORD" then
    if type(v) ~= "string" then return bad(what .. ": field " .. d.name .. " is KEYWORD") end
    return ctx:bind(v)
  elseif ty == "DATE" and type(v) == "string" then
    local ms = docs.date(v, d.date_formats)
    if not ms then return bad(what .. ": " .. v .. " is not a date of field " .. d.name) end
    return ctx:bind(ms)
  end
  if (ty == "LONG" or ty == "DATE") and docs.as_long(v) ~= nil then return ctx:bindv(d, docs.as_long(v)) end -- typed INTEGER
  if type(v) ~= "number" or (ty ~= "DOUBLE" and v ~= math.floor(v)) then
    return bad(what .. ": field " .. d.name .. " is " .. ty)
  end
  return ctx:bind(v)
end

local function sort_field(ctx, name, what)
  if type(name) ~= "string" then return bad(what .. ": field_name must be a string") end
  local d = ctx.def.byname[name]
  if not d then return bad(("%s: field [%s] does not exist in the index schema"):format(what, name)) end
  if d.parent then return bad(("%s: sorting on nested field [%s] is not supported"):format(what, name)) end
  return d
end

-- the key of a field_sort on field d
local function field_key(ctx, d, agg)
  local tbl = d.type == "KEYWORD" and "kw" or "num"
  return ("(SELECT %s(v) FROM %s%s WHERE doc = d.id AND f = %s)"):format(agg, ctx.p, tbl, ctx:bind(d.id))
end

--- sort.compile(ctx, sorters) -> keys = { {expr, desc} ... } (the last
-- is d.pk), uses_score | nil, msg, code. ctx.score: the score expression.
function sort.compile(ctx, sorters)
  if type(sorters) ~= "table" then return bad("sort must be a list of sorters") end
  local lok, lm, lc = base.list(sorters, "sort")
  if not lok then return nil, lm, lc end
  local keys, pk, score = {}, false, false
  for _, so in ipairs(sorters) do
    if type(so) ~= "table" then return bad("sort must be a list of sorters") end
    local kind, b = next(so)
    if kind == nil or next(so, kind) ~= nil or type(b) ~= "table" then
      return bad("a sorter names exactly one kind: field_sort, pk_sort, score_sort or geo_distance_sort")
    end
    if not sort.KEYS[kind] then
      return bad("unknown sorter: " .. tostring(kind) .. " (field_sort, pk_sort, score_sort, geo_distance_sort)")
    end
    local ok, km, kc = base.known(b, sort.KEYS[kind], kind)
    if not ok then return nil, km, kc end
    local order = b.order or (kind == "score_sort" and "DESC" or "ASC")
    if not ORDERS[order] then return bad(kind .. ".order must be ASC or DESC") end
    local desc = order == "DESC"
    if kind == "pk_sort" then
      keys[#keys + 1] = { "d.pk", desc }
      pk = true
    elseif kind == "score_sort" then
      keys[#keys + 1] = { "((" .. ctx.score .. ") + 0.0)", desc, score = true }
      score = true
    elseif kind == "field_sort" then
      local d, m, c = sort_field(ctx, b.field_name, "field_sort")
      if not d then return nil, m, c end
      if not d.sort then
        return bad(("field_sort: field [%s] does not enable_sort_and_agg"):format(d.name))
      end
      if d.type == "GEO_POINT" then return bad(("field_sort: field [%s] is GEO_POINT: sort it with geo_distance_sort"):format(d.name)) end
      if b.mode ~= nil and not MODES[b.mode] then return bad("field_sort.mode must be MIN, MAX or AVG") end
      if b.mode == "AVG" and d.type == "KEYWORD" then -- (SQLite's avg of text is 0: every row would tie)
        return bad(("field_sort.mode AVG: field [%s] is KEYWORD (MIN or MAX)"):format(d.name))
      end
      if b.nested_filter ~= nil then return bad("field_sort.nested_filter is not supported by otskit") end
      local agg = MODES[b.mode or (desc and "MAX" or "MIN")]
      local e = field_key(ctx, d, agg)
      if b.missing_field ~= nil then
        local d2, m2, c2 = sort_field(ctx, b.missing_field, "field_sort.missing_field")
        if not d2 then return nil, m2, c2 end
        if not d2.sort then return bad(("field_sort: missing_field [%s] does not enable_sort_and_agg"):format(d2.name)) end
        e = "coalesce(" .. e .. ", " .. field_key(ctx, d2, agg) .. ")"
      end
      if b.missing_value ~= nil then
        local v, m3, c3 = sort_value(ctx, d, b.missing_value, "field_sort.missing_value")
        if not v then return nil, m3, c3 end
        e = "coalesce(" .. e .. ", " .. v .. ")"
      end
      keys[#keys + 1] = { e, desc }
    elseif kind == "geo_distance_sort" then
      local d, m, c = sort_field(ctx, b.field_name, "geo_distance_sort")
      if not d then return nil, m, c end
      if d.type ~= "GEO_POINT" then return bad(("geo_distance_sort: field [%s] is not GEO_POINT"):format(d.name)) end
      if type(b.points) ~= "table" or #b.points == 0 then return bad("geo_distance_sort: points must list at least one point") end
      local pok, pm, pc = base.list(b.points, "geo_distance_sort: points")
      if not pok then return nil, pm, pc end
      if b.mode ~= nil and not MODES[b.mode] then return bad("geo_distance_sort.mode must be MIN, MAX or AVG") end
      if b.distance_type ~= nil and b.distance_type ~= "ARC" and b.distance_type ~= "PLANE" then
        return bad("geo_distance_sort.distance_type must be ARC or PLANE")
      end
      local ds = {}
      for i, s in ipairs(b.points) do
        local lat, lon = docs.geo(s)
        if not lat then return bad("geo_distance_sort: bad point " .. tostring(s)) end
        ds[i] = ("geo_dist(lat, lon, %s, %s)"):format(ctx:bind(lat), ctx:bind(lon))
      end
      local dist = #ds == 1 and ds[1] or "(" .. table.concat(ds, " + ") .. ") / " .. #ds
      keys[#keys + 1] = { ("(SELECT %s(%s) FROM %sgpt WHERE doc = d.id AND f = %s)"):format(
        MODES[b.mode or "MIN"], dist, ctx.p, ctx:bind(d.id)), desc }
    else
      return bad("unknown sorter: " .. tostring(kind) .. " (field_sort, pk_sort, score_sort, geo_distance_sort)")
    end
  end
  if not pk then keys[#keys + 1] = { "d.pk", false } end
  return keys, score
end

-- the primary key: never NULL (no NULLS LAST, which would keep SQLite
-- from walking an index in its order)
local PK = "d.pk"

--- sort.order_by(keys) -> "ORDER BY ..." (rows without a key last)
function sort.order_by(keys)
  local t = {}
  for i, k in ipairs(keys) do
    t[i] = k[1] .. (k[2] and " DESC" or " ASC") .. (k[1] == PK and "" or " NULLS LAST")
  end
  return "ORDER BY " .. table.concat(t, ", ")
end

--- sort.after(ctx, keys, vals) -> SQL: the documents after the one whose
-- keys are vals ({ {kind, value} } as sort.key_values returns)
function sort.after(ctx, keys, vals)
  local ors = {}
  local eqs = {}
  for i, k in ipairs(keys) do
    local v = vals[i]
    local lit
    if v[1] == "i" then lit = "CAST(" .. ctx:bind(v[2]) .. " AS INTEGER)"
    elseif v[1] == "d" then lit = ctx:bind(tonumber(v[2]))
    elseif v[1] == "s" then lit = ctx:bind(v[2])
    elseif v[1] == "b" then lit = "CAST(" .. ctx:bind(v[2]) .. " AS BLOB)" end
    local gt
    if lit and k[1] == PK then gt = k[1] .. (k[2] and " < " or " > ") .. lit
    elseif lit then gt = "(" .. k[1] .. (k[2] and " < " or " > ") .. lit .. " OR " .. k[1] .. " IS NULL)"
    else gt = "0" end
    ors[#ors + 1] = "(" .. table.concat(eqs, " AND ") .. (#eqs > 0 and " AND " or "") .. gt .. ")"
    eqs[#eqs + 1] = lit and (k[1] .. " = " .. lit) or (k[1] .. " IS NULL")
  end
  return "(" .. table.concat(ors, " OR ") .. ")"
end

--- sort.key_values(row, first) -> { {kind, value} }: the sort keys of a
-- result row whose columns from `first` on are typeof(k), k pairs
function sort.key_values(row, first, n)
  local out = {}
  for i = 1, n do
    local ty, v = row[first + 2 * (i - 1)], row[first + 2 * (i - 1) + 1]
    if ty == "integer" then out[i] = { "i", type(v) == "number" and ("%d"):format(v) or tostring(v) }
    elseif ty == "real" then out[i] = { "d", ("%.17g"):format(v) }
    elseif ty == "text" then out[i] = { "s", v }
    elseif ty == "blob" then out[i] = { "b", v }
    else out[i] = { "n" } end
  end
  return out
end

--- sort.select(keys) -> the SELECT list of typeof(k), k for every key
function sort.select(keys)
  local t = {}
  for i, k in ipairs(keys) do t[i] = "typeof(" .. k[1] .. "), " .. k[1] end
  return table.concat(t, ", ")
end

local hex = docs.hex
local function unhex(s)
  if #s % 2 == 1 or s:find("[^0-9a-f]") then return nil end
  return (s:gsub("..", function(x) return string.char(tonumber(x, 16)) end))
end

-- A page's token most often differs from the last one only in its row
-- key (the same scope, kind and sort, no extra; after = { {"b", key} }):
-- its body is then the text of that shape around the key's hex, made
-- once per (sort table, scope, kind) and remembered, for a sort table
-- that never changes (a search without a sort: its index's own)
local PLACE = "@KEY@" -- (never in a body: hex is [0-9a-f], names and values are escaped)
local SHAPES = setmetatable({}, { __mode = "k" })
local NOSORT = {}
local function shape_of(scope, payload)
  local s = payload.sort
  local by = SHAPES[s or NOSORT]
  if not by then by = {}; SHAPES[s or NOSORT] = by end
  local key = payload.kind .. "\0" .. scope
  local parts = by[key]
  if parts == nil then
    local body = cjson.encode({ v = 1, scope = scope, sort = wrap(s), after = { { "b", PLACE } }, kind = payload.kind })
    local i, j = body:find(PLACE, 1, true)
    parts = i and not body:find(PLACE, j + 1, true) and { body:sub(1, i - 1), body:sub(j + 1) } or false
    by[key] = parts
  end
  return parts
end

--- sort.token(secret, scope, payload [, stable]) -> a signed token (a
-- string). stable: payload.sort is a table that never changes (or nil).
function sort.token(secret, scope, payload, stable)
  local after = payload.after
  if stable and payload.extra == nil and #after == 1 and after[1][1] == "b" and after[1][2] and type(payload.kind) == "string" then
    local parts = shape_of(scope, payload)
    if parts then
      local body = parts[1] .. hex(after[1][2]) .. parts[2]
      return wire.hmac_sha1_b64(secret, body) .. body
    end
  end
  local vals = {}
  for i, v in ipairs(payload.after) do vals[i] = { v[1], v[2] and hex(v[2]) or nil } end
  local body = cjson.encode({ v = 1, scope = scope, sort = wrap(payload.sort), after = vals, kind = payload.kind,
    extra = wrap(payload.extra) })
  return wire.hmac_sha1_b64(secret, body) .. body
end

--- sort.open(secret, scope, token) -> payload | nil, msg, code. scope:
-- what the token must have been made for (table and index).
function sort.open(secret, scope, token)
  local function forged() return bad("invalid token: it was not issued by this index, or it was altered") end
  if type(token) ~= "string" or #token < 29 then return forged() end
  local sig, body = token:sub(1, 28), token:sub(29)
  if wire.hmac_sha1_b64(secret, body) ~= sig then return forged() end
  local p = cjson.decode(body)
  if type(p) ~= "table" or p.v ~= 1 or p.scope ~= scope or type(p.after) ~= "table" then return forged() end
  p.sort, p.extra = unwrap(p.sort), unwrap(p.extra)
  for _, v in ipairs(p.after) do
    if v[2] then v[2] = unhex(v[2]); if not v[2] then return forged() end end
  end
  return p
end

return sort
