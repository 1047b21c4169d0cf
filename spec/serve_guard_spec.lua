-- `otskit serve` as an operator could misuse it and as an attacker on the
-- same host would probe it: malformed HTTP gets the service's signed
-- protobuf error (never an nginx HTML page); the admin endpoint needs its
-- token; default keys are refused beyond loopback. (Supervision — kill -9
-- of any one of serve's processes — is spec/serve/supervise_test.lua.)
local serve = require "support.serve"
local socket = require "socket"
local wire = require "otskit.wire"

-- raw bytes to the server -> status (nil for an HTTP/0.9 answer), headers, body
local function raw(port, text)
  local c = assert(socket.connect("127.0.0.1", port))
  c:settimeout(5)
  assert(c:send(text))
  local all, _, part = c:receive("*a")
  c:close()
  all = all or part or ""
  local head, body = all:match("^(HTTP/1%.%d [^\r\n]*\r\n.-\r\n)\r\n(.*)$")
  if not head then return nil, {}, all end
  local h = {}
  for k, v in head:gmatch("\n([^:\r\n]+):%s*([^\r\n]*)") do h[k:lower()] = v end
  return tonumber(head:match("^HTTP/1%.%d (%d+)")), h, body
end

describe("otskit serve guards", function()
  local s
  setup(function() s = assert(serve.start{}) end)
  teardown(function() if s then s.stop() end end)

  it("answers malformed HTTP with the service's signed protobuf error", function()
    local cases = {
      { "GARBAGE\r\n\r\n", 400, "OTSParameterInvalid" },
      { "GET / HTTP/0.9\r\n\r\n", 400, "OTSParameterInvalid" },
      { "CONNECT x:1 HTTP/1.1\r\nHost: x\r\n\r\n", 400, "OTSParameterInvalid" },
      { "GET /PutRow HTTP/3.0\r\nHost: x\r\n\r\n", 400, "OTSParameterInvalid" },
      { "POST /" .. ("a"):rep(9000) .. " HTTP/1.1\r\nHost: x\r\n\r\n", 400, "OTSParameterInvalid" },
      { "POST /PutRow HTTP/1.1\r\nHost: x\r\nX-A: " .. ("b"):rep(9000) .. "\r\n\r\n", 400, "OTSParameterInvalid" },
      { "POST /PutRow HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400, "OTSParameterInvalid" },
      { "TRACE /PutRow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 405, "OTSMethodNotAllowed" },
      { "FOO /PutRow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 405, "OTSMethodNotAllowed" },
      { "GET /PutRow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 405, "OTSMethodNotAllowed" },
    }
    for _, c in ipairs(cases) do
      local status, h, body = raw(s.port, c[1])
      local what = c[1]:sub(1, 30)
      assert.equal(c[2], status, what)
      assert.is_nil((h["content-type"] or ""):find("html"), what)
      local code, msg = wire.decode_error(body)
      assert.equal(c[3], code, what)
      assert.is_string(msg)
      -- signed like every answer of the service
      assert.equal(wire.content_md5(body), h["x-ots-contentmd5"], what)
      assert.equal(1, (h["authorization"] or ""):find("OTS " .. serve.AK .. ":", 1, true), what)
    end
    -- an HTTP/0.9 request line: the answer can only be a body, the error
    local status, _, body = raw(s.port, "GET /PutRow\r\n")
    assert.is_nil(status)
    assert.equal("OTSMethodNotAllowed", (wire.decode_error(body)))
    -- and the server still serves, with nothing in error.log but nginx's
    -- own notes on the refused requests
    assert(serve.client(s):list_table())
    local f = assert(io.open(s.tmp .. "/ng/logs/error.log"))
    local log = f:read("*a"); f:close()
    assert.is_nil(log:find("lua", 1, true), log)
    assert.is_nil(log:find("empty URI", 1, true), log)
  end)

  it("needs the admin token for /_otskit/faults", function()
    local ok = serve.sh(("env -u LD_PRELOAD curl -s -o /dev/null -w '%%{http_code}' -X PUT --data-binary rate=1 %s/_otskit/faults")
      :format(s.url))
    assert.equal("401", ok)
    assert.truthy(serve.admin(s, "GET"):find('"enabled":false', 1, true))
    assert.truthy(serve.admin(s, "PUT", "rate=0.5"):find('"enabled":true', 1, true))
    assert.truthy(serve.admin(s, "DELETE"):find('"enabled":false', 1, true))
    -- or signed with the access key, like any request
    local function signed(secret, body)
      local h = { ["x-ots-date"] = wire.date(math.floor(socket.gettime() * 1000)),
        ["x-ots-apiversion"] = "2015-12-31", ["x-ots-accesskeyid"] = serve.AK,
        ["x-ots-instancename"] = serve.INSTANCE, ["x-ots-contentmd5"] = wire.content_md5(body) }
      h["x-ots-signature"] = wire.sign_request(secret, "_otskit/faults", h)
      local lines = { "PUT /_otskit/faults HTTP/1.1", "Host: x", "Connection: close", "Content-Length: " .. #body }
      for k, v in pairs(h) do lines[#lines + 1] = k .. ": " .. v end
      return raw(s.port, table.concat(lines, "\r\n") .. "\r\n\r\n" .. body)
    end
    local status, _, body = signed(serve.SK, "rate=0.25")
    assert.equal(200, status, body); assert.truthy(body:find('"rate":0.25', 1, true), body)
    status = signed("not-the-secret", "rate=1")
    assert.equal(401, status)
    assert.truthy(serve.admin(s, "GET"):find('"rate":0.25', 1, true))
    serve.admin(s, "DELETE")
  end)

  it("refuses the default keys beyond loopback, and bad admin tokens", function()
    local function run(args)
      return serve.sh("env -u LD_PRELOAD OTSKIT_BUILD=build timeout 20 bin/otskit serve " .. args .. " 2>&1; echo rc=$?")
    end
    local out = run("--listen 0.0.0.0:1")
    assert.truthy(out:find("default access key", 1, true), out); assert.truthy(out:find("rc=2", 1, true))
    out = run("--listen 0.0.0.0:1 --access-key-id mine --access-key-secret otskit-secret")
    assert.truthy(out:find("rc=2", 1, true), out)
    out = run("--listen 127.0.0.1:1 --admin-token short")
    assert.truthy(out:find("admin-token", 1, true), out); assert.truthy(out:find("rc=2", 1, true))
    out = run("--listen 127.0.0.1:1 --faults empty=1")
    assert.truthy(out:find("below 1", 1, true), out); assert.truthy(out:find("rc=2", 1, true))
  end)
end)
