-- spec/serve/server_test.lua -- `otskit serve` over HTTP with otskit's own
-- codec (otskit.wire): run by spec/serve.sh against a server with 2
-- workers on one data directory. Requests are signed here as the SDKs do.
local socket = require "socket"
local wire = require "otskit.wire"

local PORT = assert(tonumber(os.getenv("OTSKIT_SERVE_PORT")), "run through spec/serve.sh")
local PREFIX = os.getenv("OTSKIT_SERVE_PREFIX")
local AK, SK, INST = "spec-ak", "spec-sk", "spec"
local ADMIN = { ["x-otskit-admin-token"] = assert(os.getenv("OTSKIT_ADMIN_TOKEN"), "run through spec/serve.sh") }

-- one HTTP exchange on a fresh connection -> status, headers (lower-case), body
local function http(method, path, headers, body)
  local c = assert(socket.connect("127.0.0.1", PORT))
  c:settimeout(10)
  local lines = { ("%s %s HTTP/1.1"):format(method, path), "Host: 127.0.0.1", "Connection: close",
                  "Content-Length: " .. #body }
  for k, v in pairs(headers) do lines[#lines + 1] = k .. ": " .. v end
  assert(c:send(table.concat(lines, "\r\n") .. "\r\n\r\n" .. body))
  local status = tonumber(assert(c:receive("*l")):match("^HTTP/1%.1 (%d+)"))
  local h = {}
  while true do
    local l = assert(c:receive("*l"))
    if l == "" then break end
    local k, v = l:match("^([^:]+):%s*(.-)%s*$")
    h[k:lower()] = v
  end
  local rest = c:receive("*a") or ""
  c:close()
  return status, h, rest
end

local function signed_headers(api, body, o)
  o = o or {}
  local h = { ["x-ots-date"] = o.date or wire.date(math.floor(socket.gettime() * 1000)),
    ["x-ots-apiversion"] = "2015-12-31", ["x-ots-accesskeyid"] = o.ak or AK,
    ["x-ots-instancename"] = o.instance or INST, ["x-ots-contentmd5"] = o.md5 or wire.content_md5(body) }
  h["x-ots-signature"] = wire.sign_request(o.sk or SK, api, h)
  for _, k in ipairs(o.drop or {}) do h[k] = nil end
  return h
end

-- api call with a raw body -> status, headers, body
local function raw(api, body, o)
  return http(o and o.method or "POST", "/" .. api, signed_headers(api, body, o), body)
end

-- api call with a request table -> res | nil, message, code, status
local function call(api, req)
  local body = assert(wire.encode_request(api, req))
  local status, _, rb = raw(api, body)
  if status ~= 200 then
    local code, msg = wire.decode_error(rb)
    return nil, msg, code, status
  end
  return assert(wire.decode_response(api, rb, req))
end

local function err_of(status, _, body)
  local code, msg = wire.decode_error(body)
  return status, code, msg
end

describe("otskit serve", function()
  it("creates tables and every worker sees them", function()
    assert(call("CreateTable", { name = "t", primary_key = { { "k", "STRING" }, { "n", "INTEGER" } } }))
    -- each request is a new connection: the two workers both answer some
    for i = 1, 20 do
      local res = assert(call("DescribeTable", { name = "t" }))
      assert.equal("t", res.table_meta.table)
      assert.same({ "k", "STRING" }, { res.table_meta.primary_key[1][1], res.table_meta.primary_key[1][2] })
      assert(call("PutRow", { table = "t", primary_key = { { "k", "w" }, { "n", i } }, columns = { v = i } }))
    end
    local names = assert(call("ListTable", {})).table_names
    assert.same({ "t" }, names)
    local _, _, code, status = call("CreateTable", { name = "t", primary_key = { { "k", "STRING" } } })
    assert.equal("OTSObjectAlreadyExist", code); assert.equal(409, status)
  end)

  it("round-trips rows through PlainBuffer", function()
    assert(call("PutRow", { table = "t", primary_key = { { "k", "a" }, { "n", 1 } },
      columns = { s = "text", i = 42, d = 2.5, b = true } }))
    local res = assert(call("GetRow", { table = "t", primary_key = { { "k", "a" }, { "n", 1 } } }))
    assert.same({ s = "text", i = 42, d = 2.5, b = true }, res.row.columns)
    assert.same({ { "k", "a" }, { "n", 1 } }, res.row.primary_key)
    -- BINARY and int64 beyond 2^53 keep their types through the store
    local big = wire.integer("9007199254740993")
    assert(call("PutRow", { table = "t", primary_key = { { "k", "b" }, { "n", 1 } },
      columns = { x = wire.binary("\0\1\255"), big = big } }))
    res = assert(call("GetRow", { table = "t", primary_key = { { "k", "b" }, { "n", 1 } } }))
    local here = assert(wire.decode_rows(assert(wire.encode_put({ { "k", "b" } }, { { "x", wire.binary("\0\1\255") }, { "big", big } }))))[1]
    assert.same(here.columns.x, res.row.columns.x)
    assert.same(here.columns.big, res.row.columns.big)
    res = assert(call("GetRow", { table = "t", primary_key = { { "k", "none" }, { "n", 1 } } }))
    assert.is_nil(res.row)
    local _, msg, code, status = call("PutRow", { table = "t", primary_key = { { "k", "a" }, { "n", 1 } },
      columns = { s = "x" }, condition = "EXPECT_NOT_EXIST" })
    assert.same({ 403, "OTSConditionCheckFail", "Condition check failed." }, { status, code, msg })
    _, msg, code, status = call("GetRow", { table = "nope", primary_key = { { "k", "a" } } })
    assert.same({ 404, "OTSObjectNotExist", "Requested table does not exist." }, { status, code, msg })
  end)

  it("pages GetRange both ways", function()
    local rows = {}
    for i = 1, 20 do rows[i] = { type = "PUT", primary_key = { { "k", "r" }, { "n", i } }, columns = { v = i } } end
    assert(call("BatchWriteRow", { tables = { { table = "t", rows = rows } } }))
    for _, dir in ipairs{ "FORWARD", "BACKWARD" } do
      local fw = dir == "FORWARD"
      local start = { { "k", "r" }, { "n", fw and wire.INF_MIN or wire.INF_MAX } }
      local stop = { { "k", "r" }, { "n", fw and wire.INF_MAX or wire.INF_MIN } }
      local got, pages = {}, 0
      repeat
        local page = assert(call("GetRange", { table = "t", start = start, stop = stop, direction = dir, limit = 7 }))
        pages = pages + 1
        for _, r in ipairs(page.rows) do got[#got + 1] = r.primary_key[2][2] end
        start = page.next_start_primary_key
      until start == nil
      assert.equal(3, pages)
      for i = 1, 20 do assert.equal(fw and i or 21 - i, got[i]) end
    end
  end)

  it("answers empty GetRange pages with no rows and the next key where the page would start", function()
    local cjson = require "cjson"
    local function faults_doc(method, body)
      local status, _, b = http(method, "/_otskit/faults", ADMIN, body)
      assert.equal(200, status, b)
      return cjson.decode(b:match("%b{}"))   -- the body may come chunked
    end
    finally(function() faults_doc("DELETE", "") end)
    local before = faults_doc("GET", "").counters.empty
    -- empty=1 is refused (no read would ever end): 0.9, each start asked
    -- until the fault took it
    assert.equal(400, (http("PUT", "/_otskit/faults", ADMIN, "empty=1")))
    assert.equal(0.9, faults_doc("PUT", "empty=0.9").empty)
    local asked, calls = 0, 0
    for _, dir in ipairs{ "FORWARD", "BACKWARD" } do
      local fw = dir == "FORWARD"
      local stop = { { "k", "r" }, { "n", fw and wire.INF_MAX or wire.INF_MIN } }
      -- rows n = 1..20 exist; a start on a row, between or beyond them
      for s = -1, 22 do
        local start = { { "k", "r" }, { "n", s } }
        if s == -1 then start[2][2] = fw and wire.INF_MIN or wire.INF_MAX end
        local page
        for _ = 1, 60 do
          page = assert(call("GetRange", { table = "t", start = start, stop = stop, direction = dir, limit = 7 }))
          calls = calls + 1
          if #page.rows == 0 then break end
        end
        asked = asked + 1
        assert.equal(0, #page.rows)
        local first   -- the first row the page would have held
        if s == -1 then first = fw and 1 or 20
        elseif fw then first = s <= 20 and math.max(s, 1) or nil
        else first = s >= 1 and math.min(s, 20) or nil end
        if first then
          -- never INF_MIN / INF_MAX: a real row's key
          assert.same({ { "k", "r" }, { "n", first } }, page.next_start_primary_key)
        else
          assert.is_nil(page.next_start_primary_key)   -- nothing left: the real answer
        end
      end
    end
    -- other reads are untouched, and every GetRange the fault took is counted
    assert.equal(1, assert(call("GetRow", { table = "t", primary_key = { { "k", "r" }, { "n", 1 } } })).row.columns.v)
    local counted = faults_doc("GET", "").counters.empty - before
    assert.is_true(counted >= asked - 4 and counted <= calls, ("%d counted, %d asked, %d calls"):format(counted, asked, calls))
    faults_doc("PUT", "empty=0.5")
    -- a reader following next_start_primary_key still reads every row once
    for _, dir in ipairs{ "FORWARD", "BACKWARD" } do
      local fw = dir == "FORWARD"
      local start = { { "k", "r" }, { "n", fw and wire.INF_MIN or wire.INF_MAX } }
      local stop = { { "k", "r" }, { "n", fw and wire.INF_MAX or wire.INF_MIN } }
      local got, empties, pages = {}, 0, 0
      repeat
        local page = assert(call("GetRange", { table = "t", start = start, stop = stop, direction = dir, limit = 3 }))
        if #page.rows == 0 and page.next_start_primary_key then empties = empties + 1 end
        for _, r in ipairs(page.rows) do got[#got + 1] = r.primary_key[2][2] end
        start, pages = page.next_start_primary_key, pages + 1
      until start == nil or pages > 500
      assert.equal(20, #got)
      for i = 1, 20 do assert.equal(fw and i or 21 - i, got[i]) end
      assert.is_true(empties > 0, "no empty page at empty=0.5")
    end
  end)

  it("keeps key types: BINARY keys page as BINARY", function()
    assert(call("CreateTable", { name = "bk", primary_key = { { "b", "BINARY" }, { "i", "INTEGER" } } }))
    local big = wire.integer("9007199254740993")
    for c = 1, 5 do
      assert(call("PutRow", { table = "bk", primary_key = { { "b", wire.binary(string.char(0, c)) }, { "i", big } }, columns = { v = c } }))
    end
    -- decoded key entries say BINARY as {name, bytes, "BINARY"}
    local function binary_entry(e) return e[3] == "BINARY" and type(e[2]) == "string" end
    local res = assert(call("GetRow", { table = "bk", primary_key = { { "b", wire.binary("\0\3") }, { "i", big } } }))
    assert.is_true(binary_entry(res.row.primary_key[1]))
    assert.equal("\0\3", res.row.primary_key[1][2])
    local here = assert(wire.decode_rows(assert(wire.encode_pk({ { "i", big } }))))[1]
    assert.same(here.primary_key[1][2], res.row.primary_key[2][2])
    local start, n = { { "b", wire.INF_MIN }, { "i", wire.INF_MIN } }, 0
    repeat
      local page = assert(call("GetRange", { table = "bk", start = start, stop = { { "b", wire.INF_MAX }, { "i", wire.INF_MAX } }, limit = 2 }))
      for _, r in ipairs(page.rows) do
        n = n + 1
        assert.is_true(binary_entry(r.primary_key[1]))
      end
      start = page.next_start_primary_key
      if start then assert.is_true(binary_entry(start[1])) end
    until start == nil
    assert.equal(5, n)
    assert(call("DeleteTable", { name = "bk" }))
  end)

  it("signs every answer and names its headers as the service does", function()
    local status, h, body = raw("ListTable", "")
    assert.equal(200, status)
    assert.equal(wire.content_md5(body), h["x-ots-contentmd5"])
    assert.equal("protocol buffer", h["x-ots-contenttype"])
    assert.truthy(h["x-ots-date"]:match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d+Z$"))
    assert.truthy(h["x-ots-requestid"]:match("^%x+%-%x+%-%x+%-%x+%-%x+$"))
    local xots = {}
    for k, v in pairs(h) do if k:sub(1, 6) == "x-ots-" then xots[k] = v end end
    assert.equal("OTS " .. AK .. ":" .. wire.sign_response(SK, "ListTable", xots), h["authorization"])
    assert.is_nil(h["content-encoding"])
  end)

  it("refuses requests as the service does", function()
    local now = math.floor(socket.gettime() * 1000)
    local cases = {
      { "bad signature", { sk = "other" }, 403, "OTSAuthFailed", "Signature mismatch." },
      { "unknown access key", { ak = "who" }, 403, "OTSAuthFailed" },
      { "unknown instance", { instance = "other" }, 403, "OTSAuthFailed" },
      { "date 16 min behind", { date = wire.date(now - 16 * 60000) }, 403, "OTSAuthFailed",
        "Mismatch between system time and x-ots-date." },
      { "date 16 min ahead", { date = wire.date(now + 16 * 60000) }, 403, "OTSAuthFailed" },
      { "MD5 mismatch", { md5 = wire.content_md5("x") }, 403, "OTSAuthFailed",
        "Mismatch between MD5 value of request body and x-ots-contentmd5 in header." },
      { "no date", { drop = { "x-ots-date" } }, 400, "OTSParameterInvalid", "Missing header: x-ots-date" },
      { "no signature", { drop = { "x-ots-signature" } }, 400, "OTSParameterInvalid", "Missing header: x-ots-signature" },
      { "bad date", { date = "yesterday" }, 400, "OTSParameterInvalid" },
      { "GET", { method = "GET" }, 405, "OTSMethodNotAllowed" },
    }
    for _, c in ipairs(cases) do
      local status, code, msg = err_of(raw("ListTable", "", c[2]))
      assert.equal(c[3], status, c[1]); assert.equal(c[4], code, c[1])
      if c[5] then assert.equal(c[5], msg, c[1]) end
    end
    -- the Go SDK's odd fraction (month, day, hour digits) is accepted
    local s = wire.date(now):sub(1, 19) .. ".11232Z"
    assert.equal(200, (raw("ListTable", "", { date = s })))
    local status, code, msg = err_of(raw("Frobnicate", ""))
    assert.same({ 400, "OTSParameterInvalid", "Unsupported operation: 'Frobnicate'." }, { status, code, msg })
    status, code = err_of(raw("PutRow", ("x"):rep(5 * 1024 * 1024 + 1)))
    assert.same({ 413, "OTSRequestBodyTooLarge" }, { status, code })
    status, code = err_of(raw("PutRow", "\255\255\255garbage"))
    assert.same({ 400, "OTSParameterInvalid" }, { status, code })
    -- an unknown API or a method other than POST is refused as such
    -- whatever its body: one sent chunked (no length to refuse it by
    -- first) and over the body limit is never read as a request body
    for _, c in ipairs({ { "POST", "/Frobnicate", 400, "OTSParameterInvalid" },
                         { "GET", "/ListTable", 405, "OTSMethodNotAllowed" } }) do
      local conn = assert(socket.connect("127.0.0.1", PORT))
      conn:settimeout(10)
      local h = signed_headers(c[2]:sub(2), "")
      local lines = { c[1] .. " " .. c[2] .. " HTTP/1.1", "Host: 127.0.0.1", "Connection: close",
                      "Transfer-Encoding: chunked" }
      for k, v in pairs(h) do lines[#lines + 1] = k .. ": " .. v end
      assert(conn:send(table.concat(lines, "\r\n") .. "\r\n\r\n"))
      local chunk = ("%x\r\n%s\r\n"):format(65536, ("x"):rep(65536))
      for _ = 1, 96 do -- 6 MB
        if not conn:send(chunk) then break end -- (the server may close once it answered)
      end
      conn:send("0\r\n\r\n")
      local line = assert(conn:receive("*l"))
      local st = tonumber(line:match("^HTTP/1%.1 (%d+)"))
      local len
      while true do
        local l = assert(conn:receive("*l"))
        if l == "" then break end
        len = len or tonumber(l:lower():match("^content%-length:%s*(%d+)"))
      end
      local body = conn:receive(len or "*a")
      conn:close()
      assert.same({ c[3], c[4] }, { st, (wire.decode_error(body)) }, c[1] .. " " .. c[2])
    end
  end)

  it("injects faults set through the admin endpoint", function()
    local status, _, body = http("PUT", "/_otskit/faults", ADMIN, "rate=1,code=OTSTimeout,apis=GetRow")
    assert.equal(200, status); assert.truthy(body:find('"enabled":true', 1, true))
    local _, _, code, st = call("GetRow", { table = "t", primary_key = { { "k", "a" }, { "n", 1 } } })
    assert.same({ 503, "OTSTimeout" }, { st, code })
    assert(call("ListTable", {}))
    status = http("PUT", "/_otskit/faults", ADMIN, "rate=7")
    assert.equal(400, status)
    status = http("DELETE", "/_otskit/faults", ADMIN, "")
    assert.equal(200, status)
    assert(call("GetRow", { table = "t", primary_key = { { "k", "a" }, { "n", 1 } } }))
  end)

  it("refuses the admin endpoint without its token, whatever the address", function()
    for _, h in ipairs { {}, { ["x-otskit-admin-token"] = "wrong-token-0123456789" },
                         { ["x-otskit-admin-token"] = ADMIN["x-otskit-admin-token"] .. "x" } } do
      for _, m in ipairs { "GET", "PUT", "DELETE" } do
        local status, _, body = http(m, "/_otskit/faults", h, m == "PUT" and "rate=1" or "")
        assert.equal(401, status, body)
      end
    end
    -- nothing was switched on
    local _, _, body = http("GET", "/_otskit/faults", ADMIN, "")
    assert.truthy(body:find('"enabled":false', 1, true), body)
    assert.equal(200, (http("GET", "/_otskit/health", {}, "")))
  end)

  it("runs no worker as root, and printed no secret", function()
    local f = assert(io.open(PREFIX .. "/logs/nginx.pid"))
    local master = f:read("*l"); f:close()
    local p = io.popen("env -u LD_PRELOAD ps -o user= --ppid " .. master)
    local users = p:read("*a"); p:close()
    assert.truthy(users:match("%S"), "no worker found")
    for u in users:gmatch("%S+") do assert.not_equal("root", u) end
    local log = io.open(PREFIX .. "/../serve.log")
    if log then
      local text = log:read("*a"); log:close()
      assert.is_nil(text:find("spec-sk", 1, true), "the secret was printed")
      assert.is_nil(text:find(ADMIN["x-otskit-admin-token"], 1, true), "the admin token was printed")
    end
  end)

  it("answers every service code of otskit.errors with its status and message", function()
    local errors = require "otskit.errors"
    finally(function() http("DELETE", "/_otskit/faults", ADMIN, "") end)
    local codes = errors.codes("service")
    assert.is_true(#codes >= 20)
    for _, c in ipairs(codes) do
      local status = http("PUT", "/_otskit/faults", ADMIN, "rate=1,apis=GetRow,code=" .. c)
      assert.equal(200, status, c)
      local st, code, msg = err_of(raw("GetRow", assert(wire.encode_request("GetRow",
        { table = "t", primary_key = { { "k", "a" }, { "n", 1 } } }))))
      assert.same({ errors.status(c), c, errors.message(c) }, { st, code, msg })
    end
    -- a code the service never sends is refused without a status
    assert.equal(400, (http("PUT", "/_otskit/faults", ADMIN, "rate=1,code=OTSOutcomeUnknown")))
  end)

  it("deletes tables everywhere", function()
    assert(call("DeleteTable", { name = "t" }))
    for _ = 1, 10 do
      local _, _, code = call("DescribeTable", { name = "t" })
      assert.equal("OTSObjectNotExist", code)
    end
  end)

  it("writes LuaJIT's trace events of every worker to --jit-log, as -jv prints them", function()
    local path = assert(os.getenv("OTSKIT_SERVE_JITLOG"), "run through spec/serve.sh")
    assert(call("CreateTable", { name = "jl", primary_key = { { "id", "INTEGER" } } }))
    for i = 1, 300 do
      assert(call("PutRow", { table = "jl", primary_key = { { "id", i } }, columns = { { "v", "x" } } }))
      assert(call("GetRow", { table = "jl", primary_key = { { "id", i } } }))
    end
    assert(call("DeleteTable", { name = "jl" }))
    local f = assert(io.open(path))
    local text = f:read("*a"); f:close()
    local workers, traces = 0, 0
    for line in text:gmatch("[^\n]+") do
      if line:match("^# worker %d+: ") then workers = workers + 1
      elseif line:match("^%[TRACE +%d+ .-[%w_]+%.lua:%d+.*%]$") then traces = traces + 1
      else assert.truthy(line:match("^%[TRACE .*%]$"), line) end
    end
    assert.equal(2, workers, text:sub(1, 2000))
    assert.is_true(traces > 0, text:sub(1, 2000))
  end)

  it("left no Lua error or crashed worker in error.log", function()
    local f = assert(io.open(PREFIX .. "/logs/error.log"))
    local text = f:read("*a"); f:close()
    for line in text:gmatch("[^\n]+") do
      if (line:find("%[error%]") or line:find("%[alert%]") or line:find("%[crit%]") or line:find("signal %d+"))
          and not line:find("client intended to send too large body", 1, true) then
        error("error.log: " .. line)
      end
    end
  end)

  it("stops nginx and all its workers on SIGTERM", function()
    local pid = assert(tonumber(os.getenv("OTSKIT_SERVE_PID")))
    local f = assert(io.open(PREFIX .. "/logs/nginx.pid"))
    local master = assert(tonumber(f:read("*l"))); f:close()
    local function lines(cmd)
      local p = io.popen(cmd); local out = p:read("*a"); p:close(); return out
    end
    local workers = lines("pgrep -P " .. master)
    assert.truthy(workers:match("%d"), "no workers")
    assert(os.execute("kill -TERM " .. pid))
    local alive
    for _ = 1, 100 do
      alive = lines("for p in " .. pid .. " " .. master .. " " .. workers:gsub("%s+", " ") ..
        "; do kill -0 $p 2>/dev/null && echo $p; done")
      if not alive:match("%d") then break end
      socket.sleep(0.1)
    end
    assert.equal("", alive)
    assert.is_nil(socket.connect("127.0.0.1", PORT))
  end)
end)
