--- otskit.cmd.bench_report -- the run document of `make bench`: the facts
-- of the machine and the tree, the benches' recorded data gathered into one
-- JSON document, and bench/RESULTS.md rendered from it.
--
-- Run document (format "otskit-bench/1"):
--   { format, created (UTC ISO 8601), mode ("quick"|"full"), facts = {...},
--     benches = { { bench, abi, interp, status, error?, cpu_seconds,
--                   sections = {{title, text}}, measures = {...} }, ... } }
-- A measure: { name, unit, direction ("lower"|"higher" is better), kind
-- ("time"|"ratio"|"value"), values (every repetition, in unit), median,
-- min, max, q1, q3, iqr, n, and for a ratio sides = {{label, unit,
-- values}, {label, unit, values}} (ratio = time of side 2 / time of side 1
-- per round) }.
local json = require "otskit.cmd.bench_json"

local report = {}

report.FORMAT = "otskit-bench/1"

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

--- report.collect(parts, opts) -> run document. parts: the JSON texts
-- bench/runner.lua wrote (one per bench and interpreter); opts.mode,
-- opts.facts.
function report.collect(parts, opts)
  local doc = { format = report.FORMAT, created = os.date("!%Y-%m-%dT%H:%M:%SZ"),
    mode = opts.mode or "quick", facts = opts.facts or report.facts(), benches = {} }
  for _, text in ipairs(parts) do
    local b, err = json.decode(text)
    if not b then return nil, err end
    doc.benches[#doc.benches + 1] = b
  end
  return doc
end

--- report.load(path) -> run document | nil, message
function report.load(path)
  local s = readfile(path)
  if not s then return nil, "cannot read " .. path end
  local d, err = json.decode(s)
  if not d then return nil, path .. ": " .. err end
  if type(d) ~= "table" or d.format ~= report.FORMAT or type(d.benches) ~= "table" then
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
  return ("_%s run %s, revision %s%s; load average %s at the start, %s at the end%s_"):format(
    doc.mode or "?", (doc.created or "?"):gsub("T", " "):gsub("Z$", " UTC"), f.git_short or "?",
    f.git_dirty and " (dirty tree)" or "", f.load_start or "?", f.load_end or "?",
    f.pinned_cpu and (", pinned to CPU " .. f.pinned_cpu) or "")
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
    "Generated from the JSON run documents by `otskit bench report` (`make bench FULL=1`",
    "rewrites the sections it ran; do not edit by hand). Every figure is the median of",
    "interleaved repetitions (CPU time) with ±half the interquartile range; ratios are",
    "computed per round of adjacent repetitions. Every bench checks that otskit and its",
    "peers give identical output before timing. The machine is shared (2 vCPU): expect",
    "spread between runs of a few to 20 %, and read the ranges.",
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
