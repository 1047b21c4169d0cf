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
    local res = analyze.run { name = "iot", ops = 2000, rate = 200, capacity = 25, queries = 0,
      item = function(i) return { ts = T0 + math.floor((i - 1) / 200), id = ("dev-%03d"):format((i - 1) % 200) } end,
      designs = { design("mod"), design("id") } }
    local mod, id = res.designs[1], res.designs[2]
    assert.are.equal(1, mod.metrics.peak_share)
    assert.are.equal(1, #mod.findings)
    local f = mod.findings[1]
    assert.are.equal("shared_bucket", f.cause)
    assert.are.equal(200, f.evidence.value_rows)             -- every device of that second
    assert.are.equal(200, f.evidence.table_new_rows)
    assert.is_true(f.evidence.seconds_written <= 2)
    assert.matches("hash(device) mod N", f.text, 1, true)
    assert.are.same({}, id.findings)
    assert.is_true(id.metrics.peak_share < 0.2)
    local text = table.concat(report.text(res), "\n")
    assert.matches("! mod: shared_bucket: table iot: in second %d+, 200 of the 200 new rows", text)
    assert.not_matches("! id:", text, 1, true)
    -- keys that grow with time on one partition: the other cause
    local seq = analyze.run(tiny())
    assert.are.equal("monotonic_key", seq.designs[1].findings[1].cause)
    assert.matches("neighbouring values", seq.designs[1].findings[1].text, 1, true)
    assert.are.same({}, seq.designs[2].findings)
    -- no capacity: nothing throttles, no partition cause
    local free = analyze.run(tiny { capacity = false })
    assert.are.same({}, free.designs[1].findings)
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
    assert.matches("! naive: shared_bucket: table readings: in second %d+, 200 of the 200 new rows asked of the table", out)
    -- the recommended design spreads the writes: no partition cause; its
    -- reads fan out over the 16 buckets, and that cost is stated
    assert.not_matches("! recommended: shared_bucket", out, 1, true)
    assert.matches("! recommended: fanout: each query opened %d+ key ranges", out)
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

-- issue 29: errors named in the table, every design drawn, names of any
-- length aligned, one JSON document
describe("otskit analyze: errors, many designs, the picture, --json", function()
  -- a design whose every write is refused (an attribute named like a key
  -- column), beside four fine ones with long names
  local function many()
    local function d(name, bad)
      return { name = name, label = name .. (bad and " (attribute k)" or ""),
        setup = function(env)
          assert(env.store:create_table { name = "t", primary_key = { { "k", "STRING" } } })
          return env
        end,
        write = function(env, i)
          local o = { op = "PutRow", idempotent = true }
          for k, v in pairs(env.retry) do o[k] = v end
          local cols = bad and { k = "x" } or { v = i }
          return require("otskit.retry").call(function()
            return env.store:put_row { table = "t", primary_key = { ("r%04d"):format(i) }, columns = cols }
          end, o)
        end }
    end
    return { name = "many", title = "Five designs", ops = 60, rate = 10, queries = 0,
      designs = { d("bad", true), d("a-rather-long-design-name", false), d("x", false),
                  d("another_quite_long_name_here", false), d("fifth", false) } }
  end

  it("shows each error code, its count and first message, and states the cause", function()
    local res = analyze.run(many())
    local bad = res.designs[1]
    assert.are.equal(60, bad.metrics.failed_ops)
    assert.are.equal(1, #bad.errors)
    assert.are.equal("OTSParameterInvalid", bad.errors[1].code)
    assert.are.equal(60, bad.errors[1].count)
    assert.matches("Duplicated attribute column name", bad.errors[1].message, 1, true)
    assert.are.same({ "errors" }, (function() local t = {} for i, f in ipairs(bad.findings) do t[i] = f.cause end return t end)())
    assert.are.equal(60, bad.findings[1].evidence.failed_operations)
    assert.are.equal(0, bad.metrics.retries)                 -- not mistaken for throttling
    for j = 2, 5 do assert.are.same({}, res.designs[j].findings) end
    local text = report.text(res, 3)
    local joined = table.concat(text, "\n")
    assert.matches("errors %(code x count%)%s+OTSParameterInvalid x 60%s+%-", joined)
    assert.matches("bad: OTSParameterInvalid x 60 (put_row), first: Duplicated attribute column name", joined, 1, true)
    assert.matches("! bad: errors: 60 of 60 operations failed with OTSParameterInvalid", joined, 1, true)
    -- the columns line up whatever the names' lengths: every cell of a
    -- design's column starts where its name starts in the header
    local header
    for _, l in ipairs(text) do if l:find("a-rather-long-design-name   x", 1, true) then header = l end end
    assert(header, joined)
    local starts = {}
    for _, n in ipairs { "bad", "a-rather-long-design-name", "x", "another_quite_long_name_here", "fifth" } do
      starts[#starts + 1] = assert(header:find(n, 1, true))
    end
    local rows = 0
    for _, l in ipairs(text) do
      if l:match("^  partitions used") or l:match("^  retries") or l:match("^  operations failed") then
        rows = rows + 1
        for j = 2, #starts do
          assert.are.equal(" ", l:sub(starts[j] - 1, starts[j] - 1), l)
          assert.are_not.equal(" ", l:sub(starts[j], starts[j]), l)
        end
      end
    end
    assert.are.equal(3, rows)
    -- the design list under the title aligns too: labels start in one column
    local maxw = #"another_quite_long_name_here"
    for j, d in ipairs(res.designs) do
      local l = text[2 + j]
      assert.are.equal("  " .. d.name, l:sub(1, 2 + #d.name))
      assert.are.equal(d.label, l:sub(2 + maxw + 3), l)
    end
  end)

  it("draws every design, numbers scenarios as the text does, names what it left out", function()
    local a, b = analyze.run(many()), analyze.run(tiny())
    b.picture = false
    local c = analyze.run(tiny { name = "tiny2", title = "tiny again" })
    local pic = svg.render({ a, b, c })
    assert.is_true(well_formed(pic))
    for _, d in ipairs(a.designs) do assert.matches(">" .. d.name .. ": ", pic, 1, true) end
    -- a long heading is cut over its map, whole in its tooltip
    assert.matches("another_quite_long_name_here: another_quite_long_name_here<title>", pic, 1, true)
    assert.matches(">1. Five designs<", pic, 1, true)
    assert.matches(">3. tiny again<", pic, 1, true)
    assert.not_matches('class="scen">2. tiny<', pic, 1, true)
    assert.matches("Not drawn (the scenario sets picture = false: no partition story to show):", pic, 1, true)
    assert.matches(">2. tiny<", pic, 1, true)
    -- five heat maps take three lines: the picture grows with them
    local h5 = tonumber(svg.render({ a }):match('height="(%d+)"'))
    local h2 = tonumber(svg.render({ c }):match('height="(%d+)"'))
    assert.is_true(h5 > h2 + 2 * 190)
  end)

  it("the counter's optimistic lock gets no finding; the naive counter neither (capacity false)", function()
    local sc
    for _, s in ipairs(require "otskit.analyze.scenarios") do if s.name == "counter" then sc = s end end
    local res = analyze.run(sc)
    assert.are.same({}, res.designs[1].findings)
    assert.are.same({}, res.designs[2].findings)
    -- its condition failures are measured (the lock retried), not a failure
    assert.are.equal("OTSConditionCheckFail", res.designs[2].errors[1].code)
    local text = table.concat(report.text(res), "\n")
    assert.not_matches("! recommended", text, 1, true)
  end)

  it("analyze --json and demo --json print one JSON document with every scenario and design", function()
    local cjson = require "cjson"
    local path = write_tmp([[
      local retry = require "otskit.retry"
      local function d(name, bad)
        return { name = name, setup = function(env)
            assert(env.store:create_table { name = "t", primary_key = { { "k", "STRING" } } }) return env end,
          write = function(env, i)
            return env.store:put_row { table = "t", primary_key = { ("%08d"):format(i) }, columns = bad and { k = 1 } or { v = 1 } }
          end }
      end
      return { { name = "one", ops = 20, queries = 0, designs = { d("good"), d("bad", true) } },
               { name = "two", ops = 400, rate = 100, queries = 0, designs = { d("seq") } } }
    ]])
    local out, rc = sh(LUA .. " bin/otskit analyze --json -q --svg - " .. path)
    os.remove(path)
    assert.are.equal(0, rc, out)
    local doc = cjson.decode((out:gsub("rc=%d+%s*$", "")))
    assert.are.equal(2, #doc.scenarios)
    local one, two = doc.scenarios[1], doc.scenarios[2]
    assert.are.equal("one", one.name)
    assert.are.equal(1, one.index)
    assert.are.same({}, one.designs[1].findings)
    assert.are.same({}, one.designs[1].errors)
    assert.are.equal("errors", one.designs[2].findings[1].cause)
    assert.are.equal("OTSParameterInvalid", one.designs[2].errors[1].code)
    assert.are.equal(20, one.designs[2].errors[1].count)
    assert.are.equal(20, one.designs[2].measures.failed_ops)
    local f = two.designs[1].findings[1]
    assert.are.equal("monotonic_key", f.cause)
    assert.are.equal(1, f.evidence.tail_share)
    assert.is_string(f.text)
    -- the demo: every scenario and design, the same causes as its text
    out, rc = sh(LUA .. " bin/otskit demo --json -q --svg - --only orders,counter")
    assert.are.equal(0, rc, out)
    doc = cjson.decode((out:gsub("rc=%d+%s*$", "")))
    assert.are.same({ "orders", "counter" }, { doc.scenarios[1].name, doc.scenarios[2].name })
    assert.are.equal("monotonic_key", doc.scenarios[1].designs[1].findings[1].cause)
    assert.are.same({}, doc.scenarios[1].designs[2].findings)
    assert.are.same({}, doc.scenarios[2].designs[2].findings)
    out, rc = sh(LUA .. " bin/otskit demo --json --keys -q --svg -")
    assert.are.equal(2, rc)
    assert.matches("--keys and --json do not go together", out, 1, true)
  end)
end)
