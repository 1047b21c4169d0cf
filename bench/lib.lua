--- bench/lib.lua -- the shared bench harness. Every bench checks that
-- otskit and its peers produce the same output before timing them, times
-- each with several repetitions, and reports medians and ratios as
-- markdown rows (bench/run.sh gathers them into bench/RESULTS.md).
local bench = {}

bench.interp = jit and jit.version or _VERSION
bench.quick = os.getenv("OTSKIT_BENCH_QUICK") ~= nil

-- Median of a list of numbers.
function bench.median(xs)
  local t = {}
  for i, v in ipairs(xs) do t[i] = v end
  table.sort(t)
  local n = #t
  if n % 2 == 1 then return t[(n + 1) / 2] end
  return (t[n / 2] + t[n / 2 + 1]) / 2
end

--- bench.time(fn, n [, reps]) -> median seconds per call of fn(i) over reps
-- repetitions of n calls (CPU time; benches are single-threaded).
function bench.time(fn, n, reps)
  reps = reps or (bench.quick and 3 or 7)
  local per = {}
  for r = 1, reps do
    collectgarbage("collect")
    local t0 = os.clock()
    for i = 1, n do fn(i) end
    per[r] = (os.clock() - t0) / n
  end
  return bench.median(per)
end

--- bench.time_batch(fn, units [, reps]) -> median seconds per unit, where
-- one call of fn() does `units` units of work.
function bench.time_batch(fn, units, reps)
  reps = reps or (bench.quick and 3 or 7)
  local per = {}
  for r = 1, reps do
    collectgarbage("collect")
    local t0 = os.clock()
    fn()
    per[r] = (os.clock() - t0) / units
  end
  return bench.median(per)
end

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

--- bench.title(text): a section heading naming the interpreter.
function bench.title(text)
  io.write(("\n### %s — %s\n\n"):format(text, bench.interp))
end

--- bench.table(cols): starts a markdown table with these column names.
function bench.table(cols)
  io.write("| ", table.concat(cols, " | "), " |\n")
  io.write("|", ("---|"):rep(#cols), "\n")
end

--- bench.row(...): one markdown row; numbers get 3 significant digits.
function bench.row(...)
  local cells = {}
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    if type(v) == "number" then v = (v == math.floor(v) and v < 1e15) and ("%d"):format(v) or ("%.3g"):format(v) end
    cells[i] = tostring(v)
  end
  io.write("| ", table.concat(cells, " | "), " |\n")
end

-- ns per call, for the rows
function bench.ns(sec) return sec * 1e9 end

return bench
