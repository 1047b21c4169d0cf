--- otskit.store.search.docvalues -- a bool query's non-driving clauses
-- answered from doc values: each top-level single-valued LONG, DOUBLE,
-- DATE, BOOLEAN or KEYWORD field's value column of p.."doc" held in memory
-- as an array by document id (otskit.core.dv: int64, double, or a
-- KEYWORD's ordinal in its sorted distinct values, plus a presence bit),
-- so the search streams its driving clause's value index and tests each
-- document in C (otskit_dv(filter, d.id)) instead of reading the
-- document's row: the same documents, in the same order, as the SQL path
-- (docval.h: SQLite's comparison rules, a document without a value, NULL
-- bounds). Anything else, and any value the arrays cannot hold exactly,
-- keeps to SQL.
--
-- Validity: the arrays of an index belong to one db connection and carry
-- the stamp of the database content they were read from (dv.stamp:
-- SQLite's data version of the main database, changed by every commit of
-- any connection or process, this one's too, with this connection's total
-- changes, changed by each of its own writes, committed or not). A search
-- uses them only when the stamp it reads inside its own read transaction
-- (begun by the search: never inside another transaction, and not with a
-- search delay, whose catch-up writes) equals theirs; else they are
-- dropped and the search takes the SQL path. They are read again once
-- dv.QUIET searches in a row have seen the same stamp (a write-heavy mix
-- never pays for a rebuild it would throw away at the next write).
local dvc = require("otskit.core").dv
local query = require "otskit.store.search.query"
local docs = require "otskit.store.search.docs"

local dv = {}

--- dv.mode: "auto" (the rule above), "off" (never: the SQL path) or
-- "force" (read the arrays whenever a search could use them and they are
-- not current): an internal switch, for specs and benches.
dv.mode = "auto"
--- dv.QUIET: searches in a row on one stamp before the arrays are read
dv.QUIET = 3
--- dv.stats: counters (hits: searches answered with doc values; builds:
-- columns read; ms: time reading them; bytes: memory they held when read)
dv.stats = { hits = 0, builds = 0, ms = 0, bytes = 0, stale = 0 }

local KIND = { LONG = "i64", DATE = "i64", BOOLEAN = "i64", DOUBLE = "f64", KEYWORD = "ord" }

local function list(v)
  if v == nil then return {} end
  if type(v) ~= "table" then return nil end
  if v[1] == nil and next(v) ~= nil then return { v } end
  return v
end

-- one clause q (not the driver) -> { d, op, neg, ... } | nil
local function leaf(def, q, neg)
  if type(q) ~= "table" then return nil end
  local kind, b = next(q)
  if kind == nil or next(q, kind) ~= nil or type(b) ~= "table" then return nil end
  if kind ~= "term" and kind ~= "terms" and kind ~= "range" and kind ~= "exists" then return nil end
  local d = type(b.field_name) == "string" and def.byname[b.field_name] or nil
  if not (d and d.col and not d.parent and KIND[d.type]) then return nil end
  local cv = query.convert
  if kind == "exists" then return { d = d, op = "exists", neg = neg } end
  if kind == "term" then
    local v = cv(d, b.term, "term")
    if v == nil then return nil end
    return { d = d, op = "range", neg = neg, lo = v, lo_in = true, hi = v, hi_in = true }
  end
  if kind == "terms" then
    if type(b.terms) ~= "table" or #b.terms == 0 then return nil end
    local vals = {}
    for i, t in ipairs(b.terms) do
      local v = cv(d, t, "terms")
      if v == nil then return nil end
      vals[i] = v
    end
    return { d = d, op = "in", neg = neg, vals = vals }
  end
  local c = { d = d, op = "range", neg = neg }
  if b.from ~= nil then
    c.lo = cv(d, b.from, "range")
    if c.lo == nil then return nil end
    c.lo_in = b.include_lower and true or false
  end
  if b.to ~= nil then
    c.hi = cv(d, b.to, "range")
    if c.hi == nil then return nil end
    c.hi_in = b.include_upper and true or false
  end
  if c.lo == nil and c.hi == nil then c.op = "exists" end -- (the SQL path's "1": the field has a value)
  return c
end

--- dv.plan(ctx, q) -> the clauses doc values would test | nil: q (the
-- search's query, compiled into ctx) is a bool of must / filter /
-- must_not clauses (no should), one of which drove the scan (ctx.from.q)
-- and every other a term, terms, range or exists on a field with a value
-- column.
function dv.plan(ctx, q)
  local from = ctx.from
  if not (from and from.q) or type(q) ~= "table" then return nil end
  local b = q.bool
  if type(b) ~= "table" or next(q, "bool") ~= nil then return nil end
  local should = list(b.should)
  if not should or #should > 0 then return nil end
  if b.minimum_should_match ~= nil and b.minimum_should_match ~= 0 then return nil end
  local out, driver = {}, false
  for _, k in ipairs({ "must", "filter", "must_not" }) do
    local l = list(b[k])
    if not l then return nil end
    for _, sub in ipairs(l) do
      if sub == from.q and k ~= "must_not" and not driver then driver = true
      else
        local c = leaf(ctx.def, sub, k == "must_not")
        if not c then return nil end
        out[#out + 1] = c
      end
    end
  end
  if not driver or #out == 0 then return nil end
  return out
end

local function drop(c)
  for _, col in pairs(c.cols) do
    if col then col:free() end
  end
  c.cols, c.stamp = {}, nil
end

-- the doc values of the search's db for index ix (by its tables' prefix;
-- a definition read again is another index: what the old one held is
-- freed)
local function cache_of(self, ix)
  local all = self._dv
  if not all then
    all = {}
    self._dv = all
  end
  local c = all[ix.p]
  if c and c.def ~= ix.def then drop(c); c = nil end
  if not c then
    c = { cols = {}, quiet = 0, def = ix.def }
    all[ix.p] = c
  end
  return c
end

--- dv.drop(self): frees every array the db holds (db:close)
function dv.drop(self)
  for _, c in pairs(self._dv or {}) do drop(c) end
  self._dv = nil
end

--- dv.filter(self, ix, plan) -> a filter for otskit_dv (ctx keeps its
-- columns alive) | nil: the SQL path. Inside the search's own read
-- transaction.
function dv.filter(self, ix, plan)
  local mode = dv.mode
  if mode == "off" then return nil end
  local h = self.h
  local st = dvc.stamp(h)
  if not st then return nil end
  local c = cache_of(self, ix)
  if c.stamp ~= st then
    if c.stamp then dv.stats.stale = dv.stats.stale + 1 end
    drop(c)
    if c.seen == st then c.quiet = c.quiet + 1 else c.seen, c.quiet = st, 1 end
    if mode ~= "force" and c.quiet < dv.QUIET then return nil end
    c.stamp = st
  end
  local n
  local clauses = {}
  for i, p in ipairs(plan) do
    local d = p.d
    local col = c.cols[d.id]
    if col == nil then
      if not n then n = docs.run(h, ("SELECT coalesce(max(id), 0) + 1 FROM %sdoc"):format(ix.p))[1][1] end
      local t0 = os.clock()
      local text = ("SELECT id, %s FROM %sdoc WHERE %s IS NOT NULL%s"):format(d.col, ix.p, d.col,
        d.type == "KEYWORD" and (" ORDER BY " .. d.col) or "")
      local r, m, code = dvc.column(h, text, KIND[d.type], n)
      if r == nil and code then error(setmetatable({ msg = m, code = code }, docs.FAIL), 0) end
      col = r or false
      c.cols[d.id] = col
      dv.stats.builds = dv.stats.builds + 1
      dv.stats.ms = dv.stats.ms + (os.clock() - t0) * 1000
      if col then dv.stats.bytes = dv.stats.bytes + col:bytes() end
    end
    if not col then return nil end -- a value the arrays cannot hold: SQL
    local cl = { col, p.op, p.neg }
    if p.op == "range" then cl[4], cl[5], cl[6], cl[7] = p.lo, p.lo_in, p.hi, p.hi_in
    elseif p.op == "in" then cl[4] = p.vals end
    clauses[i] = cl
  end
  local f = dvc.filter(clauses)
  if f then dv.stats.hits = dv.stats.hits + 1 end
  return f, clauses
end

--- dv.range_counts(self, ix, d, rs) -> { count of range i } | nil (the
-- SQL path): a range group-by's buckets over every document (no query,
-- no TTL, no routing, no sub_aggs or sub_group_bys: otskit.store.search
-- .groupby), each range { from, to } the SQL path's v >= from AND v < to
-- (a bound left out: -inf / +inf), counted in one C pass over d's array. Inside
-- the search's own read transaction, under dv.filter's rule (stamp,
-- dv.QUIET, dv.mode).
local NUMERIC = { LONG = true, DOUBLE = true, DATE = true }
function dv.range_counts(self, ix, d, rs)
  if dv.mode == "off" or not (d.col and not d.parent and not d.array and NUMERIC[d.type]) then return nil end
  local plan = {}
  for i, r in ipairs(rs) do
    if r.from ~= r.from or r.to ~= r.to then return nil end -- (a NaN bound: SQL)
    -- (an absent bound is the SQL path's -inf / +inf: for an integer
    -- column no bound; for a double one those, as a value may be one)
    local lo, hi = r.from, r.to
    if d.type == "DOUBLE" then lo, hi = lo or -math.huge, hi or math.huge end
    plan[i] = { d = d, op = "range", neg = false, lo = lo, lo_in = true, hi = hi, hi_in = false }
  end
  local f = dv.filter(self, ix, plan)
  return f and dvc.count(f) or nil
end

--- dv.bytes(self) -> the memory the db's doc values hold
function dv.bytes(self)
  local n = 0
  for _, c in pairs(self._dv or {}) do
    for _, col in pairs(c.cols) do if col then n = n + col:bytes() end end
  end
  return n
end

return dv
