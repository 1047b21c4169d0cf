--- otskit.store.search.composite -- group_by_composite: the combinations
-- of its sources' keys (field, histogram, date_histogram), in ascending
-- key order, `size` per page (default 10, <= 2000), one SQL GROUP BY over
-- the sources' value tables; next_token (signed, as search tokens) carries
-- the last combination of a page. Documents lacking a source's field are
-- in no combination.
local base = require "otskit.store.base"
local agg = require "otskit.store.search.agg"
local dates = require "otskit.store.search.dates"

local bad = agg.bad
-- a source's type -> the keys it takes (another is refused, never ignored)
local SOURCES = { field = base.set{ "name", "type", "field_name" },
  histogram = base.set{ "name", "type", "field_name", "interval", "offset" },
  date_histogram = base.set{ "name", "type", "field_name", "interval", "offset", "time_zone" } }
local NUMERIC = { LONG = true, DOUBLE = true, DATE = true }

local function num_string(v)
  if type(v) == "string" then return v end -- LuaJIT: an int64 beyond 2^53
  if math.type and math.type(v) == "integer" then return ("%d"):format(v) end
  if v == math.floor(v) and v > -2^53 and v < 2^53 then return ("%.0f"):format(v) end
  for p = 1, 17 do
    local t = ("%." .. p .. "g"):format(v)
    if tonumber(t) == v then return t end
  end
  return ("%.17g"):format(v)
end

return function(gb, K, children)
  local L = gb.LIMITS
  return function(env, g, scope, depth, what)
    local size = g.size or L.default_size
    if type(size) ~= "number" or size ~= math.floor(size) or size < 1 or size > L.size then
      return bad(what .. ": size must be an integer in 1.." .. L.size)
    end
    local src = g.sources
    if type(src) ~= "table" or #src == 0 or #src > L.composite_sources then
      return bad(what .. ": sources must list 1.." .. L.composite_sources .. " group-bys")
    end
    local lok, lm, lc = base.list(src, what .. ": sources")
    if not lok then return nil, lm, lc end
    local ctx = env.ctx
    local joins, keys, names, fmt, conds, kwkey = {}, {}, {}, {}, {}, {}
    -- a key's SQL literal (LuaJIT: an int64 beyond 2^53 is decimal text)
    local function lit(j, v)
      if type(v) == "string" and not kwkey[j] then
        return "CAST(" .. ctx:bind(v) .. " AS INTEGER)"
      end
      return ctx:bind(v)
    end
    local empty = false
    -- when every source's field has a value column (one value per
    -- document), the keys are computed from the columns, no join
    local bycol = true
    for _, s in ipairs(src) do
      local d = type(s) == "table" and type(s.field_name) == "string" and ctx.def.byname[s.field_name]
      if not (d and d.col and not d.parent) then bycol = false end
    end
    local notnull = {}
    for i, s in ipairs(src) do
      if type(s) ~= "table" or not SOURCES[s.type] then
        return bad(what .. ": each source is a field, histogram or date_histogram group-by")
      end
      local ok, km, kc = base.known(s, SOURCES[s.type], what .. ": a " .. s.type .. " source")
      if not ok then return nil, km, kc end
      if type(s.name) ~= "string" or s.name == "" then return bad(what .. ": each source needs a name") end
      names[i] = s.name
      local d, m, c = agg.field(env, s.field_name, what .. ".sources", s.type ~= "field" and NUMERIC or nil)
      if d == nil then return nil, m, c end
      if not d then empty = true; d = { id = -1, type = "KEYWORD" } end
      kwkey[i] = d.type == "KEYWORD" -- (lit: a KEYWORD key is text)
      local a = "c" .. i
      local x = a .. ".v"
      if bycol then
        joins[i], x = "", "d." .. d.col
        notnull[i] = x .. " IS NOT NULL"
      else
        joins[i] = ("JOIN %s %s ON %s.doc = d.id AND %s.f = %s"):format(d.id == -1 and ctx.p .. "kw" or agg.vt(env, d),
          a, a, a, ctx:bind(d.id))
      end
      if s.type == "field" then
        keys[i] = x
        fmt[i] = function(v)
          if d.type == "KEYWORD" then return v end
          if d.type == "BOOLEAN" then return v == 1 and "true" or "false" end
          return num_string(v)
        end
      elseif s.type == "histogram" then
        local iv, off = gb.interval_of(s)
        if iv == nil then return bad(what .. ": a histogram source needs interval > 0 and a numeric offset") end
        if d.type ~= "DOUBLE" and gb.integral(iv) and gb.integral(off) then
          -- an int64 histogram: the key itself in SQLite's integers (exact
          -- near +-2^63 too), ordered as the bucket numbers are
          local bi, bo = gb.bind_int(ctx, iv), gb.bind_int(ctx, off)
          keys[i] = ("floor_div(%s, %s, %s) * %s + %s"):format(x, bi, bo, bi, bo)
          fmt[i] = num_string
        else
          iv, off = tonumber(iv), tonumber(off)
          keys[i] = ("floor_div((%s) - %s, %s)"):format(x, ctx:bind(off), ctx:bind(iv))
          fmt[i] = function(b) return num_string(b * iv + off) end
        end
      else
        if d.type ~= "DATE" and d.id ~= -1 then return bad(what .. ": a date_histogram source needs a DATE field") end
        local iv, off, tz = dates.params(s, what)
        if not iv then return nil, off, tz end
        keys[i] = dates.bucket_sql(ctx, x, iv, off, tz)
        fmt[i] = function(b) return num_string(dates.bucket_start(b, iv, off, tz)) end
      end
      conds[i] = keys[i]
    end
    local res = { items = {}, source_names = names }
    if empty then return res end
    local after
    if g.next_token ~= nil and g.next_token ~= "" then
      local p, m, c = env.open(g.next_token)
      if not p or p.kind ~= "composite" or type(p.extra) ~= "table" or type(p.extra.keys) ~= "table"
        or #p.extra.keys ~= #src then
        return nil, m or "invalid next_token", c or "OTSParameterInvalid"
      end
      after = p.extra.keys
    end
    local cols, ks = {}, {}
    for i, k in ipairs(keys) do cols[i] = k .. " AS k" .. i; ks[i] = "k" .. i end
    local inner = ("SELECT %s, %s AS n FROM %sdoc d %s WHERE %s GROUP BY %s"):format(
      table.concat(cols, ", "), bycol and "count(*)" or "count(DISTINCT d.id)", ctx.p, table.concat(joins, " "),
      bycol and scope .. " AND " .. table.concat(notnull, " AND ") or scope, table.concat(ks, ", "))
    local where = ""
    if after then
      local b = {}
      for i, v in ipairs(after) do b[i] = lit(i, v) end
      where = ("WHERE (%s) > (%s)"):format(table.concat(ks, ", "), table.concat(b, ", "))
    end
    local rows = agg.query(env, ("SELECT * FROM (%s) %s ORDER BY %s LIMIT %s"):format(inner, where,
      table.concat(ks, ", "), ctx:bind(size + 1)))
    for i = 1, math.min(#rows, size) do
      local r = rows[i]
      local it = { keys = {}, row_count = r[#src + 1] }
      local bc = {}
      for j = 1, #src do
        it.keys[j] = fmt[j](r[j])
        bc[j] = ("%s = %s"):format(keys[j], lit(j, r[j]))
      end
      local s = bycol and ("%s AND %s"):format(scope, table.concat(bc, " AND "))
        or ("%s AND d.id IN (SELECT d.id FROM %sdoc d %s WHERE %s)"):format(scope, ctx.p, table.concat(joins, " "),
          table.concat(bc, " AND "))
      local ok, m, c = children(env, g, it, s, depth, what)
      if not ok then return nil, m, c end
      res.items[i] = it
    end
    if #rows > size then
      local last = {}
      for j = 1, #src do last[j] = rows[size][j] end
      res.next_token = env.sign({ kind = "composite", after = {}, extra = { keys = last } })
    end
    return res
  end
end
