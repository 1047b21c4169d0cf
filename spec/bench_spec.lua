-- The bench results as data (bench/: tooling of the repository, not the
-- library): the JSON codec, the statistics and verdicts
-- of `bench/runs.lua compare` on synthetic runs, the harness (interleaving,
-- ratios per round, the slowdown switch) on a fake clock, RESULTS.md
-- sections, and an end-to-end quick run compared with itself.
package.path = "bench/?.lua;" .. package.path
local json = require "bench_json"
local stats = require "bench_stats"
local report = require "bench_report"
local benchcmd = require "bench_cmd"

local INTERP = jit and "luajit" or "lua5.4"

-- Park-Miller, the same on both interpreters
local function rng(seed)
  local s = seed
  return function()
    s = (s * 48271) % 2147483647
    return s / 2147483647
  end
end

-- n values around `center` with relative noise +-spread (uniform)
local function sample(r, n, center, spread)
  local t = {}
  for i = 1, n do t[i] = center * (1 + spread * (2 * r() - 1)) end
  return t
end

-- output and exit status of a shell command (the status is echoed: LuaJIT's
-- popen:close does not return it)
local function sh(cmd)
  local p = assert(io.popen("(" .. cmd .. ") 2>&1; echo \"rc=$?\""))
  local out = p:read("*a")
  p:close()
  local body, code = out:match("^(.-)rc=(%d+)%s*$")
  return body, tonumber(code)
end

local function tmpname()
  local n = os.tmpname()
  os.remove(n)
  return n
end

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

describe("bench_json", function()
  it("round-trips random nested values", function()
    local r = rng(7)
    local function gen(depth)
      local k = math.floor(r() * (depth > 3 and 4 or 6))
      if k == 0 then return math.floor(r() * 2e6) - 1e6
      elseif k == 1 then return (r() - 0.5) * 10 ^ math.floor(r() * 20 - 10)
      elseif k == 2 then
        local t = {}
        for i = 1, math.floor(r() * 12) do t[i] = string.char(math.floor(r() * 256)) end
        return table.concat(t)
      elseif k == 3 then return r() < 0.5
      elseif k == 4 then
        local t = {}
        for i = 1, math.floor(r() * 5) + 1 do t[i] = gen(depth + 1) end
        return t
      else
        local t = {}
        for i = 1, math.floor(r() * 5) + 1 do t["k" .. i .. string.char(math.floor(r() * 128))] = gen(depth + 1) end
        return t
      end
    end
    local function close(a, b)
      if type(a) == "number" and type(b) == "number" then
        return a == b or math.abs(a - b) <= 1e-8 * math.max(math.abs(a), math.abs(b))
      end
      if type(a) ~= type(b) then return false end
      if type(a) ~= "table" then return a == b end
      for k, v in pairs(a) do if not close(v, b[k]) then return false end end
      for k in pairs(b) do if a[k] == nil then return false end end
      return true
    end
    for _ = 1, 300 do
      local v = gen(0)
      for _, indent in ipairs { false, " " } do
        local text = json.encode(v, indent or nil)
        local back, err = json.decode(text)
        assert.is_nil(err)
        assert.is_true(close(v, back), text)
      end
    end
  end)

  it("decodes escapes and surrogate pairs; refuses bad input with nil, message", function()
    assert.same({ a = "x\n\"\\/\u{e9}\u{1F600}" }, json.decode('{"a":"x\\n\\"\\\\\\/\\u00e9\\ud83d\\ude00"}'))
    assert.equal(json.null, json.decode("null"))
    assert.same({ 1, -2.5, 1e3 }, json.decode(" [1, -2.5, 1E3] "))
    for _, bad in ipairs { "", "{", "[1,]", '{"a" 1}', "01", "-", '"\\x"', '"\\ud800"', "[1] 2", "tru",
                           "NaN", "Infinity", "0x10", "+1", ".5", {} } do
      local v, err = json.decode(bad)
      assert.is_nil(v, tostring(bad))
      assert.matches(type(bad) == "string" and "invalid JSON" or "expected a string", err)
    end
  end)

  it("reads back every number as it was written: integers stay integers (lua-cjson reads floats)", function()
    local r = rng(11)
    for _ = 1, 2000 do
      local k = math.floor(r() * 4)
      local x
      if k == 0 then x = math.floor(r() * 2e6) - 1e6
      elseif k == 1 then x = math.floor((r() - 0.5) * 2 ^ 53) -- up to the edge of exact integers
      elseif k == 2 then x = (r() - 0.5) * 10 ^ math.floor(r() * 40 - 20)
      else x = math.floor(r() * 1000) + 0.5 end
      if math.tointeger and k <= 1 then x = math.tointeger(x) end
      local back = json.decode(json.encode({ v = x, list = { x, x } }))
      for _, y in ipairs { back.v, back.list[1], back.list[2] } do
        if k <= 1 then
          assert.equal(x, y)
          if math.type then assert.equal("integer", math.type(y)) end
          assert.equal(tostring(x), tostring(y)) -- printed as before: 3, never 3.0
        else
          assert.is_true(math.abs(y - x) <= 1e-8 * math.abs(x), json.encode(x))
          assert.equal(("%.9g"):format(x), ("%.9g"):format(y))
        end
      end
    end
    -- null keeps an array's length, and encodes back to null
    local t = json.decode("[1, null, 3]")
    assert.equal(json.null, t[2]); assert.equal(3, #t)
    assert.equal("[1,null,3]", json.encode(t))
  end)

  it("writes NaN and infinities as null and refuses functions", function()
    assert.equal("[null,null,1.5]", json.encode({ 0 / 0, math.huge, 1.5 }))
    assert.has_error(function() json.encode({ f = print }) end)
  end)
end)

describe("bench_stats", function()
  it("summarizes: median, quartiles (type 7), IQR, min", function()
    local s = stats.summary { 5, 1, 4, 2, 3 }
    assert.same({ n = 5, median = 3, min = 1, max = 5, q1 = 2, q3 = 4, iqr = 2 }, s)
    assert.equal(2.5, stats.median { 4, 1, 3, 2 })
    assert.has_error(function() stats.summary {} end)
  end)

  it("Mann-Whitney U: exact p on small samples, normal approximation agrees on larger ones", function()
    local u, p = stats.mann_whitney({ 1, 2, 3 }, { 4, 5, 6 })
    assert.equal(0, u)
    assert.near(0.1, p, 1e-12) -- 2 of C(6,3) = 20 orderings as extreme
    local _, p2 = stats.mann_whitney({ 1, 2, 3, 4, 5 }, { 6, 7, 8, 9, 10 })
    assert.near(2 / 252, p2, 1e-12)
    local _, p1 = stats.mann_whitney({ 1, 2, 3 }, { 1, 2, 3 })
    assert.equal(1, p1)
    -- exact (no ties, n <= 30) against the approximation (ties force it)
    local r = rng(11)
    for _ = 1, 20 do
      local x, y = sample(r, 25, 100, 0.1), sample(r, 25, 103, 0.1)
      local _, pe = stats.mann_whitney(x, y)
      local xt, yt = {}, {}
      for i = 1, 25 do xt[i], yt[i] = x[i], y[i] end
      xt[26], yt[26] = 1e9, 1e9 -- one tie, far out: approximation path
      local _, pa = stats.mann_whitney(xt, yt)
      assert.is_true(math.abs(pe - pa) < 0.08, pe .. " vs " .. pa)
    end
  end)

  it("finds a known shift: +25% time is slower and a regression, both directions", function()
    local r = rng(3)
    for trial = 1, 25 do
      local base = sample(r, 9, 100, 0.05)
      local new = {}
      for i, v in ipairs(sample(r, 9, 100, 0.05)) do new[i] = v * 1.25 end
      local c = stats.compare(base, new, { direction = "lower" })
      assert.equal("slower", c.verdict, "trial " .. trial)
      assert.is_true(c.regression)
      assert.is_true(c.p < 0.05 and c.lo > 1)
      assert.near(0.25, c.cost, 0.15)
      -- the same as a rate (higher is better): 1/1.25 of the rate
      local rb, rn = {}, {}
      for i = 1, 9 do rb[i], rn[i] = 1e6 / base[i], 1e6 / new[i] end
      local c2 = stats.compare(rb, rn, { direction = "higher" })
      assert.equal("slower", c2.verdict)
      assert.is_true(c2.regression)
      assert.near(0.25, c2.cost, 0.15)
      -- and the other way round: faster, no regression
      local c3 = stats.compare(new, base, { direction = "lower" })
      assert.equal("faster", c3.verdict)
      assert.is_false(c3.regression)
    end
  end)

  it("equal samples are within noise", function()
    local r = rng(5)
    for trial = 1, 50 do
      local a, b = sample(r, 9, 100, 0.02), sample(r, 9, 100, 0.02)
      local c = stats.compare(a, b, { direction = "lower" })
      assert.equal("within noise", c.verdict, "trial " .. trial)
      assert.is_false(c.regression)
      local same = stats.compare(a, a, { direction = "higher" })
      assert.equal("within noise", same.verdict)
      assert.equal(1, same.p)
    end
  end)

  it("a significant change below min_effect is within noise; above it but below the threshold is slower, not a regression", function()
    local r = rng(9)
    local base = sample(r, 15, 100, 0.005)
    local small, mid = {}, {}
    for i, v in ipairs(sample(r, 15, 100, 0.005)) do small[i], mid[i] = v * 1.03, v * 1.07 end
    local c = stats.compare(base, small, { direction = "lower" })
    assert.is_true(c.p < 0.01)
    assert.equal("within noise", c.verdict)
    local c2 = stats.compare(base, mid, { direction = "lower" })
    assert.equal("slower", c2.verdict)
    assert.is_false(c2.regression)
    assert.is_true(stats.compare(base, mid, { direction = "lower", threshold = 0.05 }).regression)
  end)

  it("single values (deterministic measures): same, or changed beyond min_effect", function()
    assert.equal("same", stats.compare({ 42 }, { 42 }, { direction = "lower" }).verdict)
    local c = stats.compare({ 100 }, { 130 }, { direction = "lower" })
    assert.equal("slower", c.verdict)
    assert.is_true(c.regression)
    assert.equal("within noise", stats.compare({ 100 }, { 101 }, { direction = "lower" }).verdict)
    assert.equal("faster", stats.compare({ 100 }, { 130 }, { direction = "higher" }).verdict)
  end)

  it("Student's t quantiles match the tables", function()
    for df, t in pairs { [1] = 12.706, [2] = 4.303, [3] = 3.182, [4] = 2.776, [10] = 2.228, [30] = 2.042 } do
      assert.near(t, stats.t_quantile(0.975, df), 0.001)
    end
    assert.near(6.965, stats.t_quantile(0.99, 2), 0.001)
    assert.has_error(function() stats.t_quantile(0.3, 2) end)
    assert.has_error(function() stats.t_quantile(0.975, 0) end)
  end)

  it("process medians and the between-process band", function()
    assert.same({ 2, 11 }, stats.process_medians({ 1, 10, 2, 11, 3, 12 }, { 1, 2, 1, 2, 1, 2 }))
    assert.same({ 2 }, stats.process_medians({ 1, 2, 3 }))
    assert.has_error(function() stats.process_medians({ 1, 2 }, { 1 }) end)
    -- two processes a side: df = 2; logs of 100/110 and 105/115.5 (both 10 % apart)
    local b = stats.between({ 100, 110 }, { 105, 115.5 })
    assert.equal(2, b.df)
    assert.near(math.log(1.05), b.delta, 1e-12)
    local d = math.log(1.1)
    -- each side's logs deviate by +-d/2: sum of squares d^2 over df 2
    assert.near(d / math.sqrt(2), b.s, 1e-12)
    assert.near(4.303 * d / math.sqrt(2) * math.sqrt(1 / 2 + 1 / 2), b.band, 1e-4)
    -- one process on each side: no estimate; a median <= 0: no logs
    assert.is_nil(stats.between({ 100 }, { 120 }))
    assert.is_nil(stats.between({ 0, 1 }, { 1, 2 }))
    -- one process on one side still counts in the standard error
    local one = stats.between({ 100 }, { 105, 115.5 })
    assert.equal(1, one.df)
    assert.near(12.706 * math.sqrt(d ^ 2 / 2) * math.sqrt(1 + 1 / 2), one.band, 1e-2)
  end)

  -- k processes of reps values each: every process a level off the center by
  -- a factor exp(N(0, sp)) (memory layout, frequency, JIT), its repetitions
  -- within +-within of that level; shift multiplies everything
  local function gauss(r)
    return math.sqrt(-2 * math.log(r())) * math.cos(2 * math.pi * r())
  end
  local function processes(r, k, reps, center, sp, within, shift)
    local values, tags = {}, {}
    for p = 1, k do
      local level = center * (shift or 1) * math.exp(sp * gauss(r))
      for _ = 1, reps do
        values[#values + 1] = level * (1 + within * (2 * r() - 1))
        tags[#tags + 1] = p
      end
    end
    return values, tags
  end

  it("a shift smaller than the between-process spread is within noise; the repetitions alone would call it", function()
    -- processes 100 and 110, new 112 and 123 (12 % shift, spread 10 %), reps +-1 %:
    -- every new repetition is above every base one of the same process
    local r = rng(5)
    local function at(levels)
      local v, t = {}, {}
      for p, l in ipairs(levels) do
        for _ = 1, 6 do v[#v + 1] = l * (1 + 0.01 * (2 * r() - 1)); t[#t + 1] = p end
      end
      return v, t
    end
    local bv, bt = at { 100, 110 }
    local nv, nt = at { 112, 123 }
    local c = stats.compare(bv, nv, { base_tags = bt, new_tags = nt })
    assert.equal("within noise", c.verdict)
    assert.is_false(c.regression)
    assert.is_true(c.significant) -- the repetitions do differ
    assert.is_true(math.abs(c.between.delta) < c.between.band)
    local old = stats.compare(bv, nv) -- the same values without tags: the old rule
    assert.equal("slower", old.verdict)
  end)

  it("same code measured in separate processes: within noise at about the rate alpha promises", function()
    -- processes 8 % apart (sd), repetitions +-2 %: the repetitions alone
    -- call most pairs of runs different; the between-process test does not
    local r = rng(17)
    local trials, noise, old_noise = 200, 0, 0
    for _ = 1, trials do
      local bv, bt = processes(r, 2, 6, 100, 0.08, 0.02)
      local nv, nt = processes(r, 2, 6, 100, 0.08, 0.02)
      if stats.compare(bv, nv, { base_tags = bt, new_tags = nt }).verdict == "within noise" then noise = noise + 1 end
      if stats.compare(bv, nv).verdict == "within noise" then old_noise = old_noise + 1 end
    end
    assert.is_true(noise >= 0.93 * trials, noise .. " of " .. trials)
    assert.is_true(old_noise < 0.8 * trials, old_noise .. " of " .. trials)
  end)

  it("a shift larger than the between-process spread is found, and a regression", function()
    local r = rng(23)
    local found, reg = 0, 0
    for _ = 1, 100 do
      -- processes 2 % apart (an idle machine), a 25 % slowdown
      local bv, bt = processes(r, 2, 6, 100, 0.02, 0.02)
      local nv, nt = processes(r, 2, 6, 100, 0.02, 0.02, 1.25)
      local c = stats.compare(bv, nv, { base_tags = bt, new_tags = nt })
      if c.verdict == "slower" then found = found + 1 end
      if c.regression then reg = reg + 1 end
      assert.is_true(math.abs(c.between.delta) > c.between.band or c.verdict ~= "slower")
    end
    assert.is_true(found >= 95, found .. " of 100 found")
    assert.is_true(reg >= 90, reg .. " of 100 regressions")
    -- the same as a rate (higher is better), three processes a side
    local bv, bt = processes(r, 3, 5, 50, 0.02, 0.02)
    local nv, nt = processes(r, 3, 5, 50, 0.02, 0.02, 0.75)
    local c = stats.compare(bv, nv, { direction = "higher", base_tags = bt, new_tags = nt })
    assert.equal("slower", c.verdict)
    assert.is_true(c.regression)
    assert.equal(4, c.between.df)
  end)

  it("refuses an unknown direction", function()
    assert.has_error(function() stats.compare({ 1 }, { 1 }, { direction = "up" }) end)
  end)
end)

-- a run document with the given measures {name, direction, values}
local function run_doc(measures, extra)
  local ms = {}
  for i, m in ipairs(measures) do
    local s = stats.summary(m[3])
    ms[i] = { name = m[1], unit = m[2] == "lower" and "ns/op" or "x", direction = m[2], kind = "time",
      values = m[3], median = s.median, min = s.min, max = s.max, q1 = s.q1, q3 = s.q3, iqr = s.iqr, n = s.n,
      process = m[4] }
  end
  local d = { format = report.FORMAT, created = "2026-11-23T22:00:00Z", mode = "quick",
    facts = { git_short = "abc", cpu_model = "test", git_commit_time = 1 },
    benches = { { bench = "syn", abi = "lua5.4", interp = "Lua 5.4", status = "ok",
      sections = { { title = "synthetic", text = "### synthetic\n" } }, measures = ms } } }
  for k, v in pairs(extra or {}) do d[k] = v end
  return d
end

describe("otskit bench compare", function()
  local r = rng(21)
  local base = run_doc {
    { "a", "lower", sample(r, 9, 100, 0.03) },
    { "b", "lower", sample(r, 9, 50, 0.03) },
    { "c", "higher", sample(r, 9, 3, 0.03) },
  }
  local function shifted(fa, fc)
    local rr = rng(22)
    return run_doc {
      { "a", "lower", (function() local t = sample(rr, 9, 100, 0.03); for i = 1, 9 do t[i] = t[i] * fa end; return t end)() },
      { "b", "lower", sample(rr, 9, 50, 0.03) },
      { "c", "higher", (function() local t = sample(rr, 9, 3, 0.03); for i = 1, 9 do t[i] = t[i] * fc end; return t end)() },
      { "d", "lower", { 1, 2, 3 } },
    }
  end

  it("gives a verdict per measure and lists the regressions", function()
    local rows, s = benchcmd.compare(base, shifted(1.25, 1), { threshold = 0.10 })
    assert.equal(3, s.total)
    local v = {}
    for _, row in ipairs(rows) do v[row.name] = row.r.verdict end
    assert.same({ a = "slower", b = "within noise", c = "within noise" }, v)
    assert.equal(1, #s.regressions)
    assert.equal("syn | a | lua5.4", s.regressions[1].id)
    assert.same({ "only in the new run: syn | d | lua5.4" }, s.missing)
    local _, s2 = benchcmd.compare(base, shifted(1, 0.8), {})
    assert.equal("syn | c | lua5.4", s2.regressions[1].id)
    local _, s3 = benchcmd.compare(base, shifted(0.7, 1.3), {})
    assert.equal(0, #s3.regressions)
    assert.equal(2, s3.faster)
  end)

  it("the command exits 1 on a regression, 0 without, 2 on a bad file", function()
    local b, n, n2, bad = tmpname(), tmpname(), tmpname(), tmpname()
    write(b, json.encode(base))
    write(n, json.encode(shifted(1.25, 1)))
    write(n2, json.encode(shifted(1.02, 1)))
    write(bad, "{not json")
    local out, code = sh(INTERP .. " bench/runs.lua compare " .. b .. " " .. n)
    assert.equal(1, code, out)
    assert.matches("REGRESSION: 1 measure", out)
    assert.matches("| a %[ns/op%]", out)
    out, code = sh(INTERP .. " bench/runs.lua compare " .. b .. " " .. n2)
    assert.equal(0, code, out)
    assert.matches("3 measures: 3 within noise", out)
    -- a higher threshold lets the 25% pass
    out, code = sh(INTERP .. " bench/runs.lua compare --threshold 30 " .. b .. " " .. n)
    assert.equal(0, code, out)
    -- a bench that failed in the new run fails the gate
    local failed = shifted(1, 1)
    failed.benches[1].status = "failed"
    write(n2, json.encode(failed))
    out, code = sh(INTERP .. " bench/runs.lua compare " .. b .. " " .. n2)
    assert.equal(1, code, out)
    assert.matches("FAILED in the new run: syn %(lua5.4%)", out)
    out, code = sh(INTERP .. " bench/runs.lua compare " .. b .. " " .. bad)
    assert.equal(2, code, out)
    assert.matches("invalid JSON", out)
    out, code = sh(INTERP .. " bench/runs.lua compare --threshold nope " .. b .. " " .. n)
    assert.equal(2, code, out)
    for _, f in ipairs { b, n, n2, bad } do os.remove(f) end
  end)
end)

describe("otskit bench compare with processes", function()
  -- a run measured in two processes: measure "a" at levels la (one per
  -- process), "b" steady; 6 repetitions each, +-1 %
  local function two_proc(seed, la, lb)
    local r = rng(seed)
    local function vals(levels)
      local v, t = {}, {}
      for p, l in ipairs(levels) do
        for _ = 1, 6 do v[#v + 1] = l * (1 + 0.01 * (2 * r() - 1)); t[#t + 1] = p end
      end
      return v, t
    end
    local av, at = vals(la)
    local bv, bt = vals(lb)
    return run_doc { { "a", "lower", av, at }, { "b", "lower", bv, bt } }
  end

  it("a shift within the spread the processes of each run show is within noise; beyond it, a regression", function()
    local base = two_proc(31, { 100, 110 }, { 50, 51 })
    local rows, s = benchcmd.compare(base, two_proc(32, { 112, 123 }, { 50.5, 51 }), {})
    assert.equal(0, #s.regressions)
    assert.equal(2, s["within noise"])
    assert.equal(2, s.with_between)
    assert.equal(1, s.between_noise) -- "a": significant repetitions, not beyond the processes
    assert.is_true(rows[1].r.significant)
    local _, s2 = benchcmd.compare(base, two_proc(33, { 100, 110 }, { 65, 66 }), {})
    assert.equal(1, #s2.regressions)
    assert.equal("syn | b | lua5.4", s2.regressions[1].id)
  end)

  it("an old-format document without process tags still compares, against either format", function()
    local r = rng(41)
    local old = run_doc({ { "a", "lower", sample(r, 9, 100, 0.02) }, { "b", "lower", sample(r, 9, 50, 0.02) } },
      { format = "otskit-bench/1" })
    local old_slow = run_doc({ { "a", "lower", sample(r, 9, 100, 0.02) }, { "b", "lower", sample(r, 9, 70, 0.02) } },
      { format = "otskit-bench/1" })
    local b, n, n2 = tmpname(), tmpname(), tmpname()
    write(b, json.encode(old))
    write(n, json.encode(old_slow))
    write(n2, json.encode(two_proc(42, { 100, 101 }, { 50, 50.5 })))
    local out, code = sh(INTERP .. " bench/runs.lua compare " .. b .. " " .. n)
    assert.equal(1, code, out)
    assert.matches("REGRESSION: 1 measure", out)
    assert.matches("neither run recorded processes", out)
    -- format 1 against format 2: the new run's processes give the band
    out, code = sh(INTERP .. " bench/runs.lua compare --all " .. b .. " " .. n2)
    assert.equal(0, code, out)
    assert.matches("2 measures had a band", out)
    assert.matches("procs", out)
    for _, f in ipairs { b, n, n2 } do os.remove(f) end
  end)

  it("collect merges the processes of a bench: values tagged, medians, spread, sides, exact values once", function()
    local function part(p, status, va, ratio, value)
      return json.encode { bench = "k", abi = "lua5.4", interp = "Lua 5.4", status = status, cpu_seconds = 1,
        process = p, procs = 2, sections = { { title = "t", text = "process " .. p } },
        measures = {
          { name = "a", unit = "ns/op", direction = "lower", kind = "time", values = va, median = 0, seconds = 1 },
          { name = "a vs c", unit = "x", direction = "higher", kind = "ratio", values = ratio,
            sides = { { label = "a", unit = "ns/op", values = va }, { label = "c", unit = "ns/op", values = va } } },
          { name = "v", unit = "x", direction = "higher", kind = "value", values = { value } } } }
    end
    local doc = assert(report.collect({ part(2, "ok", { 20, 21, 22 }, { 2, 2 }, 7), part(1, "ok", { 10, 11, 12 }, { 1, 1 }, 7),
      json.encode { bench = "z", abi = "luajit", status = "ok", measures = {} } }, { mode = "quick", facts = {} }))
    assert.equal(report.FORMAT, doc.format)
    assert.equal(2, #doc.benches)
    local k = doc.benches[1]
    assert.equal(2, k.procs)
    assert.equal(2, k.cpu_seconds)
    assert.equal("process 1", k.sections[1].text)
    local a, ratio, v = k.measures[1], k.measures[2], k.measures[3]
    assert.same({ 10, 11, 12, 20, 21, 22 }, a.values)
    assert.same({ 1, 1, 1, 2, 2, 2 }, a.process)
    assert.same({ 11, 21 }, a.process_medians)
    assert.near(21 / 11 - 1, a.process_spread, 1e-12)
    assert.equal(16, a.median)
    assert.equal(6, a.n)
    assert.is_nil(a.seconds)
    assert.same({ 1, 1, 2, 2 }, ratio.values)
    assert.same({ 10, 11, 12, 20, 21, 22 }, ratio.sides[2].values)
    assert.same({ 7 }, v.values) -- the same exact value in both: once
    assert.equal(2, v.processes)
    -- a process that failed fails the bench; exact values that differ are kept, tagged
    local d2 = assert(report.collect({ part(1, "ok", { 1 }, { 1 }, 7), part(2, "failed", { 1 }, { 1 }, 8) }, { facts = {} }))
    assert.equal("failed", d2.benches[1].status)
    assert.same({ 7, 8 }, d2.benches[1].measures[3].values)
    assert.same({ 1, 2 }, d2.benches[1].measures[3].process)
  end)
end)

describe("otskit bench report and plot", function()
  it("a partial run replaces only its sections; the file is written with the usual mode", function()
    local old = table.concat({ "# old header", "<!-- bench:aaa -->", "## aaa", "A text", "<!-- /bench:aaa -->", "",
      "<!-- bench:syn -->", "## syn", "OLD SYN", "<!-- /bench:syn -->", "",
      "<!-- bench:zzz -->", "## zzz", "Z text", "<!-- /bench:zzz -->", "" }, "\n")
    local doc = run_doc { { "m", "lower", { 1, 2, 3 } } }
    local md = report.merge(old, doc)
    assert.matches("A text", md)
    assert.matches("Z text", md)
    assert.is_nil(md:find("OLD SYN", 1, true))
    assert.matches("### synthetic", md)
    assert.is_true(md:find("A text", 1, true) < md:find("### synthetic", 1, true))
    assert.is_true(md:find("### synthetic", 1, true) < md:find("Z text", 1, true))
    assert.matches("| m | ns/op | lower | 2 ±25%% | 1 | 1.50–2.50 | 3 |", md)
    -- through the command, into a file: mode as any new file (not 0600)
    local dir = tmpname()
    assert(os.execute("mkdir -p " .. dir))
    local run, md_path, probe = dir .. "/run.json", dir .. "/R.md", dir .. "/probe"
    write(run, json.encode(doc))
    write(md_path, old)
    write(probe, "")
    local out, code = sh(INTERP .. " bench/runs.lua report " .. run .. " -o " .. md_path)
    assert.equal(0, code, out)
    local got = assert(io.open(md_path)):read("*a")
    assert.matches("A text", got)
    assert.is_nil(got:find("OLD SYN", 1, true))
    assert.equal((sh("stat -c %a " .. probe)), (sh("stat -c %a " .. md_path)))
    os.execute("rm -rf " .. dir)
  end)

  it("plots every measure across runs in git order", function()
    local plot = require "bench_plot"
    local d1 = run_doc({ { "m", "lower", { 1, 2, 3 } } }, { facts = { git_short = "bbbbbbb", git_commit_time = 20 } })
    local d2 = run_doc({ { "m", "lower", { 4, 5, 6 } }, { "n", "higher", { 7 } } },
      { facts = { git_short = "aaaaaaa", git_commit_time = 10 } })
    local ordered = plot.order { d1, d2 }
    assert.equal(d2, ordered[1])
    local svg = plot.render { d1, d2 }
    assert.matches("^<svg ", svg)
    assert.matches("</svg>\n$", svg)
    assert.matches("syn · m", svg)
    assert.matches("syn · n", svg)
    -- the first run in git order is aaaaaaa: its median 5 is listed first
    assert.is_true(svg:find("aaaaaaa: median 5", 1, true) < svg:find("bbbbbbb: median 2", 1, true))
    assert.matches("no measures", plot.render({ d1 }, { only = "nothing" }))
  end)
end)

describe("bench/lib.lua harness", function()
  local function fresh_lib()
    local lib = dofile("bench/lib.lua")
    local now, calls = 0, {}
    lib.clock = function() now = now + 1e-6; return now end
    -- a variant of cost c seconds advances the fake clock by c
    local function variant(label, cost)
      return { label, function() calls[#calls + 1] = label; now = now + cost end }
    end
    return lib, variant, calls
  end

  it("interleaves the variants ABBA and computes a ratio per round", function()
    local lib, variant, calls = fresh_lib()
    local r = lib.run { name = "t", unit = "ns/op", units = 1, reps = 4, warmup = 1,
      variants = { variant("A", 0.001), variant("B", 0.003) } }
    assert.same({ "A", "B", "A", "B", "B", "A", "A", "B", "B", "A" }, calls)
    assert.equal(4, r.A.n)
    assert.near(1e6, r.A.median, 5e3)
    assert.near(3e6, r.B.median, 5e3)
    local ratio = r.ratio["A vs B"]
    assert.equal(4, #ratio.values)
    for _, v in ipairs(ratio.values) do assert.near(3, v, 0.01) end
    assert.equal("higher", ratio.direction)
    assert.equal(2, #ratio.sides)
    assert.same(r.B.values, ratio.sides[2].values)
    -- recorded: the three measures, named
    local names = {}
    for _, m in ipairs(lib.measures) do names[#names + 1] = m.name end
    assert.same({ "t: A", "t: B", "t: A vs B" }, names)
  end)

  it("spends the budget: at least min_reps, at most max_reps rounds", function()
    local lib, variant = fresh_lib()
    local r = lib.run { name = "b", unit = "ns/op", units = 1, min_reps = 3, max_reps = 50, budget = 0.01,
      variants = { variant("A", 0.001) } }
    assert.equal(10, r.A.n)
    local r2 = lib.run { name = "c", unit = "ns/op", units = 1, min_reps = 3, max_reps = 5, budget = 100,
      variants = { variant("A", 0.001) } }
    assert.equal(5, r2.A.n)
  end)

  it("converts units: rates are higher-is-better", function()
    local lib, variant = fresh_lib()
    local r = lib.run { name = "r", unit = "MB/s", units = 1e6, reps = 3, variants = { variant("A", 0.5) } }
    assert.equal("higher", r.A.direction)
    assert.near(2, r.A.median, 0.01)
    assert.has_error(function() lib.run { name = "x", unit = "furlongs", units = 1, fn = function() end } end)
    assert.has_error(function() lib.run { name = "x", unit = "ns/op", units = 1, fn = function() end, colour = 1 } end)
    assert.has_error(function() lib.run { name = "x", unit = "ns/op", units = 1, fn = function() end, gc = "maybe" } end)
  end)

  it("the slowdown switch makes only the named variant slower, by the fraction", function()
    local lib, variant = fresh_lib()
    lib.slow = { text = "s: A", by = 0.25 }
    local r = lib.run { name = "s", unit = "ns/op", units = 1, reps = 5, variants = { variant("A", 0.004), variant("B", 0.004) } }
    assert.near(1.25, r.A.median / r.B.median, 0.01)
    assert.near(0.8, r.ratio["A vs B"].median, 0.01)
    assert.equal(0.25, r.A.injected_slowdown)
    assert.is_nil(r.B.injected_slowdown)
  end)

  it("keeps every result out of the JIT's reach, and shortens a warm-up of long repetitions", function()
    local lib = fresh_lib()
    local seen, k = {}, 0
    lib.run { name = "k", unit = "ns/op", calls = 4, reps = 1, warmup = 1,
      variants = { { "A", function(i) k = k + 1; seen[k] = lib.sink[1] or false; return i * 10 end } } }
    -- each call finds the previous call's result stored (none at the start
    -- of a repetition): the warm-up round, then the timed one
    assert.same({ false, 10, 20, 30, false, 10, 20, 30 }, seen)
    assert.is_nil(lib.sink[1]) -- nothing kept alive after the measure
    -- warm-up: a round that spent half the budget is the last one
    local now, n = 0, 0
    lib.clock = function() return now end
    lib.run { name = "w", unit = "ns/op", units = 1, warmup = 3, reps = 2, budget = 0.4,
      variants = { { "A", function() n = n + 1; now = now + 0.3 end } } }
    assert.equal(1 + 2, n)
    n = 0
    lib.run { name = "w2", unit = "ns/op", units = 1, warmup = 3, reps = 2, budget = 0.4,
      variants = { { "A", function() n = n + 1; now = now + 0.01 end } } }
    assert.equal(3 + 2, n)
  end)

  it("divides a bench's repetitions among the run's processes", function()
    local lib = fresh_lib()
    assert.equal(1, lib.procs)
    assert.is_true(lib.first_process())
    assert.equal(9, lib.reps(9))
    lib.procs = 2
    assert.equal(5, lib.reps(9))
    assert.equal(3, lib.reps(5))
  end)

  it("keeps the original helpers: time and time_batch return seconds and record a measure", function()
    local lib = fresh_lib()
    lib.title("old style")
    local n = 0
    local t = lib.time(function() n = n + 1 end, 100, 5)
    assert.is_true(t > 0)
    assert.equal(500, n)
    assert.is_true(lib.time_batch(function() end, 10) > 0)
    assert.equal("old style [1]: otskit", lib.measures[1].name)
    assert.equal("old style [2]: otskit", lib.measures[2].name)
    assert.equal(5, lib.measures[1].n)
    assert.equal("1235", lib.fmt(1234.6))
    assert.equal("12.3", lib.fmt(12.345))
    assert.equal("0.00123", lib.fmt(0.0012345))
    assert.equal("2 ±25%", lib.spread { median = 2, iqr = 1, n = 3 })
  end)
end)

describe("an end-to-end quick run", function()
  it("runs a bench through run.sh into one JSON document and compares within noise with itself", function()
    local dir = tmpname()
    assert(os.execute("mkdir -p " .. dir))
    local out = dir .. "/run.json"
    local log, code = sh("OTSKIT_BENCH_BUDGET=0.02 OTSKIT_BENCH_ECHO=0 OUT=" .. out .. " sh bench/run.sh timeseries")
    assert.equal(0, code, log)
    local doc = assert(report.load(out))
    assert.equal("quick", doc.mode)
    for _, k in ipairs { "cpu_model", "cores", "kernel", "lua", "luajit", "compiler", "git_revision", "load_start" } do
      assert.is_not_nil(doc.facts[k], k)
    end
    assert.is_boolean(doc.facts.git_dirty)
    assert.equal(2, #doc.benches)
    local ratios = 0
    for _, b in ipairs(doc.benches) do assert.equal(2, b.procs) end
    local tagged = 0
    for _, m in ipairs(report.measures(doc)) do
      assert.equal(m.n, #m.values)
      if m.process then
        tagged = tagged + 1
        assert.equal(#m.values, #m.process)
        assert.same(stats.process_medians(m.values, m.process), m.process_medians)
        assert.equal(2, #m.process_medians)
      end
      local s = stats.summary(m.values)
      assert.near(s.median, m.median, 1e-6 * math.abs(s.median))
      assert.is_true(m.n >= (m.kind == "value" and 1 or 5), m.id)
      if m.kind == "ratio" then
        ratios = ratios + 1
        assert.equal(2, #m.sides)
        assert.equal(m.n, #m.sides[1].values)
      end
    end
    assert.is_true(ratios >= 4) -- 2 per interpreter
    assert.is_true(tagged >= 12) -- every timed measure, in both processes
    local res, c2 = sh(INTERP .. " bench/runs.lua compare --all " .. out .. " " .. out)
    assert.equal(0, c2, res)
    assert.matches("100%% within noise", res)
    os.execute("rm -rf " .. dir)
  end)
end)
