--- otskit.store.search.run -- searching a search index: db:search (query,
-- sort, offset/limit, next_token paging, total count, columns_to_get,
-- routing values); db:compute_splits and db:parallel_scan are
-- otskit.store.search.scan.
local base = require "otskit.store.base"
local txn = require "otskit.store.txn"
local keycodec = require "otskit.key"
local values = require "otskit.store.values"
local schema = require "otskit.store.schema"
local docs = require "otskit.store.search.docs"
local query = require "otskit.store.search.query"
local sort = require "otskit.store.search.sort"
local analytics = require "otskit.store.search.analytics"
local inner = require "otskit.store.search.inner"
local docvalues = require "otskit.store.search.docvalues"
require "otskit.store.search.score" -- the functions_score query kind
require "otskit.store.search.knn" -- the knn_vector query kind

local sql = require("otskit.core").sql
local DB = base.DB
local invalid, check_req, now_ms = base.invalid, base.check_req, base.now_ms
local guarded = docs.guarded
local pk_out = schema.pk_out

local run = {}

local nparams = query.nparams

--- The service's limits on a search.
run.LIMITS = { offset_limit = 100000, limit = 100, limit_index_only = 1000, default_limit = 10,
  scan_limit = 2000, scan_default_limit = 100, alive_time = 3600, default_alive_time = 60, max_parallel = 32 }
local L = run.LIMITS

-- columns_to_get (otskit.store.search.columns)
local columns = require("otskit.store.search.columns").check

-- the returned row of key k: its primary key and the columns asked for
local function row_of(self, t, k, cols)
  local row = { primary_key = pk_out(t, k), columns = {} }
  if cols.mode == "RETURN_NONE" then return row end
  local blob, err, code = self.h:get(t.kv, k)
  if blob == nil and err then error(setmetatable({ msg = err, code = code }, docs.FAIL), 0) end
  if blob then
    local now = now_ms(self)
    local c = values.decode(blob, cols.set, false, t.ttl_ms and now - t.ttl_ms or nil, nil, t.maxv)
    if c then row.columns = c end
  end
  return row
end

-- the reader of a row's VECTOR column (a knn_vector query's, and inner
-- hits'): made once per table object of a db, not per search
local function vector_reader(self, t)
  local rv = t.search_rv
  if rv == nil or t.search_rv_db ~= self or t.search_rv_t ~= t then -- (a copy of t: made anew)
    rv = function(pk, name)
      return row_of(self, t, pk, { mode = "RETURN_SPECIFIED", set = { [name] = true } }).columns[name]
    end
    t.search_rv, t.search_rv_db, t.search_rv_t = rv, self, t
  end
  return rv
end

-- the key types of table t as otskit.core.sql.keys takes them (one
-- letter a column)
local KTYPES = setmetatable({}, { __mode = "k" })
local KT = { INTEGER = "i", STRING = "s", BINARY = "b" }
local function key_types(t)
  local s = KTYPES[t]
  if not s then
    local c = {}
    for i = 1, t.npk do c[i] = KT[t.pk[i].type] end
    s = table.concat(c)
    KTYPES[t] = s
  end
  return s
end

-- the names of table t's key columns (a list)
local KNAMES = setmetatable({}, { __mode = "k" })
local function key_names(t)
  local s = KNAMES[t]
  if not s then
    s = {}
    for i = 1, t.npk do s[i] = t.pk[i].name end
    KNAMES[t] = s
  end
  return s
end

-- the rows of a page without columns from its keys' elements decoded
-- flat (docs.keys): rows[i] = { primary_key, columns = {} }, the cells as
-- pk_out gives them
local key_cell = values.key_cell
local function key_rows(t, vals, n, rows)
  local pk, npk = t.pk, t.npk
  if npk == 1 then
    local name, ty = pk[1].name, pk[1].type
    local typed = ty == "BINARY" or ty == "INTEGER" -- (key_cell unrolled: {name, v, ty} for such a string)
    for i = 1, n do
      local v = vals[i]
      rows[i] = { primary_key = { typed and type(v) == "string" and { name, v, ty } or { name, v } }, columns = {} }
    end
    return rows
  end
  local at = 0
  for i = 1, n do
    local p = {}
    for j = 1, npk do p[j] = key_cell(pk[j].name, pk[j].type, vals[at + j]) end
    at = at + npk
    rows[i] = { primary_key = p, columns = {} }
  end
  return rows
end

-- routing_values (a list of primary keys, each a list of {name, value})
-- -> SQL condition | nil, msg, code
local function routing(ctx, t, ix, rv)
  if rv == nil then return nil end
  if type(rv) ~= "table" then return invalid("routing_values must be a list of primary keys") end
  local lok, lm, lc = base.list(rv, "routing_values")
  if not lok then return nil, lm, lc end
  if #rv == 0 then return nil end
  if #ix.def.routing == 0 then return invalid("routing_values: the index has no routing_fields") end
  local lits = {}
  for i, pk in ipairs(rv) do
    if type(pk) ~= "table" then return invalid("routing_values must be a list of primary keys") end
    local pok, pm, pc = base.list(pk, "routing_values: a primary key")
    if not pok then return nil, pm, pc end
    local vals = {}
    for j, f in ipairs(ix.def.routing) do
      local cell = pk[j]
      if type(cell) ~= "table" or cell[1] ~= f.name or cell[2] == nil then
        return invalid(("routing_values: each key lists the routing fields in order (%s)"):format(f.name))
      end
      local cok, cm, cc = base.list(cell, "routing_values: a { name, value } cell")
      if not cok or #cell ~= 2 then return nil, cm or "routing_values: a cell is { name, value }", cc or "OTSParameterInvalid" end
      local v = cell[2]
      local want = t.pk[f.pos].type
      if want == "INTEGER" then
        if type(v) ~= "number" and not (type(v) == "string" and v:match("^%-?%d+$")) then
          return invalid("routing_values: " .. f.name .. " is INTEGER")
        end
        if type(v) == "string" then v = keycodec.int(v) end
      elseif type(v) ~= "string" then
        return invalid("routing_values: " .. f.name .. " is " .. want)
      end
      vals[j] = v
    end
    if #pk ~= #ix.def.routing then return invalid("routing_values: each key lists exactly the routing fields") end
    lits[i] = "CAST(" .. ctx:bind(keycodec.pack(vals)) .. " AS BLOB)"
  end
  return "d.route IN (" .. table.concat(lits, ", ") .. ")"
end

-- fmt:format(a, b, c, d) remembered by its parts: a search's texts
-- repeat with its shape, and a remembered text is the same string each
-- time (so nparams and the statement cache find it at once); a
-- query.memo, emptied with the others by query.forget
local TEXTS = query.memo()
local function text_of(fmt, a, b, c, d)
  local l1 = TEXTS.t[fmt]
  local l2 = l1 and l1[a]
  local l3 = l2 and l2[b]
  local l4 = l3 and l3[c]
  local text = l4 and l4[d]
  if text then return text end
  text = fmt:format(a, b, c, d)
  if TEXTS.n >= 512 then TEXTS.t, TEXTS.n, l1 = {}, 0, nil end
  TEXTS.n = TEXTS.n + 1
  if not l1 then l1 = {}; TEXTS.t[fmt] = l1 end
  l2 = l1[a] or {}; l1[a] = l2
  l3 = l2[b] or {}; l2[b] = l3
  l4 = l3[c] or {}; l3[c] = l4
  l4[d] = text
  return text
end
local COUNT_TEXT = "SELECT count(*) FROM %s d WHERE %s%s%s"
local PAGE_TEXT = "SELECT d.pk%s FROM %s d WHERE %s %s"
local PK_KEYS = { { "d.pk", false } } -- (read, never changed)
local PK_ORDER = { [false] = "ORDER BY d.pk ASC", [true] = "ORDER BY d.pk DESC" } -- (sort.order_by of the key alone)

local SEARCH_FIELDS = base.set{ "table", "index", "query", "sort", "offset", "limit", "token", "get_total_count",
  "columns_to_get", "routing_values", "timeout_ms", "aggs", "group_bys", "collapse", "highlight" }

-- a and b are equal values (tables compared key by key)
local function same(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then return a == b end
  for k, v in pairs(a) do if not same(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

local function is_count(v, lo, hi)
  return type(v) == "number" and v == math.floor(v) and v >= lo and v <= hi
end

-- timeout_ms (a search's or a parallel scan's): absent, or a positive
-- int32 (the wire's type) number of milliseconds
local function bad_timeout(req)
  return req.timeout_ms ~= nil and not is_count(req.timeout_ms, 1, 2^31 - 1)
end
local TIMEOUT_RULE = "timeout_ms must be an integer number of milliseconds in 1..2147483647"

-- arms req.timeout_ms on the connection (fn calls it once it starts
-- reading, after the index caught up with delayed writes)
local function arm(self, req)
  if req.timeout_ms ~= nil then sql.deadline(self.h, req.timeout_ms) end
end

-- fn(self, req) -- a search or a parallel scan -- under its timeout_ms,
-- as db:sql's: a statement running past it is interrupted (an SQLite
-- progress handler, otskit.core.sql.deadline), and a request that ran
-- past it fails OTSTimeout, whatever it had computed
local function timed(fn, self, req)
  if req.timeout_ms == nil then return guarded(fn, self, req) end -- (nothing armed)
  local ok, r1, r2, r3 = pcall(guarded, fn, self, req)
  local over = sql.deadline(self.h) -- (lifted on every path)
  if over == "interrupted" or (over == "passed" and ok and r1 ~= nil) then
    return nil, ("The request ran longer than its timeout_ms (%d ms)."):format(req.timeout_ms), "OTSTimeout"
  end
  if not ok then error(r1, 0) end
  return r1, r2, r3
end

-- the WHERE of a search: the query, the index TTL, routing -> cond (on
-- "<p>doc d"), score, nil, from, fast (| nil, msg, code): the same documents as "FROM <from> d
-- WHERE <fast>". When the query's driving leaf recorded ctx.from (see
-- otskit.store.search.query), from is that leaf's value index, so SQLite
-- walks the matches in primary key order and counts them on that index
-- alone; else from is the document table and fast is cond.
local MATCH_ALL = { match_all = {} }
-- where's texts of a query cond without TTL, routing or value columns
-- (remembered: they depend on cond and its driver's table and condition
-- alone, and repeat with the search's shape)
local WHERE = query.memo()
local function where_texts(ix, ctx, cond)
  local w = WHERE.t[cond]
  local from = ctx.from
  if w and w.p == ix.p and w.ftbl == (from and from.tbl) and w.fcond == (from and from.cond) then return w end
  local full = "d.parent IS NULL AND (" .. query.with_driver(cond) .. ")"
  w = { p = ix.p, ftbl = from and from.tbl, fcond = from and from.cond, full = full, from = ix.p .. "doc", fast = full }
  if from then
    w.from = ("(SELECT doc AS id, pk FROM %s WHERE %s)"):format(from.tbl, from.cond)
    w.fast = "(" .. query.without_driver(cond) .. ")"
  end
  return query.keep(WHERE, cond, w)
end

local function where(self, ctx, t, ix, req)
  local q = req.query or MATCH_ALL
  ctx.drive, ctx.top = true, true
  local cond, score, code = ctx:compile(q, "d", nil, 0)
  ctx.top = false
  if not cond then return nil, score, code end
  if ix.ttl == -1 and req.routing_values == nil and not ctx.cols then
    local w = where_texts(ix, ctx, cond)
    return w.full, score, nil, w.from, w.fast
  end
  local extra = {}
  if ix.ttl ~= -1 then extra[#extra + 1] = "d.ts >= " .. ctx:bind(now_ms(self) - ix.ttl * 1000) end
  local r, rm, rc = routing(ctx, t, ix, req.routing_values)
  if r == nil and rm then return nil, rm, rc end
  if r then extra[#extra + 1] = r end
  local tail = #extra > 0 and " AND " .. table.concat(extra, " AND ") or ""
  local full = "d.parent IS NULL AND (" .. query.with_driver(cond) .. ")" .. tail
  if not ctx.from then return full, score, nil, ix.p .. "doc", full end
  local from
  local cols = {} -- the document's value columns the other clauses test (query.lua: Ctx:values)
  for c in pairs(ctx.cols or {}) do cols[#cols + 1] = (", x.%s AS %s"):format(c, c) end
  table.sort(cols)
  if #extra == 0 and #cols == 0 then
    from = ("(SELECT doc AS id, pk FROM %s WHERE %s)"):format(ctx.from.tbl, ctx.from.cond)
  else -- the TTL, routing and value columns are the document's
    from = ("(SELECT k.doc AS id, k.pk AS pk, x.ts AS ts, x.route AS route%s FROM %s k JOIN %sdoc x ON x.id = k.doc WHERE %s)")
      :format(table.concat(cols), ctx.from.tbl, ix.p, ctx.from.cond)
  end
  return full, score, nil, from, "(" .. query.without_driver(cond) .. ")" .. tail
end

-- whether the index's own sort compiles (remembered with its definition)
local function index_sort_ok(ix)
  local def = ix.def
  if def.index_sort_ok == nil then
    local c = query.ctx(def, ix.p)
    c.score = "0"
    def.index_sort_ok = sort.compile(c, def.index_sort) ~= nil
  end
  return def.index_sort_ok
end

local function do_search(self, req)
  local ok, m, c = base.known(req, SEARCH_FIELDS, "search")
  if not ok then return nil, m, c end
  if bad_timeout(req) then return invalid(TIMEOUT_RULE) end
  local t, ix, code = self:_search_index(req.table, req.index)
  if not t then return nil, ix, code end
  self:_search_catch_up()
  arm(self, req)
  local cols, index_only = columns(ix, req.columns_to_get)
  if not cols then return nil, index_only, "OTSParameterInvalid" end
  local offset, limit = req.offset or 0, req.limit
  if not is_count(offset, 0, 2^31) then return invalid("offset must be an integer >= 0") end
  local max = index_only and L.limit_index_only or L.limit
  if limit == nil then limit = math.min(L.default_limit, max) end
  if not is_count(limit, 0, 2^31) then return invalid("limit must be an integer >= 0") end
  if limit > max then
    return invalid(("limit (%d) is larger than %d (%d when every column returned is stored in the index)")
      :format(limit, max, L.limit_index_only))
  end
  if offset + limit > L.offset_limit then
    return invalid(("offset + limit (%d) is larger than %d: page with next_token"):format(offset + limit, L.offset_limit))
  end
  if req.get_total_count ~= nil and type(req.get_total_count) ~= "boolean" then
    return invalid("get_total_count must be a boolean")
  end
  local scope = ix.scope -- (what a token is made for)
  if not scope then scope = t.name .. "/" .. ix.name; ix.scope = scope end
  local sorters, after = req.sort, nil
  if req.token ~= nil then
    if offset ~= 0 then return invalid("offset must be 0 when a token is given") end
    local p, pm, pc = sort.open(self:_search_secret() or "", scope, req.token)
    if not p or p.kind ~= "search" then return nil, pm or "invalid token", pc or "OTSParameterInvalid" end
    if sorters ~= nil and not same(sorters, p.sort or {}) then -- (the token carries the sort: never another)
      return invalid("sort differs from the sort the token was issued with (a token carries its sort: leave sort out)")
    end
    sorters, after = p.sort or {}, p.after
  elseif sorters == nil then
    sorters = ix.def.index_sort
    -- a functions_score query orders by its score unless a sort is given
    if type(req.query) == "table" and (req.query.functions_score or req.query.knn_vector) then
      sorters = { { score_sort = { order = "DESC" } } }
    end
  end
  local ctx = query.ctx(ix.def, ix.p)
  ctx.h = self.h -- a knn_vector query reads the rows' vectors
  ctx.read_vector = vector_reader(self, t)
  if type(sorters) == "table" then
    for _, so in ipairs(sorters) do
      if type(so) == "table" and so.score_sort then ctx.want_score = true end
    end
  end
  ctx.hits = true -- the query's inner_hits are returned (otskit.store.search.inner), no other query's
  local cond, score, c2, from, fast = where(self, ctx, t, ix, req)
  ctx.hits = nil
  if not cond then return nil, score, c2 end
  ctx.score = score
  -- (no page, no token and the index's own sort, which compiles: the
  -- page's sort keys are never used)
  local keys, used_score
  if limit == 0 and not after and sorters == ix.def.index_sort and index_sort_ok(ix) then
    keys, used_score = {}, false
  elseif type(sorters) == "table" and next(sorters) == nil then -- (sort.compile's keys of no sorter)
    keys, used_score = PK_KEYS, false
  else
    keys, used_score = sort.compile(ctx, sorters)
    if not keys then return nil, used_score, "OTSParameterInvalid" end
  end
  local extra, em, ec = inner.plan(ix.def, req) -- highlight, inner_hits
  if extra == nil then return nil, em, ec end
  local add_extra = extra and function(pks, hits)
    return inner.hits({ h = self.h, p = ix.p, def = ix.def, read_vector = ctx.read_vector, read = function(pk, names)
      local set = {}
      for _, n in ipairs(names) do set[n] = true end
      return row_of(self, t, pk, { mode = "RETURN_SPECIFIED", set = set }).columns
    end }, extra, pks, hits)
  end
  local ckey
  if req.collapse ~= nil then -- one row per value: offset/limit paging only
    if after then return invalid("collapse pages with offset and limit, not with a token") end
    local cm, cc
    ckey, cm, cc = analytics.collapse(ctx, req.collapse)
    if not ckey then return nil, cm, cc end
  end
  -- a bool whose driving leaf is a value index and whose other clauses
  -- doc values answer (otskit.store.search.docvalues): the driver's
  -- entries, each document tested in C, none of their rows read
  if ctx.from and ctx.from.q and self._dv_own and ix.ttl == -1 and not extra and ckey == nil
    and req.aggs == nil and req.group_bys == nil and not used_score and #keys == 1 and keys[1][1] == "d.pk"
    and not (type(req.routing_values) == "table" and #req.routing_values > 0) then
    local plan = docvalues.plan(ctx, req.query)
    local f = plan and docvalues.filter(self, ix, plan)
    if f then
      from = ("(SELECT doc AS id, pk FROM %s WHERE %s)"):format(ctx.from.tbl, ctx.from.cond)
      fast = "otskit_dv(" .. ctx:bind(f) .. ", d.id)"
    end
  end
  -- a query that is one value index's range (fast == "(1)": no other
  -- clause, no TTL, no routing): the analytics may read that index alone
  local leaf = fast == "(1)" and ctx.from or nil
  -- without columns, the rows of keys a statement selects first are built
  -- in one C call (docs.keys), none read
  local aggs, gbs, c3
  if req.aggs ~= nil or req.group_bys ~= nil then
    local keys_of = cols.mode == "RETURN_NONE" and function(text, max, desc)
      if desc then return (docs.top_keys(self.h, text, ctx.binds, nparams(text), max, key_types(t), key_names(t))) end
      return (docs.keys(self.h, text, ctx.binds, nparams(text), max, 0, false, key_types(t), nil, key_names(t)))
    end or nil
    aggs, gbs, c3 = analytics.run(self, t, ix, ctx, cond, req, function(k) return row_of(self, t, k, cols) end, leaf,
      keys_of)
    if aggs == nil and gbs then return nil, gbs, c3 end
  end
  local h = self.h
  local res = { total_count = -1, is_all_succeeded = true, rows = {}, aggs = aggs or nil, group_bys = gbs }
  local pdoc = ix.pdoc
  if not pdoc then pdoc = ix.p .. "doc"; ix.pdoc = pdoc end
  -- the count: on its own when the matches are one value index's range
  -- (the count then reads that index alone); else counted by the page's
  -- own statement, which visits every match anyway (to test the other
  -- clauses on each)
  local one_leaf = fast == "(1)" and from ~= pdoc
  local count_apart = req.get_total_count and (one_leaf or after or ckey or limit == 0)
  -- (a one-leaf search's count waits for its page: a page that ends
  -- before offset + limit + 1 rows saw every match, and needs no count)
  local count_later = count_apart and one_leaf and not after and not ckey and limit > 0
  local count_text = count_apart and text_of(COUNT_TEXT, from, fast, "", "")
  if count_apart and not count_later then -- every match, also those before a token's page
    res.total_count = docs.run(h, count_text, ctx.binds, nparams(count_text))[1][1]
  end
  if after then
    if #after ~= #keys then return invalid("invalid token: it was not issued by this index, or it was altered") end
    local a = sort.after(ctx, keys, after)
    cond, fast = cond .. " AND " .. a, fast .. " AND " .. a
  end
  if limit == 0 then return res end
  if ckey then -- the first row of each collapse value, in the search's order
    local text = ("SELECT d.pk, %s, %s FROM %sdoc d WHERE %s %s"):format(ckey, sort.select(keys), ix.p, cond,
      sort.order_by(keys))
    local seen, kept, null_seen = {}, {}, false
    for _, r in ipairs(docs.run(h, text, ctx.binds, nparams(text))) do
      local v = r[2]
      local fresh
      if v == nil then fresh = not null_seen; null_seen = true else fresh = not seen[v]; seen[v] = true end
      if fresh then kept[#kept + 1] = r[1] end
    end
    local pks = {}
    for i = offset + 1, math.min(#kept, offset + limit) do
      res.rows[#res.rows + 1] = row_of(self, t, kept[i], cols)
      pks[#pks + 1] = kept[i]
    end
    local xh, xm, xc
    if extra then xh, xm, xc = add_extra(pks, nil) end
    if extra and not xh then return nil, xm, xc end
    res.search_hits = xh
    return res
  end
  -- The binding stops after the page (see otskit.core.sql.rows); LIMIT in
  -- the text as well when the matches come from a value index and are
  -- not counted here: SQLite then sorts only the best offset+limit+1 (no
  -- LIMIT over the document table: measured slower there)
  local pk_only = #keys == 1 and keys[1][1] == "d.pk" -- the page's key is its first column
  local order = pk_only and PK_ORDER[keys[1][2] and true or false] or sort.order_by(keys)
  if from ~= pdoc and not (req.get_total_count and not count_apart) then
    order = order .. " LIMIT " .. ctx:bind(offset + limit + 1)
  end
  local text = text_of(PAGE_TEXT, pk_only and "" or ", " .. sort.select(keys), from, fast, order)
  local count_here = req.get_total_count and not count_apart
  if pk_only and not used_score and not extra and cols.mode == "RETURN_NONE" then
    -- the page's keys decoded in C, no row read: the rows built at once
    local page, n, total, mark = docs.keys(h, text, ctx.binds, nparams(text), limit + 1, offset, count_here,
      key_types(t), limit, key_names(t))
    if count_here then res.total_count = total
    elseif count_later then -- (a page short of limit + 1 rows: the statement ran to its end)
      res.total_count = n > limit and docs.run(h, count_text, ctx.binds, nparams(count_text))[1][1] or total
    end
    if n > limit then page[n] = nil end
    res.rows = page
    if n > limit then
      res.next_token = sort.token(self:_search_secret() or "", scope, { kind = "search", sort = sorters,
        after = { { "b", mark } } }, sorters == ix.def.index_sort)
    end
    return res
  end
  local rows, total = docs.run(h, text, ctx.binds, nparams(text), limit + 1, offset, count_here)
  if count_here then res.total_count = total
  elseif count_later then -- (as above; an empty page past offset: the skipped rows are not known)
    if #rows > limit or (#rows == 0 and offset > 0) then
      res.total_count = docs.run(h, count_text, ctx.binds, nparams(count_text))[1][1]
    else
      res.total_count = offset + #rows
    end
  end
  local n = math.min(#rows, limit)
  local hits = used_score and {} or nil
  for i = 1, n do
    res.rows[i] = row_of(self, t, rows[i][1], cols)
    if hits then
      -- the score is the key of the first score_sort
      for j, k in ipairs(keys) do
        if k.score then hits[i] = { score = tonumber(rows[i][2 + 2 * j - 1]) or 0 }; break end
      end
    end
  end
  if extra then
    local pks = {}
    for i = 1, n do pks[i] = rows[i][1] end
    local xm, xc
    hits, xm, xc = add_extra(pks, hits)
    if not hits then return nil, xm, xc end
  end
  if hits then res.search_hits = hits end
  if #rows > limit then
    res.next_token = sort.token(self:_search_secret() or "", scope, { kind = "search", sort = sorters,
      after = pk_only and { { "b", rows[limit][1] } } or sort.key_values(rows[limit], 2, #keys) })
  end
  return res
end

--- db:search{ table, index, query, sort, offset = 0, limit = 10, token,
-- get_total_count, columns_to_get = { return_type, column_names },
-- routing_values, highlight, timeout_ms } -> { rows = { {primary_key, columns} }, total_count
-- (-1 unless get_total_count), next_token (while more rows match),
-- search_hits (with a score_sort, a highlight or a nested query's
-- inner_hits: one per row, { score, highlight_fields, inner_hits }: see
-- otskit.store.search.inner), is_all_succeeded }
-- Order: sort, else the index sort (primary key ascending). limit <= 100
-- (1000 when every column returned is stored in the index), offset +
-- limit <= 100000; next_token pages past that (offset 0 with a token;
-- the token carries the sort).
-- A query within the nesting limit may still be more than SQLite parses
-- (a deep bool of should/must_not clauses): that is the query's fault.
local TOO_DEEP = { ["parser stack overflow"] = true, ["Expression tree is too large"] = true }

local function refuse_too_deep(r, msg, code, ...)
  if r == nil and code == "OTSInternalServerError" and type(msg) == "string" then
    for k in pairs(TOO_DEEP) do
      if msg:find(k, 1, true) then
        return nil, "the query is nested too deeply for the index (" .. k .. ")", "OTSParameterInvalid"
      end
    end
  end
  return r, msg, code, ...
end

local function search_in_txn(self, req) return timed(do_search, self, req) end

function DB:search(req)
  check_req(req, "search")
  -- (doc values answer only in a read transaction of the search's own)
  local h = self.h
  self._dv_own = h ~= nil and self.sdelay == nil and not self._open and not h:in_txn()
  local r1, r2, r3, r4 = refuse_too_deep(self:_txn(self.sdelay ~= nil, search_in_txn, req))
  self._dv_own = false
  return r1, r2, r3, r4
end

-- for otskit.store.search.scan (db:compute_splits, db:parallel_scan):
-- the parts a parallel scan shares with a search
run.nparams, run.columns, run.row_of, run.key_types, run.key_rows = nparams, columns, row_of, key_types, key_rows
run.is_count, run.bad_timeout, run.TIMEOUT_RULE, run.arm, run.timed = is_count, bad_timeout, TIMEOUT_RULE, arm, timed
run.where = where

return run
