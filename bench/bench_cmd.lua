--- bench_cmd -- the bench results as data (docs/bench.md), the commands
-- of bench/runs.lua (lua5.4 or luajit bench/runs.lua ...):
--   compare BASE.json NEW.json   verdict per measure; exit 1 on a
--                                significant regression (make bench-compare)
--   plot RUN.json...             SVG of every measure across runs
--   report RUN.json              RESULTS.md sections from a run
--   collect -o RUN.json PART...  (bench/run.sh) one run document
-- The runs themselves: `make bench` (bench/run.sh). Tooling of the
-- repository, not of the library: never installed.
local stats = require "bench_stats"
local report = require "bench_report"

local cmd = {}

function cmd.configure(p)
  p:command_target("bench_command")
  local c = p:command("compare", "Compare two runs measure by measure; exit 1 on a regression.")
  c:argument("base", "The baseline run (JSON).")
  c:argument("new", "The new run (JSON).")
  c:option("--threshold", "A regression: significantly more than this many % slower (the 95% interval wholly beyond).", "10")
  c:option("--alpha", "Significance level of the Mann-Whitney U test.", "0.05")
  c:option("--min-effect", "Changes smaller than this many % are within noise.", "5")
  c:option("--only", "Only measures whose id (bench | name | interpreter) contains this text.")
  c:option("--kind", "Only these measures: ratio (otskit against its peer in the same rounds: robust on a shared machine), time, value, or all.", "all")
   :choices { "all", "ratio", "time", "value" }
  c:flag("--all", "Also list the measures within noise (default: only changes).")
  c:epilog("Exit status: 0 no regression, 1 a regression (or a bench failed in the new run), 2 bad input.")
  local pl = p:command("plot", "SVG of every measure across runs, in git order, with its spread.")
  pl:argument("runs", "Run documents (JSON)."):args("+")
  pl:option("-o --output", "The SVG file.", "bench-trend.svg")
  pl:option("--only", "Only measures whose id contains this text.")
  local r = p:command("report", "Write RESULTS.md sections from a run (the other sections are kept).")
  r:argument("run", "A run document (JSON).")
  r:option("-o --output", "The markdown file to update ('-' for stdout).", "bench/RESULTS.md")
  local co = p:command("collect", "Gather bench/runner.lua outputs and the run's facts into one run document.")
  co:argument("parts", "The JSON files bench/runner.lua wrote."):args("*")
  co:option("-o --output", "The run document to write."):count(1)
  co:option("--mode", "quick or full.", "quick"):choices { "quick", "full" }
end

local function num(s, what, lo, hi)
  local n = tonumber(s)
  if not n or n < lo or n > hi then
    io.stderr:write(("bench: %s must be a number in [%g, %g], got %q\n"):format(what, lo, hi, tostring(s)))
    return nil
  end
  return n
end

local function pct(x)
  if x == math.huge then return "+inf" end
  if x == -math.huge then return "-inf" end
  return ("%+.1f%%"):format(100 * x)
end

--- cmd.compare(base, new, opts) -> rows, summary. base, new: run documents;
-- opts: threshold, alpha, min_effect (fractions), only (text in the id),
-- kind ("ratio", "time", "value" or "all"). rows: one per
-- measure present in both runs ({ id, bench, abi, name, unit, direction,
-- kind, r = stats.compare result }), in the new run's order; summary:
-- counts per verdict, regressions (list of rows), missing (ids in only one run).
function cmd.compare(base, new, opts)
  opts = opts or {}
  local b_by = {}
  for _, m in ipairs(report.measures(base)) do b_by[m.id] = m end
  local rows, seen = {}, {}
  local summary = { faster = 0, slower = 0, ["within noise"] = 0, same = 0, regressions = {}, missing = {},
    with_between = 0, between_noise = 0 }
  local function wanted(m)
    return (not opts.only or m.id:find(opts.only, 1, true)) and (not opts.kind or opts.kind == "all" or m.kind == opts.kind)
  end
  for _, m in ipairs(report.measures(new)) do
    if wanted(m) then
      local bm = b_by[m.id]
      seen[m.id] = true
      if bm then
        local r = stats.compare(bm.values, m.values, { direction = m.direction, alpha = opts.alpha,
          threshold = opts.threshold, min_effect = opts.min_effect, base_tags = bm.process, new_tags = m.process })
        local row = { id = m.id, bench = m.bench, abi = m.abi, name = m.name, unit = m.unit,
          direction = m.direction, kind = m.kind, r = r }
        rows[#rows + 1] = row
        summary[r.verdict] = summary[r.verdict] + 1
        if r.between then summary.with_between = summary.with_between + 1 end
        if r.significant and r.verdict == "within noise" and r.between
          and math.abs(r.between.delta) <= r.between.band then
          summary.between_noise = summary.between_noise + 1
        end
        if r.regression then summary.regressions[#summary.regressions + 1] = row end
      else
        summary.missing[#summary.missing + 1] = "only in the new run: " .. m.id
      end
    end
  end
  for _, m in ipairs(report.measures(base)) do
    if not seen[m.id] and wanted(m) then
      summary.missing[#summary.missing + 1] = "only in the base run: " .. m.id
    end
  end
  summary.total = #rows
  return rows, summary
end

local function run_compare(a)
  local th = num(a.threshold, "--threshold", 0, 1000)
  local alpha = num(a.alpha, "--alpha", 0, 1)
  local me = num(a.min_effect, "--min-effect", 0, 1000)
  if not th or not alpha or not me then return 2 end
  local base, err = report.load(a.base)
  if not base then io.stderr:write("bench compare: ", err, "\n"); return 2 end
  local new, err2 = report.load(a.new)
  if not new then io.stderr:write("bench compare: ", err2, "\n"); return 2 end
  local rows, s = cmd.compare(base, new, { threshold = th / 100, alpha = alpha, min_effect = me / 100, only = a.only, kind = a.kind })
  local bf, nf = base.facts or {}, new.facts or {}
  print(("base: %s (%s%s, %s run %s)"):format(a.base, bf.git_short or "?", bf.git_dirty and ", dirty" or "",
    base.mode or "?", base.created or "?"))
  print(("new:  %s (%s%s, %s run %s)"):format(a.new, nf.git_short or "?", nf.git_dirty and ", dirty" or "",
    new.mode or "?", new.created or "?"))
  if bf.cpu_model ~= nf.cpu_model then print("WARNING: different CPUs: " .. tostring(bf.cpu_model) .. " / " .. tostring(nf.cpu_model)) end
  if base.mode ~= new.mode then print("WARNING: a " .. tostring(base.mode) .. " run against a " .. tostring(new.mode) .. " run") end
  print(("verdict: faster/slower when (1) the repetitions differ: Mann-Whitney U p < %g and the bootstrap interval of"):format(alpha))
  print("  median(new)/median(base) excludes 1, (2) the change is larger than the processes of one run differ: the")
  print(("  log process medians of new and base differ by more than t(%g, df) * s * sqrt(1/kb + 1/kn), s their pooled"):format(1 - alpha / 2))
  print(("  spread within each run (column 'procs'; skipped for runs without process tags), and (3) it is at least %g%%;"):format(me))
  print("  otherwise within noise.")
  print(("regression: slower, with the whole interval and the processes' mean change beyond %g%% (significantly more than %g%% slower)."):format(th, th))
  print("base/new: median ±half the IQR; change: of the median (+ = higher); CI: 95% bootstrap interval of median(new)/median(base);")
  print("  procs: the between-process band (±%) a change must exceed, '-' without one.")
  print()
  local group
  local shown = 0
  for _, row in ipairs(rows) do
    local r = row.r
    if a.all or r.verdict == "faster" or r.verdict == "slower" then
      local g = row.bench .. " (" .. row.abi .. ")"
      if g ~= group then
        group = g
        print("## " .. g)
        print(("| %-60s | %-16s | %-16s | %-8s | %-7s | %-7s | %-13s | %s |"):format("measure", "base", "new", "change", "p",
          "procs", "95% CI ratio", "verdict"))
        print("|" .. ("-"):rep(62) .. "|" .. ("-"):rep(18) .. "|" .. ("-"):rep(18) .. "|" .. ("-"):rep(10) .. "|" .. ("-"):rep(9)
          .. "|" .. ("-"):rep(9) .. "|" .. ("-"):rep(15) .. "|---------|")
      end
      local ci = r.lo and ("%.3f–%.3f"):format(r.lo, r.hi) or ""
      local verdict = r.verdict .. (r.regression and " REGRESSION" or "")
      local band = r.between and ("±%.1f%%"):format(100 * (math.exp(r.between.band) - 1)) or "-"
      print(("| %-60s | %-16s | %-16s | %-8s | %-7s | %-7s | %-13s | %s |"):format(
        (row.name .. " [" .. row.unit .. (row.direction == "higher" and ", higher is better" or "") .. "]"):sub(1, 60),
        report.spread(r.base), report.spread(r.new), pct(r.change),
        r.p and ("%.4f"):format(r.p) or "-", band, ci, verdict))
      shown = shown + 1
    end
  end
  if shown == 0 and #rows > 0 then print("(no measure changed; --all lists them all)") end
  for _, m in ipairs(s.missing) do print(m) end
  print()
  local within = s["within noise"] + s.same
  print(("%d measures: %d within noise (%d exactly the same), %d faster, %d slower; %.0f%% within noise"):format(
    s.total, within, s.same, s.faster, s.slower, s.total > 0 and 100 * within / s.total or 100))
  if s.with_between == 0 and s.total > s.same then
    print("note: neither run recorded processes (format 1): the verdicts rest on the repetitions of one process each")
  else
    print(("between processes: %d measures had a band; %d of them differed significantly between the runs' repetitions"):format(
      s.with_between, s.between_noise) .. " but no more than the processes of one run differ (within noise)")
  end
  -- a bench that failed in the new run has no measures to compare: that
  -- fails the gate too (a crash must not pass as "no regression")
  local failed = {}
  for _, b in ipairs(new.benches) do
    if b.status ~= "ok" then failed[#failed + 1] = ("%s (%s)"):format(tostring(b.bench), tostring(b.abi)) end
  end
  for _, b in ipairs(base.benches) do
    if b.status ~= "ok" then print(("note: %s (%s) failed in the base run"):format(tostring(b.bench), tostring(b.abi))) end
  end
  if #failed > 0 then print("FAILED in the new run: " .. table.concat(failed, ", ")) end
  if #s.regressions > 0 then
    print(("REGRESSION: %d measure(s) slower by more than %g%%:"):format(#s.regressions, th))
    for _, row in ipairs(s.regressions) do
      print(("  %s: %s -> %s (%s worse)"):format(row.id, report.spread(row.r.base), report.spread(row.r.new), pct(row.r.cost)))
    end
    return 1
  end
  if #failed > 0 then return 1 end
  print(("no regression beyond %g%%"):format(th))
  return 0
end

local function write(path, text)
  local f, err = io.open(path, "w")
  if not f then io.stderr:write("bench: ", err, "\n"); return false end
  f:write(text)
  f:close()
  return true
end

local function run_plot(a)
  local docs = {}
  for _, p in ipairs(a.runs) do
    local d, err = report.load(p)
    if not d then io.stderr:write("bench plot: ", err, "\n"); return 2 end
    docs[#docs + 1] = d
  end
  local svg = require("bench_plot").render(docs, { only = a.only })
  if not write(a.output, svg) then return 1 end
  io.stderr:write(("bench plot: wrote %s (%d runs)\n"):format(a.output, #docs))
  return 0
end

local function run_report(a)
  local d, err = report.load(a.run)
  if not d then io.stderr:write("bench report: ", err, "\n"); return 2 end
  if a.output == "-" then
    io.write(report.merge(nil, d))
    return 0
  end
  local f = io.open(a.output, "r")
  local old = f and f:read("*a")
  if f then f:close() end
  if not write(a.output, report.merge(old, d)) then return 1 end
  io.stderr:write(("bench report: updated %s\n"):format(a.output))
  return 0
end

local function run_collect(a)
  local parts = {}
  for _, p in ipairs(a.parts) do
    local f, err = io.open(p, "r")
    if not f then io.stderr:write("bench collect: ", err, "\n"); return 2 end
    parts[#parts + 1] = f:read("*a")
    f:close()
  end
  local facts = report.facts { cflags = os.getenv("OTSKIT_BENCH_CFLAGS"), pin = os.getenv("OTSKIT_BENCH_PIN"),
    load_start = os.getenv("OTSKIT_BENCH_LOAD_START") }
  local doc, err = report.collect(parts, { mode = a.mode, facts = facts })
  if not doc then io.stderr:write("bench collect: ", err, "\n"); return 2 end
  if not write(a.output, require("bench_json").encode(doc, " ") .. "\n") then return 1 end
  return 0
end

function cmd.run(a)
  local sub = a.bench_command
  if sub == "compare" then return run_compare(a)
  elseif sub == "plot" then return run_plot(a)
  elseif sub == "report" then return run_report(a)
  elseif sub == "collect" then return run_collect(a) end
  io.stderr:write("bench: compare, plot, report or collect (see bench/runs.lua --help)\n")
  return 2
end

return cmd
