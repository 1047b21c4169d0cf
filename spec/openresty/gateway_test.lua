-- The otskit gateway inside a real nginx (2 workers), driven over HTTP,
-- in front of `otskit serve`. Run by spec/openresty.sh (make
-- openresty-test), which starts both and passes the gateway's address in
-- OTSKIT_GW_URL, its prefix in OTSKIT_GW_PREFIX and serve's address (for
-- its fault injection, /_otskit/faults) in OTSKIT_SERVE_URL.
local http = require "socket.http"
local ltn12 = require "ltn12"
-- JSON through lua-cjson (what the gateway uses); null reads as nil
local cjson = require "cjson.safe"
local function strip_null(v)
  if v == cjson.null then return nil end
  if type(v) == "table" then for k, x in pairs(v) do v[k] = strip_null(x) end end
  return v
end
local json = { encode = cjson.encode, decode = function(s) return strip_null(cjson.decode(s)) end }
local helper = require "spec.helper"

local URL = assert(os.getenv("OTSKIT_GW_URL"), "run through spec/openresty.sh")
local PREFIX = assert(os.getenv("OTSKIT_GW_PREFIX"))
local SERVE = assert(os.getenv("OTSKIT_SERVE_URL"))
-- the admin token of that serve (run.sh starts it without one: a random
-- one in its prefix)
local ADMIN_TOKEN = (function()
  local f = assert(io.open(PREFIX .. "/serve/admin-token"))
  local t = f:read("*l"); f:close()
  return t
end)()

-- One request on a fresh connection (so either worker may take it).
-- Returns status, decoded JSON body (or the raw body), headers.
local function req(method, path, body)
  local out = {}
  local headers = {}
  if body then headers["content-length"] = #body; headers["content-type"] = "application/json" end
  local _, status, h = http.request {
    url = URL .. path, method = method, headers = headers, sink = ltn12.sink.table(out),
    source = body and ltn12.source.string(body) or nil,
  }
  local raw = table.concat(out)
  h = h or {}
  local doc
  if (h["content-type"] or ""):match("^application/json") then doc = json.decode(raw, 1, nil) end
  return status, doc or raw, h
end

local function get(path) return req("GET", path) end
local function post(path, t) return req("POST", path, type(t) == "string" and t or json.encode(t)) end

local function admin(path)
  local status, doc = req("POST", "/_admin/" .. path, "")
  assert.equal(200, status, json.encode(doc))
  return doc
end
local function stats() return select(2, get("/_admin/stats")) end

-- Faults injected by the service: a spec of otskit serve's (rate, code,
-- latency, empty, apis, ...); "" turns them off. Returns serve's view.
local function faults(spec)
  local out = {}
  local _, status = http.request { url = SERVE .. "/_otskit/faults", method = "PUT",
    headers = { ["content-length"] = #spec, ["x-otskit-admin-token"] = ADMIN_TOKEN },
    source = ltn12.source.string(spec), sink = ltn12.sink.table(out) }
  assert.equal(200, status, table.concat(out))
  return json.decode(table.concat(out))
end
local function retries_of(s)
  local n = 0
  for k, v in pairs(s.counters) do if k:match("^retries:") then n = n + v end end
  return n
end

-- The model: what a series holds. points[id][ts] = v
local model = {}
local function expect(id, from, to, order)
  local rows = {}
  for ts, v in pairs(model[id] or {}) do
    if ts >= from and ts < to then rows[#rows + 1] = { ts = ts, v = v } end
  end
  table.sort(rows, function(a, b)
    if order == "asc" then return a.ts < b.ts end
    return a.ts > b.ts
  end)
  return rows
end

local function write(id, pts)
  local status, doc = post("/series/" .. id, { points = pts })
  assert.equal(200, status, json.encode(doc))
  model[id] = model[id] or {}
  for _, p in ipairs(pts) do model[id][p.ts] = p.v end
  return doc
end

-- Reads every page; returns rows, pages, the cursors seen.
local function read_all(id, q, limit)
  local rows, pages, cursors = {}, 0, {}
  local cursor
  repeat
    local path = ("/series/%s?limit=%d%s%s"):format(id, limit, q,
      cursor and ("&cursor=" .. cursor) or "")
    local status, doc = get(path)
    assert.equal(200, status, json.encode(doc))
    assert.is_true(#doc.rows <= limit)
    for _, r in ipairs(doc.rows) do rows[#rows + 1] = r end
    pages = pages + 1
    cursor = doc.cursor
    if cursor then
      assert.equal(limit, #doc.rows, "a page before the last is full")
      cursors[#cursors + 1] = cursor
    end
    assert.is_true(pages < 10000)
  until cursor == nil
  return rows, pages, cursors
end

local function same_rows(want, got, what)
  assert.equal(#want, #got, what .. ": row count")
  for i = 1, #want do
    if want[i].ts ~= got[i].ts or want[i].v ~= got[i].v then
      error(("%s: row %d is %s, want %s"):format(what, i, json.encode(got[i]), json.encode(want[i])), 2)
    end
  end
end

-- The /events model: (ts, id) -> event, the last write wins.
local events_all = {}
local function events_want(from, to)
  local t = {}
  for _, e in pairs(events_all) do
    if (not from or e.ts >= from) and (not to or e.ts < to) then t[#t + 1] = e end
  end
  table.sort(t, function(a, b)
    if a.ts ~= b.ts then return a.ts > b.ts end
    return a.id > b.id
  end)
  return t
end
-- every /events page from..to, limit rows each, against the model
local function check_events(from, to, limit)
  local q = (from and ("&from=" .. from) or "") .. (to and ("&to=" .. to) or "")
  local got, cursor, pages = {}, nil, 0
  repeat
    local status, doc = get(("/events?limit=%d%s%s"):format(limit, q, cursor and ("&cursor=" .. cursor) or ""))
    assert.equal(200, status, json.encode(doc))
    for _, row in ipairs(doc.rows) do got[#got + 1] = row end
    cursor, pages = doc.cursor, pages + 1
    if cursor then assert.equal(limit, #doc.rows, "an /events page before the last is full") end
  until cursor == nil or pages > 1000
  local w = events_want(from, to)
  assert.equal(#w, #got)
  for i = 1, #w do
    assert.is_true(w[i].ts == got[i].ts and w[i].id == got[i].id and w[i].v == got[i].v,
      ("row %d: %s, want %s"):format(i, json.encode(got[i]), json.encode(w[i])))
  end
  return pages
end

local r = helper.rng(8)
local TOP = 2 ^ 53 - 1   -- the largest "to" the gateway takes

describe("the otskit gateway in nginx", function()
  it("runs 2 workers, each with its own retry jitter, and otskit.key on the FFI path", function()
    -- start returns once one worker answers; the other records itself in
    -- its init_worker, which may not have run yet: wait for it (5 s)
    local s = stats()
    for _ = 1, 50 do
      if #s.workers >= 2 then break end
      require("socket").sleep(0.1)
      s = stats()
    end
    assert.equal("ffi", s.key_path, s.ffi_why)
    assert.is_true(#s.workers >= 2, "workers recorded: " .. #s.workers)
    local seen = {}
    for _, w in ipairs(s.workers) do
      assert.is_nil(seen[w.jitter], "two workers drew the same jitter sequence")
      seen[w.jitter] = true
      local n = 0
      for d in w.jitter:gmatch("[^,]+") do
        n = n + 1
        assert.is_true(tonumber(d) >= 0 and tonumber(d) < 1)
      end
      assert.equal(8, n)
    end
  end)

  it("serves both workers (reuseport) and answers /healthz", function()
    local pids = {}
    for _ = 1, 60 do
      local status, doc = get("/healthz")
      assert.equal(200, status)
      pids[doc.pid] = true
      if next(pids, next(pids)) then break end
    end
    local n = 0
    for _ in pairs(pids) do n = n + 1 end
    assert.is_true(n >= 2, "only one worker answered 60 requests")
  end)

  it("pages merged from 16 buckets equal the sorted series, in both orders", function()
    faults("")
    for _, id in ipairs { "dev-1", "dev-2" } do
      for _ = 1, 4 do
        local pts = {}
        for j = 1, 150 do
          local ts = 1700000000000 + r.int(0, 5000)
          pts[j] = { ts = ts, v = r.int(1, 3) == 1 and ("s" .. r.int(0, 1e6)) or r.int(-1e6, 1e6) / 4 }
        end
        write(id, pts)
      end
    end
    for _, case in ipairs {
      { "dev-1", 0, TOP, "desc", 37 }, { "dev-1", 0, TOP, "asc", 100 },
      { "dev-2", 1700000001000, 1700000003000, "desc", 16 },
      { "dev-2", 1700000001000, 1700000001001, "asc", 5 },
      { "dev-1", 0, TOP, "desc", 1000 }, { "nobody", 0, 100, "desc", 10 },
    } do
      local id, from, to, order, limit = case[1], case[2], case[3], case[4], case[5]
      local q = ("&from=%d&to=%d&order=%s"):format(from, to, order)
      local got, pages = read_all(id, q, limit)
      local want = expect(id, from, to, order)
      same_rows(want, got, ("%s %s limit %d"):format(id, order, limit))
      assert.equal(math.max(1, math.ceil(#want / limit)), pages)
    end
  end)

  it("a cursor resumes exactly where its page ended, on any worker", function()
    local _, _, cursors = read_all("dev-1", "", 25)
    assert.is_true(#cursors >= 3)
    local want = expect("dev-1", 0, TOP, "desc")
    for i, c in ipairs(cursors) do
      for _ = 1, 3 do    -- again and again: same page, whichever worker serves it
        local status, doc = get("/series/dev-1?limit=25&cursor=" .. c)
        assert.equal(200, status)
        assert.equal(want[i * 25 + 1].ts, doc.rows[1].ts)
        assert.equal(want[math.min(#want, i * 25 + 25)].ts, doc.rows[#doc.rows].ts)
      end
    end
  end)

  it("refuses forged, truncated and foreign cursors with 400", function()
    local _, doc = get("/series/dev-1?limit=10")
    local c = doc.cursor
    assert.is_string(c)
    local flip = c:sub(1, 20) .. (c:sub(21, 21) == "A" and "B" or "A") .. c:sub(22)
    for what, path in pairs {
      forged = "/series/dev-1?limit=10&cursor=" .. flip,
      truncated = "/series/dev-1?limit=10&cursor=" .. c:sub(1, #c - 4),
      ["other series"] = "/series/dev-2?limit=10&cursor=" .. c,
      ["other range"] = "/series/dev-1?limit=10&from=5&cursor=" .. c,
      ["other order"] = "/series/dev-1?limit=10&order=asc&cursor=" .. c,
      garbage = "/series/dev-1?limit=10&cursor=%21%21%21",
      empty = "/series/dev-1?limit=10&cursor=",
    } do
      local status, body = get(path)
      assert.equal(400, status, what)
      assert.equal("BadCursor", body.code, what)
      assert.is_string(body.error)
    end
  end)

  it("absorbs 20 % injected OTSServerBusy on reads and writes by retrying", function()
    admin("budget?capacity=1000000")
    admin("reset")
    local failed0 = faults("rate=0.2,code=OTSServerBusy").counters.failed
    local pts = {}
    for j = 1, 300 do pts[j] = { ts = 1800000000000 + j * 7, v = j } end
    write("dev-3", pts)
    local got = read_all("dev-3", "&order=asc", 50)
    same_rows(expect("dev-3", 0, TOP, "asc"), got, "dev-3 under faults")
    for _ = 1, 10 do
      local st, doc = post("/counters/c-faults", "")
      assert.equal(200, st, json.encode(doc))
    end
    local st, doc = get("/counters/c-faults")
    assert.equal(200, st)
    assert.equal(10, doc.n)
    local injected = faults("").counters.failed - failed0
    local s = stats()
    assert.is_true(injected > 0, "serve injected no fault")
    -- every injected failure was retried (and nothing else was)
    assert.equal(injected, retries_of(s))
    assert.equal(s.counters.calls + injected, s.counters.attempts)
    assert.is_nil(s.counters.failed)
  end)

  it("shares one retry budget between workers; exhausted, it answers 503", function()
    faults("rate=1,code=OTSServerBusy")
    admin("budget?capacity=50")    -- a retry costs 5: 10 retries for everyone
    admin("reset")
    local pids, n503 = {}, 0
    for _ = 1, 40 do
      local status, body, h = get("/series/dev-1?limit=5")
      assert.equal(503, status)
      assert.equal("RetryBudgetExhausted", body.code, json.encode(body))
      assert.matches("retry budget exhausted", body.error)
      n503 = n503 + 1
      pids[h["x-worker-pid"]] = true
      if next(pids, next(pids)) and n503 >= 4 then break end
    end
    local workers = 0
    for _ in pairs(pids) do workers = workers + 1 end
    assert.is_true(workers >= 2, "one worker served every request")
    local s = stats()
    -- one budget: 10 retries in all (per-worker budgets would allow 20)
    assert.equal(10, retries_of(s))
    assert.equal(0, s.budget)
    assert.equal(n503, s.counters.budget_refused)
    faults("")
    admin("budget?capacity=500")
    local status = get("/series/dev-1?limit=5")
    assert.equal(200, status)
  end)

  it("serves /events through otskit.patterns.timeseries: pages newest first, exact", function()
    faults("")
    local evs = {}
    for j = 1, 400 do
      local e = { ts = 1600000000000 + r.int(0, 300), id = "d" .. r.int(1, 9), v = r.int(-1000, 1000) }
      evs[#evs + 1] = e
      events_all[e.ts .. "/" .. e.id] = e    -- (ts, id) is the key: the last write wins
      if #evs == 200 then
        local status, doc = post("/events", { events = evs })
        assert.equal(200, status, json.encode(doc))
        evs = {}
      end
    end
    for _, c in ipairs { { nil, nil, 33 }, { 1600000000100, 1600000000200, 10 }, { nil, 1600000000050, 500 } } do
      check_events(c[1], c[2], c[3])
    end
    local _, doc = get("/events?limit=5")
    local _, sdoc = get("/series/dev-1?limit=5")
    -- (forged inside: a changed last character can leave the decoded bytes
    -- as they were, its low bits unused, or be the same character)
    local c5 = doc.cursor:sub(5, 5)
    for what, path in pairs {
      forged = "/events?limit=5&cursor=" .. doc.cursor:sub(1, 4) .. (c5 == "A" and "B" or "A") .. doc.cursor:sub(6),
      ["a /series cursor"] = "/events?limit=5&cursor=" .. sdoc.cursor,
    } do
      local status, body = get(path)
      assert.equal(400, status, what)
      assert.equal("BadCursor", body.code, what)
    end
    local status, body = get("/events?from=10&to=10")
    assert.equal(400, status)
    assert.equal("BadRange", body.code)
    for _, bad in ipairs { '{"events":[{"ts":1,"id":"a b","v":1}]}', '{"events":[{"ts":1,"id":"a"}]}',
                           '{"events":[]}', '{"events":[{"ts":-5,"id":"a","v":1}]}' } do
      local st, b = post("/events", bad)
      assert.is_true(st == 400, bad .. " -> " .. tostring(st))
      assert.is_string(b.code)
    end
  end)

  it("reads exactly through pages with 0 rows and a next key (serve: empty=0.5)", function()
    admin("reset")
    local before = faults("empty=0.5").counters.empty
    finally(function() faults("") end)
    -- /series: both orders, page sizes that split the buckets unevenly,
    -- every cursor followed (each page a fresh merge over 16 buckets)
    for _, case in ipairs {
      { "dev-1", 0, TOP, "desc", 37 }, { "dev-1", 0, TOP, "asc", 16 },
      { "dev-2", 1700000001000, 1700000003000, "desc", 7 }, { "dev-2", 0, TOP, "asc", 1000 },
    } do
      local id, from, to, order, limit = case[1], case[2], case[3], case[4], case[5]
      local got = read_all(id, ("&from=%d&to=%d&order=%s"):format(from, to, order), limit)
      same_rows(expect(id, from, to, order), got, ("empty pages: %s %s limit %d"):format(id, order, limit))
    end
    -- a cursor's page again, under empty pages: the same rows
    local _, _, cursors = read_all("dev-1", "", 25)
    local want = expect("dev-1", 0, TOP, "desc")
    for i, c in ipairs(cursors) do
      local status, doc = get("/series/dev-1?limit=25&cursor=" .. c)
      assert.equal(200, status)
      assert.equal(want[i * 25 + 1].ts, doc.rows[1].ts)
    end
    -- /events: the timeseries pattern's pager through the client
    for _, c in ipairs { { nil, nil, 33 }, { 1600000000100, 1600000000200, 10 }, { nil, nil, 500 } } do
      check_events(c[1], c[2], c[3])
    end
    local f = faults("empty=0.5")
    assert.is_true(f.counters.empty - before > 50, "serve emptied only " .. (f.counters.empty - before) .. " pages")
    -- empty pages are answers, not failures: nothing was retried
    local s = stats()
    assert.equal(0, retries_of(s))
    assert.is_nil(s.counters.failed)
  end)

  it("lands concurrent writes from both workers", function()
    faults("")
    admin("reset")
    -- 6 clients at once, 10 batches of 100 points each, to 6 series
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    local script = {}
    for w = 1, 6 do
      local f = assert(io.open(("%s/body%d"):format(dir, w), "w"))
      for b = 0, 9 do
        local t = {}
        for j = 1, 100 do t[j] = ('{"ts":%d,"v":%d}'):format(b * 100 + j, w) end
        f:write('{"points":[', table.concat(t, ","), "]}\n")
      end
      f:close()
      script[#script + 1] = ("(while read -r b; do printf '%%s' \"$b\" | curl -s -o /dev/null -w '%%{http_code}\\n' "
        .. "--max-time 20 -X POST --data-binary @- %s/series/cw%d; done < %s/body%d > %s/codes%d) &")
        :format(URL, w, dir, w, dir, w)
    end
    script[#script + 1] = "wait"
    assert(os.execute(table.concat(script, "\n")))
    local ok = 0
    for w = 1, 6 do
      for line in io.lines(("%s/codes%d"):format(dir, w)) do
        assert.equal("200", line)
        ok = ok + 1
      end
    end
    os.execute("rm -rf " .. dir)
    assert.equal(60, ok)
    for w = 1, 6 do
      local _, doc = get(("/series/cw%d?limit=1000&order=asc"):format(w))
      assert.equal(1000, #doc.rows)
      for i, row in ipairs(doc.rows) do
        assert.is_true(row.ts == i and row.v == w, "series cw" .. w .. " row " .. i)
      end
    end
  end)

  it("counts with both workers: no increment lost (INCREMENT and optimistic lock)", function()
    faults("")
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    local script, clients, per = {}, 4, 40
    for w = 1, clients do
      for _, m in ipairs({ { "inc", "" }, { "cas", "?mode=cas" } }) do
        script[#script + 1] = ("(for i in $(seq %d); do curl -s -o /dev/null -w '%%{http_code} %%header{x-worker-pid}\n' "
          .. "--max-time 20 -X POST -d '' '%s/counters/c-%s%s'; done > %s/%s%d) &"):format(per, URL, m[1], m[2], dir, m[1], w)
      end
    end
    script[#script + 1] = "wait"
    assert(os.execute(table.concat(script, "\n")))
    local pids = {}
    for _, m in ipairs({ "inc", "cas" }) do
      local ok = 0
      for w = 1, clients do
        for line in io.lines(("%s/%s%d"):format(dir, m, w)) do
          local code, pid = line:match("^(%d+) (%d*)")
          assert.equal("200", code, m .. ": " .. line)
          pids[pid] = true
          ok = ok + 1
        end
      end
      assert.equal(clients * per, ok)
      local st, doc = get("/counters/c-" .. m)
      assert.equal(200, st)
      assert.equal(clients * per, doc.n, m .. ": acknowledged increments lost")
    end
    os.execute("rm -rf " .. dir)
    local n = 0
    for _ in pairs(pids) do n = n + 1 end
    assert.is_true(n >= 2, "both workers served increments")
  end)

  it("answers deep JSON, long URIs, huge headers and bad admin settings with JSON 4xx", function()
    local st, doc = post("/series/dev-1", ("["):rep(100000))
    assert.equal(400, st)
    assert.equal("BadRequest", doc.code)
    st, doc = post("/events", ('{"events":' .. ("["):rep(50000)))
    assert.equal(400, st)
    assert.is_string(doc.code)
    -- deep but legal inside strings: not refused for depth
    st, doc = post("/series/dev-deep", '{"points":[{"ts":5,"v":"' .. ("["):rep(1000) .. '"}]}')
    assert.equal(200, st, json.encode(doc))
    st, doc = get("/series/" .. ("a"):rep(20000))
    assert.equal(414, st)
    assert.equal("URITooLong", doc.code)
    local out = {}
    local _, hst, hh = http.request { url = URL .. "/healthz", headers = { ["x-big"] = ("b"):rep(20000) },
      sink = ltn12.sink.table(out) }
    assert.equal(400, hst)
    assert.matches("^application/json", hh["content-type"])
    assert.equal("RequestHeaderTooLarge", json.decode(table.concat(out)).code)
    for _, bad in ipairs { "-1", "1.5", "x", "1e12" } do
      st, doc = req("POST", "/_admin/budget?capacity=" .. bad, "")
      assert.equal(400, st, bad)
      assert.equal("BadRequest", doc.code)
    end
    -- and the gateway still serves (the budget was not changed)
    assert.equal(500, stats().budget)
    st = get("/series/dev-1?limit=1")
    assert.equal(200, st)
  end)

  it("stores and returns blobs compressed in chunks", function()
    local parts = {}
    for i = 1, 30000 do parts[i] = ('{"i":%d,"tag":"t%d"}'):format(i, i % 7) end
    local value = table.concat(parts, ",")
    local status, doc = post("/blobs/doc-1", value)
    assert.equal(200, status, json.encode(doc))
    assert.equal(#value, doc.bytes)
    assert.equal("zstd", doc.codec)
    assert.is_true(doc.stored < #value / 3)
    local raw = r.bytes(200000)   -- incompressible: stored raw, in 4 chunks
    local st2, doc2 = post("/blobs/doc-2", raw)
    assert.equal(200, st2)
    assert.is_true(doc2.chunks >= 2)
    for _ = 1, 3 do
      local s1, got = get("/blobs/doc-1")
      assert.equal(200, s1)
      assert.is_true(value == got, "doc-1 came back different")
      local s2, got2 = get("/blobs/doc-2")
      assert.equal(200, s2)
      assert.is_true(raw == got2, "doc-2 came back different")
    end
    -- rewritten smaller: the new value, never a mix
    local st3 = post("/blobs/doc-2", "short")
    assert.equal(200, st3)
    local s4, got4 = get("/blobs/doc-2")
    assert.equal(200, s4)
    assert.equal("short", got4)
    local s5, nf = get("/blobs/nothing-here")
    assert.equal(404, s5)
    assert.equal("NotFound", nf.code)
  end)

  it("answers bad input with a 4xx and a JSON error, never a 500", function()
    local big = ('{"points":[' .. ('{"ts":1,"v":"%s"},'):format(("x"):rep(1000)):rep(2200) .. '{"ts":2,"v":1}]}')
    local cases = {
      { "GET", "/series/dev-1?limit=0", 400 }, { "GET", "/series/dev-1?limit=1001", 400 },
      { "GET", "/series/dev-1?limit=1.5", 400 }, { "GET", "/series/dev-1?limit=", 400 },
      { "GET", "/series/dev-1?from=-1", 400 }, { "GET", "/series/dev-1?from=10&to=10", 400 },
      { "GET", "/series/dev-1?to=99999999999999999999", 400 },
      { "GET", "/series/dev-1?order=sideways", 400 }, { "GET", "/series/dev-1?limit=1&limit=2", 400 },
      { "GET", "/series/dev-1?fanout=maybe", 400 },
      { "GET", "/series/" .. ("a"):rep(65), 400 }, { "GET", "/series/a.b", 400 },
      { "GET", "/series/", 400 }, { "GET", "/series/%00x", 400 },
      { "GET", "/nothing/here", 404 }, { "GET", "/series/a/b", 404 }, { "GET", "/", 404 },
      { "DELETE", "/series/dev-1", 405 }, { "PUT", "/blobs/x", 405 },
      { "POST", "/series/dev-1", 400, "not json" }, { "POST", "/series/dev-1", 400, "{}" },
      { "POST", "/series/dev-1", 400, '{"points":[]}' },
      { "POST", "/series/dev-1", 400, '{"points":[{"ts":1.5,"v":1}]}' },
      { "POST", "/series/dev-1", 400, '{"points":[{"ts":-1,"v":1}]}' },
      { "POST", "/series/dev-1", 400, '{"points":[{"ts":1,"v":{"a":1}}]}' },
      { "POST", "/series/dev-1", 400, '{"points":[{"ts":1}]}' },
      { "POST", "/series/dev-1", 400, '{"points":[1,2]}' },
      { "POST", "/series/dev-1", 400, '{"points":{"ts":1}}' },
      { "POST", "/series/dev-1", 400, '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[' },
      { "POST", "/series/dev-1", 413, big },
      { "GET", "/_otskit?api=ListTable", 404 },   -- the client's internal location
    }
    for _, c in ipairs(cases) do
      local status, body = req(c[1], c[2], c[4])
      local what = c[1] .. " " .. c[2] .. " " .. (c[4] and c[4]:sub(1, 40) or "")
      assert.equal(c[3], status, what .. ": " .. tostring(type(body) == "table" and json.encode(body) or body))
      assert.is_table(body, what .. ": not JSON")
      assert.is_string(body.error, what)
      assert.is_string(body.code, what)
    end
  end)

  it("answers HEAD, HTTP/0.9, bad UTF-8, unknown methods and versions with its JSON error", function()
    local socket = require "socket"
    local port = tonumber(URL:match(":(%d+)$"))
    local function raw(text)
      local c = assert(socket.connect("127.0.0.1", port))
      c:settimeout(5)
      assert(c:send(text))
      local all, _, part = c:receive("*a")   -- the server closes: the answer ends
      c:close()
      all = all or part or ""
      local status = tonumber(all:match("^HTTP/1%.%d (%d+)"))
      return status, all:match("\r\n\r\n(.*)$") or all
    end
    local function body_of(status, text)
      -- a chunked body: the JSON inside
      local j = text:match("%b{}")
      return status, j and json.decode(j)
    end
    local bad = '{"points":[{"ts":1,"v":"\237\160\128"}]}'     -- a UTF-16 surrogate
    local bad2 = '{"events":[{"ts":1,"id":"a","v":"\255"}]}'
    local cases = {
      { "HEAD /counters/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 400, nil },
      { "GET /series/x?from=0&to=10&limit=-1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 400, "BadRequest" },
      { "GET /events?limit=-5 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 400, "BadRequest" },
      { "POST /series/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: " .. #bad .. "\r\n\r\n" .. bad, 400, "BadRequest" },
      { "POST /events HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: " .. #bad2 .. "\r\n\r\n" .. bad2, 400, "BadRequest" },
      { "GET /\255\254 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 404, "NotFound" },
      { "GET /counters/x HTTP/3.0\r\nHost: x\r\n\r\n", 400, "HTTPVersionNotSupported" },
      { "FOO /counters/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 405, "MethodNotAllowed" },
      { "TRACE /counters/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 405, "MethodNotAllowed" },
      { "GARBAGE\r\n\r\n", 400, "BadRequest" },
    }
    for _, c in ipairs(cases) do
      local status, doc = body_of(raw(c[1]))
      local what = c[1]:sub(1, 40)
      assert.equal(c[2], status, what)
      if c[3] then
        assert.is_table(doc, what .. ": not JSON")
        assert.equal(c[3], doc.code, what)
      end
    end
    -- HTTP/0.9: the JSON error alone (no status line), then the connection closes
    local c = assert(socket.connect("127.0.0.1", port))
    c:settimeout(5)
    assert(c:send("GET /healthz\r\n"))
    local all, err, part = c:receive("*a")
    c:close()
    assert.is_nil(err, "the connection was not closed")
    all = all or part
    assert.is_nil(all:match("^HTTP/"))
    assert.equal("BadRequest", json.decode(all).code)
    -- nothing bad was stored
    local st, doc = get("/series/x?from=0&to=10")
    assert.equal(200, st); assert.equal(0, #doc.rows)
  end)

  it("left no Lua error (nor a crash) in error.log, the gateway's or serve's", function()
    local bad = {}
    for _, log in ipairs { "/logs/error.log", "/serve/logs/error.log" } do
      local f = assert(io.open(PREFIX .. log))
      for line in f:lines() do
        -- nginx logs refused requests ("too large body") at [error]: only
        -- Lua errors, crashes and worse count
        if (line:match("%[error%]") and line:lower():match("lua")) or line:match("%[crit%]")
           or line:match("%[alert%]") or line:match("%[emerg%]") or line:match("stack traceback")
           or line:match("runtime error") or line:match("exited on signal")
           or line:match("Sanitizer") then
          bad[#bad + 1] = line
        end
      end
      f:close()
    end
    assert.equal(0, #bad, table.concat(bad, "\n"))
  end)
end)
