-- Every API of `otskit serve`, fed mutated requests (bytes flipped,
-- inserted, deleted, truncated, random; each correctly signed so the
-- decoder and the store see it) and requests with hostile names (NUL
-- bytes, bytes that are not UTF-8): every answer is a Tablestore error
-- or a success -- never a 500 -- and error.log holds no Lua error.
local serve = require "support.serve"
local wire = require "otskit.wire"
local values = require "otskit.values"
local dispatch = require "otskit.server.dispatch"
local helper = require "helper"

local INF_MIN, INF_MAX = values.INF_MIN, values.INF_MAX

-- one valid request per API (what encodes; the mutations do the rest)
local function samples()
  local pk = { { "id", 1 } }
  local bpk = { { "id", values.binary("k\0ey") } }
  return {
    CreateTable = { name = "fz", primary_key = { { "id", "INTEGER" } } },
    UpdateTable = { name = "t", table_options = { max_versions = 2 } },
    DeleteTable = { name = "nothere" },
    ListTable = {},
    DescribeTable = { name = "t" },
    PutRow = { table = "t", primary_key = pk, columns = { a = 1, s = "x", d = 1.5, b = true } },
    UpdateRow = { table = "t", primary_key = pk, update = { PUT = { a = 2 }, INCREMENT = { n = 1 } } },
    DeleteRow = { table = "t", primary_key = { { "id", 9 } } },
    GetRow = { table = "b", primary_key = bpk,
               filter = { column = "a", comparator = "EQUAL", value = 1 } },
    BatchGetRow = { tables = { { table = "b", primary_keys = { bpk } } } },
    BatchWriteRow = { tables = { { table = "t", rows = {
      { type = "PUT", primary_key = { { "id", 2 } }, columns = { a = 1 } },
      { type = "UPDATE", primary_key = { { "id", 3 } }, update = { PUT = { a = 1 } } },
      { type = "DELETE", primary_key = { { "id", 4 } } } } } } },
    GetRange = { table = "b", start = { { "id", INF_MIN } }, stop = { { "id", INF_MAX } }, limit = 5 },
    ComputeSplitPointsBySize = { table = "t", split_size = 1 },
  }
end

local function mutate(r, body)
  local kind = r.int(1, 6)
  if kind == 1 or #body == 0 then
    local t = {}
    for i = 1, r.int(0, 64) do t[i] = string.char(r.int(0, 255)) end
    return table.concat(t)
  elseif kind == 2 then                                   -- flip bytes
    local b = { body:byte(1, -1) }
    for _ = 1, r.int(1, 4) do
      local i = r.int(1, #b)
      b[i] = (b[i] + r.int(1, 255)) % 256
    end
    local t = {}
    for i, x in ipairs(b) do t[i] = string.char(x) end
    return table.concat(t)
  elseif kind == 3 then                                   -- truncate
    return body:sub(1, r.int(0, #body - 1))
  elseif kind == 4 then                                   -- insert
    local i = r.int(0, #body)
    local ins = {}
    for j = 1, r.int(1, 8) do ins[j] = string.char(r.int(0, 255)) end
    return body:sub(1, i) .. table.concat(ins) .. body:sub(i + 1)
  elseif kind == 5 then                                   -- delete a run
    local i = r.int(1, #body)
    return body:sub(1, i - 1) .. body:sub(i + r.int(1, 8))
  end
  return body .. body:sub(1, r.int(1, #body))             -- trailing bytes
end

describe("otskit serve under fuzzed requests", function()
  local s
  setup(function() s = assert(serve.start{}) end)
  teardown(function() if s then s.stop() end end)

  it("answers every API's mutated requests with a Tablestore error or a success, never a 500", function()
    local c = serve.client(s, { retry = false, budget = false })
    assert(c:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
    assert(c:create_table{ name = "b", primary_key = { { "id", "BINARY" } } })
    assert(c:put_row{ table = "t", primary_key = { { "id", 1 } }, columns = { a = 1 } })
    local r = helper.rng(2405)
    local smp = samples()
    local apis = {}
    for api in pairs(dispatch.APIS) do apis[#apis + 1] = api end
    table.sort(apis)
    local current
    -- a codec that sends the body this test chose, correctly signed
    local fuzzwire = setmetatable({ encode_request = function() return current end }, { __index = wire })
    local fc = serve.client(s, { retry = false, budget = false, wire = fuzzwire, unsigned = false })
    local per = helper.trials(120)
    local sent, by_status = 0, {}
    for _, api in ipairs(apis) do
      local base = smp[api] and wire.encode_request(api, smp[api]) or ""
      for _ = 1, per do
        current = mutate(r, base)
        -- _call: the request table is not looked at beyond the codec
        local ok, msg, code, _, status = fc:_call(api, { table = "t", name = "t" })
        sent = sent + 1
        status = status or (ok and 200) or 0
        by_status[status] = (by_status[status] or 0) + 1
        assert.is_true(status ~= 500 and status < 500 or code == "OTSServerBusy",
          ("%s: %s %s %s"):format(api, tostring(status), tostring(code), tostring(msg)))
        if not ok then assert.is_string(code, api) end
      end
    end
    assert.is_true(sent >= #apis * per)
    assert.is_true((by_status[400] or 0) > 0)
    -- hostile names through the real codec: refused as the service does
    for _, name in ipairs { "a\0b", "a\255b", "\0", ("x"):rep(300) } do
      local ok, _, code, _, status = c:put_row{ table = "t", primary_key = { { "id", 5 } }, columns = { [name] = 1 } }
      assert.is_nil(ok); assert.equal("OTSParameterInvalid", code); assert.equal(400, status)
      assert.is_nil(c:get_row{ table = "t", primary_key = { { "id", 5 } } }.row)  -- nothing written
      -- an update whose one bad column name is refused applies none of its columns
      ok, _, code, _, status = c:update_row{ table = "t", primary_key = { { "id", 1 } },
        update = { PUT = { good = 9, [name] = 1 } } }
      assert.is_nil(ok); assert.equal("OTSParameterInvalid", code); assert.equal(400, status)
      assert.is_nil(c:get_row{ table = "t", primary_key = { { "id", 1 } } }.row.columns.good)
      local res = assert(c:batch_write_row{ tables = { { table = "t", rows = {
        { type = "PUT", primary_key = { { "id", 6 } }, columns = { a = 1 } },
        { type = "PUT", primary_key = { { "id", 7 } }, columns = { [name] = 1 } } } } } })
      assert.is_true(res.tables[1].rows[1].ok)
      assert.equal("OTSParameterInvalid", res.tables[1].rows[2].code)
      assert.is_nil(c:get_row{ table = "t", primary_key = { { "id", 7 } } }.row)  -- the bad row: nothing
      local _, _, gcode = c:get_row{ table = "t", primary_key = { { "id", 1 } }, columns = { name } }
      assert.not_equal("OTSInternalServerError", gcode)
    end
    -- reads of a BINARY-key table, with and without max_versions
    assert(c:get_row{ table = "b", primary_key = { { "id", values.binary("x") } } })
    assert(c:get_row{ table = "b", primary_key = { { "id", values.binary("x") } }, max_versions = 2 })
    assert(c:get_range{ table = "b", start = { { "id", INF_MIN } }, stop = { { "id", INF_MAX } } })
    -- the server still answers, and logged no Lua error
    assert(c:list_table())
    local f = assert(io.open(s.tmp .. "/ng/logs/error.log"))
    local log = f:read("*a"); f:close()
    for line in log:gmatch("[^\n]+") do
      assert.is_nil(line:find("internal error", 1, true), line)
      assert.is_nil(line:find("lua", 1, true) and line:find("%[error%]"), line)
      assert.is_nil(line:find("%[alert%]") or line:find("%[crit%]"), line)
    end
  end)
end)
