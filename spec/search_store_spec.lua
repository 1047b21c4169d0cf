-- spec/search_store_spec.lua -- the store's search index against a
-- brute-force model: random rows (written before and after the index is
-- created, by put, update, delete and batch writes), random queries of
-- every kind, random sorts, paged with random limits through next_token:
-- every answer equals the model's (spec/search_oracle.lua).
local store = require "otskit.store"
local cjson = require "cjson.safe"
local helper = require "helper"
local oracle = require "search_oracle"

local FIELDS = {
  { field_name = "l", field_type = "LONG", enable_sort_and_agg = true },
  { field_name = "d", field_type = "DOUBLE", enable_sort_and_agg = true },
  { field_name = "b", field_type = "BOOLEAN" },
  { field_name = "k", field_type = "KEYWORD", enable_sort_and_agg = true },
  { field_name = "ka", field_type = "KEYWORD", is_array = true },
  { field_name = "t", field_type = "TEXT" },
  { field_name = "ts", field_type = "TEXT", analyzer = "split", analyzer_parameter = { delimiter = "," } },
  { field_name = "g", field_type = "GEO_POINT", enable_sort_and_agg = false },
  { field_name = "nest", field_type = "NESTED", field_schemas = {
    { field_name = "k", field_type = "KEYWORD" }, { field_name = "l", field_type = "LONG" } } },
}
local S = {
  l = { short = "l", type = "LONG" }, d = { short = "d", type = "DOUBLE" }, b = { short = "b", type = "BOOLEAN" },
  k = { short = "k", type = "KEYWORD" }, ka = { short = "ka", type = "KEYWORD", is_array = true },
  t = { short = "t", type = "TEXT" }, ts = { short = "ts", type = "TEXT", analyzer = "split", params = { delimiter = "," } },
  g = { short = "g", type = "GEO_POINT" }, nest = { short = "nest", type = "NESTED" },
  ["nest.k"] = { short = "k", type = "KEYWORD" }, ["nest.l"] = { short = "l", type = "LONG" },
}
local KW = { "a", "ab", "abc", "b", "ba", "c*", "x?y", "[z]" }
local WORDS = { "hello", "world", "foo", "Foo", "参", "数", "3", "abc123" }
local COLORS = { "red", "green", "blue", "Red" }
local DOUBLES = { 0.5, 1.25, 2, 3.75, -1.5 }

local function pick(r, t) return t[r.int(1, #t)] end

local function random_row(r)
  local c = {}
  local function maybe() return r.int(1, 10) <= 7 end
  if maybe() then c.l = r.int(0, 20) end
  if maybe() then c.d = pick(r, DOUBLES) + 0.0 end
  if maybe() then c.b = r.int(0, 1) == 1 end
  if maybe() then c.k = pick(r, KW) end
  if maybe() then
    local a = {}
    for i = 1, r.int(0, 3) do a[i] = pick(r, KW) end
    c.ka = #a > 0 and cjson.encode(a) or "[]"
  end
  if maybe() then
    local w = {}
    for i = 1, r.int(1, 6) do w[i] = pick(r, WORDS) end
    c.t = table.concat(w, pick(r, { " ", ", ", "  " }))
  end
  if maybe() then
    local w = {}
    for i = 1, r.int(1, 4) do w[i] = pick(r, COLORS) end
    c.ts = table.concat(w, ",")
  end
  if maybe() then c.g = ("%.4f,%.4f"):format(r.float() * 20 - 10, r.float() * 20 - 10) end
  if maybe() then
    local a = {}
    for i = 1, r.int(0, 3) do a[i] = { k = pick(r, KW), l = r.int(0, 5) } end
    c.nest = #a > 0 and cjson.encode(a) or "[]"
  end
  return c
end

local function point(r) return ("%.4f,%.4f"):format(r.float() * 20 - 10, r.float() * 20 - 10) end

local leaf
local function query(r, depth, nested)
  local n = r.int(1, depth > 0 and 10 or 7)
  if n <= 7 then return leaf(r, nested) end
  local function list()
    local l = {}
    for i = 1, r.int(0, 2) do l[i] = query(r, depth - 1, nested) end
    return l
  end
  if n == 8 and not nested then
    return { nested = { path = "nest", query = query(r, 0, true), score_mode = "AVG" } }
  elseif n == 9 then
    return { const_score = { filter = query(r, depth - 1, nested) } }
  end
  local b = { must = list(), must_not = list(), filter = list(), should = list() }
  if #b.should > 0 and r.int(0, 1) == 1 then b.minimum_should_match = r.int(0, #b.should) end
  return { bool = b }
end

function leaf(r, nested)
  if nested then
    local f = pick(r, { "nest.k", "nest.l" })
    local k = r.int(1, 3)
    if f == "nest.k" then
      if k == 1 then return { term = { field_name = f, term = pick(r, KW) } } end
      if k == 2 then return { prefix = { field_name = f, prefix = pick(r, { "a", "b", "x", "" }) } } end
      return { exists = { field_name = f } }
    end
    if k == 1 then return { term = { field_name = f, term = r.int(0, 5) } } end
    return { range = { field_name = f, from = r.int(0, 5), to = r.int(0, 6), include_lower = r.int(0, 1) == 1 } }
  end
  local k = r.int(1, 16)
  if k == 1 then return { term = { field_name = pick(r, { "k", "ka" }), term = pick(r, KW) } }
  elseif k == 2 then return { term = { field_name = "l", term = r.int(0, 20) } }
  elseif k == 3 then return { terms = { field_name = pick(r, { "k", "ka" }), terms = { pick(r, KW), pick(r, KW) } } }
  elseif k == 4 then
    local f = pick(r, { "l", "d", "k" })
    local lo, hi
    if f == "k" then lo, hi = pick(r, KW), pick(r, KW) elseif f == "l" then lo, hi = r.int(0, 20), r.int(0, 20)
    else lo, hi = pick(r, DOUBLES), pick(r, DOUBLES) end
    local q = { field_name = f, include_lower = r.int(0, 1) == 1, include_upper = r.int(0, 1) == 1 }
    if r.int(1, 4) > 1 then q.from = lo end
    if r.int(1, 4) > 1 then q.to = hi end
    return { range = q }
  elseif k == 5 then return { prefix = { field_name = pick(r, { "k", "ka" }), prefix = pick(r, { "a", "ab", "b", "c", "[", "" }) } }
  elseif k == 6 then return { wildcard = { field_name = pick(r, { "k", "ka" }), value = pick(r, { "a*", "*b*", "?b", "c\\*", "x?y", "[*", "*" }) } }
  elseif k == 7 then return { exists = { field_name = pick(r, { "l", "d", "b", "k", "ka", "t", "ts", "g", "nest" }) } }
  elseif k == 8 then return { term = { field_name = "b", term = r.int(0, 1) == 1 } }
  elseif k == 9 or k == 10 then
    local f = pick(r, { "t", "ts" })
    local w = {}
    for i = 1, r.int(1, 3) do w[i] = pick(r, f == "t" and WORDS or COLORS) end
    local q = { field_name = f, text = table.concat(w, f == "t" and " " or ",") }
    if k == 9 then return { match_phrase = q } end
    local o = r.int(1, 3)
    if o == 1 then q.operator = "AND" elseif o == 2 then q.minimum_should_match = r.int(1, 3) end
    return { match = q }
  elseif k == 11 then return { geo_distance = { field_name = "g", center_point = point(r), distance = r.int(1, 800) * 1000 } }
  elseif k == 12 then
    local a, b = r.float() * 20 - 10, r.float() * 20 - 10
    local c, d = r.float() * 20 - 10, r.float() * 20 - 10
    return { geo_bounding_box = { field_name = "g", top_left = ("%.4f,%.4f"):format(math.max(a, b), math.min(c, d)),
      bottom_right = ("%.4f,%.4f"):format(math.min(a, b), math.max(c, d)) } }
  elseif k == 13 then return { geo_polygon = { field_name = "g", points = { point(r), point(r), point(r), point(r) } } }
  elseif k == 14 then return { term = { field_name = "t", term = pick(r, { "hello", "foo", "参", "abc123" }) } }
  elseif k == 15 then return { match_all = {} }
  end
  return { range = { field_name = "d", from = pick(r, DOUBLES), include_lower = true } }
end

local SORTS = {
  {}, { { field_sort = { field_name = "l" } } }, { { field_sort = { field_name = "l", order = "DESC", missing_value = 7 } } },
  { { field_sort = { field_name = "k", order = "DESC" } } }, { { field_sort = { field_name = "d", missing_field = "l" } } },
  { { pk_sort = { order = "DESC" } } }, { { geo_distance_sort = { field_name = "g", points = { "0,0" } } } },
  { { field_sort = { field_name = "k" } }, { field_sort = { field_name = "d", order = "DESC" } } },
}

local model_sort = oracle.sort

describe("otskit.store search index (model-based)", function()
  it("answers random queries, sorts and pages as a brute-force evaluation of the rows", function()
    local trials = helper.trials(8)
    local checked, nonempty = 0, 0
    for trial = 1, trials do
      local r = helper.rng(7000 + trial)
      local db = assert(store.open{})
      assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
      local rows = {}
      local N = helper.quick() and 40 or 120
      for id = 1, math.floor(N / 2) do
        rows[id] = random_row(r)
        assert(db:put_row{ table = "t", primary_key = { { "id", id } }, columns = rows[id] })
      end
      assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = FIELDS } })
      for _ = 1, N do
        local id, op = r.int(1, N), r.int(1, 10)
        if op <= 5 then
          rows[id] = random_row(r)
          assert(db:put_row{ table = "t", primary_key = { { "id", id } }, columns = rows[id] })
        elseif op <= 7 then
          local c = random_row(r)
          local dels = {}
          for _, f in ipairs({ "l", "k", "t" }) do if r.int(1, 3) == 1 and c[f] == nil then dels[#dels + 1] = f end end
          local put = {}
          for name, v in pairs(c) do if r.int(0, 1) == 1 then put[name] = v end end
          local up = { PUT = put }
          if #dels > 0 then up.DELETE_ALL = dels end
          if next(put) == nil and #dels == 0 then up.PUT = { l = 1 }; put.l = 1 end
          assert(db:update_row{ table = "t", primary_key = { { "id", id } }, update = up })
          local row = rows[id] or {}
          for name, v in pairs(put) do row[name] = v end
          for _, name in ipairs(dels) do row[name] = nil end
          rows[id] = row
        elseif op <= 8 then
          assert(db:delete_row{ table = "t", primary_key = { { "id", id } } })
          rows[id] = nil
        else
          local list, seen = {}, {}
          for _ = 1, r.int(1, 5) do
            local bid = r.int(1, N)
            if not seen[bid] then
              seen[bid] = true
              if r.int(1, 3) == 1 then
                list[#list + 1] = { type = "DELETE", primary_key = { { "id", bid } } }
                rows[bid] = nil
              else
                rows[bid] = random_row(r)
                list[#list + 1] = { type = "PUT", primary_key = { { "id", bid } }, columns = rows[bid] }
              end
            end
          end
          local res = assert(db:batch_write_row{ tables = { { table = "t", rows = list } } })
          assert.equal(0, res.failed)
        end
      end
      for _ = 1, 40 do
        local q = query(r, 2, false)
        local s = SORTS[r.int(1, #SORTS)]
        local want = {}
        for id, c in pairs(rows) do if oracle.eval(S, q, c) then want[#want + 1] = id end end
        model_sort(want, rows, s)
        local got, token, total = {}, nil, nil
        local pages = 0
        repeat
          local req = { table = "t", index = "ix", query = q, limit = r.int(1, 9), get_total_count = true }
          if token then req.token = token else req.sort = s end
          local res, msg = db:search(req)
          assert(res, msg)
          total = total or res.total_count
          assert.equal(total, res.total_count) -- every page counts every match
          for _, row in ipairs(res.rows) do got[#got + 1] = row.primary_key[1][2] end
          token = res.next_token
          pages = pages + 1
        until not token or pages > 200
        assert.same(want, got, "query " .. cjson.encode(q) .. " sort " .. cjson.encode(s))
        assert.equal(#want, total)
        -- one offset page
        local off = r.int(0, #want)
        local res = assert(db:search{ table = "t", index = "ix", query = q, sort = s, offset = off, limit = 5,
          get_total_count = true })
        assert.equal(#want, res.total_count)
        local slice = {}
        for i = off + 1, math.min(off + 5, #want) do slice[#slice + 1] = want[i] end
        local ids = {}
        for i, row in ipairs(res.rows) do ids[i] = row.primary_key[1][2] end
        assert.same(slice, ids)
        checked = checked + 1
        if #want > 0 then nonempty = nonempty + 1 end
      end
      db:close()
    end
    assert.is_true(nonempty >= checked / 4, ("only %d of %d queries matched rows"):format(nonempty, checked))
  end)
  it("a page token made from its remembered shape is the token made whole: the same payload, signed alike", function()
    local sort = require "otskit.store.search.sort"
    local r = helper.rng(4242)
    local SORTS = { {}, { { pk_sort = { order = "DESC" } } }, { { field_sort = { field_name = "n", order = "ASC" } } },
      { { field_sort = { field_name = "k/\"x", order = "DESC", missing_value = 2 ^ 60 } } } }
    for round = 1, 200 do
      local secret = ({ "", "s3cret", "\0\255" })[r.int(1, 3)]
      local scope = ({ "t/ix", "a\"b/c\\d", "t/\226\130\172" })[r.int(1, 3)]
      local srt = r.int(0, #SORTS) > 0 and SORTS[r.int(1, #SORTS)] or nil
      local key = {}
      for j = 1, r.int(0, 12) do key[j] = string.char(r.int(0, 255)) end
      key = table.concat(key)
      local p = { kind = ({ "search", "scan" })[r.int(1, 2)], sort = srt, after = { { "b", key } } }
      local fast, whole = sort.token(secret, scope, p, true), sort.token(secret, scope, p)
      for _, tok in ipairs({ fast, whole }) do
        local got = assert(sort.open(secret, scope, tok))
        assert.are.same(p.kind, got.kind)
        assert.are.same(p.sort, got.sort)
        assert.are.same(p.after, got.after)
        assert.is_nil(sort.open(secret .. "x", scope, tok))
        assert.is_nil(sort.open(secret, scope .. "x", tok))
        assert.is_nil(sort.open(secret, scope, tok:sub(1, -2) .. (tok:sub(-1) == "}" and " " or "}")))
      end
    end
  end)
end)
