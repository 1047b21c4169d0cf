--- otskit.store.search.analytics -- what db:search adds to its rows:
-- aggregations (otskit.store.search.agg), group-bys (.groupby), both over
-- every document the query matches (not only the page), and collapse
-- (one row per distinct value of a field).
local base = require "otskit.store.base"
local agg = require "otskit.store.search.agg"
local gb = require "otskit.store.search.groupby"
local sort = require "otskit.store.search.sort"

local analytics = {}

local COLLAPSE_KEYS = base.set{ "field_name" }

--- analytics.run(self, t, ix, ctx, cond, req, row_of, leaf, keys_of) -> aggs, group_bys
-- (result lists, nil when not asked) | nil, msg, code. cond: the WHERE of
-- the query's matches on alias d (its binds in ctx). leaf: ctx.from when
-- the query is that one leaf on a single-valued top-level field (see
-- otskit.store.search.agg's env.leaf). keys_of(text, max) -> the result
-- rows of the keys in the first column of text's first max rows (nil
-- when rows carry columns: row_of each key then); keys_of(text, max, true):
-- text's rows are (key, v) in the order v DESC, key DESC, the result its
-- first max in the order v DESC, key ASC (docs.top_keys).
function analytics.run(self, t, ix, ctx, cond, req, row_of, leaf, keys_of)
  if req.aggs == nil and req.group_bys == nil then return nil end
  local env = { h = self.h, ix = ix, ctx = ctx, row_of = row_of, keys_of = keys_of }
  -- (doc values answer only in the search's own read transaction: run.lua)
  if self._dv_own then env.db = self end
  if req.group_bys ~= nil then -- (a composite group-by's tokens)
    env.sign = function(p) return sort.token(self:_search_secret() or "", t.name .. "/" .. ix.name, p) end
    env.open = function(tok) return sort.open(self:_search_secret() or "", t.name .. "/" .. ix.name, tok) end
  end
  if leaf and leaf.d and not leaf.d.array and not leaf.d.parent then
    -- (the search's own record of its leaf, ctx.from, with its scope)
    leaf.scope = cond
    env.leaf = leaf
  end
  local aggs, m, c
  if req.aggs ~= nil then
    aggs, m, c = agg.run_list(env, req.aggs, cond, "aggs")
    if not aggs then return nil, m, c end
  end
  local gbs
  if req.group_bys ~= nil then
    gbs, m, c = gb.run_list(env, req.group_bys, cond, 1, "group_bys")
    if not gbs then return nil, m, c end
  end
  return aggs or false, gbs
end

--- analytics.collapse(ctx, collapse) -> SQL of the collapse key of d | nil,
-- msg, code
function analytics.collapse(ctx, c)
  if type(c) ~= "table" or type(c.field_name) ~= "string" then
    return nil, "collapse must be { field_name }", "OTSParameterInvalid"
  end
  local ok, km, kc = base.known(c, COLLAPSE_KEYS, "collapse")
  if not ok then return nil, km, kc end
  local d = ctx.def.byname[c.field_name]
  if not d or d.parent then
    return nil, ("collapse: field [%s] is not a top-level field of the index"):format(c.field_name), "OTSParameterInvalid"
  end
  if not ({ LONG = true, DOUBLE = true, KEYWORD = true, DATE = true, BOOLEAN = true })[d.type] or not d.sort then
    return nil, ("collapse: field [%s] must be LONG, DOUBLE, KEYWORD, DATE or BOOLEAN with enable_sort_and_agg"):format(d.name),
      "OTSParameterInvalid"
  end
  return ("(SELECT min(v) FROM %s%s WHERE doc = d.id AND f = %s)"):format(ctx.p, d.type == "KEYWORD" and "kw" or "num",
    ctx:bind(d.id))
end

return analytics
