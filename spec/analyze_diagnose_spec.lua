-- otskit.analyze.diagnose on designs nobody scripted: a generator builds
-- random reasonable table designs (key shapes hashed or not, time first or
-- not, time buckets, one hot value, pre-split or not, write rates below
-- or well above a partition's capacity, queries by key, by filter or
-- fanned out, some writes that the store refuses) whose problems are
-- known by construction, and the findings must name exactly those causes,
-- and none for a healthy design. Then the chat table of issue 29 (room,
-- ts, seq), plain and hash-prefixed: few_partitions with split points,
-- and pre-split at those points, no failure and no finding.
local analyze = require "otskit.analyze"
local sim = require "otskit.analyze.sim"
local hash = require "otskit.hash"
local store = require "otskit.store"
local json = require "otskit.analyze.json"
local cjson = require "cjson"

local QUICK = os.getenv("OTSKIT_QUICK") == "1"
local T0 = 1767225600
local INF_MIN, INF_MAX = store.INF_MIN, store.INF_MAX

-- every store request retried as the patterns retry theirs (all idempotent here)
local IDEMPOTENT = { idempotent = true }

local function causes(findings)
  local out = {}
  for _, f in ipairs(findings) do out[#out + 1] = f.cause end
  table.sort(out)
  return out
end

local function set_list(set)
  local out = {}
  for k in pairs(set) do out[#out + 1] = k end
  table.sort(out)
  return out
end

-- n - 1 values cutting a sorted list into n runs
local function quantiles(sorted, n)
  local out = {}
  for k = 1, n - 1 do out[k] = sorted[math.floor(k * #sorted / n) + 1] end
  return out
end

---------------------------------------------------------------------------
-- The generator: gen(r) -> case { scenario, truth (set of causes), what }

local KINDS = { "healthy_spread", "healthy_low", "few_partitions", "monotonic", "hot_key", "shared_bucket" }
-- per kind, the query (and whether some writes are refused) of its first two rounds
local QPLAN = {
  healthy_spread = { { "scan" }, { "none" } },          -- >= 400 rows: a scan is amplified
  healthy_low = { { "point" }, { "range", true } },
  few_partitions = { { "fanout" }, { "narrow" } },
  monotonic = { { "narrow", true }, { "point" } },
  hot_key = { { "range" }, { "scan" } },
  shared_bucket = { { "none" }, { "fanout" } },
}

local function gen(r, n)
  local C = r.int(20, 40)                       -- a partition's rows per second
  local secs = r.int(10, 20)
  local kind = KINDS[(n - 1) % #KINDS + 1]
  local hashed = r.int(0, 1) == 1
  local K = r.int(60, 200)                      -- entities (rooms, devices, users)
  local function ent(x)
    local id = ("e%04d"):format(x)
    return hashed and (hash.md5(id, true):sub(1, 4) .. ":" .. id) or id
  end
  local ents = {}
  for x = 1, K do ents[x] = ent(x) end
  table.sort(ents)
  local truth, what = {}, { kind }
  local R, pk1, splits
  if kind == "healthy_spread" then
    -- keys spread over the key space, pre-split so each partition takes
    -- at most a quarter of its capacity
    local P = r.int(8, 16)
    R = math.max(1, math.floor(P * C / 4))
    splits = quantiles(ents, P)
    pk1 = function(_, _, rr) return ents[rr.int(1, K)] end
    what[#what + 1] = ("%d partitions, %d/s, %s"):format(P, R, hashed and "hashed" or "plain")
  elseif kind == "healthy_low" then
    -- any key shape at a rate one partition takes with room to spare
    R = r.int(2, math.floor(C / 2))
    local shape = r.int(1, 3)
    if shape == 1 then pk1 = function(i) return ("%010d"):format(i) end
    elseif shape == 2 then pk1 = function(_, t) return T0 + math.floor(t) end
    else pk1 = function(_, _, rr) return ents[rr.int(1, K)] end end
    what[#what + 1] = ("shape %d, %d/s, one partition"):format(shape, R)
  elseif kind == "few_partitions" then
    -- spread keys, one initial partition, rate 3-6 x capacity
    R = C * r.int(3, 6)
    pk1 = function(_, _, rr) return ents[rr.int(1, K)] end
    truth.few_partitions = true
    what[#what + 1] = ("%d/s, %s, %d keys"):format(R, hashed and "hashed" or "plain", K)
  elseif kind == "monotonic" then
    -- keys that grow with every write: sequence, ms timestamp or prefixed
    -- sequence; maybe pre-split over the range the run will write
    R = C * r.int(3, 6)
    local shape = r.int(1, 3)
    if shape == 1 then pk1 = function(i) return ("%010d"):format(90000000 + i) end
    elseif shape == 2 then pk1 = function(_, t) return T0 * 1000 + math.floor(t * 1000) end
    else pk1 = function(i) return ("order-%08d"):format(i) end end
    if r.int(0, 1) == 1 then
      local ops = R * secs
      local P = r.int(4, 16)
      splits = {}
      for k = 1, P - 1 do splits[k] = pk1(math.floor(k * ops / P), (k * ops / P) / R) end
    end
    truth.monotonic_key = true
    what[#what + 1] = ("shape %d, %d/s, %s"):format(shape, R, splits and "pre-split over the range" or "one partition")
  elseif kind == "hot_key" then
    -- one value takes 60-100% of the writes, the rest spread; pre-split
    -- so the others stay far below capacity
    R = C * r.int(3, 6)
    local p = r.int(6, 10) / 10
    local hot = ents[r.int(1, K)]
    splits = quantiles(ents, 16)
    pk1 = function(_, _, rr) if rr.float() < p then return hot end return ents[rr.int(1, K)] end
    truth.hot_key = true
    what[#what + 1] = ("%d/s, %d%% on %s"):format(R, math.floor(p * 100), hot)
  else -- shared_bucket
    -- every writer of a moment shares the value: the second, ts mod B, a
    -- short "day"
    R = C * r.int(2, 5)
    local shape = r.int(1, 3)
    local B, D = ({ 4, 8, 16 })[r.int(1, 3)], r.int(2, 3)
    if shape == 1 then pk1 = function(_, t) return T0 + math.floor(t) end
    elseif shape == 2 then pk1 = function(_, t) return (T0 + math.floor(t)) % B end
    else pk1 = function(_, t) return ("day-%04d"):format(math.floor(t / D)) end end
    if shape == 2 and r.int(0, 1) == 1 then
      splits = {}
      for k = 1, B - 1 do splits[k] = k end
    end
    if shape == 3 then secs = math.max(secs, 4 * D) end
    truth.shared_bucket = true
    what[#what + 1] = ("shape %d (B %d, D %d), %d/s"):format(shape, B, D, R)
  end
  local ops = R * secs
  local ktype = type(pk1(1, 0, analyze.rng(1))) == "number" and "INTEGER" or "STRING"
  -- queries: by key (no finding), by a filter on an attribute, fanned out;
  -- the first two rounds over the kinds follow a plan (so a short run, as
  -- OTSKIT_QUICK makes it, still meets every cause and healthy designs),
  -- later ones draw at random
  local round = math.floor((n - 1) / #KINDS)
  local plan = QPLAN[kind][round + 1]
  local qkind = plan and plan[1] or ({ "none", "point", "range", "scan", "fanout", "narrow" })[r.int(1, 6)]
  local M = r.int(10, 40)
  local B = r.int(4, 12)
  if qkind == "scan" then
    if ops >= 400 and not truth.monotonic_key and not truth.few_partitions then truth.scan_amplification = true
    else qkind = "point" end
  end
  if qkind == "fanout" then truth.fanout = true end
  what[#what + 1] = "query " .. qkind
  -- some writes the store refuses (an attribute named like a key column)
  local bad
  if plan then bad = plan[2] and r.int(5, 20) / 100 or 0
  else bad = r.int(1, 5) == 1 and r.int(5, 20) / 100 or 0 end
  if bad > 0 then truth.errors = true; what[#what + 1] = ("%d%% bad writes"):format(math.floor(bad * 100)) end
  local design = { name = "d" .. n, label = table.concat(what, ", "),
    setup = function(env)
      assert(env.store:create_table { name = "t", primary_key = { { "k", ktype }, { "n", "INTEGER" } }, splits = splits })
      return { env = env, keys = {} }
    end,
    write = function(st, it)
      local cols = { v = it.v }
      if it.bad then cols.k = "x" end
      local ok, msg, code = sim.call(st.env, "put_row", { table = "t", primary_key = { it.k, it.i }, columns = cols },
        "PutRow", IDEMPOTENT)
      if ok then st.keys[#st.keys + 1] = { it.k, it.i } end
      return ok, msg, code
    end,
    query = qkind ~= "none" and function(st, q)
      local env = st.env
      if #st.keys == 0 then return {} end
      local pick = st.keys[(q * 7919) % #st.keys + 1]
      if qkind == "point" then
        local res = sim.call(env, "get_row", { table = "t", primary_key = pick }, "GetRow", IDEMPOTENT)
        return res and { res.row }
      elseif qkind == "range" or qkind == "narrow" then
        local page = sim.call(env, "get_range", { table = "t", start = { pick[1], INF_MIN }, stop = { pick[1], INF_MAX },
          limit = qkind == "narrow" and 2 or 50 }, "GetRange", IDEMPOTENT)
        return page and page.rows
      elseif qkind == "scan" then
        local out, start = {}, { INF_MIN, INF_MIN }
        repeat
          local page = sim.call(env, "get_range", { table = "t", start = start, stop = { INF_MAX, INF_MAX }, limit = 100 },
            "GetRange", IDEMPOTENT)
          if not page then return nil end
          for _, row in ipairs(page.rows) do if row.columns.v % M == 0 then out[#out + 1] = row end end
          start = page.next_start_primary_key
        until start == nil
        return out
      else -- fanout: the newest 10 rows of B keys, merged
        local out = {}
        for b = 1, B do
          local k = st.keys[(q * 104729 + b * 7907) % #st.keys + 1][1]
          local page = sim.call(env, "get_range", { table = "t", start = { k, INF_MAX }, stop = { k, INF_MIN },
            direction = "BACKWARD", limit = 10 }, "GetRange", IDEMPOTENT)
          if not page then return nil end
          for _, row in ipairs(page.rows) do out[#out + 1] = row end
        end
        table.sort(out, function(a, b) return a.primary_key[2][2] > b.primary_key[2][2] end)
        for j = #out, 11, -1 do out[j] = nil end
        return out
      end
    end or nil }
  local sc = { name = "gen" .. n, ops = ops, rate = R, capacity = C, queries = 5, seed = r.int(1, 1000000),
    item = function(i, rr)
      local t = (i - 1) / R
      return { i = i, k = pk1(i, t, rr), v = rr.int(0, 999), bad = bad > 0 and rr.float() < bad }
    end,
    designs = { design } }
  return { scenario = sc, truth = truth, what = design.label }
end

describe("otskit.analyze.diagnose on generated designs", function()
  it("names exactly the causes each design was built with, and none for a healthy one", function()
    local r = analyze.rng(tonumber(os.getenv("OTSKIT_SEED") or "") or 29)
    local n = QUICK and 12 or 36
    local seen, healthy = {}, 0
    for c = 1, n do
      local case = gen(r, c)
      local res = analyze.run(case.scenario)
      local d = res.designs[1]
      local got, want = causes(d.findings), set_list(case.truth)
      local msg = ("case %d (%s): want {%s}, got {%s}\n%s"):format(c, case.what, table.concat(want, ", "),
        table.concat(got, ", "), table.concat((function()
          local t = {}
          for _, f in ipairs(d.findings) do t[#t + 1] = f.cause .. ": " .. f.text end
          return t
        end)(), "\n"))
      assert.are.same(want, got, msg)
      for _, f in ipairs(d.findings) do
        seen[f.cause] = true
        assert.is_string(f.text)
        assert.is_table(f.evidence)
        if f.cause == "few_partitions" then assert.is_true(#f.evidence.split_points >= 1) end
        if f.cause == "errors" then
          assert.are.equal("OTSParameterInvalid", f.evidence.code)
          assert.matches("Duplicated attribute column name", f.evidence.message, 1, true)
        end
      end
      if next(case.truth) == nil then
        assert.are.same({}, d.findings, msg)
        healthy = healthy + 1
      end
      -- the JSON document carries the same findings
      local doc = cjson.decode(json.encode(json.document({ res })))
      local jd = doc.scenarios[1].designs[1]
      local jc = {}
      for i, f in ipairs(jd.findings) do jc[i] = f.cause end
      table.sort(jc)
      assert.are.same(got, jc)
    end
    -- every cause came up (the generator covers them all; the index
    -- causes: spec/analyze_index_diagnose_spec.lua), and designs without one
    for _, cause in ipairs { "few_partitions", "monotonic_key", "hot_key", "shared_bucket", "errors",
                             "scan_amplification", "fanout" } do
      assert.is_true(seen[cause] == true, "no generated design had " .. cause)
    end
    assert.is_true(healthy >= 2, "fewer than 2 generated designs without a problem")
  end)
end)

---------------------------------------------------------------------------
-- The chat table of issue 29: 100 rooms, messages at 100 per second, the
-- newest 50 of a room read back; a fresh table has one partition.

local function room_key(hashed, room)
  if hashed then return hash.md5(room, true):sub(1, 4) .. ":" .. room end
  return room
end

local function chat_design(name, hashed, splits)
  return { name = name, label = (hashed and "md5(room)[1..4]:room" or "room") .. ", ts, seq",
    setup = function(env)
      assert(env.store:create_table { name = "chat", primary_key = { { "room", "STRING" }, { "ts", "INTEGER" },
        { "seq", "INTEGER" } }, splits = splits })
      return env
    end,
    write = function(env, it)
      return sim.call(env, "put_row", { table = "chat", primary_key = { room_key(hashed, it.room), it.ts, it.seq },
        columns = { text = "hello" } }, "PutRow", IDEMPOTENT)
    end,
    query = function(env, room)
      local k = room_key(hashed, room)
      local page = sim.call(env, "get_range", { table = "chat", start = { k, INF_MAX, INF_MAX },
        stop = { k, INF_MIN, INF_MIN }, direction = "BACKWARD", limit = 50 }, "GetRange", IDEMPOTENT)
      return page and page.rows
    end }
end

local function chat(designs)
  return { name = "chat", title = "Chat: 100 rooms, newest 50 messages of a room", ops = 3000, rate = 100, queries = 20,
    item = function(i, r) return { room = ("room-%03d"):format(r.int(0, 99)), ts = T0 * 1000 + i * 10, seq = i } end,
    query_item = function(_, r) return ("room-%03d"):format(r.int(0, 99)) end,
    designs = designs }
end

describe("the chat table (room, ts, seq)", function()
  it("is diagnosed few_partitions with split points, plain and hashed; pre-split there, nothing fails", function()
    local res = analyze.run(chat { chat_design("plain", false), chat_design("hashed", true) })
    local fixed = {}
    for i, d in ipairs(res.designs) do
      assert.is_true(d.metrics.failed_ops > 0)
      assert.are.same({ "few_partitions" }, causes(d.findings))
      local e = d.findings[1].evidence
      assert.are.equal(1, e.initial_partitions)
      assert.is_true(e.tail_share < 0.1)
      assert.is_true(e.values > 10)
      assert.are.equal(#e.split_points + 1, e.partitions_needed)
      assert.is_true(e.partitions_needed >= 100 * 2 / 25)
      assert.matches("Pre%-split it into %d+ partitions: create_table{ splits = {", d.findings[1].text)
      assert.not_matches("grows with time", d.findings[1].text, 1, true)
      fixed[i] = chat_design(d.name, i == 2, e.split_points)
    end
    local again = analyze.run(chat(fixed))
    for _, d in ipairs(again.designs) do
      assert.are.equal(0, d.metrics.failed_ops)
      assert.are.same({}, d.findings)
    end
  end)
end)
