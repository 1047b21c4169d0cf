-- otskit.core.http: the libcurl multi binding, against a local Python
-- HTTP/1.1 server (spec/support/httpd.py).
local http = require("otskit.core").http
local procs = require "support.procs"
local helper = require "helper"

local srv, base
setup(function()
  srv = assert(procs.start("python3 spec/support/httpd.py"))
  base = "http://127.0.0.1:" .. srv.port
end)
teardown(function() if srv then srv.stop() end end)

local function wait_all(s, ids, secs)
  local got, n = {}, 0
  local want = #ids
  while n < want do
    local done = assert(s:wait(secs or 5))
    assert(#done > 0, "wait returned nothing")
    for _, r in ipairs(done) do got[r.id] = r; n = n + 1 end
  end
  return got
end

describe("otskit.core.http", function()
  it("posts exactly the given headers and body and returns the response", function()
    local s = http.new()
    local r = assert(s:request{ url = base .. "/echo", body = "hello\0world",
      headers = { ["x-ots-date"] = "2024-01-02T03:04:05.678Z", ["x-empty"] = "" } })
    assert.is_nil(r.failure)
    assert.equal(200, r.status)
    assert.equal("hello\0world", r.body)
    assert.equal("2024-01-02T03:04:05.678Z", r.headers["x-echo-x-ots-date"])
    assert.equal("", r.headers["x-echo-x-empty"])
    assert.equal("POST", r.headers["x-method"])
    assert.equal("11", r.headers["x-echo-content-length"])
    -- nothing the caller did not ask for
    assert.is_nil(r.headers["x-echo-accept"])
    assert.is_nil(r.headers["x-echo-content-type"])
    assert.is_nil(r.headers["x-echo-expect"])
    s:close()
  end)

  it("echoes random binary bodies byte for byte (property)", function()
    local rng = helper.rng(7)
    local s = http.new()
    for _ = 1, helper.trials(40) do
      local body = rng.bytes(rng.int(0, 3000))
      local r = assert(s:request{ url = base .. "/echo", body = body })
      assert.equal(200, r.status)
      assert.equal(body, r.body)
    end
  end)

  it("reuses one kept-alive connection across sequential requests", function()
    local s = http.new()
    local conn
    for i = 1, 50 do
      local r = assert(s:request{ url = base .. "/echo", body = tostring(i) })
      assert.equal(tostring(i), r.body)
      conn = conn or r.headers["x-conn"]
      assert.equal(conn, r.headers["x-conn"])
    end
    assert.equal(1, s:connects())
  end)

  it("runs many requests at once, each on its own connection", function()
    local s = http.new()
    local ids = {}
    for i = 1, 16 do ids[i] = assert(s:submit{ url = base .. "/delay/150", body = "r" .. i }) end
    assert.equal(16, s:pending())
    local got = wait_all(s, ids)
    local conns = {}
    for i, id in ipairs(ids) do
      assert.equal("r" .. i, got[id].body)
      conns[got[id].headers["x-conn"]] = true
    end
    local n = 0
    for _ in pairs(conns) do n = n + 1 end
    assert.equal(16, n)          -- all in flight together
    assert.equal(0, s:pending())
    -- the 16 connections stay open: a second fan-out opens none
    local before = s:connects()
    ids = {}
    for i = 1, 16 do ids[i] = s:submit{ url = base .. "/echo", body = "x" } end
    wait_all(s, ids)
    assert.equal(before, s:connects())
  end)

  it("returns immediately from wait with nothing in flight", function()
    local s = http.new()
    local done = s:wait(30)
    assert.same({}, done)
    assert.equal(0, s:poll(30))
  end)

  it("decodes chunked responses", function()
    local r = assert(http.new():request{ url = base .. "/chunked", method = "GET" })
    assert.equal(200, r.status)
    assert.equal(string.rep("a", 3000), r.body)
    assert.equal("chunked", r.headers["transfer-encoding"])
  end)

  it("returns HTTP errors as statuses, not failures", function()
    local r = assert(http.new():request{ url = base .. "/status/503" })
    assert.is_nil(r.failure)
    assert.equal(503, r.status)
    assert.equal("status 503", r.body)
  end)

  it("times out a slow request and keeps the others", function()
    local s = http.new()
    local slow = s:submit{ url = base .. "/delay/3000", timeout = 0.2 }
    local fast = s:submit{ url = base .. "/echo", body = "ok" }
    local got = wait_all(s, { slow, fast })
    assert.equal("timeout", got[slow].failure)
    assert.truthy(got[slow].error:find("imed out"))
    assert.equal("ok", got[fast].body)
  end)

  it("says a refused connection was never sent", function()
    -- a port that was free a moment ago
    local p = assert(procs.start("python3 spec/support/httpd.py"))
    local port = p.port
    p.stop()
    os.execute("sleep 0.1")
    local r = assert(http.new():request{ url = "http://127.0.0.1:" .. port .. "/echo", connect_timeout = 2 })
    assert.equal("connect", r.failure)
    assert.is_nil(r.status)
  end)

  it("opens a new connection after the server closed one", function()
    local s = http.new()
    assert.equal("bye", assert(s:request{ url = base .. "/close" }).body)
    local r = assert(s:request{ url = base .. "/echo", body = "again" })
    assert.equal("again", r.body)
    assert.equal(2, s:connects())
  end)

  it("refuses a response over max_response", function()
    local s = http.new{ max_response = 100 }
    local r = assert(s:request{ url = base .. "/big/1000", method = "GET" })
    assert.equal("too_large", r.failure)
    assert.equal(100, #assert(s:request{ url = base .. "/big/100", method = "GET" }).body)
  end)

  it("takes results by id and cancels", function()
    local s = http.new()
    local a = s:submit{ url = base .. "/echo", body = "a" }
    local b = s:submit{ url = base .. "/delay/2000", body = "b" }
    while s:poll(5) == 0 do end
    assert.equal("a", s:take(a).body)
    assert.is_nil(s:take(a))
    assert.is_true(s:cancel(b))
    assert.is_false(s:cancel(b))
    assert.equal(0, s:pending())
  end)

  it("refuses bad options and bad headers", function()
    assert.has_error(function() http.new{ verfy = false } end, "otskit.http: new: unknown option 'verfy'")
    local s = http.new()
    assert.has_error(function() s:submit{ url = base, tiemout = 1 } end, "otskit.http: submit: unknown option 'tiemout'")
    assert.has_error(function() s:submit{ url = base, headers = { a = "x\r\nb: y" } } end)
    assert.has_error(function() s:submit{ url = base, headers = { ["a b"] = "x" } } end)
    assert.has_error(function() s:submit{ url = base, timeout = -1 } end)
    assert.has_error(function() s:wait(-1) end)
    s:close()
    assert.has_error(function() s:submit{ url = base } end, "otskit.http: session is closed")
    assert.is_nil(select(1, http.new():request{ url = "ftp://127.0.0.1/" }).status)
  end)

  it("frees sessions with requests in flight", function()
    for _ = 1, 5 do
      local s = http.new()
      for _ = 1, 4 do s:submit{ url = base .. "/delay/500" } end
      s:poll(0)
    end
    collectgarbage(); collectgarbage()
    local s = http.new()
    s:submit{ url = base .. "/delay/500" }
    s:close(); s:close()
  end)

  describe("HTTPS", function()
    local tls, dir
    setup(function()
      dir = os.tmpname(); os.remove(dir); os.execute("mkdir -p " .. dir)
      assert(os.execute(("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 " ..
        "-addext subjectAltName=IP:127.0.0.1 -keyout %s/key.pem -out %s/cert.pem 2>/dev/null"):format(dir, dir)))
      tls = assert(procs.start(("python3 spec/support/httpd.py %s/cert.pem %s/key.pem"):format(dir, dir)))
    end)
    teardown(function()
      if tls then tls.stop() end
      os.execute("rm -rf " .. dir)
    end)

    it("verifies the certificate by default", function()
      local url = "https://127.0.0.1:" .. tls.port .. "/echo"
      local r = assert(http.new():request{ url = url, body = "x" })
      assert.equal("tls", r.failure)
      r = assert(http.new{ ca_file = dir .. "/cert.pem" }:request{ url = url, body = "secure" })
      assert.equal("secure", r.body)
      r = assert(http.new{ verify = false }:request{ url = url, body = "insecure" })
      assert.equal("insecure", r.body)
    end)
  end)
end)
