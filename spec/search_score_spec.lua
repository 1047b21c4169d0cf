-- spec/search_score_spec.lua -- the functions_score query against a Lua
-- model over random documents: field_value_factor (modifiers, missing),
-- decay (GAUSS, EXP, LINEAR, offsets, multi-value modes on arrays),
-- random, weights and filters, score and combine modes, min_score and
-- max_score; the rows kept and their scores (search_hits).
local store = require "otskit.store"
local cjson = require "cjson.safe"

local ROUNDS = os.getenv("OTSKIT_QUICK") and 5 or 25

local function model_fn(f, d)
  if f.filter and not (d.k == f.filter.term.term) then return nil end
  local v
  if f.field_value_factor then
    local b = f.field_value_factor
    local up = unpack or table.unpack
    local x = d.x and math.max(up(d.x)) or b.missing
    if x == nil then v = 0 else
      x = x * b.factor
      if b.modifier == "LOG1P" then v = math.log(1 + x, 10) elseif b.modifier == "SQUARE" then v = x * x
      elseif b.modifier == "SQRT" then v = math.sqrt(x) else v = x end
      if v ~= v then v = 0 end
    end
  elseif f.decay then
    local b = f.decay
    if not d.x then v = 1 else
      local dist
      for _, x in ipairs(d.x) do
        local e = math.abs(x - b.param.origin)
        if b.multi_value_mode == "MAX" then dist = math.max(dist or e, e) else dist = math.min(dist or e, e) end
      end
      dist = math.max(0, dist - b.param.offset)
      local s = b.param.scale
      if b.math_function == "LINEAR" then local s2 = s / (1 - b.decay); v = math.max(0, (s2 - dist) / s2)
      elseif b.math_function == "EXP" then v = math.exp(math.log(b.decay) / s * dist)
      else local sig2 = -s * s / (2 * math.log(b.decay)); v = math.exp(-dist * dist / (2 * sig2)) end
    end
  end
  return (v or 1) * (f.weight or 1)
end

local function model(q, d)
  local vals, n = {}, 0
  for i, f in ipairs(q.functions) do vals[i] = model_fn(f, d); if vals[i] then n = n + 1 end end
  local fs
  if n == 0 then fs = 1
  elseif q.score_mode == "SUM" then fs = 0; for i = 1, #q.functions do fs = fs + (vals[i] or 0) end
  elseif q.score_mode == "MULTIPLY" then fs = 1; for i = 1, #q.functions do fs = fs * (vals[i] or 1) end
  elseif q.score_mode == "MAX" then fs = -1e308; for i = 1, #q.functions do if vals[i] then fs = math.max(fs, vals[i]) end end
  end
  if q.max_score then fs = math.min(fs, q.max_score) end
  local s = 1
  if q.combine_mode == "SUM" then return s + fs elseif q.combine_mode == "REPLACE" then return fs end
  return s * fs
end

describe("functions_score vs a Lua model", function()
  it("keeps the rows the model keeps, scored as the model scores", function()
    for round = 1, ROUNDS do
      math.randomseed(round * 31337)
      local db = assert(store.open{})
      assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
      assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = {
        { field_name = "x", field_type = "DOUBLE", enable_sort_and_agg = true, is_array = true },
        { field_name = "k", field_type = "KEYWORD", enable_sort_and_agg = true } } } })
      local docs = {}
      for i = 1, math.random(1, 40) do
        local d = { id = i, k = "k" .. math.random(1, 3) }
        if math.random() < 0.8 then
          d.x = {}
          for j = 1, math.random(1, 3) do d.x[j] = math.random(0, 400) / 8 end
        end
        docs[i] = d
        assert(db:put_row{ table = "t", primary_key = { { "id", i } }, columns = { k = d.k, x = d.x and cjson.encode(d.x) or nil } })
      end
      local fns = {}
      for i = 1, math.random(1, 3) do
        local f = { weight = math.random() < 0.5 and math.random(1, 4) or nil }
        if math.random() < 0.4 then f.filter = { term = { field_name = "k", term = "k" .. math.random(1, 3) } } end
        if math.random() < 0.5 then
          f.field_value_factor = { field_name = "x", factor = math.random(1, 4) / 2,
            modifier = ({ "NONE", "LOG1P", "SQUARE", "SQRT" })[math.random(4)], missing = math.random() < 0.5 and 1 or nil }
        else
          f.decay = { field_name = "x", math_function = ({ "GAUSS", "EXP", "LINEAR" })[math.random(3)],
            param = { origin = math.random(0, 50), scale = math.random(1, 10), offset = math.random(0, 3) },
            decay = math.random(1, 9) / 10, multi_value_mode = math.random() < 0.5 and "MIN" or "MAX" }
        end
        fns[i] = f
      end
      local q = { query = { match_all = {} }, functions = fns, score_mode = ({ "SUM", "MULTIPLY", "MAX" })[math.random(3)],
        combine_mode = ({ "SUM", "MULTIPLY", "REPLACE" })[math.random(3)],
        max_score = math.random() < 0.3 and 3 or nil, min_score = math.random() < 0.5 and math.random(0, 20) / 10 or nil }
      local want = {}
      for _, d in ipairs(docs) do
        local s = model(q, d)
        if not q.min_score or s >= q.min_score - 1e-9 then want[d.id] = s end
      end
      local res = assert(db:search{ table = "t", index = "ix", limit = 100, query = { functions_score = q },
        sort = { { score_sort = { order = "DESC" } } } })
      local n = 0
      for _ in pairs(want) do n = n + 1 end
      -- rows at the min_score boundary may differ by rounding: allow none
      assert.are.equal(n, #res.rows)
      for i, r in ipairs(res.rows) do
        local id = r.primary_key[1][2]
        assert.is_not_nil(want[id])
        local got = res.search_hits[i].score
        assert(math.abs(got - want[id]) <= 1e-6 * math.max(1, math.abs(want[id])), ("row %d: %s vs %s in %s of %s"):format(id, got, want[id], cjson.encode(q), cjson.encode(docs[id])))
        if i > 1 then assert(res.search_hits[i - 1].score >= got - 1e-12) end
      end
      db:close()
    end
  end)

  it("a query's weight multiplies its score, in the store and through the wire", function()
    local wire = require "otskit.wire"
    local db = assert(store.open{})
    assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
    assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = {
      { field_name = "s", field_type = "TEXT" }, { field_name = "k", field_type = "KEYWORD" } } } })
    for i = 1, 20 do
      assert(db:put_row{ table = "t", primary_key = { { "id", i } }, columns = { s = ("a b a c"):sub(1, 1 + i % 4 * 2),
        k = "k" .. i % 3 } })
    end
    local kinds = {
      function(w) return { match = { field_name = "s", text = "a b", weight = w } } end,
      function(w) return { match_phrase = { field_name = "s", text = "a b", weight = w } } end,
      function(w) return { term = { field_name = "k", term = "k1", weight = w } } end,
      function(w) return { terms = { field_name = "k", terms = { "k1", "k2" }, weight = w } } end,
      function(w) return { prefix = { field_name = "k", prefix = "k", weight = w } } end,
      function(w) return { wildcard = { field_name = "k", value = "k*", weight = w } } end,
    }
    for _, mk in ipairs(kinds) do
      local w = math.random(2, 9) / 2
      local function run(q)
        local req = { table = "t", index = "ix", limit = 100, query = { bool = { must = { q }, should = { { match_all = {} } } } },
          sort = { { score_sort = { order = "DESC" } }, { pk_sort = { order = "ASC" } } } }
        local back = assert(wire.decode_request("Search", assert(wire.encode_request("Search", req))))
        assert.same(q, back.query.bool.must[1])
        return assert(db:search(back))
      end
      local plain, heavy = run(mk(nil)), run(mk(w))
      assert.are.equal(#plain.rows, #heavy.rows)
      assert.is_true(#plain.rows > 0)
      local base = {}
      for i, r in ipairs(plain.rows) do base[r.primary_key[1][2]] = plain.search_hits[i].score end
      for i, r in ipairs(heavy.rows) do
        local b = base[r.primary_key[1][2]]
        -- bool sums must and the matching should (match_all scores 1)
        assert(math.abs(heavy.search_hits[i].score - ((b - 1) * w + 1)) < 1e-6, "weighted score")
      end
    end
    local r, msg, code = db:search{ table = "t", index = "ix", query = { term = { field_name = "k", term = "k1", weight = -1 } } }
    assert.is_nil(r); assert.are.equal("OTSParameterInvalid", code, msg)
    db:close()
  end)

  it("refuses bad functions with OTSParameterInvalid", function()
    local db = assert(store.open{})
    assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
    assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = {
      { field_name = "x", field_type = "DOUBLE" }, { field_name = "k", field_type = "KEYWORD" } } } })
    local function bad(q)
      local r, msg, code = db:search{ table = "t", index = "ix", query = { functions_score = q } }
      assert.is_nil(r); assert.are.equal("OTSParameterInvalid", code, msg)
    end
    bad{ query = { match_all = {} }, functions = {} }
    bad{ query = { match_all = {} }, functions = { { decay = { field_name = "k", param = { origin = 1, scale = 1 } } } } }
    bad{ query = { match_all = {} }, functions = { { decay = { field_name = "x", param = { origin = 1, scale = 0 } } } } }
    bad{ query = { match_all = {} }, functions = { { field_value_factor = { field_name = "x", modifier = "CUBE" } } } }
    bad{ query = { match_all = {} }, functions = { { weight = 1 } }, score_mode = "MEDIAN" }
    bad{ functions = { { weight = 1 } } }
    db:close()
  end)
end)
