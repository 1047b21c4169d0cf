-- spec/search_int64_spec.lua -- a LONG field of a search index holds exact
-- int64 values on both VMs (LuaJIT: beyond 2^53 as decimal text, or typed
-- INTEGER values): random values near +-2^63, around +-2^53 and small,
-- written as store.integer values, searched with term / terms / range /
-- exists / sort (paged by token) / group_by_field / min / max / sum and
-- compared with a Lua model that computes on decimal text, through the
-- embedded store and through `otskit serve` (same VM) and otskit.client;
-- the same in an array field and in a NESTED field's objects (JSON text,
-- where 2^53 + 1 must not read as the double 2^53).
local store = require "otskit.store"
local serve = require "support.serve"
local helper = require "helper"

-- an int64 as {hi, lo}: hi * 10^9 + lo, 0 <= lo < 10^9 (exact doubles)
local E9 = 1000000000
local MIN = { -9223372037, 145224192 }  -- -2^63
local MAX = { 9223372036, 854775807 }   -- 2^63 - 1
local TWO53 = { 9007199, 254740992 }    -- 2^53

local function cmp(a, b)
  if a[1] ~= b[1] then return a[1] < b[1] and -1 or 1 end
  if a[2] ~= b[2] then return a[2] < b[2] and -1 or 1 end
  return 0
end

local function add(a, k) -- a + k, |k| < 10^9
  local hi, lo = a[1], a[2] + k
  if lo < 0 then hi, lo = hi - 1, lo + E9 elseif lo >= E9 then hi, lo = hi + 1, lo - E9 end
  return { hi, lo }
end

local function neg(a) return add({ -a[1], 0 }, -a[2]) end

local function text(a)
  if a[1] == 0 then return ("%d"):format(a[2]) end
  if a[1] > 0 then return ("%d%09d"):format(a[1], a[2]) end
  if a[2] == 0 then return ("%d%09d"):format(a[1], 0) end
  local p = { -a[1] - 1, E9 - a[2] } -- the absolute value
  if p[1] == 0 then return ("-%d"):format(p[2]) end
  return ("-%d%09d"):format(p[1], p[2])
end

local function random_value(r, seen)
  local k = r.int(1, 9)
  if k == 1 and #seen > 0 then return seen[r.int(1, #seen)] end -- a repeat
  if k == 2 then return add(MAX, -r.int(0, 3)) end
  if k == 3 then return add(MIN, r.int(0, 3)) end
  if k == 4 then return add(TWO53, r.int(-3, 3)) end
  if k == 5 then return neg(add(TWO53, r.int(-3, 3))) end
  if k == 6 then return { 0, 0 } end
  if k == 7 then return add({ 0, 0 }, r.int(-1000, 1000)) end
  local v = { r.int(-9223372036, 9223372035), r.int(0, E9 - 1) }
  if cmp(v, MIN) < 0 then v = MIN end
  return v
end

-- search(req) on index ix of table tbl of s (a store or a client), and
-- count(query) -> its total_count
local function searcher(s, tbl)
  local function search(req)
    req.table, req.index = tbl, "ix"
    return assert(s:search(req))
  end
  return search, function(query) return search{ query = query, limit = 0, get_total_count = true }.total_count end
end

-- the primary keys of every row, sorted on field in order (paged by
-- token, 7 a page: search-after on int64 keys)
local function sorted_pks(search, field, order, n)
  local got, token = {}, nil
  repeat
    local res = search{ query = { match_all = {} }, limit = 7, token = token,
      sort = { { field_sort = { field_name = field, order = order } } } }
    for _, row in ipairs(res.rows) do got[#got + 1] = tonumber(row.primary_key[1][2]) end
    token = res.next_token
  until not token or #got > n
  return got
end

-- the model of min, max and sum: add(v) each value; stats() -> min, max
-- (as {hi, lo}), the sum and the sum of magnitudes (doubles)
local function min_max_sum()
  local mn, mx, total, abs = nil, nil, 0, 0
  local function add(v)
    if not mn or cmp(v, mn) < 0 then mn = v end
    if not mx or cmp(v, mx) > 0 then mx = v end
    local d = tonumber(text(v)) + 0.0
    total, abs = total + d, abs + math.abs(d)
  end
  return add, function() return mn, mx, total, abs end
end

-- the model of a group_by_field: count(v) once per row and value; answer()
-- -> { "key=row_count" }, row_count DESC then key ASC
local function field_groups()
  local groups, keys = {}, {}
  local function count(v)
    local t = text(v)
    if not groups[t] then groups[t] = { v = v, c = 0 }; keys[#keys + 1] = t end
    groups[t].c = groups[t].c + 1
  end
  local function answer()
    table.sort(keys, function(a, b)
      local x, y = groups[a], groups[b]
      if x.c ~= y.c then return x.c > y.c end
      return cmp(x.v, y.v) < 0
    end)
    local want = {}
    for i, k in ipairs(keys) do want[i] = k .. "=" .. groups[k].c end
    return want
  end
  return count, answer
end

-- the search API answers of `s` (a store or a client) against the model
local function check(s, tbl, r, vals, n)
  local search, count = searcher(s, tbl)
  local function model_count(pred)
    local c = 0
    for i = 1, n do if vals[i] and pred(vals[i]) then c = c + 1 end end
    return c
  end
  local function pick()
    for _ = 1, 10 do
      local v = vals[r.int(1, n)]
      if v then return v end
    end
    return random_value(r, {})
  end
  local have = model_count(function() return true end)
  assert.equal(have, count{ exists = { field_name = "n" } }, "exists")
  assert.equal(have, count{ range = { field_name = "n" } }, "range without bounds")

  for _ = 1, 8 do
    local v = r.int(1, 3) == 1 and random_value(r, {}) or pick()
    assert.equal(model_count(function(x) return cmp(x, v) == 0 end),
      count{ term = { field_name = "n", term = store.integer(text(v)) } }, "term " .. text(v))
    local w = pick()
    assert.equal(model_count(function(x) return cmp(x, v) == 0 or cmp(x, w) == 0 end),
      count{ terms = { field_name = "n", terms = { store.integer(text(v)), store.integer(text(w)) } } }, "terms")
    local lo, hi = v, w
    if cmp(lo, hi) > 0 then lo, hi = hi, lo end
    local il, iu = r.int(0, 1) == 1, r.int(0, 1) == 1
    local want = model_count(function(x)
      local a, b = cmp(x, lo), cmp(x, hi)
      return (a > 0 or il and a == 0) and (b < 0 or iu and b == 0)
    end)
    assert.equal(want, count{ range = { field_name = "n", from = store.integer(text(lo)), to = store.integer(text(hi)),
      include_lower = il, include_upper = iu } }, ("range %s..%s"):format(text(lo), text(hi)))
    assert.equal(model_count(function(x) return cmp(x, lo) >= 0 end),
      count{ range = { field_name = "n", from = store.integer(text(lo)), include_lower = true } }, "range from")
  end

  -- sort (paged by token: search-after on int64 keys), ties by primary key
  for _, order in ipairs({ "ASC", "DESC" }) do
    local want = {}
    for i = 1, n do if vals[i] then want[#want + 1] = i end end
    table.sort(want, function(a, b)
      local c = cmp(vals[a], vals[b])
      if c ~= 0 then if order == "ASC" then return c < 0 end return c > 0 end
      return a < b
    end)
    for i = 1, n do if not vals[i] and not vals.gone[i] then want[#want + 1] = i end end -- missing last
    local got = sorted_pks(search, "n", order, n)
    if #want ~= #got then -- (the values, to replay a failure)
      local t = {}
      for i = 1, n do t[i] = i .. ":" .. (vals[i] and text(vals[i]) or "-") end
      error(("sort %s: %d rows of %d; %s"):format(order, #got, #want, table.concat(t, " ")))
    end
    assert.same(want, got, "sort " .. order)
  end

  -- group_by_field: exact int64 keys, row_count DESC then key ASC; over
  -- every document and over a range's (the value column and the value table)
  local lo = pick()
  for _, q in ipairs({ { match_all = {} }, { range = { field_name = "n", from = store.integer(text(lo)), include_lower = true } } }) do
    local count, answer = field_groups()
    for i = 1, n do
      local v = vals[i]
      if v and (q.match_all or cmp(v, lo) >= 0) then count(v) end
    end
    local want = answer()
    local res = search{ query = q, limit = 0, group_bys = { { name = "g", type = "field", field_name = "n", size = 2000,
      sub_aggs = { { name = "mx", type = "max", field_name = "n" } },
      sub_group_bys = { { name = "h", type = "field", field_name = "n" } } } } }
    local got = {}
    for i, it in ipairs(res.group_bys[1].items) do
      got[i] = it.key .. "=" .. it.row_count
      -- a bucket's documents are exactly its key's (max of the bucket: the
      -- key, as a double; its own group_by_field: the key alone)
      local mx
      for _, a in ipairs(it.sub_aggs) do if a.name == "mx" then mx = a.value end end
      assert.equal(tonumber(it.key) + 0.0, mx, "bucket " .. it.key)
      local sub = it.sub_group_bys[1].items
      assert.same({ it.key .. "=" .. it.row_count }, { sub[1].key .. "=" .. sub[1].row_count, sub[2] and "more" }, "sub-group " .. it.key)
    end
    assert.same(want, got, "group_by_field")
  end

  -- group_by_composite on n, paged by next_token: every value once, ascending
  do
    local seen, want = {}, {}
    for i = 1, n do
      local v = vals[i]
      if v then
        local t = text(v)
        if not seen[t] then seen[t] = { v = v, c = 0 }; want[#want + 1] = t end
        seen[t].c = seen[t].c + 1
      end
    end
    table.sort(want, function(a, b) return cmp(seen[a].v, seen[b].v) < 0 end)
    for i, t in ipairs(want) do want[i] = t .. "=" .. seen[t].c end
    local got, token = {}, nil
    repeat
      local res = search{ limit = 0, group_bys = { { name = "c", type = "composite", size = 3, next_token = token,
        sources = { { name = "n", type = "field", field_name = "n" } },
        sub_aggs = { { name = "mn", type = "min", field_name = "n" } } } } }
      local gb = res.group_bys[1]
      for _, it in ipairs(gb.items) do
        got[#got + 1] = it.keys[1] .. "=" .. it.row_count
        assert.equal(tonumber(it.keys[1]) + 0.0, it.sub_aggs[1].value, "composite bucket " .. it.keys[1])
      end
      token = gb.next_token
    until not token or #got > n
    assert.same(want, got, "group_by_composite")
  end

  -- min / max / sum: doubles on the wire (Tablestore's aggregation results)
  local add, stats = min_max_sum()
  for i = 1, n do if vals[i] then add(vals[i]) end end
  local mn, mx, total, abs = stats()
  local res = search{ query = { match_all = {} }, limit = 0, aggs = { { name = "mn", type = "min", field_name = "n" },
    { name = "mx", type = "max", field_name = "n" }, { name = "s", type = "sum", field_name = "n" } } }
  local got = {}
  for _, a in ipairs(res.aggs) do got[a.name] = a.value end
  assert.equal(tonumber(text(mn)) + 0.0, got.mn, "min")
  assert.equal(tonumber(text(mx)) + 0.0, got.mx, "max")
  assert.is_true(math.abs(got.s - total) <= abs * 2 ^ -48, "sum")
end

-- writes the rows (some without n, some with a STRING n: not a LONG) and
-- returns the model: vals[i] = {hi, lo} | nil
local function load(s, tbl, r, n, before)
  assert(s:create_table{ name = tbl, primary_key = { { "pk", "INTEGER" } } })
  local function index()
    assert(s:create_search_index{ table = tbl, index = "ix", schema = { field_schemas = {
      { field_name = "n", field_type = "LONG", enable_sort_and_agg = true } } } })
  end
  local vals, seen = { gone = {} }, {}
  for i = 1, n do
    if i == before then index() end
    local k = r.int(1, 10)
    local cols
    if k == 1 then cols = { { "other", 1 } }
    elseif k == 2 then cols = { { "n", "9007199254740993" } } -- a STRING
    else
      local v = random_value(r, seen)
      seen[#seen + 1] = v
      vals[i] = v
      cols = { { "n", store.integer(text(v)) } }
    end
    assert(s:put_row{ table = tbl, primary_key = { { "pk", i } }, columns = cols })
  end
  if before > n then index() end
  return vals
end

-- An array field a (LONG, is_array) and a nested field o (objects with a
-- LONG v): each row holds a JSON array of distinct values written as
-- exact decimal text (2^53 + 1 must not read as 2^53); the model:
-- multi[i] = list of {hi, lo} | nil (the row has no a), nest[i] likewise.
local function load_multi(s, tbl, r, n, before)
  assert(s:create_table{ name = tbl, primary_key = { { "pk", "INTEGER" } } })
  local function index()
    assert(s:create_search_index{ table = tbl, index = "ix", schema = { field_schemas = {
      { field_name = "a", field_type = "LONG", is_array = true, enable_sort_and_agg = true },
      { field_name = "o", field_type = "NESTED", field_schemas = { { field_name = "v", field_type = "LONG" } } } } } })
  end
  local multi, nest, seen = {}, {}, {}
  local function list()
    local out, have = {}, {}
    for _ = 1, r.int(1, 4) do
      local v = random_value(r, seen)
      if not have[text(v)] then
        have[text(v)] = true
        seen[#seen + 1] = v
        out[#out + 1] = v
      end
    end
    return out
  end
  local function json(vs, obj)
    local t = {}
    for k, v in ipairs(vs) do t[k] = obj and ('{"v": %s}'):format(text(v)) or text(v) end
    return "[" .. table.concat(t, ", ") .. "]"
  end
  for i = 1, n do
    if i == before then index() end
    local cols = { { "other", 1 } }
    if r.int(1, 8) > 1 then multi[i] = list(); cols[#cols + 1] = { "a", json(multi[i]) } end
    if r.int(1, 8) > 1 then nest[i] = list(); cols[#cols + 1] = { "o", json(nest[i], true) } end
    assert(s:put_row{ table = tbl, primary_key = { { "pk", i } }, columns = cols })
  end
  if before > n then index() end
  return multi, nest
end

-- the search API answers over a and o.v against the model
local function check_multi(s, tbl, r, multi, nest, n)
  local search, count = searcher(s, tbl)
  local function model_count(m, pred)
    local c = 0
    for i = 1, n do
      local any = false
      for _, v in ipairs(m[i] or {}) do any = any or pred(v) end
      if any then c = c + 1 end
    end
    return c
  end
  local all = {}
  for i = 1, n do
    for _, v in ipairs(multi[i] or {}) do all[#all + 1] = v end
    for _, v in ipairs(nest[i] or {}) do all[#all + 1] = v end
  end
  local function pick() return #all > 0 and all[r.int(1, #all)] or random_value(r, {}) end
  local function nested(q) return { nested = { path = "o", query = q, score_mode = "NONE" } } end
  local always = function() return true end
  assert.equal(model_count(multi, always), count{ exists = { field_name = "a" } }, "exists a")
  assert.equal(model_count(nest, always), count(nested{ exists = { field_name = "o.v" } }), "exists o.v")
  for _ = 1, 6 do
    local v = r.int(1, 4) == 1 and random_value(r, {}) or pick()
    local w = pick()
    local lo, hi = v, w
    if cmp(lo, hi) > 0 then lo, hi = hi, lo end
    local il, iu = r.int(0, 1) == 1, r.int(0, 1) == 1
    local function eq(x) return cmp(x, v) == 0 end
    local function either(x) return cmp(x, v) == 0 or cmp(x, w) == 0 end
    local function within(x)
      local a, b = cmp(x, lo), cmp(x, hi)
      return (a > 0 or il and a == 0) and (b < 0 or iu and b == 0)
    end
    local term = { term = store.integer(text(v)) }
    local terms = { terms = { store.integer(text(v)), store.integer(text(w)) } }
    local range = { from = store.integer(text(lo)), to = store.integer(text(hi)), include_lower = il, include_upper = iu }
    for _, f in ipairs({ { "a", multi, function(q) return q end }, { "o.v", nest, nested } }) do
      local name, m, wrap = f[1], f[2], f[3]
      term.field_name, terms.field_name, range.field_name = name, name, name
      assert.equal(model_count(m, eq), count(wrap{ term = term }), name .. " term " .. text(v))
      assert.equal(model_count(m, either), count(wrap{ terms = terms }), name .. " terms")
      assert.equal(model_count(m, within), count(wrap{ range = range }), ("%s range %s..%s"):format(name, text(lo), text(hi)))
    end
  end

  -- sort on a: ASC by each row's least value, DESC by its greatest (the
  -- default modes), ties by primary key, rows without a last
  for _, order in ipairs({ "ASC", "DESC" }) do
    local key, want = {}, {}
    for i = 1, n do
      for _, v in ipairs(multi[i] or {}) do
        if not key[i] or (order == "ASC" and cmp(v, key[i]) < 0) or (order == "DESC" and cmp(v, key[i]) > 0) then key[i] = v end
      end
      if key[i] then want[#want + 1] = i end
    end
    table.sort(want, function(x, y)
      local c = cmp(key[x], key[y])
      if c ~= 0 then if order == "ASC" then return c < 0 end return c > 0 end
      return x < y
    end)
    for i = 1, n do if not key[i] then want[#want + 1] = i end end
    local got = sorted_pks(search, "a", order, n)
    assert.same(want, got, "sort a " .. order)
  end

  -- group_by_field on a: a row counts once in each of its values' buckets;
  -- min, max and sum over every value (doubles on the wire)
  local count, answer = field_groups()
  local add, stats = min_max_sum()
  for i = 1, n do
    for _, v in ipairs(multi[i] or {}) do count(v); add(v) end
  end
  local want = answer()
  local mn, mx, total, abs = stats()
  local res = search{ query = { match_all = {} }, limit = 0,
    group_bys = { { name = "g", type = "field", field_name = "a", size = 2000 } },
    aggs = { { name = "mn", type = "min", field_name = "a" }, { name = "mx", type = "max", field_name = "a" },
      { name = "s", type = "sum", field_name = "a" } } }
  local got = {}
  for i, it in ipairs(res.group_bys[1].items) do got[i] = it.key .. "=" .. it.row_count end
  assert.same(want, got, "group_by_field a")
  local ag = {}
  for _, a in ipairs(res.aggs) do ag[a.name] = a.value end
  if mn then
    assert.equal(tonumber(text(mn)) + 0.0, ag.mn, "min a")
    assert.equal(tonumber(text(mx)) + 0.0, ag.mx, "max a")
    assert.is_true(math.abs(ag.s - total) <= abs * 2 ^ -48, "sum a")
  end
end

describe("search index LONG fields hold exact int64 values", function()
  it("the model's decimal text is right", function()
    assert.equal("-9223372036854775808", text(MIN))
    assert.equal("9223372036854775807", text(MAX))
    assert.equal("9007199254740992", text(TWO53))
    assert.equal("-9007199254740993", text(neg(add(TWO53, 1))))
    assert.equal("-5", text(add({ 0, 0 }, -5)))
    assert.equal("-1000000000", text({ -1, 0 }))
  end)

  it("through the embedded store: term, terms, range, exists, sort, group_by_field, min, max, sum; in arrays and nested objects", function()
    local r = helper.rng(64)
    for trial = 1, helper.trials(20) do
      local db = assert(store.open{ path = ":memory:" })
      local n = r.int(1, 60)
      -- the index made before the rows (written one by one) or after
      -- some (a build reads them from the table)
      local vals = load(db, "t", r, n, r.int(1, n + 1))
      check(db, "t", r, vals, n)
      -- a row rewritten and deleted: its old values leave the index
      local i = r.int(1, n)
      local v = random_value(r, {})
      assert(db:put_row{ table = "t", primary_key = { { "pk", i } }, columns = { { "n", store.integer(text(v)) } } })
      vals[i] = v
      local j = r.int(1, n)
      assert(db:delete_row{ table = "t", primary_key = { { "pk", j } } })
      vals[j], vals.gone[j] = false, true
      check(db, "t", r, vals, n)
      -- in an array field and in nested objects (JSON text)
      local multi, nest = load_multi(db, "m", r, n, r.int(1, n + 1))
      check_multi(db, "m", r, multi, nest, n)
      db:close()
      if trial % 5 == 0 then collectgarbage() end
    end
  end)

  it("histogram buckets (also a composite's) of a LONG field are exact int64 keys (interval, offset, field_range typed)", function()
    -- values within 60 of a base far past 2^53: the model's bucket of v
    -- is off + floor((v - off) / k) * k, computed on the small difference
    local r = helper.rng(67)
    local function diff(a, b) return (a[1] - b[1]) * E9 + (a[2] - b[2]) end
    local function key_text(k)
      if type(k) == "table" then return tostring(k.value) end
      return (math.type and ("%d") or ("%.0f")):format(k)
    end
    for trial = 1, helper.trials(30) do
      local base = ({ add(MAX, -200), add(MIN, 200), add(TWO53, 1), neg(add(TWO53, 3)), add(MAX, -2 ^ 20) })[trial % 5 + 1]
      local db = assert(store.open{ path = ":memory:" })
      assert(db:create_table{ name = "h", primary_key = { { "pk", "INTEGER" } } })
      assert(db:create_search_index{ table = "h", index = "ix", schema = { field_schemas = {
        { field_name = "n", field_type = "LONG", enable_sort_and_agg = r.int(0, 1) == 1 },
        { field_name = "a", field_type = "LONG", is_array = true } } } })
      local vals, arr = {}, {}
      for i = 1, r.int(1, 40) do
        vals[i] = add(base, r.int(-60, 60))
        arr[i] = { add(base, r.int(-60, 60)), add(base, r.int(-60, 60)) }
        if cmp(arr[i][1], arr[i][2]) == 0 then arr[i][2] = nil end
        assert(db:put_row{ table = "h", primary_key = { { "pk", i } }, columns = { { "n", store.integer(text(vals[i])) },
          { "a", ("[%s]"):format(text(arr[i][1]) .. (arr[i][2] and ", " .. text(arr[i][2]) or "")) } } })
      end
      local k, o = r.int(1, 9), r.int(-20, 20)
      local off = add(base, o)
      local lo, hi
      if r.int(1, 3) == 1 then lo, hi = add(base, r.int(-60, 0)), add(base, r.int(0, 60)) end
      for _, mdc in ipairs({ 0, 1 }) do
        for _, f in ipairs({ "n", "a" }) do
          local counts, first, last = {}, nil, nil
          for i = 1, #vals do
            local seen = {}
            for _, v in ipairs(f == "n" and { vals[i] } or arr[i]) do
              if not lo or (cmp(v, lo) >= 0 and cmp(v, hi) < 0) then
                local b = math.floor(diff(v, off) / k)
                if not seen[b] then -- a row counts once a bucket
                  seen[b] = true
                  counts[b] = (counts[b] or 0) + 1
                  first, last = math.min(first or b, b), math.max(last or b, b)
                end
              end
            end
          end
          local want = {}
          for b = first or 1, last or 0 do
            if counts[b] or mdc == 0 then want[#want + 1] = text(add(off, b * k)) .. "=" .. (counts[b] or 0) end
          end
          local g = { name = "g", type = "histogram", field_name = f, interval = store.integer(k),
            offset = store.integer(text(off)), min_doc_count = mdc }
          if lo then g.field_range = { min = store.integer(text(lo)), max = store.integer(text(hi)) } end
          local res = assert(db:search{ table = "h", index = "ix", limit = 0, group_bys = { g } })
          local got = {}
          for i, it in ipairs(res.group_bys[1].items) do got[i] = key_text(it.key) .. "=" .. it.row_count end
          assert.same(want, got, ("histogram of %s, interval %d, offset %s, min_doc_count %d"):format(f, k, text(off), mdc))
          if mdc == 1 and not lo then -- the same buckets as a composite's histogram source, paged
            got = {}
            local token
            repeat
              res = assert(db:search{ table = "h", index = "ix", limit = 0, group_bys = { { name = "c", type = "composite",
                size = 3, next_token = token, sources = { { name = "h", type = "histogram", field_name = f,
                  interval = store.integer(k), offset = store.integer(text(off)) } } } } })
              for _, it in ipairs(res.group_bys[1].items) do got[#got + 1] = it.keys[1] .. "=" .. it.row_count end
              token = res.group_bys[1].next_token
            until not token or #got > #want
            assert.same(want, got, ("composite histogram of %s, interval %d, offset %s"):format(f, k, text(off)))
          end
        end
      end
      db:close()
    end
  end)

  it("through otskit serve and otskit.client (the same VM on both ends)", function()
    local srv = assert(serve.start{ lua = math.type and "lua5.4" or "luajit" })
    local ok, err = pcall(function()
      local cl = serve.client(srv)
      local r = helper.rng(65)
      for trial = 1, math.max(2, helper.trials(6)) do
        local tbl = "t" .. trial
        local n = r.int(5, 40)
        local vals = load(cl, tbl, r, n, r.int(1, n + 1))
        check(cl, tbl, r, vals, n)
        local multi, nest = load_multi(cl, tbl .. "m", r, n, r.int(1, n + 1))
        check_multi(cl, tbl .. "m", r, multi, nest, n)
      end
    end)
    srv.stop()
    assert(ok, err)
  end)
end)

describe("an array or nested field's JSON text read with exact integers", function()
  it("keeps a string that starts as the integers' internal mark a string", function()
    -- (the text is read again with each long integer as a marked string:
    -- a string of the text's own with that mark, spelled any way JSON
    -- allows, stays what it is, and the integers stay exact)
    local db = assert(store.open{})
    assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
    assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = {
      { field_name = "n", field_type = "NESTED", field_schemas = {
        { field_name = "k", field_type = "KEYWORD" }, { field_name = "l", field_type = "LONG" } } },
      { field_name = "ka", field_type = "KEYWORD", is_array = true } } } })
    local big = "9007199254740993"
    local spellings = { "\\u0000otskit-int64\\u00005", "\\u0000\\u006ftskit-int64\\u00005", "\\u0000otskit-int64-1\\u00007" }
    for i, sp in ipairs(spellings) do
      assert(db:put_row{ table = "t", primary_key = { { "id", i } }, columns = {
        n = ('[{"k":"%s","l":%s},{"k":"\\u0000otskit-int64\\u0000","l":1}]'):format(sp, big) } })
    end
    local function ids(q)
      local r = assert(db:search{ table = "t", index = "ix", query = q, limit = 10 })
      local out = {}
      for i, row in ipairs(r.rows) do out[i] = tonumber(row.primary_key[1][2]) end
      return out
    end
    local function nk(term) return { nested = { path = "n", query = { term = { field_name = "n.k", term = term } } } } end
    assert.same({ 1, 2 }, ids(nk("\0otskit-int64\0" .. "5")))
    assert.same({ 3 }, ids(nk("\0otskit-int64-1\0" .. "7")))
    assert.same({ 1, 2, 3 }, ids(nk("\0otskit-int64\0")))
    assert.same({ 1, 2, 3 }, ids({ nested = { path = "n", query = { term = { field_name = "n.l", term = store.integer(big) } } } }))
    assert.same({}, ids({ nested = { path = "n", query = { term = { field_name = "n.l", term = store.integer("9007199254740992") } } } }))
    db:close()
  end)
end)

describe("a date_histogram's field_range of typed INTEGER values", function()
  it("compares its bounds as int64 on both VMs (LuaJIT: beyond 2^53 as decimal text)", function()
    local db = assert(store.open{})
    assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
    assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = {
      { field_name = "dt", field_type = "DATE", enable_sort_and_agg = true, date_formats = { "epoch_millis" } } } } })
    for i = 1, 3 do assert(db:put_row{ table = "t", primary_key = { { "id", i } }, columns = { dt = 1700000000000 + i * 86400000 } }) end
    local function items(fr)
      local r, msg, code = db:search{ table = "t", index = "ix", limit = 0, group_bys = { { name = "d",
        type = "date_histogram", field_name = "dt", interval = { value = 1, unit = "DAY" }, field_range = fr } } }
      if not r then return code end
      return #r.group_bys[1].items
    end
    assert.are.equal(3, items({ min = 0, max = store.integer("9007199254740993") }))
    assert.are.equal(0, items({ min = store.integer("9007199254740993"), max = store.integer("10007199254740993") }))
    assert.are.equal(0, items({ min = store.integer("-9007199254740993"), max = 0 }))
    assert.are.equal("OTSParameterInvalid", items({ min = store.integer("10007199254740993"), max = store.integer("9007199254740993") }))
    assert.are.equal("OTSParameterInvalid", items({ min = store.integer("9007199254740993"), max = 0 }))
    db:close()
  end)
end)
