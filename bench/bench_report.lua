--- bench_report -- the run document of `make bench`: the facts
-- of the machine and the tree, the benches' recorded data gathered into one
-- JSON document, and bench/RESULTS.md rendered from it.
--
-- Run document (format "otskit-bench/2"):
--   { format, created (UTC ISO 8601), mode ("quick"|"full"), facts = {...},
--     benches = { { bench, abi, interp, status, error?, cpu_seconds, procs,
--                   sections = {{title, text}}, measures = {...} }, ... } }
-- A measure: { name, unit, direction ("lower"|"higher" is better), kind
-- ("time"|"ratio"|"value"), values (every repetition, in unit), median,
-- min, max, q1, q3, iqr, n, and for a ratio sides = {{label, unit,
-- values}, {label, unit, values}} (ratio = time of side 2 / time of side 1
-- per round) }. Measured in several processes (procs > 1), a measure also
-- has process (the process of each value, parallel to values),
-- process_medians (one per process) and process_spread (the largest
-- process median / the smallest - 1). Format 1 (one process, no tags)
-- is still read.
local json = require "bench_json"
local stats = require "bench_stats"

local report = {}

report.FORMAT = "otskit-bench/2"
report.FORMATS = { ["otskit-bench/1"] = true, ["otskit-bench/2"] = true }

local function sh(cmd)
  local p = io.popen(cmd .. " 2>/dev/null")
  if not p then return nil end
  local s = p:read("*a")
  p:close()
  s = s and s:gsub("%s+$", "")
  return s ~= "" and s or nil
end

local function readfile(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

--- report.facts(env) -> the run's facts: CPU model, cores, kernel, the
-- interpreters' and compiler's versions, the C flags, git revision, dirty
-- flag, commit time, load averages. env: values run.sh passes (cflags,
-- pin, load_start).
function report.facts(env)
  env = env or {}
  local cpuinfo = readfile("/proc/cpuinfo") or ""
  local rev = sh("git rev-parse HEAD")
  local dirty -- nil outside a git checkout; false for a clean tree
  if rev then dirty = sh("git status --porcelain") ~= nil end
  local f = {
    cpu_model = cpuinfo:match("model name%s*:%s*([^\n]+)") or sh("uname -m"),
    cores = tonumber(sh("nproc --all") or "") or nil,
    cores_online = tonumber(sh("nproc") or "") or nil,
    kernel = sh("uname -srm"),
    lua = sh("lua5.4 -v"),
    luajit = sh("luajit -v"),
    compiler = sh("${CC:-cc} --version | head -1"),
    cflags = env.cflags,
    git_revision = rev,
    git_short = rev and rev:sub(1, 10),
    git_dirty = dirty,
    git_commit_time = tonumber(sh("git log -1 --format=%ct") or ""),
    git_subject = sh("git log -1 --format=%s"),
    load_start = env.load_start,
    load_end = (readfile("/proc/loadavg") or ""):match("^(%S+ %S+ %S+)"),
    pinned_cpu = env.pin,
  }
  return f
end

-- the summary fields of a measure from its values
local function summarize(m)
  local s = stats.summary(m.values)
  m.median, m.min, m.max, m.q1, m.q3, m.iqr, m.n = s.median, s.min, s.max, s.q1, s.q3, s.iqr, s.n
end

-- one measure from its records in each process (list of {process, m}),
-- in process order: the values concatenated and tagged
local function merge_measure(recs)
  local first = recs[1][2]
  local m = {}
  for k, v in pairs(first) do m[k] = v end
  m.seconds = nil -- one process's figure; the values say it all
  if #recs == 1 then return m end
  if m.kind == "value" then
    -- an exact figure: one value when every process agrees
    local same = true
    for _, r in ipairs(recs) do
      if #r[2].values ~= 1 or r[2].values[1] ~= first.values[1] then same = false end
    end
    if same then m.processes = #recs; return m end
  end
  local values, tags, medians = {}, {}, {}
  local sides = m.sides and {} or nil
  for _, r in ipairs(recs) do
    local p, rm = r[1], r[2]
    for _, v in ipairs(rm.values) do values[#values + 1] = v; tags[#tags + 1] = p end
    medians[#medians + 1] = stats.median(rm.values)
    for i, side in ipairs(rm.sides or {}) do
      sides[i] = sides[i] or { label = side.label, unit = side.unit, values = {} }
      for _, v in ipairs(side.values) do table.insert(sides[i].values, v) end
    end
  end
  m.values, m.process, m.process_medians, m.sides = values, tags, medians, sides
  local lo, hi = math.huge, -math.huge
  for _, v in ipairs(medians) do lo, hi = math.min(lo, v), math.max(hi, v) end
  if lo > 0 then m.process_spread = hi / lo - 1 end
  summarize(m)
  return m
end

--- report.merge_processes(parts) -> benches: the runner documents of one
-- bench and interpreter measured in several processes (parts: decoded
-- bench/runner.lua documents, any order) merged into one per bench and
-- interpreter, in the order they first appear: every measure's values
-- from all processes, tagged; status "failed" if any process failed;
-- CPU seconds summed; the sections' text is process 1's.
function report.merge_processes(parts)
  local groups, order = {}, {}
  for _, b in ipairs(parts) do
    local key = tostring(b.bench) .. "\0" .. tostring(b.abi)
    if not groups[key] then groups[key] = {}; order[#order + 1] = key end
    table.insert(groups[key], b)
  end
  local out = {}
  for _, key in ipairs(order) do
    local g = groups[key]
    table.sort(g, function(a, b) return (a.process or 1) < (b.process or 1) end)
    local m = {}
    for k, v in pairs(g[1]) do m[k] = v end
    m.process = nil
    m.procs = #g
    m.cpu_seconds = 0
    local by, names = {}, {}
    for _, b in ipairs(g) do
      m.cpu_seconds = m.cpu_seconds + (b.cpu_seconds or 0)
      if b.status ~= "ok" and m.status == "ok" then m.status, m.error = b.status, b.error end
      for _, ms in ipairs(b.measures or {}) do
        if not by[ms.name] then by[ms.name] = {}; names[#names + 1] = ms.name end
        table.insert(by[ms.name], { b.process or 1, ms })
      end
    end
    m.measures = {}
    for i, name in ipairs(names) do m.measures[i] = merge_measure(by[name]) end
    out[#out + 1] = m
  end
  return out
end

--- report.collect(parts, opts) -> run document. parts: the JSON texts
-- bench/runner.lua wrote (one per bench, interpreter and process);
-- opts.mode, opts.facts.
function report.collect(parts, opts)
  local doc = { format = report.FORMAT, created = os.date("!%Y-%m-%dT%H:%M:%SZ"),
    mode = opts.mode or "quick", facts = opts.facts or report.facts(), benches = {} }
  local decoded = {}
  for _, text in ipairs(parts) do
    local b, err = json.decode(text)
    if not b then return nil, err end
    decoded[#decoded + 1] = b
  end
  doc.benches = report.merge_processes(decoded)
  return doc
end

--- report.load(path) -> run document | nil, message
function report.load(path)
  local s = readfile(path)
  if not s then return nil, "cannot read " .. path end
  local d, err = json.decode(s)
  if not d then return nil, path .. ": " .. err end
  if type(d) ~= "table" or not report.FORMATS[d.format] or type(d.benches) ~= "table" then
    return nil, path .. ": not an otskit bench run (format " .. report.FORMAT .. ")"
  end
  return d
end

--- report.measures(doc) -> list of measures, each with .bench, .abi and
-- .id = "<bench> | <name> | <abi>" (unique in a run).
function report.measures(doc)
  local out = {}
  for _, b in ipairs(doc.benches) do
    for _, m in ipairs(b.measures or {}) do
      m.bench, m.abi = b.bench, b.abi
      m.id = ("%s | %s | %s"):format(b.bench, m.name, b.abi)
      out[#out + 1] = m
    end
  end
  return out
end

-- the number format of the tables: 3 significant digits, no exponent
local function fmt(x)
  if type(x) ~= "number" then return tostring(x) end
  if x ~= x then return "nan" end
  local a = math.abs(x)
  if a == math.huge then return x > 0 and "inf" or "-inf" end
  if a == math.floor(a) and a < 1e15 then return ("%d"):format(x) end
  if a >= 100 then return ("%.0f"):format(x) end
  if a >= 10 then return ("%.1f"):format(x) end
  if a >= 1 then return ("%.2f"):format(x) end
  if a == 0 then return "0" end
  return (("%." .. math.min(12, 2 - math.floor(math.log(a) / math.log(10))) .. "f"):format(x))
end
report.fmt = fmt

--- report.spread(m) -> "median ±h%" (h: half the IQR in % of the median)
function report.spread(m)
  if (m.n or 1) <= 1 or m.median == 0 then return fmt(m.median) end
  local h = 50 * m.iqr / math.abs(m.median)
  return ("%s ±%s%%"):format(fmt(m.median), h >= 10 and ("%.0f"):format(h) or ("%.1f"):format(h))
end

local function run_line(doc)
  local f = doc.facts or {}
  local procs = 1
  for _, b in ipairs(doc.benches) do procs = math.max(procs, b.procs or 1) end
  return ("_%s run %s, revision %s%s; load average %s at the start, %s at the end%s%s_"):format(
    doc.mode or "?", (doc.created or "?"):gsub("T", " "):gsub("Z$", " UTC"), f.git_short or "?",
    f.git_dirty and " (dirty tree)" or "", f.load_start or "?", f.load_end or "?",
    f.pinned_cpu and (", pinned to CPU " .. f.pinned_cpu) or "",
    procs > 1 and ("; %d processes per bench: the text is the first one's, the table all of them"):format(procs) or "")
end

--- report.section(doc, name) -> the markdown of one bench (every
-- interpreter), between <!-- bench:NAME --> markers.
function report.section(doc, name)
  local out = { ("<!-- bench:%s -->"):format(name), "## " .. name, "", run_line(doc), "" }
  for _, b in ipairs(doc.benches) do
    if b.bench == name then
      if b.status ~= "ok" then
        out[#out + 1] = ("**%s run failed:** `%s`\n"):format(b.abi, tostring(b.error):match("^[^\n]*"))
      end
      for _, s in ipairs(b.sections or {}) do
        out[#out + 1] = (s.text:gsub("^\n+", ""):gsub("\n+$", ""))
        out[#out + 1] = ""
      end
      if b.measures and #b.measures > 0 then
        out[#out + 1] = ("<details><summary>%s: %d measures (median ±half the IQR, min, repetitions)</summary>\n")
          :format(b.interp or b.abi, #b.measures)
        out[#out + 1] = "| measure | unit | better | median | min | q1–q3 | reps |"
        out[#out + 1] = "|---|---|---|---|---|---|---|"
        for _, m in ipairs(b.measures) do
          out[#out + 1] = ("| %s | %s | %s | %s | %s | %s–%s | %d |"):format(m.name:gsub("|", "/"), m.unit,
            m.direction, report.spread(m), fmt(m.min), fmt(m.q1), fmt(m.q3), m.n)
        end
        out[#out + 1] = "\n</details>\n"
      end
    end
  end
  out[#out + 1] = ("<!-- /bench:%s -->"):format(name)
  return table.concat(out, "\n")
end

local function header(doc)
  local f = doc.facts or {}
  return table.concat({
    "# otskit benchmark results",
    "",
    "Generated from the JSON run documents by `bench/runs.lua report` (`make bench FULL=1`,",
    "or `RESULTS=` with any run, rewrites the sections it ran; do not edit by hand). Each",
    "section says which run (quick or full, revision, load average). Every figure is the",
    "median of interleaved repetitions (CPU time) with ±half the interquartile range;",
    "ratios are computed per round of adjacent repetitions. Every bench checks that otskit",
    "and its peers give identical output before timing. On a shared machine absolute",
    "figures move with its load from run to run (by 30-50 % at a load average of 10-20",
    "on 2 vCPU); the otskit-vs-peer ratios move much less: read the ranges.",
    "",
    "- machine: " .. ("%s vCPU, %s, %s"):format(tostring(f.cores or "?"), f.cpu_model or "?", f.kernel or "?"),
    "- compiler: " .. (f.compiler or "?") .. (f.cflags and (" (`" .. f.cflags .. "`)") or ""),
    "- interpreters: " .. (f.lua or "?") .. "; " .. (f.luajit or "?"),
    "",
  }, "\n")
end

--- report.merge(old, doc, only) -> RESULTS.md text: the header from doc,
-- the sections of doc's benches (only: list of names, or all of doc's)
-- replacing those of the old text; every other section of old is kept,
-- in its place.
function report.merge(old, doc)
  local names, seen = {}, {}
  for _, b in ipairs(doc.benches) do
    if not seen[b.bench] then seen[b.bench] = true; names[#names + 1] = b.bench end
  end
  local kept, order = {}, {}
  for name, body in (old or ""):gmatch("<!%-%- bench:([%w_%-%.]+) %-%->(.-)<!%-%- /bench:%1 %-%->") do
    if not kept[name] then order[#order + 1] = name end
    kept[name] = "<!-- bench:" .. name .. " -->" .. body .. "<!-- /bench:" .. name .. " -->"
  end
  for _, n in ipairs(names) do
    if not kept[n] then order[#order + 1] = n end
    kept[n] = report.section(doc, n)
  end
  local out = { header(doc) }
  for _, n in ipairs(order) do out[#out + 1] = kept[n]; out[#out + 1] = "" end
  return table.concat(out, "\n")
end

return report
