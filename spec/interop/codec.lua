-- otskit's side of the codec cross-check (codec_test.sh): the corpus of
-- codec.js in the store's vocabulary.
--   lua codec.lua SDK.json OUT.json
-- Checks, per request: otskit's body equals the SDK's (the SDK's PlainBuffer
-- padding removed), and otskit decodes the SDK's raw body into a request
-- that encodes to the same bytes. Writes otskit's request bodies and some
-- response bodies (with the values the SDK must decode) to OUT.json for
-- `node codec.js check`. Prints "N passed, N failed".
local cjson = require "cjson"
local wire = require "otskit.wire"
local core = require("otskit.core").wire

local T = 1700000000000
local B = wire.binary
local INF_MIN, INF_MAX = wire.INF_MIN, wire.INF_MAX

local function single(col, v, cmp, pim, lvo)
  return { column = col, comparator = cmp, value = v, pass_if_missing = pim, latest_version_only = lvo }
end

local corpus = {
  put_types = { "PutRow", { table = "t", condition = "IGNORE",
    primary_key = { { "pk1", "a" }, { "pk2", 1 }, { "pk3", B("\0\1\255") } },
    columns = { { "s", "v" }, { "i", 7 }, { "d", 1.5 }, { "b", true }, { "f", false }, { "x", B("\1\2") },
                { "neg", -5 }, { "big", 4611686018427387904 }, { "e", "" }, { "u", "h\195\169llo" } } } },
  put_ts = { "PutRow", { table = "t", condition = "EXPECT_NOT_EXIST", return_type = "RT_PK",
    primary_key = { { "pk1", "a" } }, columns = { { "s", "v", T }, { "i", 2, T + 1 } } } },
  put_autoinc = { "PutRow", { table = "t", condition = "IGNORE",
    primary_key = { { "pk1", "a" }, { "id", wire.AUTO_INCREMENT } }, columns = { s = "v" } } },
  put_cc_single = { "PutRow", { table = "t", condition = { row_existence = "EXPECT_EXIST",
    column_condition = single("i", 10, "GREATER_THAN") }, primary_key = { { "pk1", "a" } }, columns = { s = "v" } } },
  put_cc_composite = { "PutRow", { table = "t", condition = { row_existence = "IGNORE", column_condition = {
    logical = "AND", conditions = { single("s", "v2", "EQUAL", false, false),
      { logical = "NOT", conditions = { single("d", 2.5, "LESS_EQUAL") } }, single("b", true, "NOT_EQUAL") } } },
    primary_key = { { "pk1", "a" } }, columns = { s = "v" } } },
  get_row = { "GetRow", { table = "t", primary_key = { { "pk1", "a" }, { "pk2", -1 } }, columns = { "s", "i" },
    max_versions = 3, time_range = { T, T + 1000 }, filter = single("i", 5, "GREATER_EQUAL", true, true),
    start_column = "a", end_column = "z" } },
  get_row_specific = { "GetRow", { table = "t", primary_key = { { "pk1", "a" } }, time_range = { specific = T } } },
  get_row_page = { "GetRow", { table = "t", primary_key = { { "pk1", "a" } }, filter = { pagination = { offset = 1, limit = 2 } } } },
  update_row = { "UpdateRow", { table = "t", condition = { row_existence = "EXPECT_EXIST", column_condition = single("n", 0, "LESS_THAN") },
    primary_key = { { "pk1", "a" } },
    update = { { "PUT", "s", "v" }, { "PUT", "p", "w", T }, { "DELETE", "s", T }, { "DELETE_ALL", "t" }, { "DELETE_ALL", "u" },
               { "INCREMENT", "n", 1 } },
    return_type = "RT_AFTER_MODIFY", return_column_names = { "n" } } },
  delete_row = { "DeleteRow", { table = "t", condition = "EXPECT_EXIST", primary_key = { { "pk1", "a" }, { "pk2", 2 } },
    return_type = "RT_PK" } },
  get_range_inf = { "GetRange", { table = "t", direction = "FORWARD", limit = 100, columns = { "s" },
    start = { { "pk1", INF_MIN }, { "pk2", INF_MIN } }, stop = { { "pk1", INF_MAX }, { "pk2", INF_MAX } } } },
  get_range_back = { "GetRange", { table = "t", direction = "BACKWARD", max_versions = 2,
    start = { { "pk1", "z" }, { "pk2", INF_MAX } }, stop = { { "pk1", "a" }, { "pk2", 3 } }, time_range = { 0, T },
    filter = { logical = "OR", conditions = { single("s", "x", "EQUAL"), single("i", 1, "EQUAL") } } } },
  batch_get_row = { "BatchGetRow", { tables = {
    { table = "t", primary_keys = { { { "pk1", "a" } }, { { "pk1", "b" } } }, columns = { "s" } },
    { table = "u", primary_keys = { { { "id", 9 } } }, max_versions = 2, start_column = "c" } } } },
  batch_write_row = { "BatchWriteRow", { tables = {
    { table = "t", rows = {
      { type = "PUT", condition = "IGNORE", primary_key = { { "pk1", "a" } }, columns = { { "s", "v" }, { "i", 3, T } }, return_type = "RT_PK" },
      { type = "UPDATE", condition = "EXPECT_EXIST", primary_key = { { "pk1", "b" } }, update = { PUT = { s = "w" }, DELETE_ALL = { "x" } } },
      { type = "DELETE", condition = { row_existence = "IGNORE", column_condition = single("s", "v", "EQUAL") }, primary_key = { { "pk1", "c" } } } } },
    { table = "u", rows = { { type = "PUT", condition = "EXPECT_NOT_EXIST", primary_key = { { "id", 1 } }, columns = { d = 0.25 } } } } } } },
  create_table = { "CreateTable", { name = "t", primary_key = { { "pk1", "STRING" }, { "id", "INTEGER", "AUTO_INCREMENT" }, { "b", "BINARY" } },
    reserved = { read = 0, write = 0 }, options = { time_to_live = -1, max_versions = 3, max_time_deviation = 86400 } } },
  update_table = { "UpdateTable", { name = "t", options = { time_to_live = 86400, max_versions = 2 }, reserved = { read = 1, write = 2 } } },
  describe_table = { "DescribeTable", { name = "t" } },
  delete_table = { "DeleteTable", { name = "t" } },
  list_table = { "ListTable", {} },
}

local function hex(s) return (s:gsub(".", function(c) return ("%02x"):format(c:byte()) end)) end
local function unhex(h) return (h:gsub("..", function(x) return string.char(tonumber(x, 16)) end)) end

local ROWFIELDS = { row = true, row_change = true, primary_key = true,
                    inclusive_start_primary_key = true, exclusive_end_primary_key = true }

-- the SDK's body without the PlainBuffer padding: every row field cut
-- after its last row's checksum, the message re-encoded
local function unpadded(api, body)
  local m = assert(core.proto_decode(api .. "Request", body))
  local function cut(s) return s:sub(1, assert(core.rows_length(s))) end
  local function walk(t)
    for k, v in pairs(t) do
      if ROWFIELDS[k] and type(v) == "string" then t[k] = cut(v)
      elseif ROWFIELDS[k] and type(v) == "table" and type(v[1]) == "string" then for i, s in ipairs(v) do v[i] = cut(s) end
      elseif type(v) == "table" then walk(v) end
    end
  end
  walk(m)
  return assert(core.proto_encode(api .. "Request", m))
end

local sdk = cjson.decode(assert(io.open(arg[1])):read("a"))
local pass, fail, raw_equal, padded = 0, 0, 0, 0
local function check(c, what)
  if c then pass = pass + 1 else fail = fail + 1; print("FAIL " .. what) end
end

local out = { requests = {}, responses = {} }
local names = {}
for n in pairs(corpus) do names[#names + 1] = n end
table.sort(names)
for _, name in ipairs(names) do
  local api, req = corpus[name][1], corpus[name][2]
  local s = sdk[name]
  check(s and s.api == api, name .. ": the SDK corpus has it")
  if s then
    local sbody = unhex(s.body)
    local ours, msg = wire.encode_request(api, req)
    check(ours, name .. ": otskit encodes it: " .. tostring(msg))
    if ours then
      out.requests[name] = hex(ours)
      local norm = unpadded(api, sbody)
      if norm ~= sbody then padded = padded + 1 end
      if ours == sbody then raw_equal = raw_equal + 1 end
      check(ours == norm, name .. ": otskit's bytes equal the SDK's (padding removed)\n  sdk:    " .. hex(norm) .. "\n  otskit: " .. hex(ours))
      local back, m2 = wire.decode_request(api, sbody)
      check(back, name .. ": otskit decodes the SDK's body: " .. tostring(m2))
      if back then
        local again = wire.encode_request(api, back)
        check(again == ours, name .. ": the decoded SDK request re-encodes to otskit's bytes\n  " .. hex(again or ""))
      end
    end
  end
end

-- the SDK's defect: non-ASCII column names get a UTF-16 length
local bad = sdk.defect_nonascii_name
if bad then
  local r, msg, code = wire.decode_request("PutRow", unhex(bad.body))
  check(r == nil and code == "OTSParameterInvalid", "the SDK's non-ASCII column name is refused cleanly (" .. tostring(msg) .. ")")
end

-- responses the SDK must decode; expect: the SDK's values as codec.js
-- canonicalizes them ({int = decimal} for Long, {bin = hex} for Buffer)
local function int(v) return { int = tostring(v) } end
local rows = {
  { primary_key = { { "pk1", "a" }, { "pk2", 1 } }, cells = { { "b", true, T }, { "d", 1.5, T }, { "s", "v", T + 2 }, { "s", "old", T } } },
  { primary_key = { { "pk1", "b" }, { "pk2", -7 } }, cells = { { "x", B("\1\2"), T }, { "i", 42, T } } },
}
local rows_expect = {
  { pk = { { "pk1", "a" }, { "pk2", int(1) } }, attrs = { { "b", true, int(T) }, { "d", 1.5, int(T) }, { "s", "v", int(T + 2) }, { "s", "old", int(T) } } },
  { pk = { { "pk1", "b" }, { "pk2", int(-7) } }, attrs = { { "x", { bin = "0102" }, int(T) }, { "i", int(42), int(T) } } },
}
local cu = { capacity_unit = { read = 1, write = 0 } }
local cu_expect = { capacityUnit = { read = 1, write = 0 } }
local responses = {
  get_row = { "GetRow", "getRow", { consumed = cu, row = rows[1] }, { consumed = cu_expect, row = rows_expect[1] } },
  get_row_none = { "GetRow", "getRow", { consumed = cu }, { consumed = cu_expect, row = cjson.null } },
  get_range = { "GetRange", "getRange", { consumed = cu, rows = rows, next_start_primary_key = { { "pk1", "c" }, { "pk2", 0 } } },
    { consumed = cu_expect, nextStartPrimaryKey = { { "pk1", "c" }, { "pk2", int(0) } }, rows = rows_expect } },
  get_range_empty = { "GetRange", "getRange", { consumed = cu, rows = {} }, { consumed = cu_expect, nextStartPrimaryKey = cjson.null, rows = {} } },
  put_row = { "PutRow", "putRow", { consumed = { capacity_unit = { read = 0, write = 1 } }, row = { primary_key = { { "pk1", "a" } } } },
    { consumed = { capacityUnit = { read = 0, write = 1 } }, row = { pk = { { "pk1", "a" } }, attrs = {} } } },
  list_table = { "ListTable", "listTable", { table_names = { "a", "b" } }, { tableNames = { "a", "b" } } },
}
for name, r in pairs(responses) do
  local body, msg = wire.encode_response(r[1], r[3])
  check(body, "response " .. name .. " encodes: " .. tostring(msg))
  if body then
    out.responses[name] = { op = r[2], body = hex(body), expect = r[4] }
    local back = wire.decode_response(r[1], body)
    check(back and wire.encode_response(r[1], back) == body, "response " .. name .. " decodes and re-encodes to the same bytes")
  end
end

local f = assert(io.open(arg[2], "w"))
f:write(cjson.encode(out))
f:close()
print(("codec: %d SDK bodies padded, %d byte-identical as sent"):format(padded, raw_equal))
print(pass .. " passed, " .. fail .. " failed")
os.exit(fail == 0 and 0 or 1)
