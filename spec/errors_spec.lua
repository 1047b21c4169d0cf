-- spec/errors_spec.lua -- otskit.errors: the one table of error codes, and
-- that the server, the store, the client side and otskit.retry answer and
-- classify every code as the table says.
local errors = require "otskit.errors"
local retry = require "otskit.retry"
local wire = require "otskit.wire"
local helper = require "spec.helper"

local CLASSES = { throttle = true, retry = true, idempotent = true, never = true }

-- a strict UTF-8 check (LuaJIT has no utf8 library): no overlong forms,
-- no surrogates, nothing past U+10FFFF
local function valid_utf8(s)
  local i, n = 1, #s
  while i <= n do
    local c = s:byte(i)
    local len, min
    if c < 0x80 then len, min = 1, 0
    elseif c >= 0xC2 and c <= 0xDF then len, min = 2, 0x80
    elseif c >= 0xE0 and c <= 0xEF then len, min = 3, 0x800
    elseif c >= 0xF0 and c <= 0xF4 then len, min = 4, 0x10000
    else return false end
    if i + len - 1 > n then return false end
    local cp = len == 1 and c or c % (2 ^ (7 - len))
    for j = i + 1, i + len - 1 do
      local b = s:byte(j)
      if b < 0x80 or b > 0xBF then return false end
      cp = cp * 64 + (b - 0x80)
    end
    if cp < min or cp > 0x10FFFF or (cp >= 0xD800 and cp <= 0xDFFF) then return false end
    i = i + len
  end
  return true
end

-- The quoted "OTS..." codes in the Lua files under `dir` (comments and
-- all): what a layer can produce.
local function codes_in(dir)
  local out = {}
  local p = assert(io.popen("find " .. dir .. " -name '*.lua' | sort"))
  for file in p:lines() do
    local f = assert(io.open(file, "rb"))
    local text = f:read("*a"); f:close()
    for code in text:gmatch('"(OTS%u%a+)"') do out[code] = out[code] or file end
  end
  p:close()
  return out
end

-- ngx, as much of it as otskit.server.respond uses: what it sent is kept
local function fake_ngx()
  local sent = { header = {} }
  local ngx = {
    OK = 0, header = sent.header, var = { request_id = ("0123456789abcdef"):rep(2) },
    now = function() return 1700000000.123 end,
    print = function(b) sent.body = (sent.body or "") .. b end,
    exit = function(code) sent.exit = code; return code end,
  }
  setmetatable(ngx, { __newindex = function(t, k, v)
    if k == "status" then sent.status = v else rawset(t, k, v) end
  end })
  return ngx, sent
end

local READS = { "GetRow", "BatchGetRow", "GetRange", "ListTable", "DescribeTable", "get_range",
                "ComputeSplitPointsBySize", "Search", "SQLQuery" }
local WRITES = { "PutRow", "UpdateRow", "DeleteRow", "BatchWriteRow", "CreateTable", "put_row",
                 "DeleteTable", "SomethingNew" }

-- what retry.tablestore must say for a code of `class`
local function expected(class, read, idempotent)
  if class == "throttle" then return "throttle" end
  if class == "retry" then return "retry" end
  if class == "idempotent" then return (read or idempotent) and "retry" or "fail" end
  return "fail"
end

describe("otskit.errors", function()
  it("gives every code a side, a class and a message; every service code a status", function()
    local n = 0
    for code, e in pairs(errors.CODES) do
      n = n + 1
      assert.equal(code, e.code)
      assert.is_true(e.side == "service" or e.side == "client", code)
      assert.is_true(CLASSES[e.class], code)
      assert.is_string(e.message, code)
      assert.is_true(#e.message > 0, code)
      assert.equal(e.message, errors.message(code))
      if e.side == "service" then
        assert.is_true(math.type == nil or math.type(e.status) == "integer", code)
        assert.is_true(e.status >= 400 and e.status <= 599 and e.status % 1 == 0, code)
        assert.equal(e.status, errors.status(code))
      else
        assert.is_nil(e.status, code)
      end
    end
    assert.is_true(n >= 30)
    local list = errors.codes()
    assert.equal(n, #list)
    for i = 2, #list do assert.is_true(list[i - 1] < list[i]) end
    assert.equal(#errors.codes("service") + #errors.codes("client"), n)
    assert.is_nil(errors.get("OTSNoSuchCode")); assert.is_nil(errors.status("OTSNoSuchCode"))
    assert.is_nil(errors.class("OTSNoSuchCode")); assert.is_nil(errors.class(42))
  end)

  it("knows every code the store, the server and the codec can produce", function()
    for _, dir in ipairs { "lua/otskit/store", "lua/otskit/server", "lua/otskit/wire.lua", "lua/otskit/wire" } do
      local ok = io.open(dir, "rb")
      if ok then
        ok:close()
        for code, file in pairs(codes_in(dir)) do
          local e = errors.get(code)
          assert.is_table(e, code .. " (in " .. file .. ") is not in otskit.errors")
          assert.equal("service", e.side, code .. " (in " .. file .. ") is not a code the service answers")
        end
      end
    end
    -- and every code the client side makes (its own or the service's)
    for code, file in pairs(codes_in("lua/otskit/client")) do
      assert.is_table(errors.get(code), code .. " (in " .. file .. ") is not in otskit.errors")
    end
  end)

  it("answers, through the server's respond path, each code's status and message", function()
    local saved = rawget(_G, "ngx")
    finally(function() _G.ngx = saved end)
    package.loaded["otskit.server.respond"] = nil
    local respond = require "otskit.server.respond"
    local cfg = { access_key_id = "AK", secret = "SK" }
    for _, code in ipairs(errors.codes("service")) do
      local ngx, sent = fake_ngx()
      _G.ngx = ngx
      respond.error(cfg, "GetRow", code)
      assert.equal(errors.status(code), sent.status, code)
      assert.same({ code, errors.message(code) }, { wire.decode_error(sent.body) })
      assert.equal(#sent.body, sent.header["content-length"])
      assert.equal(wire.content_md5(sent.body), sent.header["x-ots-contentmd5"])
      -- a message given replaces the code's own; the status stays the code's
      ngx, sent = fake_ngx()
      _G.ngx = ngx
      respond.error(cfg, "PutRow", code, "detail é")
      assert.equal(errors.status(code), sent.status, code)
      assert.same({ code, "detail é" }, { wire.decode_error(sent.body) })
    end
  end)

  it("classifies every code in otskit.retry as its class says, for any operation", function()
    local rng = helper.rng(23)
    local codes = errors.codes()
    for t in pairs(errors.TRANSPORT) do codes[#codes + 1] = t end
    for _ = 1, helper.trials(3000) do
      local code = codes[rng.int(1, #codes)]
      local read = rng.int(0, 1) == 1
      local ops = read and READS or WRITES
      local op = ops[rng.int(1, #ops)]
      local flag = ({ nil, "idempotent" })[rng.int(1, 2)]   -- (conditional is refused: retry_spec)
      local opts = flag and { [flag] = true } or nil
      local msg = errors.message(code) or code
      local class = errors.class(code, msg)
      assert.is_true(CLASSES[class], code)
      local want = expected(class, read, flag ~= nil)
      assert.equal(want, retry.tablestore({ code = code, message = msg, http_status = errors.status(code) }, op, opts),
        code .. " " .. op)
      if code ~= "OTSQuotaExhausted" then -- a bare code string carries no message
        assert.equal(want, retry.tablestore(code, op, opts), code .. " " .. op)
      end
    end
    -- the quota code throttles only as the table-operation rate limit
    assert.equal("throttle", errors.class("OTSQuotaExhausted", "Too frequent table operations."))
    assert.equal("never", errors.class("OTSQuotaExhausted", "Number of tables exceeded the quota."))
    assert.equal("never", errors.class("OTSQuotaExhausted"))
  end)

  it("holds the service's documented statuses and the SDKs' retry classes", function()
    -- statuses: the service's error documentation and its SDKs' tests
    local STATUS = {
      OTSParameterInvalid = 400, OTSInvalidPK = 400, OTSAuthFailed = 403, OTSConditionCheckFail = 403,
      OTSNotEnoughCapacityUnit = 403, OTSObjectNotExist = 404, OTSMethodNotAllowed = 405,
      OTSRequestTimeout = 408, OTSObjectAlreadyExist = 409, OTSRowOperationConflict = 409,
      OTSRequestBodyTooLarge = 413, OTSInternalServerError = 500, OTSServerBusy = 503,
      OTSPartitionUnavailable = 503, OTSServerUnavailable = 503, OTSTimeout = 503,
      OTSTableNotReady = 404, OTSCapacityUnitExhausted = 403, OTSQuotaExhausted = 403,
      OTSTooFrequentReservedThroughputAdjustment = 403, OTSOutOfRowSizeLimit = 400,
      OTSOutOfColumnCountLimit = 400, OTSFlowControl = 429,
    }
    for code, status in pairs(STATUS) do assert.equal(status, errors.status(code), code) end
    -- classes: what the official SDKs' default policies retry (Go also
    -- OTSStorageServerBusy, C++ also OTSCapacityUnitExhausted)
    local CLASS = {
      throttle = { "OTSServerBusy", "OTSNotEnoughCapacityUnit", "OTSOperationThrottled",
                   "OTSStorageServerBusy", "OTSCapacityUnitExhausted" },
      retry = { "OTSRowOperationConflict", "OTSTableNotReady", "OTSPartitionUnavailable" },
      idempotent = { "OTSTimeout", "OTSInternalServerError", "OTSServerUnavailable" },
      never = { "OTSParameterInvalid", "OTSConditionCheckFail", "OTSAuthFailed", "OTSObjectNotExist",
                "OTSRequestBodyTooLarge", "OTSOutOfColumnCountLimit", "OTSInvalidPK" },
    }
    local listed = {}
    for class, codes in pairs(CLASS) do
      for _, code in ipairs(codes) do
        assert.equal(class, errors.class(code), code); listed[code] = true
      end
    end
    -- every other service code is never retried but the quota one
    for _, code in ipairs(errors.codes("service")) do
      if not listed[code] and code ~= "OTSQuotaExhausted" then
        assert.equal("never", errors.class(code), code)
      end
    end
    -- exact messages SDK users match
    assert.equal("Condition check failed.", errors.message("OTSConditionCheckFail"))
    assert.equal("Requested table does not exist.", errors.message("OTSObjectNotExist"))
    assert.equal("Requested table already exists.", errors.message("OTSObjectAlreadyExist"))
    assert.equal("Remaining capacity unit is not enough.", errors.message("OTSNotEnoughCapacityUnit"))
  end)

  it("has a code for writes whose outcome is unknown, never retried", function()
    local e = assert(errors.get("OTSOutcomeUnknown"))
    assert.equal("never", e.class); assert.equal("client", e.side)
    assert.truthy(e.message:find("may or may not have been applied", 1, true))
    for _, op in ipairs(WRITES) do
      assert.equal("fail", retry.tablestore("OTSOutcomeUnknown", op, { idempotent = true }))
    end
  end)

  it("has messages that are valid UTF-8 and encode into an Error body and back", function()
    for _, code in ipairs(errors.codes()) do
      local m = errors.message(code)
      assert.is_true(valid_utf8(m), code)
      assert.is_nil(m:find("[%z\1-\31\127]"), code)
      assert.same({ code, m }, { wire.decode_error(wire.encode_error(code, m)) })
    end
    -- the checker itself refuses what is not UTF-8
    for _, s in ipairs { "\255", "\192\128", "\237\160\128", "\244\144\128\128", "a\195" } do
      assert.is_false(valid_utf8(s), s)
    end
    assert.is_true(valid_utf8("é € 𝄞"))
  end)

  it("fails in otskit's convention, and raises for a code it does not know", function()
    assert.same({ nil, "Condition check failed.", "OTSConditionCheckFail" },
      { errors.fail("OTSConditionCheckFail") })
    assert.same({ nil, "why", "OTSServerBusy" }, { errors.fail("OTSServerBusy", "why") })
    assert.equal(3, select("#", errors.fail("OTSServerBusy")))
    local ok, err = pcall(errors.fail, "NoSuchCode")
    assert.is_false(ok); assert.matches("otskit.errors: unknown error code NoSuchCode", err, 1, true)
    assert.is_true(errors.is_timeout("OTSTimeout")); assert.is_true(errors.is_timeout("timeout"))
    assert.is_true(errors.is_timeout("RequestTimeout")); assert.is_false(errors.is_timeout("OTSServerBusy"))
  end)

  it("lets the store inject exactly the retryable service codes, with their messages", function()
    local store = require "otskit.store"
    local faults = require "otskit.store.faults"
    for _, code in ipairs(errors.codes()) do
      local e = errors.get(code)
      local ok = pcall(faults.new, { code = code })
      assert.equal(e.side == "service" and e.class ~= "never", ok, code)
    end
    local db = assert(store.open { path = ":memory:" })
    finally(function() db:close() end)
    assert(db:create_table { name = "t", primary_key = { { "k", "STRING" } } })
    for _, code in ipairs(errors.codes("service")) do
      if errors.class(code, errors.message(code)) ~= "never" then
        db:inject { rate = 1, code = code }
        assert.same({ nil, errors.message(code), code },
          { db:get_row { table = "t", primary_key = { { "k", "a" } } } })
      end
    end
    db:inject(nil)
    -- the store's own failures carry the service's codes and messages
    assert.same({ nil, "Requested table does not exist.", "OTSObjectNotExist" },
      { db:get_row { table = "nope", primary_key = { { "k", "a" } } } })
    assert.same({ nil, "Requested table already exists.", "OTSObjectAlreadyExist" },
      { db:create_table { name = "t", primary_key = { { "k", "STRING" } } } })
  end)

  it("answers garbage requests through the server's dispatcher with known codes", function()
    local dispatch = require "otskit.server.dispatch"
    local store = require "otskit.store"
    local db = assert(store.open { path = ":memory:" })
    finally(function() db:close() end)
    assert(db:create_table { name = "t", primary_key = { { "k", "STRING" } } })
    local apis = {}
    for api in pairs(dispatch.APIS) do apis[#apis + 1] = api end
    table.sort(apis)
    local rng = helper.rng(5)
    for _ = 1, helper.trials(400) do
      local api = apis[rng.int(1, #apis)]
      local body
      if rng.int(0, 1) == 1 then
        local b = {}
        for i = 1, rng.int(0, 40) do b[i] = string.char(rng.int(0, 255)) end
        body = table.concat(b)
      else -- a well-formed request on a table that may not exist
        body = wire.encode_request(api, { table = rng.int(0, 1) == 1 and "t" or "nope", name = "nope",
          primary_key = { { "k", "a" } } }) or ""
      end
      local out, msg, code = dispatch.call(db, api, body)
      if out == nil then
        assert.is_string(msg, api); assert.is_string(code, api)
        assert.is_number(errors.status(code), api .. ": " .. code)
        local e = errors.get(code)
        if e.exact then assert.equal(e.message, msg) end
      else
        assert.is_string(out)
      end
    end
  end)
end)

describe("docs/errors.md", function()
  local f = assert(io.open("docs/errors.md", "rb"))
  local text = f:read("*a")
  f:close()

  it("lists every code with the table's status, class and message", function()
    local rows = {}
    for line in text:gmatch("[^\n]+") do
      local code, status, class, message = line:match("^| `([%w_]+)` | ([^|]-) | ([%w]+) | (.-) |")
      if code then rows[code] = { status = status, class = class, message = message } end
    end
    for _, code in ipairs(errors.codes()) do
      local r = rows[code]
      assert.is_table(r, code .. " is not in docs/errors.md")
      local e = errors.get(code)
      assert.equal(e.status and tostring(e.status) or "—", r.status, code)
      assert.equal(e.class, r.class, code)
      assert.equal(e.message, r.message, code)
      rows[code] = nil
    end
    assert.is_nil(next(rows), "docs/errors.md lists a code otskit.errors does not have")
  end)

  local n, line_no = 0, 0
  local block, start
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    line_no = line_no + 1
    if block then
      if line:match("^```%s*$") then
        n = n + 1
        local code, first = table.concat(block, "\n") .. "\n", start
        it(("example %d (docs/errors.md:%d) runs and prints what it shows"):format(n, first), function()
          helper.run_readme_block(code, "docs/errors.md example " .. n, first)
        end)
        block = nil
      else
        block[#block + 1] = line
      end
    elseif line:match("^```lua%s*$") then
      block, start = {}, line_no + 1
    end
  end
  it("has its examples", function() assert.is_true(n >= 2) end)
end)
