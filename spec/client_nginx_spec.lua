-- otskit.client's nginx transport in Debian's nginx + lua module: a test
-- location (spec/support/nginx/app.lua) runs the client with transport
-- "nginx" through the internal location /_otskit (proxy_pass to an
-- upstream with keepalive) against `otskit serve`.
local serve = require "support.serve"
local ng = require "support.nginx"
local cjson = require "cjson"
local http = require("otskit.core").http

local srv, nginx, s
setup(function()
  srv = assert(serve.start{})
  nginx = assert(ng.start(srv.port))
  s = http.new()
end)
teardown(function()
  if nginx then nginx.stop() end
  if srv then srv.stop() end
end)

local function get(q)
  local r = assert(s:request{ url = nginx.url .. "/t?" .. q, method = "GET", timeout = 60 })
  assert.equal(200, r.status, r.body)
  return cjson.decode(r.body)
end

describe("otskit.client in OpenResty (transport nginx)", function()
  it("is the default inside nginx and speaks the store interface", function()
    local t = "nx" .. os.time() % 100000 .. math.random(1000)
    local r = get("case=basic&t=" .. t)
    assert.equal("nginx", r.kind)
    assert.equal("ok", r.create)
    assert.equal("ok", r.put)
    assert.equal("one", r.get)
    assert.same({ code = "OTSConditionCheckFail", status = 403, rid = true, msg = true }, r.cond)
    assert.equal(0, r.batch_failed)
    assert.equal(50, r.range)
  end)

  it("fans merge.read out with capture_multi", function()
    local t = "nf" .. os.time() % 100000 .. math.random(1000)
    local r = get("case=fanout&fill=1&t=" .. t)
    local want = {}
    for i = 1, 100 do want[i] = i end
    assert.same(want, r.ts)
    -- again without the fill: one round of 16 requests for the page
    r = get("case=fanout&t=" .. t)
    assert.same(want, r.ts)
    assert.equal(16, r.requests)
  end)

  it("leaves no Lua error in error.log", function()
    local log = ng.error_log(nginx)
    assert.is_nil(log:find("lua entry thread aborted", 1, true), log)
    assert.is_nil(log:find("runtime error", 1, true), log)
  end)
end)
