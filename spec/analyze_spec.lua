-- otskit.analyze, `otskit demo` and `otskit analyze`: the scenario
-- contract, the meter's counting and throttling, the table, the picture.
local analyze = require "otskit.analyze"
local meter = require "otskit.analyze.meter"
local report = require "otskit.analyze.report"
local svg = require "otskit.analyze.svg"
local store = require "otskit.store"

local LUA = jit and "luajit" or "lua5.4"

local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1; echo \"rc=$?\""))
  local out = p:read("*a")
  p:close()
  return out, tonumber(out:match("rc=(%d+)%s*$"))
end

-- a minimal XML check: tags balance, attributes are quoted
local function well_formed(text)
  local stack = {}
  for close, name, rest in text:gmatch("<(/?)([%w:_%-]+)([^>]*)>") do
    if close == "/" then
      if stack[#stack] ~= name then return false, "unbalanced </" .. name .. ">" end
      stack[#stack] = nil
    elseif not rest:match("/%s*$") then
      stack[#stack + 1] = name
    end
    if rest:find("=[^\"]") then return false, "unquoted attribute in <" .. name .. ">" end
  end
  if #stack > 0 then return false, "unclosed <" .. stack[#stack] .. ">" end
  return true
end

-- a tiny scenario: sequential keys vs a hash of them, on a throttled store
local function tiny(opts)
  local function d(name, keyf)
    return { name = name, label = name .. " keys",
      setup = function(env)
        local sp = {}
        for k = 1, 15 do sp[k] = ("%x"):format(k) end
        assert(env.store:create_table { name = "t", primary_key = { { "k", "STRING" } }, splits = sp })
        return env
      end,
      write = function(env, i)
        return require("otskit.retry").call(function()
          local r, m, c = env.store:put_row { table = "t", primary_key = { keyf(i) } }
          if not r then return nil, { code = c, message = m } end
          return r
        end, (function() local o = { op = "PutRow" }; for k, v in pairs(env.retry) do o[k] = v end; return o end)())
      end,
      query = function(env)
        return env.store:get_range { table = "t", start = { store.INF_MIN }, stop = { store.INF_MAX }, limit = 10 }.rows
      end }
  end
  local sc = { name = "tiny", title = "tiny", ops = 400, rate = 100, queries = 2, capacity = 20,
    designs = { d("naive", function(i) return ("%08d"):format(i) end),
                d("recommended", function(i) return require("otskit.hash").md5(tostring(i), true):sub(1, 6) end) } }
  for k, v in pairs(opts or {}) do sc[k] = v end
  return sc
end

describe("otskit.analyze", function()
  it("measures the hot spot of sequential keys and its absence with hashed ones", function()
    local res = analyze.run(tiny())
    local naive, rec = res.designs[1].metrics, res.designs[2].metrics
    assert.are.equal(1, naive.partitions_used)           -- "0000...." sorts below "1"
    assert.is_true(naive.throttled > 0 and naive.retries > 0)
    assert.is_true(naive.failed_ops > 0)
    assert.are.equal(16, rec.partitions_used)
    assert.are.equal(0, rec.throttled)
    assert.are.equal(400, rec.rows_written)
    assert.are.equal(400 - naive.failed_ops, naive.rows_written)
    assert.is_true(naive.mean_share > 0.99)
    assert.is_true(rec.mean_share < 0.5)
    assert.are.equal(1, rec.requests_per_query)
    assert.are.equal(10, rec.rows_per_query)
    -- every row of the heat map adds up to what was written
    local sum = 0
    for _, l in pairs(res.designs[2].heat.load) do for _, n in pairs(l) do sum = sum + n end end
    assert.are.equal(400, sum)
  end)

  it("repeats exactly (seeded backoff), and capacity = false never throttles", function()
    local a, b = analyze.run(tiny()), analyze.run(tiny())
    assert.are.same(a.designs[1].metrics, b.designs[1].metrics)
    local free = analyze.run(tiny { capacity = false })
    assert.are.equal(0, free.designs[1].metrics.throttled)
    assert.are.equal(0, free.designs[1].metrics.failed_ops)
  end)

  it("refuses malformed scenarios, naming what is wrong", function()
    assert.has_error(function() analyze.check(42) end)
    assert.has_error(function() analyze.check { name = "x y", designs = {} } end, "otskit.analyze: scenario.name must be a short id")
    assert.has_error(function() analyze.check { name = "x", designs = {} } end)
    assert.has_error(function() analyze.check { name = "x", designs = { { name = "a", setup = print } } } end,
      "otskit.analyze: scenario x: design a needs a write function")
    assert.has_error(function() analyze.check { name = "x", rate = 0, designs = { { name = "a", setup = print, write = print } } } end)
  end)

  it("the meter throttles per partition per second and fails batch rows alone", function()
    local now = 0
    local db = assert(store.open { clock = function() return now end })
    local m = meter.new(db, { clock = function() return now end, capacity = 3 })
    assert(m:create_table { name = "t", primary_key = { { "k", "INTEGER" } }, splits = { 100 } })
    for i = 1, 3 do assert(m:put_row { table = "t", primary_key = { i } }) end
    local ok, _, code = m:put_row { table = "t", primary_key = { 4 } }
    assert.is_nil(ok); assert.are.equal("OTSServerBusy", code)
    assert(m:put_row { table = "t", primary_key = { 150 } })       -- the other partition
    local res = assert(m:batch_write_row { tables = { { table = "t", rows = {
      { type = "PUT", primary_key = { 5 } }, { type = "PUT", primary_key = { 151 } },
      { type = "PUT", primary_key = { 152 } }, { type = "PUT", primary_key = { 153 } } } } } })
    local codes = {}
    for i, r in ipairs(res.tables[1].rows) do codes[i] = r.ok and "ok" or r.code end
    assert.are.same({ "OTSServerBusy", "ok", "ok", "OTSServerBusy" }, codes)
    assert.is_nil(db:get_row { table = "t", primary_key = { 5 } }.row)
    now = 1 -- a new second: capacity again
    assert(m:put_row { table = "t", primary_key = { 4 } })
    assert.are.equal(3, m.writes.throttled)
    assert.are.equal(7, m.writes.rows)
    -- unmetered methods pass through
    assert.are.equal("t", m:describe_table { name = "t" }.table_meta.table)
  end)

  it("flags a design whose hottest partition takes most of a second's writes, naming the cause", function()
    -- 200 devices report every second with the same timestamp: ts mod 16
    -- puts all of a second's writes in one bucket; hash(device) mod 16 not
    local timeseries = require "otskit.patterns.timeseries"
    local T0 = 1767225600
    local function design(by)
      return { name = by, label = "buckets by " .. by,
        setup = function(env)
          local s = timeseries.new { store = env.store, table = "iot", buckets = 16, by = by, retry = env.retry }
          assert(s:create())
          return s
        end,
        write = function(s, it) return s:put(it.ts, it.id, { v = 1 }) end }
    end
    local res = analyze.run { name = "iot", ops = 2000, rate = 200, capacity = false, queries = 0,
      item = function(i) return { ts = T0 + math.floor((i - 1) / 200), id = ("dev-%03d"):format((i - 1) % 200) } end,
      designs = { design("mod"), design("id") } }
    local mod, id = res.designs[1].metrics, res.designs[2].metrics
    assert.are.equal(1, mod.peak_share)
    local h = assert(mod.hot)
    assert.are.equal(1, h.share)
    assert.are.equal(200, h.rows)
    assert.are.equal(1, h.keys)
    assert.matches("same partition key", h.cause, 1, true)
    assert.matches("hash(device) mod N", h.cause, 1, true)
    assert.is_nil(id.hot)
    assert.is_true(id.peak_share < 0.2)
    local text = table.concat(report.text(res), "\n")
    assert.matches("! mod: hot partition: in second %d+, partition iot#%d+ took 100%% of the writes %(200 of 200 rows%)", text)
    assert.not_matches("! id:", text, 1, true)
    -- keys that grow with time on one partition: the other cause
    local seq = analyze.run(tiny { capacity = false })
    local sh = assert(seq.designs[1].metrics.hot)
    assert.matches("neighbouring partition keys", sh.cause, 1, true)
    assert.is_nil(seq.designs[2].metrics.hot)
  end)

  it("prints a side-by-side table and a well-formed picture", function()
    local res = analyze.run(tiny())
    local text = table.concat(report.text(res, 1), "\n")
    assert.matches("writes on the hottest partition", text, 1, true)
    assert.matches("naive%s+recommended", text)
    assert.matches("retries", text, 1, true)
    local pic = svg.render({ res })
    assert.matches("^<svg", pic)
    assert.is_true(well_formed(pic))
    assert.matches("naive: naive keys", pic, 1, true)
  end)
end)

describe("bin/otskit", function()
  it("demo runs every scenario and writes the picture", function()
    local path = os.tmpname()
    local out, rc = sh(LUA .. " bin/otskit demo -q --svg " .. path)
    assert.are.equal(0, rc)
    for _, s in ipairs(require "otskit.analyze.scenarios") do assert.matches(s.title, out, 1, true) end
    assert.matches("increments lost%s+475%s+0", out)
    assert.matches("In short", out, 1, true)
    assert.matches("increments lost 475 %-> 0", out)
    local f = assert(io.open(path, "rb"))
    local pic = f:read("*a")
    f:close()
    os.remove(path)
    assert.is_true(select(1, well_formed(pic)))
    assert.is_true(#pic > 10000)
  end)

  it("analyze runs a scenario file; a bad file is a clear error", function()
    local out, rc = sh(LUA .. " bin/otskit analyze examples/scenario_pageviews.lua -q --svg -")
    assert.are.equal(0, rc)
    assert.matches("Page views: day first vs URL hash first", out, 1, true)
    local bad = os.tmpname()
    local f = assert(io.open(bad, "wb"))
    f:write("return { name = 'x', designs = { { name = 'a' } } }")
    f:close()
    out, rc = sh(LUA .. " bin/otskit analyze " .. bad .. " -q")
    assert.are.equal(2, rc)
    assert.matches("needs a setup function", out, 1, true)
    f = assert(io.open(bad, "wb")); f:write("this is not lua"); f:close()
    out, rc = sh(LUA .. " bin/otskit analyze " .. bad .. " -q")
    assert.are.equal(2, rc)
    os.remove(bad)
    out, rc = sh(LUA .. " bin/otskit keys")
    assert.are.equal(0, rc)
    assert.matches("Spliced partition key", out, 1, true)
  end)
end)

-- docs/analyze.md's complete design file, as written
local function readme_design()
  local f = assert(io.open("docs/analyze.md", "rb"))
  local text = f:read("*a")
  f:close()
  local a = assert(text:find("## otskit analyze: your own design", 1, true))
  local code = assert(text:match("```lua\n(%-%- iot%.lua.-)```", a), "docs/analyze.md has no iot.lua design file")
  return code
end

local function write_tmp(text)
  local path = os.tmpname() .. ".lua"
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
  return path
end

describe("otskit analyze: the docs/analyze.md design file and the scenario environment", function()
  it("runs docs/analyze.md's iot.lua as written and flags the naive design, naming the cause", function()
    local path = write_tmp(readme_design())
    local out, rc = sh(LUA .. " bin/otskit analyze " .. path .. " -q --svg -")
    os.remove(path)
    assert.are.equal(0, rc, out)
    assert.matches("IoT readings: ts mod 16 vs hash(device) mod 16", out, 1, true)
    assert.matches("operations failed%s+2500 of 4000%s+0 of 4000", out)
    assert.matches("! naive: hot partition: in second 0, partition readings#1 took 100% of the writes (25 of 25 rows)", out, 1, true)
    assert.matches("cause: all 25 rows had the same partition key, 0:", out, 1, true)
    assert.not_matches("! recommended", out, 1, true)
    assert.matches("rows read by 4 concurrent clients%s+80%s+80", out)
  end)

  it("errors name the user's file and line, also from otskit code and concurrent clients", function()
    local base = readme_design()
    local cases = {
      -- a mistake in the design itself
      { "return state.series:put(it.ts, it.device, { v = it.v })",
        "return state.sries:put(it.ts, it.device, { v = it.v })", "write %(operation 1%) failed: .*sries" },
      -- a bad call into otskit: raised inside otskit, reported at the user's line
      { "v = rng:int(0, 99) }", "v = rng:int(99, 0) }", "item%(1%) failed: rng.int%(lo, hi%) needs integers lo <= hi" },
      -- inside a concurrent client (a coroutine)
      { "local rows = assert(s:read { limit = 20 })", "local rows = assert(s:read { limit = 20 }) .. nil",
        "report failed: .*attempt to concatenate" },
      -- inside a retry.call function
      { "return env.store:get_row { table = \"readings\", primary_key = { b, T0, \"dev-001\" } }",
        "return env.store:get_row { table = \"readings\", primary_key = { b, T0, \"dev-001\" } } + 1",
        "report failed: .*arithmetic" },
    }
    for _, c in ipairs(cases) do
      local from, to, want = c[1], c[2], c[3]
      local i = assert(base:find(from, 1, true), from)
      local code = base:sub(1, i - 1) .. to .. base:sub(i + #from)
      local line = select(2, base:sub(1, i):gsub("\n", "")) + 1
      local path = write_tmp(code)
      local list = assert(analyze.load(path))
      list[1].ops, list[1].queries = 40, 1
      local ok, err = pcall(analyze.run, list[1])
      assert.is_false(ok)
      err = tostring(err)
      local short = path:match("[^/]*$")
      assert.matches("^otskit%.analyze: [^\n]*" .. short:gsub("%p", "%%%0") .. ":" .. line .. ": scenario iot, ", err)
      assert.matches(want, err)
      assert.matches("traceback in", err, 1, true)
      -- and from the command line
      local out, rc = sh(LUA .. " bin/otskit analyze " .. path .. " -q --svg -")
      assert.are.equal(1, rc)
      assert.matches(short:gsub("%p", "%%%0") .. ":" .. line .. ":", out)
      os.remove(path)
    end
  end)

  it("env and rng functions work called with . or :", function()
    local seen = {}
    local sc = { name = "both", ops = 3, queries = 0, capacity = false,
      item = function(i, rng) return { rng.int(1, 1000), rng:int(1, 1000), rng:float(), rng.pick { "a" }, rng:pick { "b" } } end,
      designs = { { name = "d",
        setup = function(env)
          assert(env.store:create_table { name = "t", primary_key = { { "k", "INTEGER" } } })
          env:set_time(5); seen.a = env:now()
          env.set_time(6); seen.b = env.now()
          local n = 0
          env:concurrent { function() n = n + 1 end }
          env.concurrent { function() n = n + 1 end }
          seen.n = n
          seen.r1 = env:retry_with { base = 0.01 }
          seen.r2 = env.retry_with { base = 0.01 }
          local a = { 1, 2, 3 }
          env.rng:shuffle(a); env.rng.shuffle(a)
          seen.i = env.rng:int(3, 3) + env.rng.int(4, 4)
          return env
        end,
        write = function(env, it)
          assert(it[4] == "a" and it[5] == "b")
          return env.store:put_row { table = "t", primary_key = { it[1] } }
        end } } }
    local res = analyze.run(sc)
    assert.are.equal(0, res.designs[1].metrics.failed_ops)
    assert.are.same({ 5, 6, 2, 7 }, { seen.a, seen.b, seen.n, seen.i })
    assert.is_table(seen.r1.schedule); assert.is_table(seen.r2.schedule)
    -- the same sequence either way
    local r1, r2 = analyze.rng(9), analyze.rng(9)
    for _ = 1, 50 do assert.are.equal(r1.int(1, 100), r2:int(1, 100)) end
    -- a wrong call is refused, naming the function
    assert.has_error(function() r1.int("x") end)
    assert.has_error(function() analyze.check { name = "x", designs = { { name = "a", setup = print, write = print, wirte = 1 } } } end,
      "otskit.analyze: scenario x: design a: unknown field 'wirte'")
    assert.has_error(function() analyze.check { name = "x", opps = 5, designs = { { name = "a", setup = print, write = print } } } end,
      "otskit.analyze: scenario x: unknown field 'opps'")
  end)
end)
