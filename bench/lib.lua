--- bench/lib.lua -- the shared bench harness. Every bench checks that
-- otskit and its peers produce the same output before timing them; this
-- file times them and records every measure as data (bench/runner.lua
-- writes it as JSON; bench/run.sh gathers the runs into one document).
--
-- Noise is handled by design (docs/bench.md "Noise, by design"):
--  * separate processes: bench/run.sh runs every bench in PROCS processes
--    per interpreter, which divide the repetitions (bench.procs, below);
--  * warm-up: each variant runs untimed before its repetitions (once; on
--    LuaJIT up to three times, whose traces form over the first
--    repetitions), and on LuaJIT each measure starts with no traces;
--  * every result is kept (bench.sink), so no JIT drops the work;
--  * interleaving: the variants of one measure take turns, in ABBA order
--    (A B, B A, A B, ...), so a drift of the machine hits every variant
--    alike, and a ratio is computed per round, from adjacent repetitions;
--  * GC: a full collection before every repetition (each starts from the
--    same heap); with gc = "stop" the collector is also stopped while the
--    repetition is timed (for short repetitions that allocate little);
--  * a time budget per measure: at least min_reps rounds, then rounds until
--    the budget is spent, at most max_reps;
--  * CPU time (os.clock), and medians with their spread everywhere.
--
-- Two styles, both recorded:
--  * bench.run{ ... } (the measure API, below): named measures, units,
--    ratios per pair;
--  * the original helpers bench.time / bench.time_batch (median seconds)
--    with bench.title / bench.table / bench.row (markdown): their timings
--    are recorded as measures named "<title> [n]" (n-th timing of that
--    section), so a bench written this way still produces JSON.
local stats = require "bench_stats"

local bench = {}

bench.interp = jit and jit.version or _VERSION
bench.abi = jit and "luajit" or "lua5.4"
bench.quick = os.getenv("OTSKIT_BENCH_QUICK") ~= nil
bench.clock = os.clock

local function envnum(name, default)
  local v = os.getenv(name)
  if v == nil or v == "" then return default end
  local n = tonumber(v)
  if not n or n < 0 then error(("bench: %s must be a non-negative number, got %q"):format(name, v), 0) end
  return n
end

-- A run measures every bench in `procs` separate processes per
-- interpreter (bench/run.sh: PROCS, default 2); this is process number
-- `process` of them. Processes of the same code differ by 5-25 % (memory
-- layout, CPU frequency, LuaJIT's trace choices) where the repetitions of
-- one process agree within 1-3 %: `bench/runs.lua compare` needs that
-- between-process spread, so each run measures it. The repetitions are
-- divided among the processes: a run costs the same time.
bench.procs = math.floor(envnum("OTSKIT_BENCH_PROCS", 1))
bench.process = math.floor(envnum("OTSKIT_BENCH_PROCESS", 1))
if bench.procs < 1 or bench.process < 1 or bench.process > bench.procs then
  error(("bench: OTSKIT_BENCH_PROCESS %d of OTSKIT_BENCH_PROCS %d"):format(bench.process, bench.procs), 0)
end

--- bench.first_process() -> true in the first process of a run. Exact
-- values (simulations, counts, sizes) are the same in every process: a
-- bench computes them in the first only and saves the others the time.
function bench.first_process() return bench.process == 1 end

--- bench.reps(n) -> this process's share of n repetitions (at least 3),
-- for a bench that sets min_reps itself.
function bench.reps(n) return math.max(3, math.ceil(n / bench.procs)) end

-- false: keep LuaJIT's traces from one measure to the next (bench.run)
bench.flush = true

-- defaults of every measure (a spec may override each); the budget and the
-- rounds are those of the whole run, shared by its processes
local P = bench.procs
bench.defaults = {
  budget = envnum("OTSKIT_BENCH_BUDGET", bench.quick and 0.4 or 1.5) / P, -- CPU seconds per measure
  -- at least 5 per process: a median of fewer is one unlucky repetition away
  min_reps = math.max(5, math.ceil((bench.quick and 9 or 11) / P)),
  max_reps = math.max(5, math.ceil((bench.quick and 25 or 51) / P)),
  -- LuaJIT needs more: its traces form over the first repetitions
  warmup = jit and 3 or 1,
}

-- The test-only slowdown switch (bench/NOTES.md, acceptance):
-- OTSKIT_BENCH_SLOW="<text>=<fraction>" makes every timed repetition of the
-- variants whose measure name contains <text> take (1 + fraction) times as
-- long, by spinning after the work inside the timed window. It lives here,
-- in the harness: the product code is untouched and pays nothing.
-- (bench.slow = {text =, by =} is the same switch set from Lua, for the specs)
do
  local s = os.getenv("OTSKIT_BENCH_SLOW")
  if s and s ~= "" then
    local text, by = s:match("^(.+)=([%d.]+)$")
    by = tonumber(by)
    if not text or not by then error(("bench: OTSKIT_BENCH_SLOW must be TEXT=FRACTION, got %q"):format(s), 0) end
    bench.slow = { text = text, by = by }
  end
end

-- ---- recording ----------------------------------------------------------

bench.sections = {}   -- { title =, text = {chunks} }
bench.measures = {}   -- every measure, in order
local current         -- the section being written
local per_title = {}  -- title -> number of old-style timings in it
local names = {}      -- measure name -> true (names are unique per run)

local function section()
  if not current then
    current = { title = "", text = {} }
    bench.sections[#bench.sections + 1] = current
  end
  return current
end

local function unique(name)
  local n, k = name, 2
  while names[n] do n = ("%s #%d"):format(name, k); k = k + 1 end
  names[n] = true
  return n
end

-- adds a measure: m = { name, unit, direction, values, kind, ... }
local function record(m)
  m.name = unique(m.name)
  local s = stats.summary(m.values)
  m.median, m.min, m.max, m.q1, m.q3, m.iqr, m.n = s.median, s.min, s.max, s.q1, s.q3, s.iqr, s.n
  m.section = section().title
  bench.measures[#bench.measures + 1] = m
  return m
end

-- ---- units ----------------------------------------------------------------

-- unit -> direction and the conversion of seconds per unit of work
local function convert(unit)
  if type(unit) ~= "string" then error("bench: unit must be a string such as 'ns/row' or 'MB/s'", 3) end
  local scale = { ns = 1e9, us = 1e6, ["µs"] = 1e6, ms = 1e3, s = 1 }
  local pre = unit:match("^(%S-)/")
  if pre and scale[pre] then
    local f = scale[pre]
    return "lower", function(sec) return sec * f end
  end
  local what = unit:match("^(.+)/s$")
  if what then
    local f = (what == "GB" and 1e-9) or ((what == "MB" or what:match("^M%a")) and 1e-6)
      or ((what == "KB" or what == "kB") and 1e-3) or 1
    return "higher", function(sec) return f / sec end
  end
  error(("bench: unit %q: expected '<ns|us|ms|s>/<thing>' or '<thing>/s' (MB/s, GB/s, rows/s)"):format(unit), 3)
end

-- ---- timing ----------------------------------------------------------------

local function spin(t0, want)
  local clock = bench.clock
  while clock() - t0 < want do end
end

-- one timed repetition of variant v: seconds
-- A calling loop of its own for each variant (a fresh function prototype
-- from load): on LuaJIT one loop shared by every variant gets one trace
-- specialised to whichever closure it saw first, and the others run
-- through side exits, so a variant's speed depended on the order.
-- Every result is stored into a table the JIT cannot see through (sink):
-- a result nobody used let LuaJIT sink its allocations and drop the work
-- (blob's naive split measured 1678 GB/s, 8 MB in 5 us, in some processes).
local LOOP = "local fn, n, sink = ... for i = 1, n do sink[1] = fn(i) end"
local function new_loop()
  return assert((loadstring or load)(LOOP, "=bench loop"))
end
local sink = {}
bench.sink = sink

local function once(v, calls, gc_stop)
  local clock, fn, loop = bench.clock, v.fn, v.loop
  sink[1] = nil -- the last repetition's result is garbage now
  collectgarbage("collect")
  if gc_stop then collectgarbage("stop") end
  local t0 = clock()
  if calls then loop(fn, calls, sink) else sink[1] = fn() end
  local t = clock() - t0
  if v.slow then spin(t0, t * (1 + v.slow)); t = clock() - t0 end
  if gc_stop then collectgarbage("restart") end
  return t
end

--- bench.run(spec) -> result. Times the variants of one measure,
-- interleaved, and records them. spec:
--   name      the measure's name (unique in the bench; the variants are
--             recorded as "<name>: <label>", ratios as "<name>: A vs B")
--   unit      "ns/key", "us/page", ... (lower is better) or "rows/s",
--             "MB/s", "GB/s" (higher is better)
--   variants  { {label, fn}, ... } (or fn = a single function, label
--             "otskit"); every variant does the same work
--   calls     fn(i) is called for i = 1..calls per repetition (units =
--             calls); otherwise fn() is called once and does `units` units
--   units     units of work per repetition (bytes for MB/s)
--   ratios    { {A, B}, ... } label pairs: recorded "A vs B" = time B /
--             time A per round (how many times faster A is; higher is
--             better). Default: the first variant against each other one;
--             false for none
--   gc        "run" (default: the collector runs while timed, its cost
--             counts) or "stop"
--   warmup, min_reps, max_reps, budget, reps (fixed count): see defaults
-- result[label] = the variant's measure (values in `unit`, median, min,
-- q1, q3, iqr, n, seconds = median seconds per unit);
-- result.ratio[A .. " vs " .. B] = the ratio measure.
function bench.run(spec)
  if type(spec) ~= "table" or type(spec.name) ~= "string" then error("bench.run: spec.name required", 2) end
  local known = { name = 1, unit = 1, variants = 1, fn = 1, calls = 1, units = 1, ratios = 1, gc = 1,
    warmup = 1, min_reps = 1, max_reps = 1, budget = 1, reps = 1, note = 1 }
  for k in pairs(spec) do
    if not known[k] then error(("bench.run: unknown option %q"):format(tostring(k)), 2) end
  end
  local direction, conv = convert(spec.unit)
  local variants = spec.variants or { { "otskit", spec.fn } }
  local calls = spec.calls
  local units = spec.units or calls
  if type(units) ~= "number" or units <= 0 then error("bench.run: units (or calls) must be a positive number", 2) end
  if spec.gc ~= nil and spec.gc ~= "run" and spec.gc ~= "stop" then error("bench.run: gc must be 'run' or 'stop'", 2) end
  local gc_stop = spec.gc == "stop"
  local D = bench.defaults
  local min_reps = spec.reps or spec.min_reps or D.min_reps
  local max_reps = spec.reps or spec.max_reps or math.max(D.max_reps, min_reps)
  local budget = spec.budget or D.budget
  local vs, by = {}, {}
  for i, v in ipairs(variants) do
    local label, fn = v[1], v[2]
    if type(label) ~= "string" or type(fn) ~= "function" then
      error("bench.run: each variant is {label, function}", 2)
    end
    if by[label] then error(("bench.run: variant %q twice"):format(label), 2) end
    local full = spec.name .. ": " .. label
    local slow = bench.slow
    vs[i] = { label = label, fn = fn, name = full, t = {}, loop = new_loop(),
      slow = slow and full:find(slow.text, 1, true) and slow.by or nil }
    by[label] = vs[i]
  end
  -- LuaJIT: every measure starts from an empty trace cache. Without this a
  -- measure ran on the traces the earlier measures left, which differ from
  -- process to process (hot counters are indexed by bytecode address): in
  -- key_ffi, buckets:of took 3 ns/call in one process and 18 ns in another,
  -- depending on whether key.pack's element loop had become a root trace.
  if jit and bench.flush then jit.flush() end
  -- the warm-up rounds stop early (after the first) once they have spent
  -- half the budget: a round of long repetitions has run their loops
  -- thousands of times, enough for the traces to form
  local warm, clock = 0, bench.clock
  for w = 1, spec.warmup or D.warmup do
    if w > 1 and warm >= budget / 2 then break end
    local t0 = clock()
    for _, v in ipairs(vs) do
      if calls then v.loop(v.fn, calls, sink) else sink[1] = v.fn() end
    end
    warm = warm + clock() - t0
  end
  -- rounds in ABBA order until min_reps and the budget are spent
  local spent, r = 0, 0
  while r < max_reps and (r < min_reps or spent < budget) do
    r = r + 1
    local n = #vs
    for j = 1, n do
      local v = vs[r % 2 == 1 and j or n + 1 - j]
      local t = once(v, calls, gc_stop)
      v.t[r] = t
      spent = spent + t
    end
  end
  sink[1] = nil
  local result = { ratio = {} }
  for _, v in ipairs(vs) do
    local vals = {}
    for k, t in ipairs(v.t) do vals[k] = conv(t / units) end
    local m = record { name = v.name, unit = spec.unit, direction = direction, kind = "time",
      values = vals, gc = gc_stop and "stop" or "run", order = "ABBA", variant = v.label, measure = spec.name,
      injected_slowdown = v.slow }
    m.seconds = stats.median(v.t) / units
    result[v.label] = m
  end
  local pairs_ = spec.ratios
  if pairs_ == nil then
    pairs_ = {}
    for j = 2, #vs do pairs_[#pairs_ + 1] = { vs[1].label, vs[j].label } end
  end
  for _, p in ipairs(pairs_ or {}) do
    local a, b = by[p[1]], by[p[2]]
    if not a or not b then error(("bench.run: ratio of unknown variants %s, %s"):format(tostring(p[1]), tostring(p[2])), 2) end
    local vals = {}
    for k = 1, r do vals[k] = b.t[k] / a.t[k] end
    local key = a.label .. " vs " .. b.label
    result.ratio[key] = record { name = spec.name .. ": " .. key, unit = "x", direction = "higher",
      kind = "ratio", values = vals, measure = spec.name, order = "ABBA",
      sides = { { label = a.label, unit = spec.unit, values = result[a.label].values },
                { label = b.label, unit = spec.unit, values = result[b.label].values } },
      note = "time of " .. b.label .. " / time of " .. a.label .. " in the same round" }
  end
  return result
end

--- bench.measure(name, unit, fn, units | {calls =, ...}) -> the measure:
-- one variant; a shorthand for bench.run.
function bench.measure(name, unit, fn, opts)
  local spec = type(opts) == "table" and opts or { units = opts }
  spec.name, spec.unit, spec.fn = name, unit, fn
  return bench.run(spec).otskit
end

--- bench.value(name, unit, direction, value) -> the measure: one exact
-- value (a count, a compression ratio, a simulated time): compare reports
-- it "same" or changed, without a test.
function bench.value(name, unit, direction, value)
  if direction ~= "lower" and direction ~= "higher" then error("bench.value: direction must be 'lower' or 'higher'", 2) end
  if type(value) ~= "number" then error("bench.value: value must be a number", 2) end
  return record { name = name, unit = unit, direction = direction, kind = "value", values = { value } }
end

-- ---- the original helpers (kept: other benches use them) ----------------

-- Median of a list of numbers.
function bench.median(xs) return stats.median(xs) end

-- an old-style timing, recorded as "<title> [n]" in ns per call
local function old_time(fn, n, reps, batch)
  local title = section().title
  per_title[title] = (per_title[title] or 0) + 1
  local name = ("%s [%d]"):format(title ~= "" and title or "timing", per_title[title])
  reps = math.max(reps or (bench.quick and 3 or 7), 5)
  local r = bench.run { name = name, unit = "ns/call", units = n, calls = (not batch) and n or nil,
    variants = { { "otskit", fn } }, ratios = false, reps = reps, warmup = 0 }
  return r.otskit.seconds
end

--- bench.time(fn, n [, reps]) -> median seconds per call of fn(i) over reps
-- repetitions of n calls (CPU time; benches are single-threaded).
function bench.time(fn, n, reps) return old_time(fn, n, reps, false) end

--- bench.time_batch(fn, units [, reps]) -> median seconds per unit, where
-- one call of fn() does `units` units of work.
function bench.time_batch(fn, units, reps) return old_time(fn, units, reps, true) end

--- bench.same(a, b, what): raises unless the two outputs are equal (deeply
-- for arrays of strings/numbers), so no bench times two different answers.
function bench.same(a, b, what)
  if type(a) == "table" and type(b) == "table" then
    if #a ~= #b then error(("bench: %s: %d vs %d results"):format(what, #a, #b), 2) end
    for i = 1, #a do
      if a[i] ~= b[i] then
        error(("bench: %s differ at %d: %q vs %q"):format(what, i, tostring(a[i]), tostring(b[i])), 2)
      end
    end
  elseif a ~= b then
    error(("bench: %s differ: %q vs %q"):format(what, tostring(a), tostring(b)), 2)
  end
end

--- bench.title(text): a section heading naming the interpreter; the
-- measures recorded after it belong to this section.
function bench.title(text)
  current = { title = text, text = {} }
  bench.sections[#bench.sections + 1] = current
  io.write(("\n### %s — %s\n\n"):format(text, bench.interp))
end

--- bench.table(cols): starts a markdown table with these column names.
function bench.table(cols)
  io.write("| ", table.concat(cols, " | "), " |\n")
  io.write("|", ("---|"):rep(#cols), "\n")
end

--- bench.fmt(x) -> text: 3 significant digits, never an exponent
-- (1234.5 -> "1235", 12.345 -> "12.3", 0.001234 -> "0.00123").
function bench.fmt(x)
  if x ~= x then return "nan" end
  if x == math.huge or x == -math.huge then return x > 0 and "inf" or "-inf" end
  local a = math.abs(x)
  if a == math.floor(a) and a < 1e15 then return ("%d"):format(x) end
  if a >= 100 then return ("%.0f"):format(x) end
  if a >= 10 then return ("%.1f"):format(x) end
  if a >= 1 then return ("%.2f"):format(x) end
  if a == 0 then return "0" end
  local digits = math.min(12, 2 - math.floor(math.log(a, 10)))
  return (("%." .. digits .. "f"):format(x))
end

--- bench.spread(m) -> "median ±h%": h = half the interquartile range in %
-- of the median (the spread of the repetitions).
function bench.spread(m)
  if m.n == 1 or m.median == 0 then return bench.fmt(m.median) end
  local h = 50 * m.iqr / math.abs(m.median)
  return ("%s ±%s%%"):format(bench.fmt(m.median), h >= 10 and ("%.0f"):format(h) or ("%.1f"):format(h))
end

--- bench.row(...): one markdown row; numbers get 3 significant digits
-- (bench.fmt), measures (bench.run results) their median and spread.
function bench.row(...)
  local cells = {}
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    if type(v) == "number" then v = bench.fmt(v)
    elseif type(v) == "table" and v.median then v = bench.spread(v) end
    cells[i] = tostring(v)
  end
  io.write("| ", table.concat(cells, " | "), " |\n")
end

-- ns per call, for the rows
function bench.ns(sec) return sec * 1e9 end

-- ---- capture (bench/runner.lua) --------------------------------------------

--- bench.capture(echo): from now on io.write and print also append to the
-- current section's text (echo: still write to stdout too).
function bench.capture(echo)
  local write, out = io.write, io.stdout
  local function add(s)
    local sec = section()
    sec.text[#sec.text + 1] = s
  end
  io.write = function(...) -- luacheck: ignore
    for i = 1, select("#", ...) do add(tostring((select(i, ...)))) end
    if echo then return write(...) end
    return out
  end
  print = function(...) -- luacheck: ignore
    local t = {}
    for i = 1, select("#", ...) do t[i] = tostring((select(i, ...))) end
    io.write(table.concat(t, "\t"), "\n")
  end
end

--- bench.document() -> the bench's recorded data (a plain table for JSON)
function bench.document()
  local secs = {}
  for _, s in ipairs(bench.sections) do
    local text = table.concat(s.text)
    if s.title ~= "" or text:find("%S") then secs[#secs + 1] = { title = s.title, text = text } end
  end
  return { interp = bench.interp, abi = bench.abi, quick = bench.quick, sections = secs,
    measures = bench.measures, budget = bench.defaults.budget,
    min_reps = bench.defaults.min_reps, max_reps = bench.defaults.max_reps,
    process = bench.process, procs = bench.procs, injected_slowdown = bench.slow }
end

return bench
