--- otskit.analyze -- runs a workload against several table designs on the
-- embedded store and measures each: the engine behind `otskit demo` and
-- `otskit analyze FILE.lua`.
--
-- A scenario (what `otskit analyze` loads: the file returns it) is a table:
--
--   return {
--     name = "orders",                 -- short id (letters, digits, _ -)
--     title = "Order numbers: sequential vs hash-prefixed",
--     ops = 3000,                      -- write operations (default 1000)
--     rate = 100,                      -- operations per simulated second (default 100)
--     queries = 10,                    -- queries after the writes (default 10)
--     capacity = 25,                   -- rows a partition takes per second before it
--                                      -- throttles (OTSServerBusy); false: never (default 25)
--     split_rows = 250,                -- a partition splits above this many rows (default 250)
--     split_bytes = nil,               -- ... or above this many bytes (default 64 MB)
--     split_load = false,              -- ... or past this many reads + writes in one
--                                      -- second, at the median key it served (default: never)
--     seed = 1,
--     item = function(i, rng) ... end, -- the i-th operation's data (the same for every design)
--     query_item = function(q, rng) ... end,   -- the q-th query's parameters
--     designs = {
--       { name = "naive", label = "sequential order numbers",
--         setup = function(env) ... return state end,          -- create tables, build patterns
--         write = function(state, item, env) return true end,  -- one operation (nil, msg, code: failed)
--         query = function(state, q, env) return rows end,     -- one query (a list or a count of rows)
--         report = function(state, env) return { ["name"] = value, ... } end }, -- optional extras
--       { name = "recommended", ... } },
--   }
--
-- Each design runs alone on a fresh embedded store (in memory) behind a
-- meter (otskit.analyze.meter) that counts rows written per partition per
-- second of simulated time and throttles a partition past `capacity`.
-- env: store (the metered store: pass it to patterns as `store`), retry
-- (options for otskit.retry / the patterns' `retry`: a simulated sleep, a
-- retry counter and seeded backoff schedules, so runs repeat exactly),
-- retry_with(backoff_opts) (the same with other backoff options), rng (seeded: int(lo, hi), float(), shuffle(list)),
-- now() / set_time(t) (simulated seconds; operation i starts at i / rate),
-- concurrent(fns) (runs functions as simulated concurrent clients, each
-- on its own clock: the earliest goes next), yielding (env.store for
-- those clients: each request lets the others go first and takes
-- scenario.latency seconds, default 0.002), secret (a cursor secret).
--
-- analyze.run(scenario, opts) -> result: per design { name, label,
-- metrics = { hottest_writes, hottest_share, mean_share and peak_share (of
-- the hottest partition in each second with >= 10 rows written; nil when
-- no second had that many), partitions_used,
-- partitions, requests_per_query, ranges_per_query, rows_per_query,
-- results_per_query, bytes_per_query, bytes_stored, retries, throttled,
-- failed_ops, failed_queries, ops, rows_written, seconds, extras = {...},
-- tables = { { name, initial_partitions, partitions, rows_written,
-- partition_keys, tail_share } } }, errors = { { code, message, count, op
-- } } (every code the store answered), findings = { { cause, text,
-- evidence } } (otskit.analyze.diagnose), heat = { windows, ids, load,
-- born } }.
-- Raises "otskit.analyze: ..." for a malformed scenario.
local store = require "otskit.store"
local sim = require "otskit.analyze.sim"
local backoff = require "otskit.backoff"
local meter = require "otskit.analyze.meter"
local diagnose = require "otskit.analyze.diagnose"

local analyze = {}

local function raise(fmt, ...) error("otskit.analyze: " .. fmt:format(...), 3) end

-- a deterministic PRNG (Park-Miller), the same on both interpreters.
-- Its functions work called either way, rng.int(1, 6) or rng:int(1, 6);
-- bad arguments raise naming the function.
local function rng(seed)
  local s = math.floor(seed or 1) % 2147483647
  if s <= 0 then s = s + 2147483646 end
  local r = {}
  local function step() s = (s * 48271) % 2147483647; return s end
  local function int(lo, hi)
    if type(lo) ~= "number" or type(hi) ~= "number" or lo ~= math.floor(lo) or hi ~= math.floor(hi) or hi < lo then
      error(("otskit.analyze: rng.int(lo, hi) needs integers lo <= hi, got %s, %s"):format(tostring(lo), tostring(hi)), 2)
    end
    return lo + step() % (hi - lo + 1)
  end
  function r.int(a, b, c)
    if a == r then a, b = b, c end
    return int(a, b)
  end
  function r.float() return (step() - 1) / 2147483646 end
  function r.shuffle(a, b)
    if a == r then a = b end
    if type(a) ~= "table" then error("otskit.analyze: rng.shuffle(list) needs a list, got " .. type(a), 2) end
    for i = #a, 2, -1 do local j = int(1, i); a[i], a[j] = a[j], a[i] end
    return a
  end
  function r.pick(a, b)
    if a == r then a = b end
    if type(a) ~= "table" or #a == 0 then error("otskit.analyze: rng.pick(list) needs a non-empty list", 2) end
    return a[int(1, #a)]
  end
  return r
end
analyze.rng = rng

local SCENARIO_KEYS = {}
for k in ("name title note ops rate queries capacity split_rows split_bytes split_load seed latency "
          .. "window picture item query_item designs advice index_delay_ms search_delay_ms"):gmatch("%S+") do SCENARIO_KEYS[k] = true end
local DESIGN_KEYS = { name = true, label = true, setup = true, write = true, query = true, report = true }

-- the advice check and the per-query choice live in analyze/choice.lua
local choice = require "otskit.analyze.choice"
analyze.ADVICE_MEASURES = choice.ADVICE_MEASURES
analyze.advice = choice.advice
analyze.query_choice = choice.query_choice

--- analyze.check(scenario) -> scenario with defaults filled; raises on a
-- malformed one, naming what is wrong.
function analyze.check(sc)
  if type(sc) ~= "table" then raise("a scenario must be a table (the file must return one)") end
  if type(sc.name) ~= "string" or not sc.name:match("^[%w_%-]+$") then raise("scenario.name must be a short id") end
  for k in pairs(sc) do
    if not SCENARIO_KEYS[k] then raise("scenario %s: unknown field '%s'", sc.name, tostring(k)) end
  end
  local function int(field, def, lo, hi)
    local v = sc[field]
    if v == nil then v = def end
    if type(v) ~= "number" or v ~= math.floor(v) or v < lo or v > hi then
      raise("scenario %s: %s must be an integer %d..%d", sc.name, field, lo, hi)
    end
    sc[field] = v
  end
  int("ops", 1000, 0, 10000000)
  int("queries", 10, 0, 1000000)
  int("split_rows", 250, 1, 1e12)
  int("seed", 1, 0, 2147483646)
  if sc.split_bytes ~= nil then int("split_bytes", nil, 1, 1e15) end
  if sc.split_load == nil then sc.split_load = false end
  if sc.split_load ~= false then int("split_load", nil, 1, 1e12) end
  if sc.rate == nil then sc.rate = 100 end
  if type(sc.rate) ~= "number" or not (sc.rate > 0) then raise("scenario %s: rate must be > 0", sc.name) end
  for _, f in ipairs { "latency", "window" } do
    local v = sc[f]
    if v ~= nil and (type(v) ~= "number" or not (v >= 0 and v < math.huge) or (f == "window" and v <= 0)) then
      raise("scenario %s: %s must be a number of seconds%s", sc.name, f, f == "window" and " > 0" or " >= 0")
    end
  end
  for _, f in ipairs { "index_delay_ms", "search_delay_ms" } do
    local v = sc[f]
    if v == nil then v = 0 end
    if type(v) ~= "number" or not (v >= 0 and v <= 3600000) then
      raise("scenario %s: %s must be milliseconds in 0..3600000", sc.name, f)
    end
    sc[f] = v
  end
  if sc.capacity == nil then sc.capacity = 25 end
  if sc.capacity ~= false and (type(sc.capacity) ~= "number" or sc.capacity < 1) then
    raise("scenario %s: capacity must be a number >= 1 or false", sc.name)
  end
  sc.title = sc.title or sc.name
  if sc.item ~= nil and type(sc.item) ~= "function" then raise("scenario %s: item must be a function", sc.name) end
  if sc.query_item ~= nil and type(sc.query_item) ~= "function" then raise("scenario %s: query_item must be a function", sc.name) end
  if type(sc.designs) ~= "table" or #sc.designs < 1 then raise("scenario %s: designs must list at least one design", sc.name) end
  for i, d in ipairs(sc.designs) do
    if type(d) ~= "table" or type(d.name) ~= "string" then raise("scenario %s: design %d needs a name", sc.name, i) end
    for k in pairs(d) do
      if not DESIGN_KEYS[k] then raise("scenario %s: design %s: unknown field '%s'", sc.name, d.name, tostring(k)) end
    end
    for _, f in ipairs { "setup", "write" } do
      if type(d[f]) ~= "function" then raise("scenario %s: design %s needs a %s function", sc.name, d.name, f) end
    end
    for _, f in ipairs { "query", "report" } do
      if d[f] ~= nil and type(d[f]) ~= "function" then raise("scenario %s: design %s: %s must be a function", sc.name, d.name, f) end
    end
  end
  if sc.advice ~= nil then
    if type(sc.advice) ~= "table" then raise("scenario %s: advice must be a list", sc.name) end
    for i, a in ipairs(sc.advice) do
      local known = false
      for _, d in ipairs(sc.designs) do if type(a) == "table" and d.name == a.design then known = true end end
      if not known or type(a.query) ~= "string" or type(a.why) ~= "string" or type(a.by) ~= "table" or #a.by == 0 then
        raise("scenario %s: advice[%d] needs query, why (strings), design (a design's name) and by (measures)", sc.name, i)
      end
      for _, k in ipairs(a.by) do
        if type(k) ~= "string" then raise("scenario %s: advice[%d]: by lists measure names", sc.name, i) end
      end
    end
  end
  return sc
end

---------------------------------------------------------------------------
-- Calling the user's functions: an error names the user's file and line

-- the first "file:line" of src in text (a message or a traceback)
local function find_in(text, src)
  local esc = src:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")
  return text:match(esc .. ":(%d+):")
end

local function handler(e)
  if type(e) == "table" and e.analyze_error then
    e.tb = e.tb .. "\n" .. debug.traceback("", 2)
    return e
  end
  return { analyze_error = true, msg = e, tb = debug.traceback("", 2) }
end

--- user_call(what, f, ...) -> f's results. f is a function of the user's
-- scenario; an error it raises (or raises in otskit code it called) is
-- raised again as "otskit.analyze: FILE:LINE: <what> failed: <message>"
-- where FILE:LINE is the innermost line of f's file, followed by the
-- traceback lines in that file.
local pack = table.pack or function(...) return { n = select("#", ...), ... } end
local unpack = table.unpack or unpack
local reported = {}
local function user_call(what, f, ...)
  local r = pack(xpcall(f, handler, ...))
  if r[1] then return unpack(r, 2, r.n) end
  local e = r[2]
  local inner = type(e) == "table" and e.msg or e
  if type(inner) == "string" and reported[inner] then error(inner, 0) end  -- from a nested user_call
  local src = debug.getinfo(f, "S").short_src
  local msg = type(e) == "table" and e.msg or e
  if type(msg) == "table" and msg.message then msg = msg.message end
  msg = tostring(msg):gsub("^otskit%.analyze: ", "")
  local tb = type(e) == "table" and e.tb or ""
  local line = find_in(msg, src) or find_in(tb, src)
  local where = line and (src .. ":" .. line) or src
  if line and msg:sub(1, #where + 2) == where .. ": " then msg = msg:sub(#where + 3) end
  msg = msg:gsub("^otskit%.analyze: ", "")
  local mine = {}
  for l in tb:gmatch("[^\n]+") do
    if l:find(src, 1, true) then mine[#mine + 1] = "    " .. l:gsub("^%s+", "") end
  end
  local text = ("otskit.analyze: %s: %s failed: %s"):format(where, what, msg)
  if #mine > 0 then text = text .. "\n  traceback in " .. src .. ":\n" .. table.concat(mine, "\n") end
  reported[text] = true
  error(text, 0)
end
analyze.user_call = user_call

local function run_design(sc, d, items, qitems, progress, client)
  local now = 0
  local db = assert(store.open { clock = function() return now end,
    partition = { split_rows = sc.split_rows, split_bytes = sc.split_bytes,
                  split_load = sc.split_load or nil, window = 1 } })
  if client then
    -- a server's indexes keep their own delays: the scenario's model of
    -- them (index_delay_ms, search_delay_ms) is the embedded store's
    -- the data on the server; the partition picture from the local mirror
    local prefix = ("otskit_%s_%s_%d_"):format(sc.name, d.name, os.time() % 1000000):gsub("[^%w_]", "_")
    db = require("otskit.analyze.remote").new(db, client, prefix)
  else
    if sc.index_delay_ms > 0 then db:set_index_delay(sc.index_delay_ms / 1000) end
    if sc.search_delay_ms > 0 then db:search_delay(sc.search_delay_ms / 1000) end
  end
  local m = meter.new(db, { clock = function() return now end, capacity = sc.capacity, window = sc.window or 1 })
  local budget = sim.counting_budget()
  local r = rng(sc.seed + 7)
  local cs = sim.make(function() return now end, function(t) now = t end, r, sc.latency or 0.002)
  local env = {
    store = m, rng = r, secret = "otskit analyze cursor secret",
    retry = { sleep = function(s) now = now + s; cs.pause() end, clock = function() return now end, budget = budget,
              schedule = sim.seeded_schedule(r) },
    now = function() return now end,
    set_time = function(t)
      if type(t) ~= "number" or t ~= t then error("otskit.analyze: env.set_time(t) needs a number of seconds", 2) end
      now = t
    end,
    concurrent = function(fns)
      if type(fns) ~= "table" then error("otskit.analyze: env.concurrent(fns) needs a list of functions", 2) end
      for i, f in ipairs(fns) do
        if type(f) ~= "function" then error(("otskit.analyze: env.concurrent: fns[%d] is not a function"):format(i), 2) end
      end
      return cs.concurrent(fns)
    end,
    yielding = cs.yielding(m),
    scenario = sc,
    -- the clock env.visible measures on: real seconds against a server,
    -- the simulated clock in process
    clock = function() if client ~= nil then return backoff.now() end return now end,
    -- how long the write just made takes to show (see sim.visible); since:
    -- env.clock() read before the write was sent
    visible = function(probe, timeout, since)
      if type(probe) ~= "function" then error("otskit.analyze: env.visible(probe [, timeout [, since]]) needs a function", 2) end
      if timeout ~= nil and (type(timeout) ~= "number" or not (timeout > 0 and timeout <= 3600)) then
        error("otskit.analyze: env.visible: timeout must be seconds in (0, 3600]", 2)
      end
      local t = client ~= nil and backoff.now() or now
      if since ~= nil and (type(since) ~= "number" or not (since <= t and since > t - 3600)) then
        error("otskit.analyze: env.visible: since must be an env.clock() reading of the last hour", 2)
      end
      return sim.visible(probe, { real = client ~= nil, timeout = timeout, since = since,
        now = function() return now end, set_time = function(t2) now = t2 end })
    end,
  }
  -- env.retry with other backoff options (still seeded and counted)
  function env.retry_with(backoff_opts)
    if backoff_opts ~= nil and type(backoff_opts) ~= "table" then
      error("otskit.analyze: env.retry_with(backoff_opts) needs a table of backoff options", 2)
    end
    local o = {}
    for k, v in pairs(env.retry) do o[k] = v end
    o.schedule = sim.seeded_schedule(r, backoff_opts)
    return o
  end
  -- every env function works called either way: env.now() or env:now()
  for k, f in pairs(env) do
    if type(f) == "function" then
      env[k] = function(a, ...) if a == env then return f(...) end return f(a, ...) end
    end
  end
  local what = ("scenario %s, design %s, "):format(sc.name, d.name)
  local state = user_call(what .. "setup", d.setup, env)
  local failed, last = 0, 0
  local failures, by_code = {}, {}
  -- an operation (or query) that failed for good: which error made it
  -- fail (its own code, else the last the store answered during it);
  -- throttling is the partition diagnosis's, not an error
  local function failure(kind, msg, code, seq0, throttled0)
    if type(msg) == "table" then msg, code = msg.message or msg.code, code or msg.code end
    if code == nil and m.err_seq > seq0 then code, msg = m.last_error.code, m.last_error.message end
    if code == "OTSServerBusy" or (code == nil and m.writes.throttled > throttled0) then return end
    code = code or "(no code)"
    local f = by_code[code]
    if not f then
      f = { code = code, message = msg ~= nil and tostring(msg) or "(no message)", operations = 0, queries = 0 }
      by_code[code] = f
      failures[#failures + 1] = f
    end
    f[kind] = f[kind] + 1
  end
  for i = 1, sc.ops do
    now = (i - 1) / sc.rate
    m:begin_op()
    local seq0, th0 = m.err_seq, m.writes.throttled
    local ok, msg, code = user_call(what .. "write (operation " .. i .. ")", d.write, state, items[i], env)
    if not ok then failed = failed + 1; failure("operations", msg, code, seq0, th0) end
    if now > last then last = now end
    if progress and (i % 100 == 0 or i == sc.ops) then progress(i, sc.ops) end
  end
  m.phase = "query"
  now = math.max(last, sc.ops / sc.rate) + 1
  -- the queries start 1 s after the writes on the simulated clock; on a
  -- server whose indexes follow writes with a delay, 1 s of real time too
  if client and m.indexed then sim.sleep(1) end
  local qrows, nq, qfailed = 0, 0, 0
  -- queries whose item names a kind ({ kind = "by md5", ... }) are also
  -- measured per kind, with the access paths they took
  local kinds, korder = {}, {}
  if d.query then
    for q = 1, sc.queries do
      local seq0, th0 = m.err_seq, m.writes.throttled
      local qi = qitems[q]
      local kname = type(qi) == "table" and type(qi.kind) == "string" and qi.kind or nil
      local qk
      if kname then
        qk = kinds[kname]
        if not qk then
          -- the columns it conditions on: those the item declares, then
          -- those its requests' filters, WHERE / ORDER BY and sorts name
          local cols, seen = {}, {}
          local function note(list)
            for _, c in ipairs(list) do
              if not seen[c] then seen[c] = true; cols[#cols + 1] = c end
            end
          end
          if type(qi.columns) == "table" then
            local declared = {}
            for i, c in ipairs(qi.columns) do declared[i] = tostring(c) end
            note(declared)
          end
          qk = { kind = kname, queries = 0, returned = 0, failed = 0, paths = {}, order = {}, columns = cols,
                 note = note }
          kinds[kname] = qk
          korder[#korder + 1] = kname
        end
        qk.queries = qk.queries + 1
      end
      m.query_kind = qk
      local rows, msg, code = user_call(what .. "query " .. q, d.query, state, qi, env)
      m.query_kind = nil
      nq = nq + 1
      local n = type(rows) == "table" and #rows or type(rows) == "number" and rows or 0
      if rows == nil then qfailed = qfailed + 1; failure("queries", msg, code, seq0, th0) end
      qrows = qrows + n
      if qk then
        qk.returned = qk.returned + n
        if rows == nil then qk.failed = qk.failed + 1 end
      end
    end
  end
  local query_kinds = {}
  for _, kname in ipairs(korder) do
    local qk = kinds[kname]
    local e = { kind = kname, queries = qk.queries, failed = qk.failed, results_per_query = qk.returned / qk.queries,
                requests_per_query = 0, rows_per_query = 0, paths = {}, columns = #qk.columns > 0 and qk.columns or nil }
    for _, k in ipairs(qk.order) do
      local p = qk.paths[k]
      e.requests_per_query = e.requests_per_query + p.requests / qk.queries
      e.rows_per_query = e.rows_per_query + p.rows / qk.queries
      e.paths[#e.paths + 1] = { path = p.path, name = p.name, requests_per_query = p.requests / qk.queries,
                                rows_per_query = p.rows / qk.queries }
    end
    -- a PK range that reads many rows per row it returns, in large
    -- pages (not many small ranges merged), is a filter scan
    for _, p in ipairs(e.paths) do
      if p.path == "PK range" and p.rows_per_query >= diagnose.SCAN * math.max(e.results_per_query, 1)
         and p.rows_per_query >= diagnose.SCAN_ROWS
         and p.rows_per_query / math.max(p.requests_per_query, 1) >= diagnose.SCAN_ROWS then
        p.path = "filter (scan)"
      end
    end
    query_kinds[#query_kinds + 1] = e
  end
  for _, f in ipairs(failures) do
    local e = m.err_by_code[f.code]
    f.store_answers = e and e.count or 0
  end
  m.phase = "report"   -- what report() reads is not the queries'
  local extras = d.report and user_call(what .. "report", d.report, state, env) or {}
  local foot = m:index_footprint()
  if type(extras) ~= "table" then
    error(("otskit.analyze: scenario %s, design %s: report must return a table of measures, got %s")
      :format(sc.name, d.name, type(extras)), 0)
  end
  -- metrics
  local ids = m:partition_order()
  local hottest, total = 0, 0
  local used = 0
  for _, id in ipairs(ids) do
    local n = m.totals[id] or 0
    total = total + n
    if n > hottest then hottest = n end
    if n > 0 then used = used + 1 end
  end
  local peak, sum_share, nwin = 0, 0, 0
  for w = 0, m.max_window do
    local l = m.load[w]
    if l then
      local tot, top = 0, 0
      for _, id in ipairs(ids) do
        local n = l[id]
        if n then tot = tot + n; if n > top then top = n end end
      end
      if tot >= 10 then
        local s = top / tot
        if s > peak then peak = s end
        sum_share, nwin = sum_share + s, nwin + 1
      end
    end
  end
  local qr = m.reads.query
  local metrics = {
    ops = sc.ops, failed_ops = failed, rows_written = total,
    hottest_writes = hottest, hottest_share = total > 0 and hottest / total or 0,
    peak_share = nwin > 0 and peak or nil, mean_share = nwin > 0 and sum_share / nwin or nil,
    partitions_used = used, partitions = #ids,
    queries = nq, failed_queries = qfailed,
    requests_per_query = nq > 0 and qr.requests / nq or 0,
    rows_per_query = nq > 0 and qr.rows / nq or 0,
    bytes_per_query = nq > 0 and qr.bytes / nq or 0,
    ranges_per_query = nq > 0 and qr.ranges / nq or 0,
    results_per_query = nq > 0 and qrows / nq or 0,
    bytes_stored = m:bytes_stored(),
    retries = budget.retries, throttled = m.writes.throttled,
    write_requests = m.writes.requests,
    seconds = last,
    extras = extras,
    tables = {},
    query_kinds = query_kinds,
    indexes = foot.global + foot.search, index_rows = foot.rows, index_bytes = foot.bytes,
    rows_kept_per_row = total > 0 and (total + foot.rows) / total or 0,
  }
  local tnames = {}
  for name in pairs(m.tstats) do tnames[#tnames + 1] = name end
  table.sort(tnames)
  for _, name in ipairs(tnames) do
    local ts, parts = m.tstats[name], 0
    for _, id in ipairs(ids) do if id:sub(1, #name + 1) == name .. "#" then parts = parts + 1 end end
    metrics.tables[#metrics.tables + 1] = { name = name, initial_partitions = ts.initial or 1, partitions = parts,
      rows_written = ts.rows, partition_keys = ts.nvals,
      tail_share = ts.first > 1 and ts.tail / (ts.first - 1) or 0 }
  end
  local errors = {}
  for i, e in ipairs(m.errors) do errors[i] = { code = e.code, message = e.message, count = e.count, op = e.op } end
  local findings = diagnose.partitions(m, sc.capacity)
  for _, f in ipairs(diagnose.errors(failures, sc.ops, nq)) do findings[#findings + 1] = f end
  for _, f in ipairs(diagnose.reads(metrics)) do findings[#findings + 1] = f end
  -- declared delays: the embedded store's settings (a server's are only measured)
  local declared = not client and { global = db.index_delay, search = db.sdelay } or nil
  for _, f in ipairs(diagnose.indexes(metrics, foot.list, declared)) do
    findings[#findings + 1] = f
  end
  local heat = { windows = m.max_window + 1, ids = ids, load = m.load, born = m.born,
                 capacity = sc.capacity, window = sc.window or 1 }
  db:close()
  return { name = d.name, label = d.label or d.name, metrics = metrics, errors = errors, findings = findings,
           heat = heat }
end

--- analyze.run(scenario, opts) -> result (see the header). opts.progress:
-- function(design_name, done, total) called as operations complete.
-- opts.client: an otskit.client; the designs then keep their data on its
-- server (otskit.analyze.remote), the partition picture stays simulated.
function analyze.run(sc, opts)
  opts = opts or {}
  analyze.check(sc)
  local r = rng(sc.seed)
  local items, qitems = {}, {}
  local what = "scenario " .. sc.name .. ", "
  for i = 1, sc.ops do items[i] = sc.item and user_call(what .. "item(" .. i .. ")", sc.item, i, r) or i end
  for q = 1, sc.queries do
    qitems[q] = sc.query_item and user_call(what .. "query_item(" .. q .. ")", sc.query_item, q, r) or q
  end
  local res = { name = sc.name, title = sc.title, capacity = sc.capacity, rate = sc.rate,
                note = sc.note, picture = sc.picture, designs = {} }
  for _, d in ipairs(sc.designs) do
    local p = opts.progress and function(i, n) opts.progress(d.name, i, n) end
    res.designs[#res.designs + 1] = run_design(sc, d, items, qitems, p, opts.client)
  end
  res.advice = analyze.advice(sc, res)
  res.queries = analyze.query_choice(res)
  return res
end

--- analyze.load(path) -> scenario(s) | nil, msg: runs a scenario file in
-- its own environment (globals readable, writes stay in the file) and
-- checks what it returns: one scenario, or a list of them.
function analyze.load(path)
  local chunk, err = loadfile(path)
  if not chunk then return nil, err end
  local ok, sc = pcall(user_call, "loading the file", chunk)
  if not ok then return nil, tostring(sc) end
  if type(sc) ~= "table" then return nil, path .. ": must return a scenario table (see `otskit analyze --help`)" end
  local list = sc.designs and { sc } or sc
  for _, s in ipairs(list) do
    local ok2, e = pcall(analyze.check, s)
    if not ok2 then return nil, path .. ": " .. tostring(e) end
  end
  if #list == 0 then return nil, path .. ": no scenario" end
  return list
end

return analyze
