--- otskit.store.search.query -- a search query (a Lua table with one
-- key naming its kind) checked and compiled into a SQL condition on a
-- document alias, with its score expression. Parameters are numbered
-- (?N) in ctx.binds.
--
-- Kinds and fields (as the service's Query messages):
--   match_all = {}
--   match = { field_name, text, operator = "OR"|"AND", minimum_should_match }
--   match_phrase = { field_name, text }
--   term = { field_name, term }        terms = { field_name, terms = {...} }
--   range = { field_name, from, to, include_lower, include_upper }
--   prefix = { field_name, prefix }    wildcard = { field_name, value }
--   exists = { field_name }
--   bool = { must, must_not, filter, should = { queries }, minimum_should_match }
--   nested = { path, query, score_mode = "NONE"|"AVG"|"MAX"|"TOTAL"|"MIN" }
--   geo_distance = { field_name, center_point = "lat,lon", distance (m) }
--   geo_bounding_box = { field_name, top_left = "lat,lon", bottom_right = "lat,lon" }
--   geo_polygon = { field_name, points = { "lat,lon", ... } }
--   const_score = { filter = query }
--   function_score = { query, field_value_factor = { field_name } }: the
--     query's rows, scored by its score times the field's value (1 when
--     the row has none)
-- Any kind's body may also hold weight (its score's multiplier). A key a
-- kind's body does not take (query.BODY_KEYS) is refused: nil, message
-- naming the kind and the key, OTSParameterInvalid; never ignored.
-- Scores: match and match_phrase score with FTS5's bm25 (negated, higher
-- is better); term, terms, range, prefix, wildcard, exists, geo queries,
-- match_all, const_score and nested score 1; bool sums its must and
-- matching should clauses.
local base = require "otskit.store.base"
local docs = require "otskit.store.search.docs"
local memos = require "otskit.store.search.memo"
local values = require "otskit.values"

local query = {}

query.LIMITS = { terms = 1024, wildcard = 32, bool_clauses = 1024, polygon_points = 1024, depth = 64 }
local L = query.LIMITS

local function bad(msg) return nil, msg, "OTSParameterInvalid" end

--- query.BODY_KEYS[kind]: the keys a kind's body may hold (each kind's
-- own, and weight: any query's score multiplier). A key outside them is
-- refused (OTSParameterInvalid naming the kind and the key), never
-- accepted and ignored; a kind registered by another module
-- (otskit.store.search.score, .knn) names its keys with query.body_keys.
query.BODY_KEYS = {}

--- query.body_keys(kind, {key, ...}): the keys of kind's body
function query.body_keys(kind, list)
  local s = base.set(list)
  s.weight = true
  query.BODY_KEYS[kind] = s
end

for kind, keys in pairs({
  match_all = {}, match = { "field_name", "text", "operator", "minimum_should_match" },
  match_phrase = { "field_name", "text" }, term = { "field_name", "term" }, terms = { "field_name", "terms" },
  range = { "field_name", "from", "to", "include_lower", "include_upper" }, prefix = { "field_name", "prefix" },
  wildcard = { "field_name", "value" }, exists = { "field_name" },
  bool = { "must", "must_not", "filter", "should", "minimum_should_match" },
  nested = { "path", "query", "score_mode", "inner_hits" },
  geo_distance = { "field_name", "center_point", "distance" },
  geo_bounding_box = { "field_name", "top_left", "bottom_right" }, geo_polygon = { "field_name", "points" },
  const_score = { "filter" }, function_score = { "query", "field_value_factor" },
}) do query.body_keys(kind, keys) end
local FVF_KEYS = base.set{ "field_name" }

local Ctx = {}
Ctx.__index = Ctx
local text_of -- (below)

--- query.ctx(def, p) -> a compile context (binds, alias counter)
function query.ctx(def, p)
  return setmetatable({ def = def, p = p, binds = {}, n = 0, aliases = 0 }, Ctx)
end

--- ctx:bind(v) -> "?N"
function Ctx:bind(v)
  self.n = self.n + 1
  self.binds[self.n] = v
  return "?" .. self.n
end

--- ctx:bindv(d, v) -> the SQL of a value v of field d (convert's): "?N",
-- or on LuaJIT an int64 beyond 2^53 (decimal text) cast to an integer
-- whether ctx:bindv binds v as text cast to an INTEGER
local function bind_cast(d, v)
  return type(v) == "string" and d.type ~= "KEYWORD" and d.type ~= "TEXT"
end

function Ctx:bindv(d, v)
  if bind_cast(d, v) then
    return "CAST(" .. self:bind(v) .. " AS INTEGER)"
  end
  return self:bind(v)
end

-- the field named name in scope `path` (nil: top level) | nil, msg, code
function Ctx:field(name, path, what)
  if type(name) ~= "string" then return bad(what .. ": field_name must be a string") end
  local d = self.def.byname[name]
  if not d then return bad(("%s: field [%s] does not exist in the index schema"):format(what, name)) end
  local parent = d.parent and d.parent.name or nil
  if parent ~= path then
    if parent then return bad(("%s: field [%s] belongs to NESTED field [%s]: query it inside a nested query"):format(what, name, parent)) end
    return bad(("%s: field [%s] is not inside NESTED path [%s]"):format(what, name, path))
  end
  if d.type ~= "NESTED" and not d.index then return bad(("%s: field [%s] is not indexed (index = false)"):format(what, name)) end
  return d
end

local function mismatch_of(d, v, what)
  return bad(("%s: field [%s] is %s; the value %s does not fit"):format(what, d.name, d.type, tostring(v)))
end
-- a query value converted to field d's type -> value | nil, msg, code
local function convert(d, v, what)
  local ty = d.type
  if ty == "LONG" or ty == "DATE" then
    if ty == "DATE" and type(v) == "string" then
      local ms = docs.date(v, d.date_formats)
      if ms == nil then return mismatch_of(d, v, what) end
      return ms
    end
    if type(v) == "number" then
      if v ~= math.floor(v) then return mismatch_of(d, v, what) end
      return math.tointeger and math.tointeger(v) or v
    end
    local n = docs.as_long(v) -- a typed INTEGER value (LuaJIT: decimal text beyond 2^53)
    if n == nil then return mismatch_of(d, v, what) end
    return n
  elseif ty == "DOUBLE" then
    if values.is_typed(v) and (v.type == "DOUBLE" or v.type == "INTEGER") then v = tonumber(v.value) end
    if type(v) ~= "number" then return mismatch_of(d, v, what) end
    return v
  elseif ty == "BOOLEAN" then
    if type(v) ~= "boolean" then return mismatch_of(d, v, what) end
    return v and 1 or 0
  elseif ty == "KEYWORD" or ty == "TEXT" then
    if type(v) ~= "string" then return mismatch_of(d, v, what) end
    return v
  end
  return bad(("%s: a %s field [%s] cannot be queried this way"):format(what, ty, d.name))
end

query.convert = convert

local function fts_quote(tok) return '"' .. docs.hex(tok) .. '"' end

-- A leaf is "a.id IN (SELECT doc ...)" when it drives the scan (the first
-- clause of a conjunction: SQLite then visits only its documents) and
-- "EXISTS (... doc = a.id ...)" otherwise (an index probe per document
-- another clause found, never a materialised list). self.drive says which.

-- The driving leaf of a search on a top-level field that is not an array
-- (each document has at most one value of it, and only top-level
-- documents have it) also records ctx.from = { tbl, cond }: the same
-- documents as "SELECT doc AS id, pk FROM <tbl> WHERE <cond>", which SQLite walks in
-- (f, v, pk) order, so a search ordered by primary key stops after its
-- page and a count reads only that index. Its condition is wrapped in
-- query.MARK so query.without_driver can drop it when the search reads
-- from ctx.from (no user text is ever in the SQL: every value is bound).
query.MARK_OPEN, query.MARK_CLOSE = "\1", "\2"

-- the memos of a search's SQL texts (otskit.store.search.memo)
query.memo, query.keep, query.forget = memos.new, memos.keep, memos.forget
local memo, keep, remembered = memos.new, memos.keep, memos.remembered

--- query.nparams(text) -> the number of parameters text uses: the
-- highest ?N in it (a compiled query may bind values only a part it left
-- out refers to); remembered per text (a search's statements repeat)
query.nparams = remembered(function(text)
  local n = 0
  for d in text:gmatch("%?(%d+)") do
    local v = tonumber(d)
    if v > n then n = v end
  end
  return n
end)
--- query.with_driver(cond) -> cond as written (the driver kept)
query.with_driver = remembered(function(cond) return (cond:gsub("[\1\2]", "")) end)
--- query.without_driver(cond) -> cond with the driving leaf as "1"
query.without_driver = remembered(function(cond) return (cond:gsub("\1[^\2]*\2", "1")) end)

-- the texts of a driving leaf on alias a of value table tbl whose
-- field is parameter ?n, its condition cond: { e (a's documents), marked
-- (e as the search's driver), tbl, fcond (the condition on that table) },
-- remembered per (cond, n) for the prefix, table and alias last seen
local TEXTS = memo()
text_of = function(self, a, tbl, n, cond)
  local by = TEXTS.t[cond]
  local t = by and by[n]
  local p = self.p
  if t and t.p == p and t.a == a and t.t == tbl then return t end
  local f = "?" .. n
  local e = ("%s.id IN (SELECT doc FROM %s%s WHERE f = %s AND %s)"):format(a, p, tbl, f, cond)
  t = { p = p, a = a, t = tbl, e = e, marked = "\1" .. e .. "\2", tbl = p .. tbl, fcond = ("f = %s AND %s"):format(f, cond) }
  if not by then by = keep(TEXTS, cond, {}) end
  by[n] = t
  return t
end

-- the documents whose values of d (num or kw) meet cond, a condition on
-- the value "v" (a word of its own in cond: the rest of it is operators
-- and ?N parameters)
function Ctx:values(a, d, cond, bounds)
  local tbl = d.type == "KEYWORD" and "kw" or "num"
  if not self.drive and a == "d" and d.col and not d.parent then
    -- a test on a top-level document, not the scan's driver: the field's
    -- value column of p.."doc" (docs.lua: def.colfields) holds the one
    -- value the document has, so no value-table probe is needed. NULL
    -- (no value) meets no condition: coalesce keeps NOT and sums exact.
    -- ctx.cols lists the columns the search's driver subquery must carry.
    self.cols = self.cols or {}
    self.cols[d.col] = true
    if cond == "1" then return ("d.%s IS NOT NULL"):format(d.col) end
    return ("coalesce(%s, 0)"):format((cond:gsub("%f[%w_]v%f[^%w_]", "d." .. d.col)))
  end
  if self.drive then
    -- (its texts remembered per (cond, the field's parameter): they
    -- depend on nothing else a search changes)
    local t = text_of(self, a, tbl, self.n + 1, cond)
    self:bind(d.id)
    if self.top and not self.from and a == "d" and not d.parent and not d.array and self.def.keyed then
      -- (d and cond: the field and the condition on its value v, for
      -- the analytics of a search that is this leaf alone)
      -- (bounds: a range's { lo, lo_incl, hi, hi_incl })
      self.from = { tbl = t.tbl, cond = t.fcond, d = d, vcond = cond, bounds = bounds }
      return t.marked
    end
    return t.e
  end
  return ("EXISTS (SELECT 1 FROM %s%s WHERE doc = %s.id AND f = %s AND %s)"):format(self.p, tbl, a, self:bind(d.id), cond)
end

function Ctx:fts(a, d, expr)
  local m = self:bind("{c" .. d.id .. "} : " .. expr)
  if self.drive then
    return ("%s.id IN (SELECT rowid FROM %sfts WHERE %sfts MATCH %s)"):format(a, self.p, self.p, m)
  end
  return ("EXISTS (SELECT 1 FROM %sfts WHERE %sfts MATCH %s AND rowid = %s.id)"):format(self.p, self.p, m, a)
end

function Ctx:fts_score(a, d, expr)
  if not self.want_score then return "1" end
  return ("coalesce((SELECT -bm25(%sfts) FROM %sfts WHERE %sfts MATCH %s AND rowid = %s.id), 0)"):format(
    self.p, self.p, self.p, self:bind("{c" .. d.id .. "} : " .. expr), a)
end

-- minimum_should_match: an integer or "N%" of n -> count | nil, msg, code
local function msm(v, n, what)
  if v == nil then return nil end
  if type(v) == "string" and v:match("^%-?%d+%%$") then
    local pct = tonumber(v:sub(1, -2))
    local k = math.floor(n * math.abs(pct) / 100)
    return pct < 0 and n - k or k
  end
  if type(v) ~= "number" or v ~= math.floor(v) or v < 0 then
    return bad(what .. ": minimum_should_match must be a non-negative integer or a percentage")
  end
  return v
end

local K = {}

K.match_all = function() return "1", "1" end

K.term = function(self, q, a, path)
  local d, m, c = self:field(q.field_name, path, "term")
  if not d then return nil, m, c end
  if q.term == nil then return bad("term: term is missing") end
  local v, m2, c2 = convert(d, q.term, "term")
  if v == nil then return nil, m2, c2 end
  if d.type == "TEXT" then return self:fts(a, d, fts_quote(v)), "1" end
  return self:values(a, d, "v = " .. self:bindv(d, v)), "1"
end

K.terms = function(self, q, a, path)
  local d, m, c = self:field(q.field_name, path, "terms")
  if not d then return nil, m, c end
  if type(q.terms) ~= "table" or #q.terms == 0 then return bad("terms: terms must be a non-empty list") end
  if #q.terms > L.terms then return bad("terms: at most " .. L.terms .. " terms") end
  local ok, lm, lc = base.list(q.terms, "terms: terms")
  if not ok then return nil, lm, lc end
  local list = {}
  for i, t in ipairs(q.terms) do
    local v, m2, c2 = convert(d, t, "terms")
    if v == nil then return nil, m2, c2 end
    list[i] = d.type == "TEXT" and fts_quote(v) or self:bindv(d, v)
  end
  if d.type == "TEXT" then return self:fts(a, d, "(" .. table.concat(list, " OR ") .. ")"), "1" end
  return self:values(a, d, "v IN (" .. table.concat(list, ", ") .. ")"), "1"
end

local RANGE_FLAGS = { "include_lower", "include_upper" }
local RANGE_SIDES = { { "from", "include_lower", ">", "lo", "lo_incl" }, { "to", "include_upper", "<", "hi", "hi_incl" } }
-- a range's shape: per side (bits * 1 for from, * 8 for to) 1 given, 2
-- inclusive, 4 bound as text cast to INTEGER
local RANGE_BIT = { 1, 8 }
local RANGE_TEXT = memo() -- [first parameter][shape] -> the condition
-- the condition on v of a range of that shape, its first parameter ?n0+1
local function range_text(n0, shape)
  local conds, n = {}, n0
  for i = 1, 2 do
    local bits = math.floor(shape / RANGE_BIT[i]) % 8
    if bits % 2 == 1 then
      n = n + 1
      local ref = "?" .. n
      if bits >= 4 then ref = "CAST(" .. ref .. " AS INTEGER)" end
      conds[#conds + 1] = "v " .. RANGE_SIDES[i][3] .. (bits % 4 >= 2 and "=" or "") .. " " .. ref
    end
  end
  if #conds == 0 then conds[1] = "1" end
  return table.concat(conds, " AND ")
end
K.range = function(self, q, a, path)
  local d, m, c = self:field(q.field_name, path, "range")
  if not d then return nil, m, c end
  if d.type == "TEXT" then return bad(("range: field [%s] is TEXT"):format(d.name)) end
  for _, k in ipairs(RANGE_FLAGS) do
    if q[k] ~= nil and type(q[k]) ~= "boolean" then return bad("range: " .. k .. " must be a boolean") end
  end
  -- the condition's text depends only on which sides are given, their
  -- flags, whether each is bound as text cast to INTEGER (LuaJIT: an
  -- int64 beyond 2^53) and the first parameter's number: remembered
  local bounds, shape, n0 = {}, 0, self.n
  for i = 1, 2 do
    local side = RANGE_SIDES[i]
    local v = q[side[1]]
    if v ~= nil then
      local x, m2, c2 = convert(d, v, "range")
      if x == nil then return nil, m2, c2 end
      local incl = q[side[2]] and true or false
      shape = shape + RANGE_BIT[i] * (1 + (incl and 2 or 0) + (bind_cast(d, x) and 4 or 0))
      self.n = self.n + 1
      self.binds[self.n] = x
      bounds[side[4]], bounds[side[5]] = x, incl
    end
  end
  local by = RANGE_TEXT.t[n0]
  local cond = by and by[shape]
  if not cond then
    if not by then by = keep(RANGE_TEXT, n0, {}) end
    cond = range_text(n0, shape)
    by[shape] = cond
  end
  return self:values(a, d, cond, bounds), "1"
end

-- the smallest string greater than every string starting with s, or nil
local function after_prefix(s)
  local i = #s
  while i > 0 and s:byte(i) == 255 do i = i - 1 end
  if i == 0 then return nil end
  return s:sub(1, i - 1) .. string.char(s:byte(i) + 1)
end

K.prefix = function(self, q, a, path)
  local d, m, c = self:field(q.field_name, path, "prefix")
  if not d then return nil, m, c end
  if type(q.prefix) ~= "string" then return bad("prefix: prefix must be a string") end
  if d.type == "TEXT" then
    if q.prefix == "" then return bad("prefix: an empty prefix on a TEXT field") end
    return self:fts(a, d, fts_quote(q.prefix) .. " *"), "1"
  end
  if d.type ~= "KEYWORD" then return bad(("prefix: field [%s] is %s, not KEYWORD or TEXT"):format(d.name, d.type)) end
  local hi = after_prefix(q.prefix)
  local cond = "v >= " .. self:bind(q.prefix)
  if hi then cond = cond .. " AND v < " .. self:bind(hi) end
  return self:values(a, d, cond), "1"
end

K.wildcard = function(self, q, a, path)
  local d, m, c = self:field(q.field_name, path, "wildcard")
  if not d then return nil, m, c end
  if type(q.value) ~= "string" then return bad("wildcard: value must be a string") end
  local n = 0
  for _ in q.value:gmatch("[%z\1-\127\194-\244][\128-\191]*") do n = n + 1 end
  if n > L.wildcard then return bad("wildcard: the pattern is longer than " .. L.wildcard .. " characters") end
  if d.type ~= "KEYWORD" then return bad(("wildcard: field [%s] is %s, not KEYWORD"):format(d.name, d.type)) end
  local glob = q.value:gsub("%[", "[[]")
  return self:values(a, d, "v GLOB " .. self:bind(glob)), "1"
end

K.exists = function(self, q, a, path)
  local d, m, c = self:field(q.field_name, path, "exists")
  if not d then return nil, m, c end
  if d.type == "KEYWORD" or d.type == "LONG" or d.type == "DOUBLE" or d.type == "BOOLEAN" or d.type == "DATE" then
    return self:values(a, d, "1"), "1"
  end
  if self.drive then
    return ("%s.id IN (SELECT doc FROM %shas WHERE f = %s)"):format(a, self.p, self:bind(d.id)), "1"
  end
  return ("EXISTS (SELECT 1 FROM %shas WHERE f = %s AND doc = %s.id)"):format(self.p, self:bind(d.id), a), "1"
end

-- which clause of a conjunction drives the scan (lower first)
local DRIVE_RANK = { term = 1, terms = 1, match_phrase = 2, match = 2, geo_distance = 2, geo_bounding_box = 2,
  geo_polygon = 2, prefix = 3, nested = 4, range = 5, wildcard = 6, exists = 7, bool = 8, const_score = 8,
  function_score = 8 }

local function list_of(v, what)
  if v == nil then return {} end
  if type(v) ~= "table" then return bad(what .. " must be a list of queries") end
  if v[1] == nil and next(v) ~= nil then return { v } end -- one query
  local ok, m, c = base.list(v, what)
  if not ok then return nil, m, c end
  if #v > L.bool_clauses then return bad(what .. ": at most " .. L.bool_clauses .. " queries") end
  return v
end

K.bool = function(self, q, a, path, depth)
  local conds, scores = {}, {}
  local lists = {}
  for _, k in ipairs({ "must", "must_not", "filter", "should" }) do
    local l, m, c = list_of(q[k], "bool." .. k)
    if not l then return nil, m, c end
    lists[k] = l
  end
  -- the driver: the first must/filter clause of the most selective kind
  local drive, driver = self.drive, nil
  if drive then
    local best
    for _, k in ipairs({ "must", "filter" }) do
      for _, sub in ipairs(lists[k]) do
        local kind = type(sub) == "table" and next(sub) or nil
        local rank = DRIVE_RANK[kind] or 9
        if not best or rank < best then best, driver = rank, sub end
      end
    end
  end
  for _, k in ipairs({ "must", "filter", "must_not" }) do
    for _, sub in ipairs(lists[k]) do
      self.drive = drive and sub == driver
      local e, s, c = self:compile(sub, a, path, depth + 1)
      self.drive = drive
      if not e then return nil, s, c end
      if k == "must_not" then conds[#conds + 1] = "NOT (" .. e .. ")"
      else
        conds[#conds + 1] = "(" .. e .. ")"
        if k == "must" then scores[#scores + 1] = s end
      end
    end
  end
  local should = lists.should
  if #should > 0 then
    local default = (#lists.must > 0 or #lists.filter > 0) and 0 or 1
    local need, m, c = msm(q.minimum_should_match, #should, "bool")
    if need == nil and m then return nil, m, c end
    need = need or default
    local parts = {}
    self.drive = false
    for i, sub in ipairs(should) do
      local e, s, c2 = self:compile(sub, a, path, depth + 1)
      self.drive = false
      if not e then return nil, s, c2 end
      parts[i] = "(" .. e .. ")"
      scores[#scores + 1] = "(CASE WHEN " .. parts[i] .. " THEN " .. s .. " ELSE 0 END)"
    end
    if need > #should then conds[#conds + 1] = "0"
    elseif need > 0 then conds[#conds + 1] = "(" .. table.concat(parts, " + ") .. ") >= " .. math.floor(need) end
  elseif q.minimum_should_match ~= nil and q.minimum_should_match ~= 0 then
    return bad("bool: minimum_should_match without should queries")
  end
  self.drive = drive
  if #conds == 0 then conds[1] = "1" end
  return table.concat(conds, " AND "), #scores > 0 and table.concat(scores, " + ") or "0"
end

K.nested = function(self, q, a, path, depth)
  if type(q.path) ~= "string" then return bad("nested: path must be a string") end
  local d = self.def.byname[q.path]
  if not d or d.type ~= "NESTED" then return bad(("nested: path [%s] is not a NESTED field"):format(q.path)) end
  if (d.parent and d.parent.name or nil) ~= path then return bad(("nested: path [%s] is not directly inside %s"):format(q.path, path or "the index")) end
  local sm = q.score_mode
  if sm ~= nil and sm ~= "NONE" and sm ~= "AVG" and sm ~= "MAX" and sm ~= "TOTAL" and sm ~= "MIN" then
    return bad("nested: score_mode must be NONE, AVG, MAX, TOTAL or MIN")
  end
  if q.query == nil then return bad("nested: query is missing") end
  if q.inner_hits ~= nil and not self.hits then -- (honoured by otskit.store.search.inner)
    return bad("nested: inner_hits are returned only by a search's query (not a parallel_scan's, a group-by's filter or a sort's)")
  end
  self.aliases = self.aliases + 1
  local c = "n" .. self.aliases
  local drive = self.drive
  self.drive = false
  local e, s, code = self:compile(q.query, c, q.path, depth + 1)
  self.drive = drive
  if not e then return nil, s, code end
  if drive then
    return ("%s.id IN (SELECT %s.parent FROM %sdoc %s WHERE %s.path = %s AND (%s))"):format(a, c, self.p, c, c,
      self:bind(q.path), e), "1"
  end
  return ("EXISTS (SELECT 1 FROM %sdoc %s WHERE %s.parent = %s.id AND %s.path = %s AND (%s))"):format(self.p, c, c, a,
    c, self:bind(q.path), e), "1"
end

K.const_score = function(self, q, a, path, depth)
  if q.filter == nil then return bad("const_score: filter is missing") end
  local e, s, c = self:compile(q.filter, a, path, depth + 1)
  if not e then return nil, s, c end
  return e, "1"
end

K.function_score = function(self, q, a, path, depth)
  if q.query == nil then return bad("function_score: query is missing") end
  local fvf = q.field_value_factor
  if type(fvf) ~= "table" then return bad("function_score: field_value_factor { field_name } is missing") end
  local ok, km, kc = base.known(fvf, FVF_KEYS, "function_score.field_value_factor")
  if not ok then return nil, km, kc end
  local d, m, c = self:field(fvf.field_name, path, "function_score.field_value_factor")
  if not d then return nil, m, c end
  if d.type ~= "LONG" and d.type ~= "DOUBLE" then
    return bad(("function_score: field [%s] is %s, not LONG or DOUBLE"):format(d.name, d.type))
  end
  local e, s, code = self:compile(q.query, a, path, depth + 1)
  if not e then return nil, s, code end
  if not self.want_score then return e, "1" end
  return e, ("((%s) * coalesce((SELECT max(v) FROM %snum WHERE doc = %s.id AND f = %s), 1))"):format(s, self.p, a,
    self:bind(d.id))
end

local UNSUPPORTED = { functions_score = true, knn_vector = true }
-- the kinds whose condition is their sub-queries' conjunction, or a leaf
local SAME_ROWS = { bool = true, const_score = true, match = true, match_phrase = true, term = true, terms = true,
  range = true, prefix = true, wildcard = true, exists = true, geo_distance = true, geo_bounding_box = true,
  geo_polygon = true, match_all = true }

--- ctx:compile(q, alias, path, depth) -> SQL condition, SQL score | nil, msg, code
function Ctx:compile(q, a, path, depth)
  depth = depth or 0
  if depth > L.depth then return bad("the query nests deeper than " .. L.depth .. " levels") end
  if type(q) ~= "table" then return bad("a query must be a table { kind = {...} }") end
  local kind, body = next(q)
  if kind == nil or next(q, kind) ~= nil then return bad("a query names exactly one kind, e.g. { term = {...} }") end
  local f = K[kind]
  if not f then
    if UNSUPPORTED[kind] then return bad("query kind " .. kind .. " is not supported by otskit") end
    return bad("unknown query kind: " .. tostring(kind))
  end
  if type(body) ~= "table" then return bad(kind .. ": the query body must be a table") end
  local keys = query.BODY_KEYS[kind]
  if not keys then error("otskit.store.search.query: query kind " .. kind .. " names no body keys (query.body_keys)") end
  local ok, km, kc = base.known(body, keys, kind)
  if not ok then return nil, km, kc end
  local w = body.weight -- a query's weight multiplies its score
  local b = body
  if w ~= nil then
    if type(w) ~= "number" or not (w > 0) or w == math.huge then return bad(kind .. ": weight must be a number > 0") end
    b = {}
    for k, v in pairs(body) do if k ~= "weight" then b[k] = v end end
  end
  -- only bool and const_score keep a sub-query on the search's
  -- conjunction; inside any other kind no leaf becomes ctx.from
  local top = self.top
  if not SAME_ROWS[kind] then self.top = false end
  local had = self.from
  local e, s, c = f(self, b, a, path, depth)
  self.top = top
  -- (the query whose leaf became ctx.from: otskit.store.search.docvalues
  -- tests every other clause of a bool around it)
  if self.from and not had and self.from.q == nil then self.from.q = q end
  if not e or w == nil then return e, s, c end
  return e, ("((%s) * %s)"):format(s, self:bind(w))
end

require("otskit.store.search.geoquery")(query, Ctx, K) -- geo_distance, geo_bounding_box, geo_polygon
require("otskit.store.search.textquery")(K, convert, msm, fts_quote) -- match, match_phrase

query.KINDS = K
return query
