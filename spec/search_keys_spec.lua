-- spec/search_keys_spec.lua -- a search refuses a key it does not take
-- (issue #26): for every query kind a random valid body, nested inside
-- bool / nested / const_score / function_score / functions_score /
-- knn_vector at random depth, is answered as the brute-force model
-- (spec/search_oracle.lua) answers it; the same query with one random
-- extra key in one of its bodies is refused (OTSParameterInvalid, naming
-- the kind and the key) and leaves the answer as it was. The same for
-- sorters (against the model's order), aggregations and group-bys (and
-- their parts), and a wrong type of each known key of each query kind.
local store = require "otskit.store"
local cjson = require "cjson.safe"
local helper = require "helper"
local oracle = require "search_oracle"
local query = require "otskit.store.search.query"
require "otskit.store.search.run" -- registers functions_score and knn_vector

local FIELDS = {
  { field_name = "l", field_type = "LONG", enable_sort_and_agg = true },
  { field_name = "d", field_type = "DOUBLE", enable_sort_and_agg = true },
  { field_name = "k", field_type = "KEYWORD", enable_sort_and_agg = true },
  { field_name = "ka", field_type = "KEYWORD", is_array = true },
  { field_name = "t", field_type = "TEXT", enable_highlighting = true },
  { field_name = "g", field_type = "GEO_POINT" },
  { field_name = "dt", field_type = "DATE", enable_sort_and_agg = true },
  { field_name = "v", field_type = "VECTOR", vector_options = { dimension = 3, metric_type = "COSINE" } },
  { field_name = "n", field_type = "NESTED", field_schemas = {
    { field_name = "nl", field_type = "LONG", enable_sort_and_agg = true }, { field_name = "nk", field_type = "KEYWORD" },
    { field_name = "nt", field_type = "TEXT" }, { field_name = "ng", field_type = "GEO_POINT" } } },
}
local S = {
  l = { short = "l", type = "LONG" }, d = { short = "d", type = "DOUBLE" }, k = { short = "k", type = "KEYWORD" },
  ka = { short = "ka", type = "KEYWORD", is_array = true }, t = { short = "t", type = "TEXT" },
  g = { short = "g", type = "GEO_POINT" }, dt = { short = "dt", type = "DATE" }, v = { short = "v", type = "VECTOR" },
  n = { short = "n", type = "NESTED" }, ["n.nl"] = { short = "nl", type = "LONG" },
  ["n.nk"] = { short = "nk", type = "KEYWORD" }, ["n.nt"] = { short = "nt", type = "TEXT" },
  ["n.ng"] = { short = "ng", type = "GEO_POINT" },
}
local KW = { "a", "ab", "abc", "b", "ba", "x?y" }
local WORDS = { "hello", "world", "foo", "参", "abc123" }
local DOUBLES = { 0.5, 1.25, 2, 3.75, -1.5 }
local ROWS = 30

local function pick(r, t) return t[r.int(1, #t)] end
local function maybe(r) return r.int(1, 10) <= 6 end
local function point(r) return ("%.4f,%.4f"):format(r.float() * 20 - 10, r.float() * 20 - 10) end
local function words(r)
  local w = {}
  for i = 1, r.int(1, 4) do w[i] = pick(r, WORDS) end
  return table.concat(w, " ")
end

local function random_row(r)
  local c = {}
  if maybe(r) then c.l = r.int(0, 20) end
  if maybe(r) then c.d = pick(r, DOUBLES) + 0.0 end
  if maybe(r) then c.k = pick(r, KW) end
  if maybe(r) then
    local a = {}
    for i = 1, r.int(0, 3) do a[i] = pick(r, KW) end
    c.ka = #a > 0 and cjson.encode(a) or "[]"
  end
  if maybe(r) then c.t = words(r) end
  if maybe(r) then c.g = point(r) end
  if maybe(r) then c.dt = r.int(0, 10) * 86400000 end
  if maybe(r) then c.v = ("[%d, %d, %d]"):format(r.int(-3, 3), r.int(-3, 3), r.int(1, 3)) end
  if maybe(r) then
    local a = {}
    for i = 1, r.int(0, 3) do
      a[i] = { nl = r.int(0, 5), nk = pick(r, KW), nt = words(r), ng = point(r) }
    end
    c.n = cjson.encode(a)
  end
  return c
end

local function fixture(seed)
  local r = helper.rng(seed)
  local db = assert(store.open{})
  assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
  local rows = {}
  for id = 1, ROWS do
    rows[id] = random_row(r)
    assert(db:put_row{ table = "t", primary_key = { { "id", id } }, columns = rows[id] })
  end
  assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = FIELDS } })
  return db, rows, r
end

-- the kinds, and which a scope allows: path (inside the nested field n),
-- in_knn (inside a knn_vector's filter)
local KINDS = { "match_all", "match", "match_phrase", "term", "terms", "range", "prefix", "wildcard", "exists", "bool",
  "nested", "geo_distance", "geo_bounding_box", "geo_polygon", "const_score", "function_score", "functions_score",
  "knn_vector" }
local WRAPS = { bool = true, nested = true, const_score = true, function_score = true, functions_score = true,
  knn_vector = true }

local function fname(path, name) return path and path .. ".n" .. name or name end

local gen

-- a valid body of kind at scope (path, in_knn), wrapping depth more levels
local function body(r, kind, depth, path, in_knn)
  local function sub() return gen(r, depth - 1, path, in_knn) end
  local b
  if kind == "match_all" then b = {}
  elseif kind == "match" then
    b = { field_name = fname(path, "t"), text = words(r) }
    local o = r.int(1, 4)
    if o == 1 then b.operator = pick(r, { "AND", "OR" }) elseif o == 2 then b.minimum_should_match = r.int(1, 3) end
  elseif kind == "match_phrase" then b = { field_name = fname(path, "t"), text = words(r) }
  elseif kind == "term" then
    if path then b = pick(r, { { field_name = "n.nl", term = r.int(0, 5) }, { field_name = "n.nk", term = pick(r, KW) } })
    else b = pick(r, { { field_name = "l", term = r.int(0, 20) }, { field_name = pick(r, { "k", "ka" }), term = pick(r, KW) } }) end
  elseif kind == "terms" then
    local f = path and "n.nk" or pick(r, { "k", "ka" })
    b = { field_name = f, terms = { pick(r, KW), pick(r, KW) } }
  elseif kind == "range" then
    local f = path and "n.nl" or pick(r, { "l", "d", "k" })
    local function val()
      if f == "d" then return pick(r, DOUBLES) elseif f == "k" then return pick(r, KW) end
      return r.int(0, 20)
    end
    b = { field_name = f }
    if maybe(r) then b.from = val() end
    if maybe(r) then b.to = val() end
    if maybe(r) then b.include_lower = r.int(0, 1) == 1 end
    if maybe(r) then b.include_upper = r.int(0, 1) == 1 end
  elseif kind == "prefix" then b = { field_name = path and "n.nk" or pick(r, { "k", "ka" }), prefix = pick(r, { "a", "ab", "b", "" }) }
  elseif kind == "wildcard" then b = { field_name = path and "n.nk" or pick(r, { "k", "ka" }), value = pick(r, { "a*", "*b*", "?b", "*" }) }
  elseif kind == "exists" then
    b = { field_name = path and pick(r, { "n.nl", "n.nk", "n.nt", "n.ng" }) or pick(r, { "l", "d", "k", "ka", "t", "g", "dt", "v", "n" }) }
  elseif kind == "geo_distance" then b = { field_name = fname(path, "g"), center_point = point(r), distance = r.int(1, 800) * 1000 }
  elseif kind == "geo_bounding_box" then
    local a, c = r.float() * 20 - 10, r.float() * 20 - 10
    local e, f = r.float() * 20 - 10, r.float() * 20 - 10
    b = { field_name = fname(path, "g"), top_left = ("%.4f,%.4f"):format(math.max(a, c), math.min(e, f)),
      bottom_right = ("%.4f,%.4f"):format(math.min(a, c), math.max(e, f)) }
  elseif kind == "geo_polygon" then b = { field_name = fname(path, "g"), points = { point(r), point(r), point(r), point(r) } }
  elseif kind == "bool" then
    b = {}
    for _, k in ipairs({ "must", "must_not", "filter", "should" }) do
      if maybe(r) then
        local l = {}
        for i = 1, r.int(0, 2) do l[i] = sub() end
        b[k] = l
      end
    end
    if b.should and #b.should > 0 and maybe(r) then b.minimum_should_match = r.int(0, #b.should) end
  elseif kind == "nested" then
    b = { path = "n", query = gen(r, depth - 1, "n", in_knn) }
    if maybe(r) then b.score_mode = pick(r, { "NONE", "AVG", "MAX", "TOTAL", "MIN" }) end
    if r.int(1, 4) == 1 then b.inner_hits = { limit = r.int(0, 3) } end
  elseif kind == "const_score" then b = { filter = sub() }
  elseif kind == "function_score" then
    b = { query = sub(), field_value_factor = { field_name = path and "n.nl" or pick(r, { "l", "d" }) } }
  elseif kind == "functions_score" then
    local fns = {}
    for i = 1, r.int(1, 3) do
      local f, x = {}, r.int(1, 4)
      if x == 1 then
        f.field_value_factor = { field_name = path and "n.nl" or pick(r, { "l", "d" }) }
        if maybe(r) then f.field_value_factor.factor = r.int(1, 3) end
        if maybe(r) then f.field_value_factor.modifier = pick(r, { "NONE", "SQRT", "LOG1P", "SQUARE" }) end
        if maybe(r) then f.field_value_factor.missing = r.int(1, 3) end
      elseif x == 2 then
        f.decay = { field_name = path and "n.nl" or "l", param = { origin = r.int(0, 20), scale = r.int(1, 5) } }
        if maybe(r) then f.decay.param.offset = r.int(0, 2) end
        if maybe(r) then f.decay.math_function = pick(r, { "GAUSS", "EXP", "LINEAR" }) end
        if maybe(r) then f.decay.multi_value_mode = pick(r, { "MIN", "MAX", "AVG", "SUM" }) end
        if maybe(r) then f.decay.decay = pick(r, { 0.25, 0.5, 0.75 }) end
      elseif x == 3 then f.random = {} end
      if x == 4 or maybe(r) then f.weight = r.int(1, 4) end
      if r.int(1, 3) == 1 then f.filter = sub() end
      fns[i] = f
    end
    b = { query = sub(), functions = fns }
    if maybe(r) then b.score_mode = pick(r, { "SUM", "AVG", "MAX", "MIN", "MULTIPLY", "FIRST" }) end
    if maybe(r) then b.combine_mode = pick(r, { "MULTIPLY", "SUM", "AVG", "MAX", "MIN", "REPLACE" }) end
    if maybe(r) then b.max_score = r.int(1, 100) end
  elseif kind == "knn_vector" then
    -- top_k >= the rows: the model's rows are those with a vector the filter matches
    b = { field_name = "v", top_k = r.int(ROWS, 1000), float32_query_vector = { r.int(-3, 3), r.int(-3, 3), r.int(1, 3) } }
    if maybe(r) then b.filter = gen(r, depth - 1, path, true) end
  else error("no generator for " .. kind) end
  if r.int(1, 5) == 1 then b.weight = r.int(1, 4) end
  return b
end

-- a valid query at scope (path, in_knn), wrappers nesting up to depth
function gen(r, depth, path, in_knn)
  local kinds = {}
  for _, k in ipairs(KINDS) do
    local ok = depth > 0 or not WRAPS[k]
    if path and (k == "nested" or k == "knn_vector") then ok = false end
    if in_knn and k == "knn_vector" then ok = false end
    if ok then kinds[#kinds + 1] = k end
  end
  local kind = pick(r, kinds)
  return { [kind] = body(r, kind, depth, path, in_knn) }
end

-- every query body in q: { {kind, body}, ... }
local function bodies(q, out)
  out = out or {}
  local kind, b = next(q)
  out[#out + 1] = { kind, b }
  for _, k in ipairs({ "must", "must_not", "filter", "should" }) do
    if kind == "bool" and b[k] then for _, s in ipairs(b[k]) do bodies(s, out) end end
  end
  if kind == "nested" or kind == "function_score" or kind == "functions_score" then bodies(b.query, out) end
  if kind == "const_score" or (kind == "knn_vector" and b.filter) then bodies(b.filter, out) end
  if kind == "functions_score" then
    for _, f in ipairs(b.functions) do if f.filter then bodies(f.filter, out) end end
  end
  return out
end

local NAMES = { "bogus", "must_queries", "boost", "slop", "fieldName", "queries", "path", "filter", "query", "text",
  "term", "size", "sort", "order", "missing", "inner_hits", "field_name", "limit", "score_mode", "name", "type" }
local VALUES = { 1, "x", true, false, {}, { 1 }, { a = 1 }, 0.5 }

-- a key allowed does not hold (random: a name of the pool or random letters)
local function extra_key(r, allowed)
  for _ = 1, 100 do
    local k = r.int(1, 4) == 1 and r.bytes(r.int(1, 8), "abcdefghijklmnopqrstuvwxyz_") or pick(r, NAMES)
    if not allowed[k] then return k end
  end
  error("no extra key")
end

local function ids(res)
  local o = {}
  for i, row in ipairs(res.rows) do o[i] = row.primary_key[1][2] end
  return o
end

local function want_ids(rows, q, sorters)
  local want = {}
  for id = 1, ROWS do if oracle.eval(S, q, rows[id]) then want[#want + 1] = id end end
  return oracle.sort(want, rows, sorters or { { pk_sort = {} } })
end

local function refused(what, key, res, msg, code)
  assert.is_nil(res, what)
  assert.equal("OTSParameterInvalid", code, what .. ": " .. tostring(msg))
  if key then assert.truthy(msg:find("'" .. key .. "'", 1, true), what .. ": " .. msg) end
end

describe("otskit.store search: a key a part does not take is refused", function()
  local db, rows
  setup(function() db, rows = fixture(2601) end)
  teardown(function() db:close() end)

  it("every query kind names its keys", function()
    for _, k in ipairs(KINDS) do assert.is_table(query.BODY_KEYS[k], k) end
    for k in pairs(query.KINDS) do assert.is_table(query.BODY_KEYS[k], k) end
  end)

  it("a query with one extra key in any body at any depth is refused; without it, answered as the model", function()
    local trials = helper.trials(1500)
    local seen = {}
    for trial = 1, trials do
      local r = helper.rng(26000 + trial)
      -- the kind the extra key goes in: each in turn (a query holding it drawn)
      local target = KINDS[(trial - 1) % #KINDS + 1]
      local q, all
      repeat
        q = gen(r, r.int(0, 4), nil, false)
        all = {}
        for _, at in ipairs(bodies(q)) do if at[1] == target then all[#all + 1] = at end end
      until #all > 0
      local at = all[r.int(1, #all)]
      local kind, b = at[1], at[2]
      seen[kind] = (seen[kind] or 0) + 1
      local qs = cjson.encode(q)
      local req = { table = "t", index = "ix", query = q, limit = 100, get_total_count = true, sort = { { pk_sort = {} } } }
      local res, msg = db:search(req)
      assert(res, qs .. ": " .. tostring(msg))
      local want = want_ids(rows, q)
      assert.same(want, ids(res), qs)
      assert.equal(#want, res.total_count, qs)
      local key = extra_key(r, query.BODY_KEYS[kind])
      b[key] = pick(r, VALUES)
      local r2, m2, c2 = db:search(req)
      refused(qs .. " + " .. kind .. "." .. key, key, r2, m2, c2)
      assert.truthy(m2:find(kind, 1, true), m2)
      b[key] = nil
      local r3 = assert(db:search(req))
      assert.same(ids(res), ids(r3), qs)
      assert.same(res.search_hits, r3.search_hits, qs)
    end
    for _, k in ipairs(KINDS) do assert.truthy(seen[k], "never drew a " .. k .. " body") end
  end)

  -- a wrong value for each known key of each kind
  local BAD = { field_name = 5, text = 5, operator = 5, minimum_should_match = {}, term = {}, terms = "x", from = {},
    to = {}, include_lower = "yes", include_upper = 1, prefix = 5, value = 5, must = 5, must_not = 5, filter = 5,
    should = 5, path = 5, query = 5, score_mode = 5, inner_hits = 5, center_point = 5, distance = "x", top_left = 5,
    bottom_right = 5, points = "x", field_value_factor = 5, weight = "x", functions = 5, combine_mode = 5,
    min_score = "x", max_score = "x", top_k = "x", float32_query_vector = "x" }

  it("a wrong type of any known key of any kind is refused", function()
    local r = helper.rng(2602)
    for _, kind in ipairs(KINDS) do
      for key in pairs(query.BODY_KEYS[kind]) do
        assert.is_not_nil(BAD[key], kind .. "." .. key .. " has no wrong value in this spec")
        for _ = 1, helper.quick() and 1 or 4 do
          local b = body(r, kind, 1, nil, false)
          b[key] = BAD[key]
          local qs = cjson.encode({ [kind] = b })
          local res, msg, code = db:search{ table = "t", index = "ix", query = { [kind] = b } }
          assert.is_nil(res, kind .. "." .. key .. " " .. qs)
          assert.equal("OTSParameterInvalid", code, qs .. ": " .. tostring(msg))
          -- the same nested in a bool
          res, msg, code = db:search{ table = "t", index = "ix", query = { bool = { must = { { [kind] = b } } } } }
          assert.is_nil(res, qs)
          assert.equal("OTSParameterInvalid", code, qs .. ": " .. tostring(msg))
        end
      end
    end
    -- a list with a key beside 1..n
    local res, msg, code = db:search{ table = "t", index = "ix", query = { bool = { must = { { match_all = {} }, x = 1 } } } }
    refused("bool.must with a key", "x", res, msg, code)
    res, msg, code = db:search{ table = "t", index = "ix", query = { bool = { must_queries = 5 } } }
    refused("bool.must_queries", "must_queries", res, msg, code)
    res, msg, code = db:search{ table = "t", index = "ix", query = { bool = { must_queries = {} } } }
    refused("bool.must_queries", "must_queries", res, msg, code)
  end)

  -- a random sorter the model orders, and its body
  local function sorter(r)
    local x = r.int(1, 4)
    local s
    if x == 1 then s = { pk_sort = {} }
    elseif x == 2 then
      s = { geo_distance_sort = { field_name = "g", points = { "0,0" } } }
      if maybe(r) then s.geo_distance_sort.mode = pick(r, { "MIN", "MAX", "AVG" }) end
      if maybe(r) then s.geo_distance_sort.distance_type = "ARC" end
    else
      local f = pick(r, { "l", "d", "k", "dt" })
      s = { field_sort = { field_name = f } }
      if maybe(r) then s.field_sort.mode = pick(r, f == "k" and { "MIN", "MAX" } or { "MIN", "MAX", "AVG" }) end
      if r.int(1, 3) == 1 then s.field_sort.missing_value = f == "k" and pick(r, KW) or r.int(0, 20) end
      if f ~= "k" and r.int(1, 3) == 1 then s.field_sort.missing_field = pick(r, { "l", "d", "dt" }) end
    end
    local _, b = next(s)
    if maybe(r) then b.order = pick(r, { "ASC", "DESC" }) end
    return s
  end

  it("a sorter with an extra key is refused; without it, the rows come in the model's order", function()
    local sort = require "otskit.store.search.sort"
    for trial = 1, helper.trials(500) do
      local r = helper.rng(26600 + trial)
      local q = gen(r, r.int(0, 2), nil, false)
      local s = {}
      for i = 1, r.int(1, 3) do s[i] = sorter(r) end
      local req = { table = "t", index = "ix", query = q, limit = 100, sort = s }
      local qs = cjson.encode(q) .. " sort " .. cjson.encode(s)
      local res = assert(db:search(req))
      assert.same(want_ids(rows, q, s), ids(res), qs)
      local kind, b = next(s[r.int(1, #s)])
      local key = extra_key(r, sort.KEYS[kind])
      b[key] = pick(r, VALUES)
      local r2, m2, c2 = db:search(req)
      refused(qs .. " + " .. kind .. "." .. key, key, r2, m2, c2)
      assert.truthy(m2:find(kind, 1, true), m2)
      b[key] = nil
      assert.same(ids(res), ids(assert(db:search(req))), qs)
    end
    -- a wrong type of a sorter's key
    for _, s in ipairs({ { field_sort = { field_name = 5 } }, { field_sort = { field_name = "l", order = 1 } },
      { field_sort = { field_name = "l", mode = "x" } }, { field_sort = { field_name = "l", missing_field = 5 } },
      { field_sort = { field_name = "l", missing_value = "x" } }, { pk_sort = { order = true } }, { score_sort = { order = {} } },
      { geo_distance_sort = { field_name = "g", points = "0,0" } }, { geo_distance_sort = { field_name = "g", points = { "0,0" }, distance_type = 1 } },
      { pk_sort = 5 }, { pk_sort = {}, score_sort = {} }, { field_sort = { field_name = "k", mode = "AVG" } } }) do
      local res, msg, code = db:search{ table = "t", index = "ix", sort = { s } }
      assert.is_nil(res, cjson.encode(s))
      assert.equal("OTSParameterInvalid", code, tostring(msg))
    end
    local res, msg, code = db:search{ table = "t", index = "ix", sort = { field_sort = { field_name = "l" } } }
    refused("a sorter not in a list", "field_sort", res, msg, code)
  end)

  -- random aggregations and group-bys; parts: where an extra key may go,
  -- each { table, label, allowed keys }
  local agg_m = require "otskit.store.search.agg"
  local gb_m = require "otskit.store.search.groupby"
  local ORDER, RANGE, ORIGIN, FR, IV = { order = true }, { from = true, to = true }, { lat = true, lon = true },
    { min = true, max = true }, { value = true, unit = true }
  local SUB_AGG = { sub_agg_name = true, order = true }

  local function aggs(r, parts, n)
    local list = {}
    for i = 1, n do
      local ty = pick(r, { "avg", "max", "min", "sum", "count", "distinct_count", "percentiles", "top_rows" })
      local a = { name = "a" .. i, type = ty }
      if ty == "top_rows" then
        a.limit = r.int(1, 5)
        a.sort = { sorter(r) }
        local kind, sb = next(a.sort[1])
        parts[#parts + 1] = { sb, kind, require("otskit.store.search.sort").KEYS[kind] }
      else
        a.field_name = pick(r, { "l", "d" })
        if ty ~= "count" and maybe(r) then a.missing = r.int(0, 9) end
        if ty == "percentiles" and maybe(r) then a.percentiles = { 10, 50, 90 } end
      end
      parts[#parts + 1] = { a, ty, agg_m.KEYS[ty] }
      list[i] = a
    end
    return list
  end

  local function gbs(r, parts, n, depth, wire)
    local list = {}
    for i = 1, n do
      local ty = pick(r, { "field", "range", "filter", "geo_distance", "histogram", "date_histogram", "geo_grid", "composite" })
      local g = { name = ("g%d_%d"):format(depth, i), type = ty }
      local function gsort(keys)
        local s = {}
        for j = 1, r.int(1, 2) do
          local k = pick(r, keys)
          s[j] = { [k] = maybe(r) and { order = pick(r, { "ASC", "DESC" }) } or {} }
          if k == "sub_agg_sort" then s[j][k].sub_agg_name = "a1" end
          parts[#parts + 1] = { s[j][k], k, k == "sub_agg_sort" and SUB_AGG or ORDER }
        end
        return s
      end
      if ty == "field" then
        g.field_name = pick(r, { "l", "k" })
        if maybe(r) then g.size = r.int(1, 5) end
        if maybe(r) then g.min_doc_count = r.int(0, 2) end
      elseif ty == "range" or ty == "geo_distance" then
        g.field_name = ty == "range" and "l" or "g"
        g.ranges = { { to = 5 }, { from = 5, to = 10 }, { from = 10 } }
        if ty == "range" then g.ranges = { { to = 5 }, { from = 5, to = 10 }, { from = 10 } }
        else g.ranges = { { to = 500000 }, { from = 500000 } }; g.origin = { lat = 0, lon = 0 }
          parts[#parts + 1] = { g.origin, "origin", ORIGIN } end
        parts[#parts + 1] = { g.ranges[r.int(1, #g.ranges)], "a range", RANGE }
      elseif ty == "filter" then
        g.filters = { gen(r, 1, nil, true), gen(r, 0, nil, true) }
        for _, f in ipairs(wire and g.filters or {}) do -- weight travels only in the messages that carry one
          for _, at in ipairs(bodies(f)) do
            if not require("otskit.wire.search_query").BODY[at[1]].weight then at[2].weight = nil end
          end
        end
      elseif ty == "histogram" then
        g.field_name, g.interval = "l", r.int(1, 6)
        if maybe(r) then g.offset = r.int(0, 2) end
        if maybe(r) then g.field_range = { min = 0, max = 15 }; parts[#parts + 1] = { g.field_range, "field_range", FR } end
        if maybe(r) then g.missing = 3 end
      elseif ty == "date_histogram" then
        g.field_name, g.interval = "dt", { value = r.int(1, 3), unit = "DAY" }
        parts[#parts + 1] = { g.interval, "interval", IV }
        if maybe(r) then g.time_zone = "+08:00" end
      elseif ty == "geo_grid" then
        g.field_name, g.precision = "g", r.int(1, 3)
      else
        g.sources = { { name = "s1", type = "field", field_name = "k" },
          { name = "s2", type = "histogram", field_name = "l", interval = 5 } }
        parts[#parts + 1] = { g.sources[1], "field source", { name = true, type = true, field_name = true } }
        parts[#parts + 1] = { g.sources[2], "histogram source", { name = true, type = true, field_name = true,
          interval = true, offset = true } }
      end
      if depth < 3 and r.int(1, 3) == 1 then g.sub_group_bys = gbs(r, parts, 1, depth + 1, wire) end
      if r.int(1, 2) == 1 or (ty ~= "composite" and r.int(1, 3) == 1) then g.sub_aggs = aggs(r, parts, r.int(1, 2)) end
      if (ty == "field" or ty == "histogram" or ty == "date_histogram" or ty == "geo_grid" and not wire) and maybe(r) then
        g.sort = gsort(g.sub_aggs and { "group_key_sort", "row_count_sort", "sub_agg_sort" } or { "group_key_sort", "row_count_sort" })
      end
      parts[#parts + 1] = { g, ty, gb_m.KEYS[ty] }
      list[i] = g
    end
    return list
  end

  it("an aggregation or group-by with an extra key in any part is refused; without it, answered as before", function()
    for trial = 1, helper.trials(500) do
      local r = helper.rng(26900 + trial)
      local parts = {}
      local req = { table = "t", index = "ix", query = gen(r, 1, nil, true), limit = 0 }
      if r.int(1, 3) > 1 then req.aggs = aggs(r, parts, r.int(1, 3)) end
      if not req.aggs or maybe(r) then req.group_bys = gbs(r, parts, r.int(1, 2), 1) end
      local qs = cjson.encode(req)
      local res, msg = db:search(req)
      assert(res, qs .. ": " .. tostring(msg))
      local p = parts[r.int(1, #parts)]
      local key = extra_key(r, p[3])
      p[1][key] = pick(r, VALUES)
      local r2, m2, c2 = db:search(req)
      refused(qs .. " + " .. p[2] .. "." .. key, key, r2, m2, c2)
      assert.truthy(m2:find(p[2], 1, true), p[2] .. ": " .. m2)
      p[1][key] = nil
      local r3 = assert(db:search(req))
      assert.same(res.aggs, r3.aggs, qs)
      assert.same(res.group_bys, r3.group_bys, qs)
    end
  end)

  it("a wrong type of any known key of any aggregation or group-by is refused", function()
    local AGG = { avg = { field_name = "l" }, max = { field_name = "d" }, min = { field_name = "l" }, sum = { field_name = "d" },
      count = { field_name = "l" }, distinct_count = { field_name = "k" }, percentiles = { field_name = "l" },
      top_rows = { limit = 2 } }
    local GB = { field = { field_name = "k" }, range = { field_name = "l", ranges = { { to = 5 } } },
      filter = { filters = { { match_all = {} } } }, geo_distance = { field_name = "g", origin = { lat = 0, lon = 0 },
        ranges = { { to = 1000 } } }, histogram = { field_name = "l", interval = 5 },
      date_histogram = { field_name = "dt", interval = { value = 1, unit = "DAY" } }, geo_grid = { field_name = "g", precision = 2 },
      composite = { sources = { { name = "s", type = "field", field_name = "k" } } } }
    local WRONG = { name = 5, type = 5, field_name = 5, missing = {}, percentiles = "x", limit = "x", sort = 5, size = "x",
      min_doc_count = "x", ranges = 5, filters = 5, origin = 5, interval = "x", offset = "x", field_range = 5, time_zone = 5,
      precision = "x", sources = 5, next_token = 5, sub_aggs = 5, sub_group_bys = 5 }
    local function check(req, what)
      req.table, req.index, req.limit = "t", "ix", 0
      assert(db:search(req)) -- valid as written
      return req
    end
    for ty, b in pairs(AGG) do
      for key in pairs(agg_m.KEYS[ty]) do
        local a = { name = "a", type = ty }
        for k, v in pairs(b) do a[k] = v end
        local req = check({ aggs = { a } })
        a[key] = WRONG[key]
        local res, msg, code = db:search(req)
        assert.is_nil(res, ty .. "." .. key)
        assert.equal("OTSParameterInvalid", code, ty .. "." .. key .. ": " .. tostring(msg))
      end
    end
    for ty, b in pairs(GB) do
      for key in pairs(gb_m.KEYS[ty]) do
        local g = { name = "g", type = ty }
        for k, v in pairs(b) do g[k] = v end
        local req = check({ group_bys = { g } })
        g[key] = WRONG[key]
        local res, msg, code = db:search(req)
        assert.is_nil(res, ty .. "." .. key)
        assert.equal("OTSParameterInvalid", code, ty .. "." .. key .. ": " .. tostring(msg))
      end
    end
  end)

  it("a group-by or aggregation list, a column list, a collapse, a highlight with a stray key is refused", function()
    local function no(req, key)
      req.table, req.index = "t", "ix"
      local res, msg, code = db:search(req)
      refused(cjson.encode(req), key, res, msg, code)
    end
    no({ aggs = { name = "a" } }, "name")
    no({ group_bys = { { name = "g", type = "field", field_name = "k" }, x = 1 } }, "x")
    no({ aggs = { { name = "a", type = "avg", field_name = "l", limit = 3 } } }, "limit")
    no({ aggs = { { name = "a", type = "top_rows", field_name = "l" } } }, "field_name")
    no({ group_bys = { { name = "g", type = "range", field_name = "l", ranges = { { to = 1 } }, size = 3 } } }, "size")
    no({ group_bys = { { name = "g", type = "field", field_name = "k", sort = { { group_key_sort = {}, row_count_sort = {} } } } } },
      nil) -- two kinds
    no({ columns_to_get = { return_type = "RETURN_ALL", columns = { "l" } } }, "columns")
    no({ columns_to_get = { return_type = "RETURN_SPECIFIED", column_names = { "l", x = "k" } } }, "x")
    no({ collapse = { field_name = "k", size = 1 } }, "size")
    no({ highlight = { parameters = { { field_name = "t", color = "red" } } } }, "color")
    no({ routing_values = { x = 1 } }, "x")
    no({ query = { nested = { path = "n", query = { match_all = {} }, inner_hits = { sort = { { doc_sort = { by = 1 } } } } } } }, "by")
    local res, msg, code = db:parallel_scan{ table = "t", index = "ix",
      query = { nested = { path = "n", query = { match_all = {} }, inner_hits = {} } } }
    assert.is_nil(res)
    assert.equal("OTSParameterInvalid", code, msg)
    res, msg, code = db:parallel_scan{ table = "t", index = "ix", columns_to_get = { return_type = "RETURN_ALL", x = 1 } }
    refused("parallel_scan columns_to_get", "x", res, msg, code)
    res, msg, code = db:search{ table = "t", index = "ix", limit = 0, group_bys = { { name = "g", type = "filter",
      filters = { { nested = { path = "n", query = { match_all = {} }, inner_hits = {} } } } } } }
    assert.is_nil(res)
    assert.equal("OTSParameterInvalid", code, msg)
  end)

  -- over the wire: otskit.client's encoder, then otskit serve's decoder
  local wire = require "otskit.wire"
  local sqw = require "otskit.wire.search_query"
  local function over_wire(req)
    local body, m, c = wire.encode_request("Search", req)
    if not body then return nil, m, c end
    local back = assert(wire.decode_request("Search", body))
    return db:search(back)
  end

  it("over the wire: a random query answers as the model; one extra key is refused by the encoder", function()
    for trial = 1, helper.trials(500) do
      local r = helper.rng(27000 + trial)
      local q = gen(r, r.int(0, 3), nil, false)
      local all = bodies(q)
      for _, at in ipairs(all) do -- weight travels only in the messages that carry one
        if not sqw.BODY[at[1]].weight then at[2].weight = nil end
      end
      local qs = cjson.encode(q)
      local req = { table = "t", index = "ix", query = q, limit = 100, sort = { { pk_sort = {} } } }
      local res, msg = over_wire(req)
      assert(res, qs .. ": " .. tostring(msg))
      assert.same(want_ids(rows, q), ids(res), qs)
      local at = all[r.int(1, #all)]
      local key = extra_key(r, query.BODY_KEYS[at[1]])
      at[2][key] = pick(r, VALUES)
      local body, m2, c2 = wire.encode_request("Search", req)
      refused(qs .. " + " .. at[1] .. "." .. key, key, body, m2, c2)
      at[2][key] = nil
      -- a sorter
      local s = sorter(r)
      req.sort = { s }
      res = assert(over_wire(req))
      assert.same(want_ids(rows, q, req.sort), ids(res), qs)
      local kind, b = next(s)
      key = extra_key(r, require("otskit.store.search.sort").KEYS[kind])
      b[key] = pick(r, VALUES)
      body, m2, c2 = wire.encode_request("Search", req)
      refused(cjson.encode(s) .. " + " .. key, key, body, m2, c2)
    end
  end)

  it("over the wire: aggregations and group-bys with an extra key are refused (by the encoder or the store)", function()
    for trial = 1, helper.trials(300) do
      local r = helper.rng(27500 + trial)
      local parts = {}
      local req = { table = "t", index = "ix", query = gen(r, 1, nil, true), limit = 0 }
      for _, at in ipairs(bodies(req.query)) do
        if not sqw.BODY[at[1]].weight then at[2].weight = nil end
      end
      if r.int(1, 3) > 1 then req.aggs = aggs(r, parts, r.int(1, 3)) end
      if not req.aggs or maybe(r) then req.group_bys = gbs(r, parts, r.int(1, 2), 1, true) end
      local qs = cjson.encode(req)
      local res, msg = over_wire(req)
      assert(res, qs .. ": " .. tostring(msg))
      local direct = assert(db:search(req))
      assert.same(direct.group_bys, res.group_bys, qs)
      assert.equal(#(direct.aggs or {}), #(res.aggs or {}), qs)
      local p = parts[r.int(1, #parts)]
      local key = extra_key(r, p[3])
      p[1][key] = pick(r, VALUES)
      local r2, m2, c2 = over_wire(req)
      refused(qs .. " + " .. p[2] .. "." .. key, key, r2, m2, c2)
    end
  end)

  it("a token's page takes the token's sort, or the same sort again, never another", function()
    local s = { { field_sort = { field_name = "l", order = "DESC", missing_value = 7 } }, { pk_sort = {} } }
    local p1 = assert(db:search{ table = "t", index = "ix", limit = 5, sort = s })
    local p2 = assert(db:search{ table = "t", index = "ix", limit = 5, token = p1.next_token })
    local again = assert(db:search{ table = "t", index = "ix", limit = 5, token = p1.next_token,
      sort = { { field_sort = { field_name = "l", order = "DESC", missing_value = 7 } }, { pk_sort = {} } } })
    assert.same(ids(p2), ids(again))
    local res, msg, code = db:search{ table = "t", index = "ix", limit = 5, token = p1.next_token,
      sort = { { field_sort = { field_name = "l", order = "ASC" } } } }
    refused("another sort with a token", nil, res, msg, code)
    res, msg, code = db:search{ table = "t", index = "ix", limit = 5, token = p1.next_token, sort = {} }
    refused("an empty sort with a token", nil, res, msg, code)
  end)

  it("an index schema's parts refuse a key they do not take", function()
    local function no(schema, key)
      local res, msg, code = db:create_search_index{ table = "t", index = "ix2", schema = schema }
      refused(cjson.encode(schema), key, res, msg, code)
    end
    local f = { { field_name = "l", field_type = "LONG", enable_sort_and_agg = true } }
    no({ field_schemas = { { field_name = "l", field_type = "LONG", sortable = true } } }, "sortable")
    no({ field_schemas = f, index_sort = { { field_sort = { field_name = "l", missing_value = 1 } } } }, "missing_value")
    no({ field_schemas = f, index_sort = { { pk_sort = { order = "ASC", mode = "MIN" } } } }, "mode")
    no({ field_schemas = f, index_sort = { { pk_sort = {}, field_sort = { field_name = "l" } } } }, nil) -- two kinds
    no({ field_schemas = { f[1], x = 1 } }, "x")
    no({ field_schemas = { { field_name = "t", field_type = "TEXT", analyzer = "split",
      analyzer_parameter = { delimiter = ",", min_chars = 1 } } } }, "min_chars")
    no({ field_schemas = f, index_setting = { routing_fields = { "id" }, shards = 1 } }, "shards")
    -- otskit.client's encoder: what its messages cannot carry
    local function wire_no(schema, key)
      local body, msg, code = wire.encode_request("CreateSearchIndex", { table = "t", index = "ix2", schema = schema })
      refused(cjson.encode(schema), key, body, msg, code)
    end
    wire_no({ field_schemas = { { field_name = "l", field_type = "LONG", sortable = true } } }, "sortable")
    wire_no({ field_schemas = { { field_name = "t", field_type = "TEXT", analyzer = "split",
      analyzer_parameter = { delimiter = ",", case_sensitive = true } } } }, "case_sensitive")
    wire_no({ field_schemas = f, index_setting = { shards = 1 } }, "shards")
    wire_no({ field_schemas = f, ttl = 1 }, "ttl")
    wire_no({ field_schemas = { { field_name = "v", field_type = "VECTOR", vector_options = { dimension = 3, dims = 3 } } } }, "dims")
  end)
end)
