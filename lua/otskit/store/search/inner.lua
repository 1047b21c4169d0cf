--- otskit.store.search.inner -- what a search returns per hit beside the
-- row: the highlight of the row's fields (the search's `highlight`) and
-- the inner hits of each nested query with inner_hits.
--
-- A nested query's inner_hits = { sort = { sorters }, offset = 0,
-- limit = 3, highlight }: per returned row, the row's objects of the
-- nested field (its child rows) that match the nested query's own query,
-- each { score (that query's score of the object), nested_doc_offset (its
-- place among the row's objects of that field, from 0), highlight_fields
-- (the inner_hits highlight, of the path's sub-fields), inner_hits (those
-- of nested queries with inner_hits inside this one, for this object) }.
-- Sorters: score_sort, doc_sort (the objects' order), each { order =
-- "ASC" | "DESC" }, and field_sort { field_name (a sub-field of the path
-- with enable_sort_and_agg), order, mode = MIN | MAX | AVG } (objects
-- without a value last); default: doc_sort ASC. limit <= 100. A nested query
-- with inner_hits inside a nested query without them is refused (there is
-- no hit to hang them on).
--
-- Per hit: { score (when the search sorts by score), highlight_fields =
-- { {field_name, fragments}, ... } (see otskit.store.search.highlight),
-- inner_hits = { { path, hits = { ... } }, ... } (one per nested query
-- with inner_hits, in query order) }.
local cjson = require "cjson.safe"
local base = require "otskit.store.base"
local query = require "otskit.store.search.query"
local hl = require "otskit.store.search.highlight"
local docs = require "otskit.store.search.docs"

local inner = {}

inner.LIMITS = { limit = 100, default_limit = 3, offset = 100000 }
local L = inner.LIMITS

local function bad(msg) return nil, msg, "OTSParameterInvalid" end
local function count(v, lo, hi) return type(v) == "number" and v == math.floor(v) and v >= lo and v <= hi end

local IH_KEYS = { sort = true, offset = true, limit = true, highlight = true }
local ORDER_KEYS = base.set{ "order" }
local IH_FIELD_SORT_KEYS = base.set{ "field_name", "order", "mode" }

local SORTABLE = { LONG = true, DOUBLE = true, DATE = true, KEYWORD = true, BOOLEAN = true }
local MODES = { MIN = "min", MAX = "max", AVG = "avg" }

-- inner_hits.sort of nested path `path` -> keys { {doc | score | field =
-- d, agg}, desc } | nil, msg, code
local function check_sort(def, path, list)
  if list == nil then return { { doc = true, desc = false } } end
  if type(list) ~= "table" then return bad("inner_hits: sort must be a list of sorters") end
  local lok, lm, lc = base.list(list, "inner_hits: sort")
  if not lok then return nil, lm, lc end
  local keys = {}
  for i, so in ipairs(list) do
    local kind, b = nil, nil
    if type(so) == "table" then kind, b = next(so) end
    if (kind ~= "score_sort" and kind ~= "doc_sort" and kind ~= "field_sort") or type(b) ~= "table"
      or next(so, kind) ~= nil then
      return bad("inner_hits: otskit sorts inner hits by score_sort, doc_sort and field_sort")
    end
    local o = b.order or (kind == "score_sort" and "DESC" or "ASC")
    if o ~= "ASC" and o ~= "DESC" then return bad("inner_hits: a sorter's order must be ASC or DESC") end
    local key = { doc = kind == "doc_sort", desc = o == "DESC" }
    if kind ~= "field_sort" then
      local ok, km, kc = base.known(b, ORDER_KEYS, "inner_hits: " .. kind)
      if not ok then return nil, km, kc end
    end
    if kind == "field_sort" then
      local ok, km, kc = base.known(b, IH_FIELD_SORT_KEYS, "inner_hits: field_sort (otskit takes field_name, order and mode)")
      if not ok then return nil, km, kc end
      local d = type(b.field_name) == "string" and def.byname[b.field_name] or nil
      if not d then return bad(("inner_hits: field_sort field [%s] does not exist in the index schema"):format(tostring(b.field_name))) end
      if (d.parent and d.parent.name) ~= path then
        return bad(("inner_hits: field_sort field [%s] is not a sub-field of [%s]"):format(d.name, path))
      end
      if not SORTABLE[d.type] then return bad(("inner_hits: field_sort field [%s] is %s"):format(d.name, d.type)) end
      if not d.sort then return bad(("inner_hits: field_sort field [%s] does not enable_sort_and_agg"):format(d.name)) end
      if b.mode ~= nil and not MODES[b.mode] then return bad("inner_hits: field_sort.mode must be MIN, MAX or AVG") end
      if b.mode == "AVG" and d.type == "KEYWORD" then
        return bad(("inner_hits: field_sort.mode AVG: field [%s] is KEYWORD (MIN or MAX)"):format(d.name))
      end
      key.field, key.agg = d, MODES[b.mode or (key.desc and "MAX" or "MIN")]
    end
    keys[i] = key
  end
  if #keys == 0 then keys[1] = { doc = true, desc = false } end
  return keys
end

local find

-- a nested query with inner_hits -> an entry of the plan
local function entry(def, b, depth)
  local ih = b.inner_hits
  if type(ih) ~= "table" then return bad("nested: inner_hits must be a table { sort, offset, limit, highlight }") end
  local ok, km, kc = base.known(ih, IH_KEYS, "inner_hits")
  if not ok then return nil, km, kc end
  if type(b.path) ~= "string" then return bad("nested: path must be a string") end
  local d = def.byname[b.path]
  if not d or d.type ~= "NESTED" then return bad(("nested: path [%s] is not a NESTED field"):format(b.path)) end
  local offset, limit = ih.offset or 0, ih.limit or L.default_limit
  if not count(offset, 0, L.offset) then return bad("inner_hits: offset must be an integer in 0.." .. L.offset) end
  if not count(limit, 0, L.limit) then return bad("inner_hits: limit must be an integer in 0.." .. L.limit) end
  local keys, sm, sc = check_sort(def, b.path, ih.sort)
  if not keys then return nil, sm, sc end
  local e = { path = b.path, d = d, query = b.query, offset = offset, limit = limit, keys = keys }
  if ih.highlight ~= nil then
    local h, hm, hc = hl.check(def, ih.highlight, b.path)
    if not h then return nil, hm, hc end
    e.hl, e.terms = h, hl.terms(def, b.query)
  end
  local kids, km, kc = find(def, b.query, {}, depth + 1)
  if not kids then return nil, km, kc end
  e.kids = kids
  return e
end

-- the nested queries with inner_hits in q (any table inside it), in order
function find(def, v, out, depth)
  if type(v) ~= "table" then return out end
  if depth > 400 then return bad("the query nests too deep") end -- compile allows 64 query levels, each a few tables
  local k, b = next(v)
  if type(k) == "string" and query.KINDS[k] and type(b) == "table" and next(v, k) == nil then
    if k == "nested" then
      if b.inner_hits ~= nil then
        local e, m, c = entry(def, b, depth)
        if not e then return nil, m, c end
        out[#out + 1] = e
        return out
      end
      local kids, m, c = find(def, b.query, {}, depth + 1)
      if not kids then return nil, m, c end
      if #kids > 0 then return bad("inner_hits: a nested query with inner_hits inside a nested query without them") end
      return out
    end
    v = b
  end
  for _, x in pairs(v) do
    local r, m, c = find(def, x, out, depth + 1)
    if not r then return nil, m, c end
  end
  return out
end

-- whether the index has a NESTED field (remembered with its definition)
local function has_nested(def)
  local h = def.has_nested
  if h == nil then
    h = false
    for _, d in pairs(def.byname) do
      if d.type == "NESTED" then h = true; break end
    end
    def.has_nested = h
  end
  return h
end

--- inner.plan(def, req) -> a plan | false (nothing to add to the hits) |
-- nil, msg, code (a bad highlight or inner_hits)
function inner.plan(def, req)
  if req.highlight == nil and not has_nested(def) then return false end -- (as below, without its tables)
  local p = {}
  if req.highlight ~= nil then
    local h, m, c = hl.check(def, req.highlight, nil)
    if not h then return nil, m, c end
    p.hl, p.terms = h, hl.terms(def, req.query)
  end
  -- (an index without NESTED fields has no nested query to find: the
  -- search's compile already refused every one, so the walk is skipped)
  local es, m, c = {}, nil, nil
  if has_nested(def) then es, m, c = find(def, req.query, {}, 0) end
  if not es then return nil, m, c end
  p.entries = es
  if not p.hl and #es == 0 then return false end
  return p
end

local nparams = query.nparams

-- the objects of a nested field's cell (a JSON array string, a list, one
-- object), as the index numbered them (only objects count)
local function objects(raw)
  local list = raw
  if type(raw) == "string" then list = cjson.decode(raw) end
  if type(list) ~= "table" then return {} end
  if list[1] == nil and next(list) ~= nil then list = { list } end
  local out = {}
  for _, o in ipairs(list) do
    if type(o) == "table" then out[#out + 1] = o end
  end
  return out
end

local function last_name(name) return name:match("([^.]+)$") end

-- the compiled SQL of an entry (once per search)
local function compile(env, e)
  if e.text then return true end
  local ctx = query.ctx(env.def, env.p)
  ctx.want_score, ctx.drive, ctx.h, ctx.read_vector = true, false, env.h, env.read_vector
  ctx.hits = true -- its nested queries' inner_hits are this plan's (find)
  local par = ctx:bind(0)
  e.par = ctx.n
  local cond, score, code = ctx:compile(e.query, "c", e.path, 1)
  if not cond then return nil, score, code end
  local order = {}
  for _, k in ipairs(e.keys) do
    local x = k.doc and "c.id" or "2"
    if k.field then -- rows without a value last
      x = ("(SELECT %s(v) FROM %s%s WHERE doc = c.id AND f = %s)"):format(k.agg, env.p,
        k.field.type == "KEYWORD" and "kw" or "num", ctx:bind(k.field.id))
      order[#order + 1] = x .. " IS NULL"
    end
    order[#order + 1] = x .. (k.desc and " DESC" or " ASC")
  end
  order[#order + 1] = "c.id ASC"
  e.text = ("SELECT c.id, (%s), (SELECT count(*) FROM %sdoc s WHERE s.parent = c.parent AND s.path = c.path AND s.id < c.id) FROM %sdoc c WHERE c.parent = %s AND c.path = %s AND (%s) ORDER BY %s")
    :format(score, env.p, env.p, par, ctx:bind(e.path), cond, table.concat(order, ", "))
  e.binds = ctx.binds
  e.n = nparams(e.text)
  return true
end

local hits_of

-- the inner hits of entry e for the document `doc` whose object list of
-- e's field is objs
local function inner_hits(env, e, doc, objs)
  local ok, m, c = compile(env, e)
  if not ok then return nil, m, c end
  e.binds[e.par] = doc
  local rows = docs.run(env.h, e.text, e.binds, e.n, e.limit, e.offset)
  local out = {}
  for i, r in ipairs(rows) do
    local off = r[3]
    local obj = objs[off + 1] or {}
    local hit = { score = tonumber(r[2]) or 0, nested_doc_offset = off }
    if e.hl then
      hit.highlight_fields = hl.result(e.hl, e.terms, function(d)
        local x = obj[last_name(d.name)]
        if x == cjson.null then return nil end
        return x
      end)
    end
    local ih, m2, c2 = hits_of(env, e.kids, r[1], function(d) return obj[last_name(d.name)] end)
    if not ih and m2 then return nil, m2, c2 end
    hit.inner_hits = ih
    out[i] = hit
  end
  return out
end

-- the inner hits of the entries es for document doc; cell(d) -> the raw
-- value of nested field d in that document
function hits_of(env, es, doc, cell)
  if #es == 0 then return nil end
  local out = {}
  for i, e in ipairs(es) do
    local hs, m, c = inner_hits(env, e, doc, objects(cell(e.d)))
    if not hs then return nil, m, c end
    out[i] = { path = e.path, hits = hs }
  end
  return out
end

--- inner.hits(env, plan, pks, hits) -> hits (one per row of pks, each
-- given its highlight_fields and inner_hits; hits: the rows' hits so far,
-- or nil) | nil, msg, code. env = { h, p, def, read = function(pk, names)
-- -> the row's columns, read_vector }. Raises docs.FAIL on a SQLite
-- failure.
function inner.hits(env, plan, pks, hits)
  hits = hits or {}
  local names = {}
  if plan.hl then
    for _, f in ipairs(plan.hl.fields) do names[#names + 1] = f.d.name end
  end
  for _, e in ipairs(plan.entries) do names[#names + 1] = e.d.name end
  for i, pk in ipairs(pks) do
    local hit = hits[i] or {}
    hits[i] = hit
    local cols = env.read(pk, names)
    if plan.hl then
      hit.highlight_fields = hl.result(plan.hl, plan.terms, function(d) return cols[d.name] end)
    end
    if #plan.entries > 0 then
      local r = docs.run(env.h, ("SELECT id FROM %sdoc WHERE pk = CAST(?1 AS BLOB) AND parent IS NULL"):format(env.p), { pk })
      if r[1] then
        local ih, m, c = hits_of(env, plan.entries, r[1][1], function(d) return cols[d.name] end)
        if not ih and m then return nil, m, c end
        hit.inner_hits = ih
      end
    end
  end
  return hits
end

return inner
