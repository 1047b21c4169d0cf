--- otskit.store.search.agg -- a search's aggregations (avg, max, min, sum,
-- count, distinct_count, top_rows, percentiles), computed by SQL over the
-- index's value tables (aggregate functions over the matched documents
-- joined to p.."num" / p.."kw"). Group-bys are otskit.store.search.groupby;
-- both work on a scope: an SQL condition on the document alias d whose
-- ?N parameters are in the compile context's binds.
--
-- Where the field has a value column in p.."doc" (a top-level single-valued
-- field: otskit.store.search.docs), avg, min, max, sum, count and
-- distinct_count are SQL aggregates over that column (a missing value is
-- coalesce(column, missing)), and every such aggregation of one level is
-- computed by ONE statement over the scope's documents; otherwise (arrays,
-- nested fields, percentiles, an index made before the columns) over the
-- value tables.
--
-- An aggregation: { name, type = "avg"|"max"|"min"|"sum"|"count"|
-- "distinct_count"|"top_rows"|"percentiles", field_name, missing, limit,
-- sort, percentiles }. Its result: { name, type, value } (avg, max, min,
-- sum: a number, absent when no document has a value; count,
-- distinct_count: an integer), { name, type, rows } (top_rows), { name,
-- type, items = { {key, value} } } (percentiles).
local base = require "otskit.store.base"
local docs = require "otskit.store.search.docs"
local sort = require "otskit.store.search.sort"
local query = require "otskit.store.search.query"

local agg = {}

--- The service's limits. per_level: the service's documentation says 5
-- aggregations per level, but the service's own Node.js SDK test suite
-- (search.test.js, run against the service) sends 8 in one level (avg,
-- max, min, sum, count, distinct_count, top_rows, percentiles) and passes:
-- the service accepts more than the documented 5, so otskit keeps a bound
-- above the 8 observed (the service's true bound is not published).
agg.LIMITS = { per_level = 16, top_rows = 100, percentiles = 1000 }
local L = agg.LIMITS

local function bad(msg) return nil, msg, "OTSParameterInvalid" end
agg.bad = bad

local NUMERIC = { LONG = true, DOUBLE = true, DATE = true }
local VALUED = { LONG = true, DOUBLE = true, DATE = true, KEYWORD = true, BOOLEAN = true }

local nparams = query.nparams

--- agg.query(env, text) -> rows (the scope's binds)
function agg.query(env, text)
  return docs.run(env.h, text, env.ctx.binds, nparams(text))
end

--- agg.field(env, name, what, types) -> d | false (a field the index does
-- not have: no document has a value) | nil, msg, code
function agg.field(env, name, what, types)
  if type(name) ~= "string" or name == "" then return bad(what .. ": field_name must be a non-empty string") end
  local d = env.ctx.def.byname[name]
  if not d then return false end
  -- a field inside a NESTED field is named by its path ("n.x") and
  -- aggregates as an array of the row (agg.vt); the NESTED field itself
  -- is refused as the service refuses it: OTSParameterInvalid "[sum agg]
  -- field_name:Col_Nested type:nested is invalid, allow [long, double]"
  if not (types or VALUED)[d.type] then
    local allow = {}
    for t in pairs(types or VALUED) do allow[#allow + 1] = t:lower() end
    table.sort(allow)
    return bad(("%s: field_name:%s type:%s is invalid, allow [%s]"):format(what, name, d.type:lower(),
      table.concat(allow, ", ")))
  end
  if d.index == false then return bad(("%s: field [%s] is not indexed (index = false)"):format(what, name)) end
  return d
end

--- agg.missing(d, v, what) -> the value stored for v in d's table | nil (no
-- missing) | nil, msg, code
function agg.missing(d, v, what)
  if v == nil then return nil end
  local ty = d and d.type
  if ty == "KEYWORD" then
    if type(v) ~= "string" then return bad(what .. ": missing must be a string for KEYWORD field " .. d.name) end
    return v
  elseif ty == "BOOLEAN" then
    if type(v) ~= "boolean" then return bad(what .. ": missing must be a boolean for BOOLEAN field " .. d.name) end
    return v and 1 or 0
  elseif ty == "DATE" and type(v) == "string" then
    local ms = docs.date(v, d.date_formats)
    if not ms then return bad(what .. ": missing does not parse as a date of field " .. d.name) end
    return ms
  end
  -- a typed INTEGER (store.integer; LuaJIT: one beyond 2^53 is decimal
  -- text, bound as an INTEGER by the callers that take one)
  local x = docs.as_long(v)
  if type(x) == "string" then
    if ty == "LONG" or ty == "DATE" then return x end
    return tonumber(x)
  end
  if type(v) == "table" and x ~= nil then v = x end
  if type(v) ~= "number" then return bad(what .. ": missing must be a number for field " .. (d and d.name or "?")) end
  return v
end

--- agg.col(env, d, miss) -> the SQL of field d's value column on alias d
-- (coalesced with the bound missing value miss, when given) | nil when
-- d has no column
function agg.col(env, d, miss)
  if not (d and d.col) then return nil end
  if miss == nil then return "d." .. d.col end
  return ("coalesce(d.%s, %s)"):format(d.col, env.ctx:bind(miss))
end

-- adds aggregate expressions to the level's batch (one SELECT over the
-- scope's documents, run by run_list; an expression two aggregations
-- share is computed once); fill(row, at) -> the aggregation's value from
-- the row, at[j] the position of its j-th expression
local function batch(env, exprs, fill, out)
  local b = env.batch
  b.pos = b.pos or {}
  local at = {}
  for j, e in ipairs(exprs) do
    local i = b.pos[e]
    if not i then i = #b.exprs + 1; b.exprs[i] = e; b.pos[e] = i end
    at[j] = i
  end
  b.items[#b.items + 1] = { out = out, at = at, fill = fill }
end

--- agg.vt(env, d [, kind]) -> the table of field d's values (kind: "num",
-- "kw" or "gpt"; by d's type when omitted), as SQL that stands where a
-- table name does. A field inside a NESTED field aggregates as an array
-- of the row: its values are those of the row's sub-documents (each
-- distinct value of a row once, as an array's), so the table is the
-- values' table with each entry's doc (and pk) those of its top-level
-- document.
function agg.vt(env, d, kind)
  local p = env.ctx.p
  kind = kind or (d.type == "KEYWORD" and "kw" or d.type == "GEO_POINT" and "gpt" or "num")
  if not d.parent then return p .. kind end
  local joins, up, n = {}, d.parent, 1
  joins[1] = ("JOIN %sdoc s1 ON s1.id = x.doc"):format(p)
  while up.parent do
    n = n + 1
    joins[n] = ("JOIN %sdoc s%d ON s%d.id = s%d.parent"):format(p, n, n, n - 1)
    up = up.parent
  end
  joins[n + 1] = ("JOIN %sdoc r ON r.id = s%d.parent"):format(p, n)
  local cols = kind == "gpt" and "x.id AS id, r.id AS doc, x.f AS f, x.lat AS lat, x.lon AS lon"
    or "DISTINCT x.f AS f, x.v AS v, r.pk AS pk, r.id AS doc"
  return ("(SELECT %s FROM %s%s x %s WHERE x.f = %s)"):format(cols, p, kind, table.concat(joins, " "), env.ctx:bind(d.id))
end
local function tbl(env, d) return agg.vt(env, d) end

--- agg.multi(d) -> whether a document may have several values of d (an
-- array, or a field inside a NESTED field)
function agg.multi(d) return d.array or d.parent ~= nil end

--- agg.ALL: the scope of every document (a match_all search): the value
-- tables are read without the documents
agg.ALL = "d.parent IS NULL AND (1)"

--- agg.own(env, d, scope) -> the condition on d's value table (its
-- columns unqualified: f, v, pk, doc) that selects exactly the scope's
-- values of d, when that table alone answers the scope: every document
-- (agg.ALL), or env.leaf's scope and d its field (a search that is one
-- range / term(s) / prefix leaf on a single-valued top-level field: the
-- leaf's own condition on its value index) | nil
function agg.own(env, d, scope)
  if not d then return nil end
  if scope == agg.ALL then return "f = " .. env.ctx:bind(d.id) end
  local lf = env.leaf
  if lf and scope == lf.scope and lf.d == d then return lf.cond end
  return nil
end

--- agg.narrow(env, scope) -> the scope, with env.leaf's condition on its
-- value column instead of its value index when scope is the leaf's (for
-- a scope joined with another condition that drives the scan: the leaf
-- is then a test on each row that condition finds, not a second set).
-- The column is NULL in a document without a value, which the leaf never
-- matches (its condition may be "1": an exists, an unbounded range)
function agg.narrow(env, scope)
  local lf = env.leaf
  if lf and scope == lf.scope and lf.d.col then
    return ("d.parent IS NULL AND d.%s IS NOT NULL AND (%s)"):format(lf.d.col,
      (lf.vcond:gsub("%f[%w_]v%f[^%w_]", "d." .. lf.d.col)))
  end
  return scope
end

--- agg.values_of(env, d, scope) -> "FROM values n WHERE n.f = F [AND n.doc
-- IN (the scope's documents)]": the values of field d in the scope (one
-- row per distinct value of a document)
function agg.values_of(env, d, scope)
  local lf = env.leaf
  if lf and scope == lf.scope and lf.d == d then return ("FROM %s n WHERE %s"):format(tbl(env, d), lf.cond) end
  local s = ("FROM %s n WHERE n.f = %s"):format(tbl(env, d), env.ctx:bind(d.id))
  if scope ~= agg.ALL then s = s .. (" AND n.doc IN (SELECT d.id FROM %sdoc d WHERE %s)"):format(env.ctx.p, scope) end
  return s
end
local values_of = agg.values_of

-- the number of documents in the scope
local function ndocs(env, scope)
  return agg.query(env, ("SELECT count(*) FROM %sdoc d WHERE %s"):format(env.ctx.p, scope))[1][1]
end

local function num(v)
  if v == nil then return nil end
  return tonumber(v) + 0.0
end

local RUN = {}

-- avg, max, min, sum: the values' count, total, min, max and the documents
-- having one, in one read; missing adds its value once per document without
local function simple(fn)
  return function(env, a, scope, what)
    local d, m, c = agg.field(env, a.field_name, what, NUMERIC)
    if d == nil then return nil, m, c end
    local miss, m2, c2
    if d then miss, m2, c2 = agg.missing(d, a.missing, what) elseif a.missing ~= nil and type(a.missing) ~= "number" then
      m2, c2 = what .. ": missing must be a number", "OTSParameterInvalid"
    else miss = a.missing end
    if m2 then return nil, m2, c2 end
    local x = env.batch and agg.col(env, d, miss)
    if x then
      local out = {}
      if fn == "avg" then
        batch(env, { "count(" .. x .. ")", "total(" .. x .. ")" }, function(r, at)
          return r[at[1]] > 0 and num(r[at[2]] / r[at[1]]) or nil
        end, out)
      else -- sum: total(x) (0.0 when no value), min(x), max(x)
        batch(env, { ({ sum = "total(", min = "min(", max = "max(" })[fn] .. x .. ")" }, function(r, at)
          return num(r[at[1]])
        end, out)
      end
      return out
    end
    local n, total, lo, hi, having = 0, 0, nil, nil, 0
    if d then
      -- the documents having a value count only when a missing value stands in
      local r = agg.query(env, ("SELECT count(*), total(n.v), min(n.v), max(n.v), %s %s"):format(
        miss ~= nil and "count(DISTINCT n.doc)" or "0", values_of(env, d, scope)))[1]
      n, total, lo, hi, having = r[1], r[2], r[3], r[4], r[5]
    end
    if miss ~= nil then
      local k = ndocs(env, scope) - having
      if k > 0 then
        n, total = n + k, total + miss * k
        lo = (lo == nil or miss < lo) and miss or lo
        hi = (hi == nil or miss > hi) and miss or hi
      end
    end
    local v
    if fn == "avg" then v = n > 0 and total / n or nil
    elseif fn == "sum" then v = total
    elseif fn == "min" then v = lo
    else v = hi end
    return { value = num(v) }
  end
end
RUN.avg, RUN.max, RUN.min, RUN.sum = simple("avg"), simple("max"), simple("min"), simple("sum")

function RUN.count(env, a, scope, what)
  local d, m, c = agg.field(env, a.field_name, what)
  if d == nil then return nil, m, c end
  if a.missing ~= nil then return bad(what .. ": count takes no missing value") end
  if not d then return { value = 0 } end
  if scope == agg.ALL and not agg.multi(d) and not (env.batch and env.batch.group) then -- every document: its value index
    return { value = agg.query(env, ("SELECT count(*) FROM %s WHERE f = %s"):format(tbl(env, d), env.ctx:bind(d.id)))[1][1] }
  end
  local x = env.batch and agg.col(env, d)
  if x then
    local out = {}
    batch(env, { "count(" .. x .. ")" }, function(r, at) return r[at[1]] end, out)
    return out
  end
  return { value = agg.query(env, ("SELECT count(*) %s"):format(values_of(env, d, scope)))[1][1] }
end

function RUN.distinct_count(env, a, scope, what)
  local d, m, c = agg.field(env, a.field_name, what)
  if d == nil then return nil, m, c end
  if not d then return { value = a.missing ~= nil and 1 or 0 } end
  local miss, m2, c2 = agg.missing(d, a.missing, what)
  if m2 then return nil, m2, c2 end
  -- over every document without a missing value the value table's
  -- B-tree (ordered by value) counts faster than a pass over the column
  local x = env.batch and (miss ~= nil or scope ~= agg.ALL or env.batch.group) and agg.col(env, d, miss)
  if x then -- every document's value, or the missing value in its stead
    local out = {}
    batch(env, { "count(DISTINCT " .. x .. ")" }, function(r, at) return r[at[1]] end, out)
    return out
  end
  local r = agg.query(env, ("SELECT count(DISTINCT n.v), %s %s"):format(miss ~= nil and "count(DISTINCT n.doc)" or "0",
    values_of(env, d, scope)))[1]
  local v = r[1]
  if miss ~= nil and ndocs(env, scope) > r[2] then
    local has = agg.query(env, ("SELECT 1 %s AND n.v = %s LIMIT 1"):format(values_of(env, d, scope), env.ctx:bind(miss)))[1]
    if not has then v = v + 1 end
  end
  return { value = v }
end

-- percentiles (otskit.store.search.percentiles)
require("otskit.store.search.percentiles")(agg, RUN, ndocs, NUMERIC)

-- the statement of top_rows on a value index: remembered per condition
-- (the search's, which repeats with its shape) for the table, order and
-- limit parameter last seen
-- (lim "": the rows (pk, v) in the order v DESC, pk DESC, for
-- docs.top_keys, which puts each run of equal v in key order: the same
-- rows as ORDER BY v DESC, pk without SQLite's temporary B-tree for the
-- pk part)
local TOP = query.memo()
local function top_text(t, own, order, lim)
  local e = TOP.t[own]
  if e and e.t == t and e.order == order and e.lim == lim then return e.text end
  local text = lim == "" and ("SELECT pk, v FROM %s WHERE %s ORDER BY v DESC, pk DESC"):format(t, own)
    or ("SELECT pk FROM %s WHERE %s ORDER BY v %s, pk LIMIT %s"):format(t, own, order, lim)
  e = { t = t, order = order, lim = lim, text = text }
  return query.keep(TOP, own, e).text
end

function RUN.top_rows(env, a, scope, what)
  local limit = a.limit
  if limit == nil then limit = 1 end
  if type(limit) ~= "number" or limit ~= math.floor(limit) or limit < 1 or limit > L.top_rows then
    return bad(what .. ": limit must be an integer in 1.." .. L.top_rows)
  end
  local sorters = a.sort or env.ix.def.index_sort
  -- one field_sort on a single-valued top-level field over every document
  -- (or the leaf's own field): its value index, walked in order (what
  -- the path checks is all sort.compile checks of such a sorter: a sort
  -- it refuses never takes the path)
  local fs = type(sorters) == "table" and #sorters == 1 and type(sorters[1]) == "table" and sorters[1].field_sort
  if type(fs) == "table" and next(sorters[1]) == "field_sort" and next(sorters[1], "field_sort") == nil
    and base.list(sorters, "top_rows")
    and base.known(fs, sort.KEYS.field_sort, "top_rows") and fs.missing_value == nil and fs.missing_field == nil
    and fs.nested_filter == nil and (fs.order == nil or fs.order == "ASC" or fs.order == "DESC")
    and (fs.mode == nil or fs.mode == "MIN" or fs.mode == "MAX" or fs.mode == "AVG") then
    local d = type(fs.field_name) == "string" and env.ctx.def.byname[fs.field_name]
    local own = d and d.col and d.sort and not d.parent and d.type ~= "GEO_POINT"
      and not (fs.mode == "AVG" and d.type == "KEYWORD") and agg.own(env, d, scope)
    if own then
      local order = fs.order or "ASC"
      local desc = order == "DESC" and env.keys_of ~= nil -- (rows without columns: docs.top_keys)
      local text = top_text(tbl(env, d), own, order, desc and "" or env.ctx:bind(limit))
      if env.keys_of then
        local out = env.keys_of(text, limit, desc)
        -- (fewer: documents without a value follow them) (name and type
        -- as run_list sets them: the table made at its size)
        if #out == limit then return { rows = out, name = a.name, type = a.type } end
      else
        local rows = agg.query(env, text)
        if #rows == limit then
          local out = {}
          for i, r in ipairs(rows) do out[i] = env.row_of(r[1]) end
          return { rows = out }
        end
      end
    end
  end
  local keys, used = sort.compile(env.ctx, sorters)
  if not keys then return nil, used, "OTSParameterInvalid" end
  local text = ("SELECT d.pk, %s FROM %sdoc d WHERE %s %s LIMIT %s"):format(sort.select(keys), env.ctx.p, scope,
    sort.order_by(keys), env.ctx:bind(limit))
  if env.keys_of then return { rows = env.keys_of(text, limit) } end
  local rows = {}
  for i, r in ipairs(agg.query(env, text)) do rows[i] = env.row_of(r[1]) end
  return { rows = rows }
end

-- the keys of each type's aggregation (another is refused, never ignored;
-- count's missing is refused by name)
local KEYS = {}
for ty, ks in pairs({ avg = { "field_name", "missing" }, max = { "field_name", "missing" },
  min = { "field_name", "missing" }, sum = { "field_name", "missing" }, count = { "field_name", "missing" },
  distinct_count = { "field_name", "missing" }, percentiles = { "field_name", "missing", "percentiles" },
  top_rows = { "limit", "sort" } }) do
  KEYS[ty] = base.set(ks)
  KEYS[ty].name, KEYS[ty].type = true, true
end
agg.KEYS = KEYS

--- agg.run_list(env, list, scope, where) -> { results in order } | nil,
-- msg, code. where: names the level in messages.
function agg.run_list(env, list, scope, where)
  if list == nil then return nil end
  if type(list) ~= "table" then return bad(where .. ": aggs must be a list") end
  if #list > L.per_level then return bad(("%s: at most %d aggregations per level"):format(where, L.per_level)) end
  local lok, lm, lc = base.list(list, where)
  if not lok then return nil, lm, lc end
  local out, seen = {}, {}
  local outer = env.batch
  env.batch = { exprs = {}, items = {} }
  -- (no pcall: an error raised here ends the whole search, env with it)
  local _, m, c = agg._run_list(env, list, scope, where, out, seen)
  local b = env.batch
  env.batch = outer
  if m then return nil, m, c end
  if #b.exprs > 0 then
    local text = ("SELECT %s FROM %sdoc d WHERE %s"):format(table.concat(b.exprs, ", "), env.ctx.p, scope)
    local lf = env.leaf
    if lf and scope == lf.scope and lf.d.col then -- of the leaf's own field alone: its value index
      local all, pat = table.concat(b.exprs, ", "), "d%." .. lf.d.col .. "%f[^%w_]"
      if not all:gsub(pat, ""):find("d%.") then
        text = ("SELECT %s FROM %s WHERE %s"):format((all:gsub(pat, "v")), lf.tbl, lf.cond)
      end
    end
    local row = agg.query(env, text)[1]
    for _, it in ipairs(b.items) do it.out.value = it.fill(row, it.at) end
  end
  return out
end

function agg._run_list(env, list, scope, where, out, seen)
  for i, a in ipairs(list) do
    if type(a) ~= "table" then return bad(where .. ": each aggregation is a table") end
    if type(a.name) ~= "string" or a.name == "" then return bad(where .. ": each aggregation needs a name") end
    if seen[a.name] then return bad(where .. ": duplicate aggregation name " .. a.name) end
    seen[a.name] = true
    local f = RUN[a.type]
    if not f then return bad(("%s: unknown aggregation type %s"):format(where, tostring(a.type))) end
    local what = "aggregation [" .. a.name .. "]"
    if not base.known(a, KEYS[a.type], "") then -- (the message built only when it is needed)
      return base.known(a, KEYS[a.type], ("%s: %s %s"):format(where, a.type, what))
    end
    local r, m, c = f(env, a, scope, what)
    if not r then return nil, m, c end
    r.name, r.type = a.name, a.type
    out[i] = r
  end
end

local COLS = { avg = true, min = true, max = true, sum = true, count = true, distinct_count = true }

--- agg.by_col(env, list, scope, where) -> exprs, fn(row, base) -> the
-- results of the aggregations `list` for one group of a GROUP BY whose
-- row holds exprs from position base | nil when they are not all
-- computed from value columns (avg, min, max, sum, count, distinct_count
-- of fields with one) | false, msg, code (the list is refused)
function agg.by_col(env, list, scope, where)
  if type(list) ~= "table" or #list == 0 or #list > L.per_level then return nil end
  for _, a in ipairs(list) do
    if type(a) ~= "table" or not COLS[a.type] then return nil end
    local d = type(a.field_name) == "string" and env.ctx.def.byname[a.field_name]
    if not (d and d.col) then return nil end
  end
  local outer = env.batch
  env.batch = { exprs = {}, items = {}, group = true }
  local out = {}
  local ok, e, m, c = pcall(agg._run_list, env, list, scope, where, out, {})
  local b = env.batch
  env.batch = outer
  if not ok then error(e, 0) end
  if m then return false, m, c end
  if #b.items ~= #list then error("otskit.store.search.agg: a sub-aggregation left the group's batch", 0) end
  for _, it in ipairs(b.items) do
    for j, i in ipairs(it.at) do it.at[j] = i - 1 end -- positions relative to base
  end
  return b.exprs, function(row, base)
    local res, at = {}, {}
    for k, it in ipairs(b.items) do -- one item per aggregation, in order
      for j, i in ipairs(it.at) do at[j] = base + i end
      res[k] = { name = out[k].name, type = out[k].type, value = it.fill(row, at) }
    end
    return res
  end
end

local BATCH = { avg = true, min = true, max = true, sum = true, count = true }

--- agg.by_group(env, list, gd, scope) -> fn(v) -> the results of the
-- aggregations `list` over the documents whose field gd has value v, all
-- groups computed by one GROUP BY per aggregation | nil when the list is
-- not only avg/min/max/sum/count without missing values (run it per
-- group with agg.run_list then; it also reports the list's errors)
function agg.by_group(env, list, gd, scope)
  if type(list) ~= "table" or #list == 0 or #list > L.per_level then return nil end
  local seen, fields = {}, {}
  for i, a in ipairs(list) do
    if type(a) ~= "table" or not BATCH[a.type] or a.missing ~= nil or type(a.name) ~= "string" or a.name == ""
      or seen[a.name] then return nil end
    if not base.known(a, KEYS[a.type], "") then return nil end
    seen[a.name] = true
    local d = agg.field(env, a.field_name, "", a.type ~= "count" and NUMERIC or nil)
    if not d then return nil end
    fields[i] = d
  end
  local ctx = env.ctx
  local per = {}
  for i, a in ipairs(list) do
    local d = fields[i]
    local text = ("SELECT g.v, count(n.v), total(n.v), min(n.v), max(n.v) FROM %s g JOIN %s n ON n.doc = g.doc AND n.f = %s WHERE g.f = %s")
      :format(tbl(env, gd), tbl(env, d), ctx:bind(d.id), ctx:bind(gd.id))
    if scope ~= agg.ALL then text = text .. (" AND g.doc IN (SELECT d.id FROM %sdoc d WHERE %s)"):format(ctx.p, scope) end
    local m = {}
    for _, r in ipairs(agg.query(env, text .. " GROUP BY g.v")) do m[r[1]] = r end
    per[i] = m
  end
  return function(v)
    local out = {}
    for i, a in ipairs(list) do
      local r = per[i][v]
      local val
      if a.type == "count" then val = r and r[2] or 0
      elseif a.type == "sum" then val = num(r and r[3] or 0)
      elseif r and r[2] > 0 then
        if a.type == "avg" then val = num(r[3] / r[2]) elseif a.type == "min" then val = num(r[4]) else val = num(r[5]) end
      end
      out[i] = { name = a.name, type = a.type, value = val }
    end
    return out
  end
end

--- agg.value(results, name) -> the single value of a sub-aggregation (for
-- sub_agg_sort) | nil, msg
function agg.value(results, name)
  for _, r in ipairs(results or {}) do
    if r.name == name then
      if r.rows or r.items then return nil, "sub_agg_sort: aggregation " .. name .. " has no single value" end
      return r.value
    end
  end
  return nil, "sub_agg_sort: no sub-aggregation named " .. tostring(name)
end

return agg
