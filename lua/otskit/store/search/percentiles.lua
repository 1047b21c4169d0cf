--- otskit.store.search.percentiles -- the percentiles aggregation of
-- otskit.store.search.agg: { field_name (LONG, DOUBLE or DATE), missing,
-- percentiles = { p in 0..100, ... } (default 1 5 25 50 75 95 99, at most
-- agg.LIMITS.percentiles) } -> { items = { {key = p, value} } }, each
-- value the linear interpolation between the closest ranks of the sorted
-- values (rank p / 100 * (n - 1) + 1), absent when no document has one.
-- Without a missing value SQL picks the values at the ranks asked (a
-- window over the value table, or over the value column of the scope's
-- documents); with one, every value is read and the documents without a
-- value add it. Called by agg.lua with its module, its table of
-- aggregation kinds, its count of the scope's documents and its set of
-- numeric field types.
local base = require "otskit.store.base"

return function(agg, RUN, ndocs, NUMERIC)
  local L, bad, values_of = agg.LIMITS, agg.bad, agg.values_of

  RUN.percentiles = function(env, a, scope, what)
    local ps = a.percentiles
    if ps == nil then ps = { 1, 5, 25, 50, 75, 95, 99 } end
    if type(ps) ~= "table" or #ps == 0 or #ps > L.percentiles then
      return bad(what .. ": percentiles must be a list of 1.." .. L.percentiles .. " numbers")
    end
    local lok, lm, lc = base.list(ps, what .. ": percentiles")
    if not lok then return nil, lm, lc end
    for _, p in ipairs(ps) do
      if type(p) ~= "number" or p ~= p or p < 0 or p > 100 then return bad(what .. ": each percentile is in 0..100") end
    end
    local d, m, c = agg.field(env, a.field_name, what, NUMERIC)
    if d == nil then return nil, m, c end
    local items = {}
    if not d then
      for i, p in ipairs(ps) do items[i] = { key = p + 0.0 } end
      return { items = items }
    end
    local miss, m2, c2 = agg.missing(d, a.missing, what)
    if m2 then return nil, m2, c2 end
    if miss == nil then -- SQL picks the values at the ranks asked
      -- the values: the value table's (ordered) over every document or the
      -- leaf's own field; else the value column of the scope's documents
      local src = (agg.own(env, d, scope) or not d.col) and ("SELECT n.v AS v " .. values_of(env, d, scope))
        or ("SELECT d.%s AS v FROM %sdoc d WHERE %s AND d.%s IS NOT NULL"):format(d.col, env.ctx.p, scope, d.col)
      local n = agg.query(env, ("SELECT count(*) FROM (%s)"):format(src))[1][1]
      local want, set = {}, {}
      for _, p in ipairs(ps) do
        local lo = math.floor(p / 100 * (n - 1) + 1)
        for _, r in ipairs({ lo, math.min(lo + 1, n) }) do
          if r >= 1 and not set[r] then set[r] = true; want[#want + 1] = ("%d"):format(r) end
        end
      end
      local at = {}
      if n > 0 then
        for _, r in ipairs(agg.query(env, ("SELECT r, v FROM (SELECT v, row_number() OVER (ORDER BY v) AS r FROM (%s)) WHERE r IN (%s)")
          :format(src, table.concat(want, ", ")))) do at[r[1]] = r[2] end
      end
      for i, p in ipairs(ps) do
        local v
        if n > 0 then
          local r = p / 100 * (n - 1) + 1
          local lo = math.floor(r)
          local hi = math.min(lo + 1, n)
          local f = r - lo
          v = tonumber(at[lo]) + 0.0
          if f > 0 then v = v + (tonumber(at[hi]) - v) * f end
        end
        items[i] = { key = p + 0.0, value = v }
      end
      return { items = items }
    end
    local vals = agg.query(env, ("SELECT n.v, n.doc %s ORDER BY n.v"):format(values_of(env, d, scope)))
    if miss ~= nil then
      local having = {}
      for _, r in ipairs(vals) do having[r[2]] = true end
      local k = ndocs(env, scope)
      for _ in pairs(having) do k = k - 1 end
      if k > 0 then
        for _ = 1, k do vals[#vals + 1] = { miss } end
        table.sort(vals, function(x, y) return x[1] < y[1] end)
      end
    end
    local n = #vals
    for i, p in ipairs(ps) do
      local v
      if n > 0 then -- linear interpolation between the closest ranks
        local r = p / 100 * (n - 1) + 1
        local lo = math.floor(r)
        local hi = math.min(lo + 1, n)
        local f = r - lo
        v = tonumber(vals[lo][1]) + 0.0
        if f > 0 then v = v + (tonumber(vals[hi][1]) - v) * f end
      end
      items[i] = { key = p + 0.0, value = v }
    end
    return { items = items }
  end
end
