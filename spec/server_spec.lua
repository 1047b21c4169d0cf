-- spec/server_spec.lua -- the parts of `otskit serve` that run outside
-- nginx: fault specs and decisions, the generated nginx.conf, and request
-- authentication (signature, date window, MD5, headers).
local faults = require "otskit.server.faults"
local conf = require "otskit.server.conf"
local helper = require "helper"

describe("otskit.server.faults", function()
  it("parses every key and refuses what it does not know", function()
    local f = assert(faults.parse("rate=0.25,code=OTSTimeout,status=503,latency=5-20,drop=0.1,apis=GetRow+PutRow,message=slow down"))
    assert.equal(0.25, f.rate); assert.equal("OTSTimeout", f.code); assert.equal(503, f.status)
    assert.equal(0.005, f.lat[1]); assert.equal(0.02, f.lat[2]); assert.equal(0.1, f.drop)
    assert.is_true(f.apis.GetRow and f.apis.PutRow); assert.is_nil(f.apis.GetRange)
    assert.equal("slow down", f.message)
    assert.equal(0, f.empty)
    assert.equal(0.3, assert(faults.parse("empty=0.3")).empty)
    -- the message defaults to the code's own; a code otskit does not know
    -- (or one the service never sends) needs its status
    assert.equal("Server is busy.", assert(faults.parse("rate=1")).message)
    assert.equal("Operation timeout.", assert(faults.parse("code=OTSTimeout")).message)
    local odd = assert(faults.parse("code=OTSNoSuchCode,status=418"))
    assert.same({ "OTSNoSuchCode", 418, "OTSNoSuchCode" }, { odd.code, odd.status, odd.message })
    assert.equal(false, faults.parse("")); assert.equal(false, faults.parse("off")); assert.equal(false, faults.parse(nil))
    for _, bad in ipairs{ "rate=2", "rate=-0.1", "drop=x", "status=99", "status=200.5", "latency=9-1",
                          "latency=x", "color=red", "rate", "code=OTS Busy", "latency=70000",
                          "empty=1.5", "empty=-0.1", "empty=x", "empty=1", "empty=nan", "code=OTSNoSuchCode",
                          "rate=1,code=RetryBudgetExhausted" } do
      local ok, err = faults.parse(bad)
      assert.is_nil(ok, bad); assert.matches("^faults: ", err)
    end
  end)

  it("decides by the rates: none at 0, all at 1, about the rate between", function()
    local rng = helper.rng(7)
    local none = assert(faults.parse("rate=0"))
    local all = assert(faults.parse("rate=1,latency=3"))
    local some = assert(faults.parse("rate=0.3,drop=0.1,apis=GetRow"))
    local failed, dropped, n = 0, 0, 20000
    for _ = 1, n do
      local d, drop, fail = faults.decide(none, "GetRow", rng.float)
      assert.is_false(drop or fail); assert.equal(0, d)
      d, drop, fail = faults.decide(all, "PutRow", rng.float)
      assert.is_true(fail); assert.is_false(drop); assert.equal(0.003, d)
      d, drop, fail = faults.decide(some, "GetRow", rng.float)
      if drop then dropped = dropped + 1 elseif fail then failed = failed + 1 end
      d, drop, fail = faults.decide(some, "PutRow", rng.float) -- not a chosen API
      assert.is_false(drop or fail)
    end
    assert.is_true(math.abs(dropped / n - 0.1) < 0.02, dropped)
    assert.is_true(math.abs(failed / n - 0.9 * 0.3) < 0.02, failed)
    assert.is_false(select(3, faults.decide(false, "GetRow", rng.float)))
  end)

  it("empties about the `empty` fraction of GetRange answers, and nothing else", function()
    local rng = helper.rng(11)
    local half = assert(faults.parse("empty=0.5"))
    -- (empty=1 is refused by parse: no read would end; decide still takes it)
    local all = assert(faults.parse("empty=0.5")); all.empty = 1
    local mixed = assert(faults.parse("rate=0.4")); mixed.empty = 1
    local emptied, n = 0, 20000
    for _ = 1, n do
      local _, drop, fail, empty = faults.decide(half, "GetRange", rng.float)
      assert.is_false(drop or fail)
      if empty then emptied = emptied + 1 end
      assert.is_true(select(4, faults.decide(all, "GetRange", rng.float)))
      for _, api in ipairs { "GetRow", "BatchGetRow", "PutRow" } do   -- only GetRange pages
        assert.is_false(select(4, faults.decide(all, api, rng.float)))
      end
      -- a failed request is not also an empty page
      local _, _, f2, e2 = faults.decide(mixed, "GetRange", rng.float)
      assert.is_true(f2 ~= e2)
    end
    assert.is_true(math.abs(emptied / n - 0.5) < 0.02, emptied)
    assert.is_false(select(4, faults.decide(assert(faults.parse("rate=0")), "GetRange", rng.float)))
    assert.is_false(select(4, faults.decide(false, "GetRange", rng.float)))
    assert.equal(0.5, faults.describe(half).empty)
  end)

  it("describes what is on for the admin endpoint", function()
    local d = faults.describe(assert(faults.parse("rate=0.5,apis=PutRow+GetRow,latency=1-2")))
    assert.same({ "GetRow", "PutRow" }, d.apis); assert.same({ 1, 2 }, d.latency_ms); assert.is_true(d.enabled)
    assert.same({ enabled = false }, faults.describe(false))
  end)
end)

describe("otskit.server.conf", function()
  local text = conf.render{ listen = "127.0.0.1:9999", workers = 3, lua = "/r/lua", cpath = "/r/build/jit", user = "",
    config = { access_key_id = "ak", secret = "s\"k", instance = "i", path = ":memory:", workers = 3, faults = "" } }
  it("binds only the given address, once", function()
    local n = 0
    for l in text:gmatch("listen ([^;]+);") do n = n + 1; assert.equal("127.0.0.1:9999", l) end
    assert.equal(1, n)
  end)
  it("loads ndk before the lua module and keeps the default lua path", function()
    assert.is_true(text:find("ndk_http_module", 1, true) < text:find("ngx_http_lua_module", 1, true))
    assert.truthy(text:find('lua_package_path "/r/lua/?.lua;/r/lua/?/init.lua;;";', 1, true))
    assert.truthy(text:find("worker_processes 3;", 1, true))
  end)
  it("passes the config as a Lua literal that loads back", function()
    local lit = text:match("init%((%b{})%)")
    local cfg = assert((loadstring or load)("return " .. lit))()
    assert.equal('s"k', cfg.secret); assert.equal(":memory:", cfg.path); assert.equal(3, cfg.workers)
  end)
  it("keeps the admin endpoint to 127.0.0.1 and reads bodies up to the limit in memory", function()
    assert.truthy(text:find("location /_otskit/ {\n      allow 127.0.0.1;\n      allow ::1;\n      deny all;", 1, true))
    assert.truthy(text:find("client_max_body_size " .. conf.MAX_BODY .. ";", 1, true))
    assert.truthy(text:find("client_body_buffer_size " .. conf.MAX_BODY .. ";", 1, true))
  end)
end)

describe("otskit.server.auth", function()
  local auth = require "otskit.server.auth"
  local wire = require "otskit.wire"
  local cfg = { access_key_id = "AK", secret = "SK", instance = "inst" }
  local NOW = 1700000000000
  local function request(body, o)
    o = o or {}
    local h = { ["x-ots-date"] = o.date or wire.date(NOW), ["x-ots-apiversion"] = "2015-12-31",
      ["x-ots-accesskeyid"] = o.ak or "AK", ["x-ots-instancename"] = "inst",
      ["x-ots-contentmd5"] = wire.content_md5(body) }
    h["x-ots-signature"] = wire.sign_request(o.sk or "SK", o.api or "GetRow", h)
    return h
  end

  it("accepts what the SDKs send, the verified signature vector included", function()
    assert.is_true(auth.verify(cfg, "GetRow", request("body"), "body", NOW))
    -- the Go SDK's x-ots-date fraction holds month/day/hour digits
    local h = request("", { date = "2023-11-14T22:13:20.11232Z" })
    assert.is_true(auth.verify(cfg, "GetRow", h, "", NOW))
    local v = { ["x-ots-accesskeyid"] = "AK", ["x-ots-apiversion"] = "2015-12-31", ["x-ots-contentmd5"] = "MD5==",
      ["x-ots-date"] = "2024-01-02T03:04:05.678Z", ["x-ots-instancename"] = "inst",
      ["x-ots-signature"] = "PhBdCW/P5qyzAODR18XYxH+Qhno=" }
    assert.equal("PhBdCW/P5qyzAODR18XYxH+Qhno=", wire.sign_request("SK", "GetRow", v))
  end)

  it("refuses with the service's codes and messages", function()
    local function refused(h, body, now, api)
      local ok, msg, code = auth.verify(cfg, api or "GetRow", h, body, now or NOW)
      assert.is_nil(ok)
      assert.is_string(msg)
      return code, msg
    end
    assert.same({ "OTSAuthFailed", "Signature mismatch." }, { refused(request("b", { sk = "x" }), "b") })
    assert.same({ "OTSAuthFailed", "Signature mismatch." }, { refused(request("b", { api = "PutRow" }), "b") })
    assert.equal("OTSAuthFailed", refused(request("b", { ak = "other" }), "b"))
    assert.same({ "OTSAuthFailed", "Mismatch between MD5 value of request body and x-ots-contentmd5 in header." },
      { refused(request("b"), "c") })
    assert.same({ "OTSAuthFailed", "Mismatch between system time and x-ots-date." },
      { refused(request("b"), "b", NOW + 15 * 60000 + 1) })
    assert.is_true(auth.verify(cfg, "GetRow", request("b"), "b", NOW + 15 * 60000))
    assert.equal("OTSAuthFailed", refused(request("b"), "b", NOW - 15 * 60000 - 1))
    for _, name in ipairs(auth.REQUIRED) do
      local h = request("b"); h[name] = nil
      assert.same({ "OTSParameterInvalid", "Missing header: " .. name }, { refused(h, "b") })
    end
    local h = request("b"); h["x-ots-date"] = "2023-11-14 22:13:20"
    assert.equal("OTSParameterInvalid", refused(h, "b"))
    h = request("b"); h["x-ots-date"] = { h["x-ots-date"], h["x-ots-date"] }
    assert.equal("OTSParameterInvalid", refused(h, "b"))
  end)

  it("a changed header or byte of the signature fails, for any header", function()
    local rng = helper.rng(3)
    for _ = 1, helper.trials(200) do
      local h = request("payload")
      local names = {}
      for k in pairs(h) do names[#names + 1] = k end
      table.sort(names)
      local k = names[rng.int(1, #names)]
      local v = h[k]
      local i = rng.int(1, #v)
      local c = string.char((v:byte(i) + rng.int(1, 254)) % 256)
      h[k] = v:sub(1, i - 1) .. c .. v:sub(i + 1)
      assert.is_nil((auth.verify(cfg, "GetRow", h, "payload", NOW)), k)
    end
  end)
end)

describe("otskit serve --jit-log on a lua module without LuaJIT", function()
  it("refuses to start, saying why", function()
    local server = require "otskit.server"
    local saved = rawget(_G, "jit")
    _G.jit = nil
    local ok, err = pcall(server.init, { faults = "", jit_log = "/tmp/x.log" })
    _G.jit = saved
    assert.is_false(ok)
    assert.matches("--jit-log needs nginx's lua module built on LuaJIT", err, 1, true)
  end)
end)

describe("otskit serve (command line)", function()
  -- refusals happen before anything starts: exit status 2 and a reason
  local function serve(args)
    local p = io.popen("bin/otskit serve " .. args .. " 2>&1; echo \"rc=$?\"")
    local out = p:read("*a"); p:close()
    return out:match("rc=(%d+)%s*$"), out
  end
  it("refuses what it cannot do", function()
    for args, why in pairs{
      ["--workers 2"] = "one worker", ["--memory --data /tmp/x"] = "exclude",
      ["--listen 8800"] = "HOST:PORT", ["--listen localhost:8800"] = "numeric",
      ["--workers 0"] = "1 to 64", ["--faults rate=3"] = "faults:",
      ["--access-key-secret 'a b'"] = "letters",
      ["--jit-log ''"] = "--jit-log takes a file name",
      ["--jit-log /nonexistent-otskit-dir/jit.log"] = "--jit-log: cannot write",
      ["--jit-log /tmp"] = "--jit-log: cannot write",
    } do
      local rc, out = serve(args)
      assert.equal("2", rc, args); assert.truthy(out:find(why, 1, true), args .. ": " .. out)
    end
  end)
end)
