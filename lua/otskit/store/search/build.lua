--- otskit.store.search.build -- a new search index built from the rows
-- already in its table: in C (otskit.core.sql.build, csrc/core/sbuild.c)
-- for the common index, every other one in Lua, row by row through
-- otskit.store.search.docs; either way into a build's sink, whose
-- docs.finish copies the value columns into the value indexes, sorted.
local docs = require "otskit.store.search.docs"
local sql = require("otskit.core").sql

local build = {}

local C_KINDS = { LONG = true, DOUBLE = true, BOOLEAN = true, KEYWORD = true, TEXT = true, GEO_POINT = true }
local C_ANALYZERS = { single_word = true, max_word = true, min_word = true }

--- build.plan(sink, def, t) -> the plan of otskit.core.sql.build (a
-- build in C: csrc/core/sbuild.h) for a build's sink, or nil when the
-- index has what only docs.lua indexes (NESTED, VECTOR and DATE fields,
-- arrays, other analyzers, routing, a field named as a primary key
-- column). build.C = false turns it off (the specs compare both).
function build.plan(sink, def, t)
  if build.C == false or not sink.build or not def.keyed or not def.cols or #def.routing > 0 then return nil end
  local pk = {}
  for _, c in ipairs(t.pk) do pk[c.name] = true end
  local fts_at = {}
  for i, c in ipairs(def.fts_cols or {}) do fts_at[c] = i end
  local fields, colat = {}, {}
  for i, d in ipairs(def.colfields) do colat[d] = i end
  for _, d in ipairs(def.fields) do
    if d.parent or not C_KINDS[d.type] or d.array or pk[d.name] then return nil end
    if d.type == "TEXT" and not C_ANALYZERS[d.analyzer] then return nil end
    if d.index ~= false then
      local p = d.params or {}
      fields[#fields + 1] = { name = d.name, id = d.id, kind = d.type, col = colat[d] or 0,
        fts = d.type == "TEXT" and fts_at["c" .. d.id] or 0, lower = not p.case_sensitive, delimit = p.delimit_word == true }
    end
  end
  local p = sink.p
  local names, q = {}, {}
  for i, d in ipairs(def.colfields) do names[i] = ", " .. d.col; q[i] = ", ?" .. (i + 3) end
  local fq = {}
  for i = 1, #(def.fts_cols or {}) do fq[i] = "?" .. (i + 1) end
  return { fields = fields, doc_id = sink.doc_id, gpt_id = sink.gpt_id, nfts = #(def.fts_cols or {}),
    doc = ("INSERT INTO %sdoc (id, pk, ts%s) VALUES (?1, ?2, ?3%s)"):format(p, table.concat(names), table.concat(q)),
    has = ("INSERT OR IGNORE INTO %shas (f, doc) VALUES (?1, ?2)"):format(p),
    gpt = ("INSERT INTO %sgpt (id, doc, f, lat, lon) VALUES (?1, ?2, ?3, ?4, ?5)"):format(p),
    geo = ("INSERT INTO %sgeo VALUES (?1, ?2, ?2, ?3, ?3)"):format(p),
    fts = def.fts_cols and ("INSERT INTO %sfts (rowid, %s) VALUES (?1, %s)"):format(p, table.concat(def.fts_cols, ", "),
      table.concat(fq, ", ")) or nil }
end

--- build.run(db, t, ix, reindex, now_ms) -> true | nil, msg, code:
-- indexes every row of table t into the new (empty) index ix, then
-- creates its secondary B-trees; reindex(db, t, ix, key, sink, blob)
-- indexes one row in Lua; now_ms(db): the clock (the TTL's cut)
function build.run(self, t, ix, reindex, now_ms)
  local h, def = self.h, ix.def
  local sink = docs.sink(h, ix.p, def, true)
  local plan = build.plan(sink, def, t)
  if plan then -- the common index: read, decoded and written in C
    plan.lo, plan.maxv = t.ttl_ms and now_ms(self) - t.ttl_ms or nil, t.maxv
    local n, bm, bc = sql.build(h, t.kv, plan)
    if not n then return nil, bm, bc end
  else
    local cur, cm, cc = h:scan(t.kv)
    if not cur then return nil, cm, cc end
    local ok, fm, fc = pcall(function() -- the rows as the cursor reads them
      while true do
        local ks, vs, nk = cur:fetch(512)
        if ks == nil then return vs, nk end
        if nk == 0 then return end
        for i = 1, nk do reindex(self, t, ix, ks[i], sink, vs[i]) end
      end
    end)
    cur:close()
    if not ok then error(fm, 0) end
    if fm then return nil, fm, fc end
  end
  docs.finish(sink)
  return sql.exec(h, docs.ddl_indexes(ix.p)) -- over the rows now there
end

return build
