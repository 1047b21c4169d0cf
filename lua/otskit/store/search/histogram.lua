--- otskit.store.search.histogram -- the histogram and date_histogram
-- group-bys of otskit.store.search.groupby: buckets numbered in SQL (the C
-- functions floor_div and ym_index, csrc/core/bucket.c). A histogram over
-- a LONG or DATE field with an integral interval and offset numbers its
-- buckets, keys and bounds in SQLite's integers: keys exact int64 (the
-- service's GroupByHistogramItem keys are int64 variants), on LuaJIT a
-- typed INTEGER beyond 2^53.
local base = require "otskit.store.base"
local agg = require "otskit.store.search.agg"
local dates = require "otskit.store.search.dates"
local docs = require "otskit.store.search.docs"
local values = require "otskit.values"

local bad = agg.bad

-- h: groupby's children, sort_items, min_docs, ordered, NUMERIC and
-- FIELD_RANGE_KEYS; adds K.histogram, K.date_histogram and gb.hnum,
-- gb.integral, gb.bind_int (composite's histogram sources)
return function(gb, K, h)
  local L = gb.LIMITS
  local children, sort_items, min_docs, ordered = h.children, h.sort_items, h.min_docs, h.ordered
  local NUMERIC, FIELD_RANGE_KEYS = h.NUMERIC, h.FIELD_RANGE_KEYS

  -- histogram and date_histogram share this: keyexpr(x) -> SQL bucket number
  -- of value x; back(b) -> the bucket's key; nextb(b) -> the following bucket
  -- keysql(b): with it, an int64 histogram -- the SQL of bucket b's key: the
  -- keys and the empty buckets between (min_doc_count 0) come from SQLite's
  -- integers (exact also past 2^53 on LuaJIT), into it.key
  local function bucketed(env, g, scope, depth, what, d, miss, lo, hi, keyexpr, key_of, bucket_cond, mdc, keysql)
    local ctx = env.ctx
    local items = {}
    if d or miss ~= nil then
      local function bm() return type(miss) == "string" and "CAST(" .. ctx:bind(miss) .. " AS INTEGER)" or ctx:bind(miss) end
      local x = d and (miss ~= nil and ("coalesce(n.v, %s)"):format(bm()) or "n.v") or bm()
      local from = d and ("%sdoc d LEFT JOIN %s n ON n.doc = d.id AND n.f = %s"):format(ctx.p, agg.vt(env, d, "num"), ctx:bind(d.id))
        or ctx.p .. "doc d"
      local function bb(v) return type(v) == "string" and "CAST(" .. ctx:bind(v) .. " AS INTEGER)" or ctx:bind(v) end
      local conds = { scope, x .. " IS NOT NULL" }
      if lo ~= nil then conds[#conds + 1] = x .. " >= " .. bb(lo) end
      if hi ~= nil then conds[#conds + 1] = x .. " < " .. bb(hi) end
      local q
      -- over every document without a missing value the value table is
      -- read alone (narrower than p.."doc"); else the value column
      local cx = not (miss == nil and agg.own(env, d, scope)) and agg.col(env, d, miss)
      if cx then -- from the value column: one value per document
        x, from = cx, ctx.p .. "doc d"
        local vc = { scope, x .. " IS NOT NULL" }
        if lo ~= nil then vc[#vc + 1] = x .. " >= " .. bb(lo) end
        if hi ~= nil then vc[#vc + 1] = x .. " < " .. bb(hi) end
        q = ("SELECT %s AS b, count(*) AS c FROM %sdoc d WHERE %s GROUP BY b")
          :format(keyexpr(x), ctx.p, table.concat(vc, " AND "))
      elseif d and miss == nil then -- from the values alone
        local vc = {}
        if lo ~= nil then vc[#vc + 1] = " AND n.v >= " .. bb(lo) end
        if hi ~= nil then vc[#vc + 1] = " AND n.v < " .. bb(hi) end
        -- a single-valued field has one value per document: no DISTINCT
        q = ("SELECT b, %s AS c FROM (SELECT %s AS b, n.doc AS doc %s%s) GROUP BY b")
          :format(d.col and "count(*)" or "count(DISTINCT doc)", keyexpr("n.v"), agg.values_of(env, d, scope), table.concat(vc))
      else
        q = ("SELECT b, count(DISTINCT id) AS c FROM (SELECT %s AS b, d.id AS id FROM %s WHERE %s) GROUP BY b")
          :format(keyexpr(x), from, table.concat(conds, " AND "))
      end
      local rows = agg.query(env, keysql and ("SELECT b, c, %s FROM (%s) ORDER BY b"):format(keysql("b"), q)
        or q .. " ORDER BY b")
      if #rows > L.buckets then return bad(("%s: more than %d buckets"):format(what, L.buckets)) end
      for _, r in ipairs(rows) do
        if r[2] >= math.max(mdc, 1) then items[#items + 1] = { b = r[1], row_count = r[2], key = r[3] } end
      end
      if keysql and mdc == 0 and #rows > 0 then -- the empty buckets too, numbered by SQLite
        items = agg.query(env, ("WITH r(b, c) AS (%s), s(b) AS (SELECT min(b) FROM r UNION ALL SELECT b + 1 FROM s "
          .. "WHERE b < (SELECT max(b) FROM r) LIMIT %d) SELECT s.b, coalesce(r.c, 0), %s FROM s LEFT JOIN r ON r.b = s.b "
          .. "ORDER BY s.b"):format(q, L.buckets + 1, keysql("s.b")))
        if #items > L.buckets then return bad(("%s: more than %d buckets"):format(what, L.buckets)) end
        for i, r in ipairs(items) do items[i] = { b = r[1], row_count = r[2], key = r[3] } end
      elseif mdc == 0 and #rows > 0 then -- the empty buckets between the first and the last
        local all, i = {}, 1
        for b = rows[1][1], rows[#rows][1] do
          if i <= #rows and rows[i][1] == b then all[#all + 1] = { b = b, row_count = rows[i][2] }; i = i + 1
          else all[#all + 1] = { b = b, row_count = 0 } end
          if #all > L.buckets then return bad(("%s: more than %d buckets"):format(what, L.buckets)) end
        end
        items = all
      end
      for _, it in ipairs(items) do
        key_of(it)
        local s = scope .. " AND " .. bucket_cond(it.b, x, from)
        local ok, m, c = children(env, g, it, s, depth, what)
        if not ok then return nil, m, c end
      end
    end
    local r, m, c = sort_items(env, g, items, keysql and function(it) return ordered(it.b) end or function(it) return it.b end,
      { { group_key_sort = { order = "ASC" } } }, what)
    if not r then return nil, m, c end
    for _, it in ipairs(items) do it.b = nil end
    return { items = items }
  end

  -- a histogram's number: a number, or a typed INTEGER (store.integer; the
  -- wire's LuaJIT int64 beyond 2^53) -> a number, or (LuaJIT) an int64's
  -- decimal text | nil
  local function hnum(v)
    local x = docs.as_long(v)
    if type(v) == "table" then return x end
    return type(v) == "number" and v or nil
  end

  local function integral(v) return type(v) == "string" or (v == math.floor(v) and v >= -2 ^ 63 and v < 2 ^ 63) end

  -- the SQL of an integral histogram number (5.4: bound as an integer)
  local function bind_int(ctx, v)
    if type(v) == "string" then return "CAST(" .. ctx:bind(v) .. " AS INTEGER)" end
    return ctx:bind(math.tointeger and math.tointeger(v) or v)
  end
  gb.hnum, gb.integral, gb.bind_int = hnum, integral, bind_int -- (composite's histogram sources)

  --- gb.interval_of(g) -> a histogram's interval (> 0) and offset
  -- (default 0, finite), each a number or (LuaJIT) an int64's decimal
  -- text | nil and which of them is wrong
  function gb.interval_of(g)
    local iv, off = hnum(g.interval), hnum(g.offset or 0)
    if iv == nil or (type(iv) == "string" and iv:find("^%-")) or (type(iv) == "number" and not (iv > 0 and iv < math.huge)) then
      return nil, "interval"
    end
    if off == nil or (type(off) == "number" and not (off > -math.huge and off < math.huge)) then return nil, "offset" end
    return iv, off
  end

  function K.histogram(env, g, scope, depth, what)
    local iv, off = gb.interval_of(g)
    if iv == nil then return bad(what .. (off == "interval" and ": interval must be a number > 0" or ": offset must be a finite number")) end
    local mdc, m, c = min_docs(g, what, 0)
    if not mdc then return nil, m, c end
    local d, m2, c2 = agg.field(env, g.field_name, what, NUMERIC)
    if d == nil then return nil, m2, c2 end
    local miss, m3, c3 = agg.missing(d or { type = "DOUBLE", name = g.field_name }, g.missing, what)
    if m3 then return nil, m3, c3 end
    local fr = g.field_range
    local lo, hi
    if fr ~= nil then
      lo, hi = type(fr) == "table" and hnum(fr.min), type(fr) == "table" and hnum(fr.max)
      local wrong = not lo or not hi -- (min > max: LuaJIT's decimal text compared as int64)
      if not wrong then
        if type(lo) == "number" and type(hi) == "number" then wrong = lo > hi else wrong = ordered(lo) > ordered(hi) end
      end
      if wrong then
        return bad(what .. ": field_range must be { min, max } numbers, min <= max")
      end
      local ok, km, kc = base.known(fr, FIELD_RANGE_KEYS, what .. ": field_range")
      if not ok then return nil, km, kc end
    end
    local ctx = env.ctx
    if (not d or d.type ~= "DOUBLE") and integral(iv) and integral(off) then
      -- an int64 histogram: bucket numbers, keys and bounds in SQLite's
      -- integers (exact near +-2^63 too: the service's keys are int64)
      local bi, bo = bind_int(ctx, iv), bind_int(ctx, off)
      return bucketed(env, g, scope, depth, what, d, miss, lo, hi,
        function(x) return ("floor_div(%s, %s, %s)"):format(x, bi, bo) end, -- csrc/core/bucket.c
        function(it) if type(it.key) == "string" then it.key = values.integer(it.key) end end,
        function(b, x, from)
          local cb = "CAST(" .. ctx:bind(b) .. " AS INTEGER)"
          return ("d.id IN (SELECT d.id FROM %s WHERE %s >= %s * %s + %s AND %s < (%s + 1) * %s + %s)")
            :format(from, x, cb, bi, bo, x, cb, bi, bo)
        end, mdc,
        function(b) return ("%s * %s + %s"):format(b, bi, bo) end)
    end
    iv, off = tonumber(iv), tonumber(off)
    if type(lo) == "string" then lo = tonumber(lo) end
    if type(hi) == "string" then hi = tonumber(hi) end
    local integral = (not d or d.type ~= "DOUBLE") and iv == math.floor(iv) and off == math.floor(off)
    local bi, bo = ctx:bind(iv), ctx:bind(off)
    return bucketed(env, g, scope, depth, what, d, miss, lo, hi,
      function(x) return ("floor_div((%s) - %s, %s)"):format(x, bo, bi) end, -- floor in C (csrc/core/bucket.c)
      function(it)
        local k = it.b * iv + off
        if integral then k = math.tointeger and math.tointeger(k) or k else k = k + 0.0 end
        it.key = k
      end,
      function(b, x, from)
        return ("d.id IN (SELECT d.id FROM %s WHERE %s >= %s AND %s < %s)"):format(from, x, ctx:bind(b * iv + off), x,
          ctx:bind((b + 1) * iv + off))
      end, mdc)
  end

  function K.date_histogram(env, g, scope, depth, what)
    local iv, off, tz = dates.params(g, what)
    if not iv then return nil, off, tz end
    local mdc, m3, c3 = min_docs(g, what, 0)
    if not mdc then return nil, m3, c3 end
    local d, m4, c4 = agg.field(env, g.field_name, what, { DATE = true })
    if d == nil then return nil, m4, c4 end
    local fake = d or { type = "DATE", name = g.field_name, date_formats = dates.FORMATS }
    local miss, m5, c5 = agg.missing(fake, g.missing, what)
    if m5 then return nil, m5, c5 end
    local lo, hi
    if g.field_range ~= nil then
      local fr = g.field_range
      if type(fr) ~= "table" then return bad(what .. ": field_range must be { min, max }") end
      local ok, km, kc = base.known(fr, FIELD_RANGE_KEYS, what .. ": field_range")
      if not ok then return nil, km, kc end
      local a, m6, c6 = agg.missing(fake, fr.min, what .. ".field_range")
      if m6 then return nil, m6, c6 end
      local b, m7, c7 = agg.missing(fake, fr.max, what .. ".field_range")
      if m7 then return nil, m7, c7 end
      -- (LuaJIT: one beyond 2^53 is decimal text, compared as an int64)
      if a == nil or b == nil or (type(a) == "number" and type(b) == "number" and a > b)
        or ((type(a) ~= "number" or type(b) ~= "number") and ordered(a) > ordered(b)) then
        return bad(what .. ": field_range needs min <= max")
      end
      lo, hi = a, b
    end
    local ctx = env.ctx
    return bucketed(env, g, scope, depth, what, d, miss, lo, hi,
      function(x) return dates.bucket_sql(ctx, x, iv, off, tz) end,
      function(it) it.timestamp = dates.bucket_start(it.b, iv, off, tz) end,
      function(b, x, from)
        return ("d.id IN (SELECT d.id FROM %s WHERE %s >= %s AND %s < %s)"):format(from, x,
          ctx:bind(dates.bucket_start(b, iv, off, tz)), x, ctx:bind(dates.bucket_start(b + 1, iv, off, tz)))
      end, mdc)
  end
end
