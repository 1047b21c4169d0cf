-- otskit.wire messages: every operation's request and response go through
-- protobuf and back in the store's vocabulary (client encode -> server
-- decode -> server encode -> client decode), options otskit cannot honour
-- are refused both ways, and a store behind the codec answers as it does
-- directly.
local wire = require "otskit.wire"
local store = require "otskit.store"
local core = require("otskit.core").wire

local T = 1700000000000
local cu = { capacity_unit = { read = 1, write = 2 } }

-- request round trips: api, req, then what decode_request must give back
local REQUESTS = {
  { "PutRow", { table = "t", primary_key = { { "pk", "a" } }, columns = { { "s", "v", T, "STRING" }, { "n", 1, nil, "INTEGER" } },
      condition = { row_existence = "EXPECT_NOT_EXIST", column_condition = { column = "n", comparator = "EQUAL", value = 1,
        pass_if_missing = true, latest_version_only = true } },
      return_type = "RT_PK" } },
  { "UpdateRow", { table = "t", primary_key = { { "pk", 5 } }, condition = "EXPECT_EXIST",
      update = { PUT = { { "s", "v", T } }, DELETE = { { "d", T } }, DELETE_ALL = { "x", "y" }, INCREMENT = { n = 3 } },
      return_type = "RT_AFTER_MODIFY", return_column_names = { "n" } } },
  { "DeleteRow", { table = "t", primary_key = { { "pk", wire.binary("\0\1") } }, condition = "IGNORE" } },
  { "GetRow", { table = "t", primary_key = { { "pk", "a" } }, columns = { "s" }, max_versions = 2,
      time_range = { 0, T }, filter = { logical = "NOT", conditions = { { column = "s", comparator = "LESS_THAN", value = "m",
      pass_if_missing = false, latest_version_only = false } } }, start_column = "a", end_column = "z" } },
  { "GetRange", { table = "t", start = { { "pk", wire.INF_MIN } }, stop = { { "pk", wire.INF_MAX } }, direction = "BACKWARD",
      limit = 10, max_versions = 1, time_range = { specific = T }, filter = { pagination = { offset = 2, limit = 3 } } } },
  { "BatchGetRow", { tables = { { table = "t", primary_keys = { { { "pk", "a" } }, { { "pk", "b" } } }, columns = { "s" }, max_versions = 1 },
      { table = "u", primary_keys = { { { "id", 1 } } }, max_versions = 3 } } } },
  { "BatchWriteRow", { tables = { { table = "t", rows = {
      { type = "PUT", primary_key = { { "pk", "a" } }, columns = { { "s", "v", nil, "STRING" } }, condition = "IGNORE" },
      { type = "UPDATE", primary_key = { { "pk", "b" } }, update = { DELETE_ALL = { "s" } }, condition = "EXPECT_EXIST", return_type = "RT_PK" },
      { type = "DELETE", primary_key = { { "pk", "c" } }, condition = "IGNORE" } } } } } },
  { "CreateTable", { name = "t", primary_key = { { "pk", "STRING" }, { "id", "INTEGER", "AUTO_INCREMENT" } },
      options = { time_to_live = -1, max_versions = 1, max_time_deviation = 86400 }, reserved = { read = 0, write = 0 } } },
  { "UpdateTable", { name = "t", options = { max_versions = 2 }, reserved = { read = 1, write = 1 } } },
  { "DescribeTable", { name = "t" } },
  { "DeleteTable", { name = "t" } },
  { "ListTable", {} },
  { "ComputeSplitPointsBySize", { table = "t", split_size = 1, split_size_unit_in_byte = 1000 } },
  { "CreateTable", { name = "t", primary_key = { { "pk", "STRING" }, { "id", "INTEGER" } },
      defined_columns = { { "a", "INTEGER" }, { "b", "DOUBLE" }, { "c", "BOOLEAN" }, { "d", "STRING" }, { "e", "BINARY" } },
      index_metas = { { name = "i1", primary_key = { "d", "pk" }, defined_columns = { "a" }, index_type = "GLOBAL", index_update_mode = "ASYNC" },
        { name = "i2", primary_key = { "pk", "a" }, defined_columns = {}, index_type = "LOCAL", index_update_mode = "SYNC" } },
      enable_local_txn = false, options = { time_to_live = -1, max_versions = 1, max_time_deviation = 86400, allow_update = false },
      reserved = { read = 0, write = 0 } } },
  { "UpdateTable", { name = "t", options = { allow_update = true } } },
  { "CreateIndex", { table = "t", include_base_data = true, index_meta = { name = "i", primary_key = { "d" },
      defined_columns = { "a", "b" }, index_type = "GLOBAL", index_update_mode = "ASYNC" } } },
  { "DropIndex", { table = "t", index_name = "i" } },
  { "AddDefinedColumn", { table = "t", columns = { { "x", "STRING" } } } },
  { "DeleteDefinedColumn", { table = "t", columns = { "x", "y" } } },
  { "StartLocalTransaction", { table = "t", key = { { "pk", "chengdu" } } } },
  { "CommitTransaction", { transaction_id = "abc" } },
  { "AbortTransaction", { transaction_id = "abc" } },
  { "PutRow", { table = "t", primary_key = { { "pk", "a" } }, columns = {}, condition = "IGNORE", transaction_id = "tx" } },
  { "GetRange", { table = "t", start = { { "pk", wire.INF_MIN } }, stop = { { "pk", wire.INF_MAX } }, transaction_id = "tx",
      direction = "FORWARD", max_versions = 1 } },
  { "BatchWriteRow", { transaction_id = "tx", tables = { { table = "t", rows = {
      { type = "DELETE", primary_key = { { "pk", "c" } }, condition = "IGNORE" } } } } } },
}

-- normal form for comparing: the update map's PUT as a list, columns as cells
local function norm(api, req)
  local r = {}
  for k, v in pairs(req) do r[k] = v end
  if api == "BatchWriteRow" then
    for _, t in ipairs(r.tables) do for i, row in ipairs(t.rows) do t.rows[i] = norm("row", row) end end
  end
  if r.condition == nil and (api == "PutRow" or api == "UpdateRow" or api == "DeleteRow" or api == "row") then r.condition = "IGNORE" end
  return r
end

describe("otskit.wire messages", function()
  for _, case in ipairs(REQUESTS) do
    local api, req = case[1], case[2]
    it(api .. " request: encode_request -> decode_request -> the same request and bytes", function()
      local body = assert(wire.encode_request(api, req))
      local back = assert(wire.decode_request(api, body))
      assert.same(norm(api, req), norm(api, back))
      assert.equal(body, wire.encode_request(api, back))
    end)
  end

  local ROW = { primary_key = { { "pk", "a" } },
    cells = { { "s", "v", T + 1, "STRING" }, { "s", "u", T, "STRING" }, { "n", 7, T, "INTEGER" }, { "x", "\0", T, "BINARY" } } }
  local RESPONSES = {
    { "PutRow", { consumed = cu, row = { primary_key = { { "pk", "a" } }, cells = {} } } },
    { "UpdateRow", { consumed = cu } },
    { "DeleteRow", { consumed = cu } },
    { "GetRow", { consumed = cu, row = ROW } },
    { "GetRow", { consumed = cu } },
    { "GetRange", { consumed = cu, rows = { ROW, ROW }, next_start_primary_key = { { "pk", "b" } } } },
    { "GetRange", { consumed = cu, rows = {} } },
    { "BatchGetRow", { tables = { { table = "t", rows = { { ok = true, row = ROW, consumed = cu }, { ok = true, consumed = cu },
        { ok = false, code = "OTSInvalidPK", message = "Validate PK size fail. Input: 1, Meta: 2." } } } } } },
    { "BatchWriteRow", { tables = { { table = "t", rows = { { ok = true, consumed = cu },
        { ok = false, code = "OTSConditionCheckFail", message = "Condition check failed." } } } }, failed = 1 } },
    { "ListTable", { table_names = { "a", "b" } } },
    { "DescribeTable", { table_meta = { table = "t", primary_key = { { "pk", "STRING" }, { "id", "INTEGER", "AUTO_INCREMENT" } },
        defined_columns = {} }, index_metas = {},
        shard_splits = { "g", "p" }, options = { time_to_live = -1, max_versions = 1, max_time_deviation = 86400, allow_update = true },
        reserved = { read = 0, write = 0, last_increase_time = 5 }, status = "ACTIVE" } },
    { "DescribeTable", { table_meta = { table = "t", primary_key = { { "pk", "STRING" } }, defined_columns = { { "c", "STRING" } } },
        index_metas = { { name = "i", primary_key = { "c" }, defined_columns = {}, index_type = "GLOBAL",
          index_update_mode = "ASYNC", index_sync_phase = "INCR" } }, shard_splits = {},
        options = { time_to_live = -1, max_versions = 1, max_time_deviation = 86400, allow_update = false },
        reserved = { read = 0, write = 0, last_increase_time = 5 }, status = "ACTIVE" } },
    { "UpdateTable", { options = { time_to_live = -1, max_versions = 2, max_time_deviation = 86400, allow_update = true },
        reserved = { read = 1, write = 1, last_increase_time = 5 } } },
    { "StartLocalTransaction", { transaction_id = "abc" } },
    { "ComputeSplitPointsBySize", { consumed = cu, schema = { { "pk", "STRING" } }, split_points = { { { "pk", "m" } } },
        locations = { { location = "h1", ["repeat"] = 2 } } } },
  }
  for i, case in ipairs(RESPONSES) do
    local api, res = case[1], case[2]
    it(api .. " response " .. i .. ": encode_response -> decode_response -> the same response", function()
      local body = assert(wire.encode_response(api, res))
      local back = assert(wire.decode_response(api, body))
      if res.row then assert.same(res.row.primary_key, back.row.primary_key) end
      if api == "GetRow" and res.row then
        assert.same(res.row.cells, back.row.cells)
        assert.same({ s = "v", n = 7, x = "\0" }, back.row.columns) -- the newest version
      end
      if res.consumed then assert.same(res.consumed, back.consumed) end
      if api == "GetRange" then
        assert.equal(#res.rows, #back.rows)
        assert.same(res.next_start_primary_key, back.next_start_primary_key)
      elseif api == "BatchGetRow" or api == "BatchWriteRow" then
        local want, got = res.tables[1].rows, back.tables[1].rows
        assert.equal(#want, #got)
        for j, r in ipairs(want) do
          assert.equal(r.ok, got[j].ok)
          assert.equal(r.code, got[j].code)
          assert.equal(r.message, got[j].message)
          assert.same(r.row and r.row.cells, got[j].row and got[j].row.cells)
        end
        if res.failed then assert.equal(res.failed, back.failed) end
      elseif api == "ListTable" or api == "DescribeTable" or api == "UpdateTable" or api == "ComputeSplitPointsBySize"
          or api == "StartLocalTransaction" then
        local r2 = {}
        for k, v in pairs(res) do r2[k] = v end
        assert.same(r2, back)
      end
      assert.equal(body, wire.encode_response(api, back))
    end)
  end

  it("an ok batch row without a row: BatchGetRow sends an empty row (the SDKs read it), BatchWriteRow none", function()
    local pb = require("otskit.core").wire.proto_decode
    local cu = { capacity_unit = { read = 1, write = 0 } }
    for _, case in ipairs({ { "BatchGetRow", "" }, { "BatchWriteRow", nil } }) do
      local api, want = case[1], case[2]
      local body = assert(wire.encode_response(api, { tables = { { table = "t", rows = { { ok = true, consumed = cu } } } } }))
      local m = assert(pb(api .. "Response", body))
      assert.equal(want, m.tables[1].rows[1].row)
      assert.is_nil(assert(wire.decode_response(api, body)).tables[1].rows[1].row)
    end
  end)

  it("encodes and decodes errors", function()
    local b = wire.encode_error("OTSConditionCheckFail", "Condition check failed.")
    assert.equal("\n\21OTSConditionCheckFail\18\23Condition check failed.", b)
    assert.same({ "OTSConditionCheckFail", "Condition check failed." }, { wire.decode_error(b) })
    local code, msg, c3 = wire.decode_error("<html>")
    assert.is_nil(code)
    assert.is_string(msg)
    assert.equal("CorruptMessage", c3)
  end)

  it("refuses options it cannot honour, on both sides", function()
    local _, msg, code = wire.encode_request("PutRow", { table = "t", primary_key = { { "pk", "a" } }, transaction_id = 5 })
    assert.equal("OTSParameterInvalid", code)
    assert.matches("transaction_id", msg)
    _, _, code = wire.encode_request("CreateTable", { name = "t", primary_key = { { "pk", "STRING" } }, partition = {} })
    assert.equal("OTSParameterInvalid", code)
    _, _, code = wire.encode_request("GetRange", { table = "t", start = {}, stop = {}, options = {} })
    assert.equal("OTSParameterInvalid", code)
    -- a request with a field the proto knows and otskit cannot honour (an enabled stream)
    local body = core.proto_encode("CreateTableRequest", { table_meta = { table_name = "t" },
      reserved_throughput = { capacity_unit = {} }, stream_spec = { enable_stream = true } })
    _, msg, code = wire.decode_request("CreateTable", body)
    assert.equal("OTSParameterInvalid", code)
    assert.matches("stream_spec", msg)
    -- a disabled stream is what otskit does: accepted
    body = core.proto_encode("CreateTableRequest", { table_meta = { table_name = "t", primary_key = { { name = "k", type = "STRING" } } },
      reserved_throughput = { capacity_unit = {} }, stream_spec = { enable_stream = false } })
    assert(wire.decode_request("CreateTable", body))
    -- a field the proto does not know (CreateTable field 12)
    body = core.proto_encode("CreateTableRequest", { table_meta = { table_name = "t" },
      reserved_throughput = { capacity_unit = {} } }) .. "\98\0"
    _, msg, code = wire.decode_request("CreateTable", body)
    assert.equal("OTSParameterInvalid", code)
    assert.matches("12", msg)
  end)

  it("carries CreateTable split points as the partition ranges the service takes", function()
    -- each end: the PlainBuffer type byte and payload, no length prefix;
    -- INF_MIN / INF_MAX the bare bytes 9 and 10
    local function le32(n) return string.char(n % 256, math.floor(n / 256) % 256, 0, 0) end
    local body = assert(wire.encode_request("CreateTable", { name = "t",
      primary_key = { { "pk", "STRING" } }, splits = { "g", "p" } }))
    local m = assert(core.proto_decode("CreateTableRequest", body))
    assert.equal(3, #m.partitions)
    assert.equal("\9", m.partitions[1].begin)
    assert.equal("\3" .. le32(1) .. "g", m.partitions[1]["end"])
    assert.equal("\3" .. le32(1) .. "g", m.partitions[2].begin)
    assert.equal("\3" .. le32(1) .. "p", m.partitions[2]["end"])
    assert.equal("\10", m.partitions[3]["end"])
    local req = assert(wire.decode_request("CreateTable", body))
    assert.same({ "g", "p" }, req.splits)
    -- INTEGER: little-endian 64 bits; BINARY: type 7
    body = assert(wire.encode_request("CreateTable", { name = "t", primary_key = { { "pk", "INTEGER" } },
      splits = { 258, -1 } }))
    m = assert(core.proto_decode("CreateTableRequest", body))
    assert.equal("\0\2\1\0\0\0\0\0\0", m.partitions[1]["end"])
    assert.equal("\0" .. ("\255"):rep(8), m.partitions[2]["end"])
    assert.same({ 258, -1 }, assert(wire.decode_request("CreateTable", body)).splits)
    body = assert(wire.encode_request("CreateTable", { name = "t", primary_key = { { "pk", "BINARY" } },
      splits = { wire.binary("\0\1") } }))
    m = assert(core.proto_decode("CreateTableRequest", body))
    assert.equal("\7" .. le32(2) .. "\0\1", m.partitions[1]["end"])
    -- no split points: no partitions
    body = assert(wire.encode_request("CreateTable", { name = "t", primary_key = { { "pk", "STRING" } }, splits = {} }))
    assert.equal(0, #(assert(core.proto_decode("CreateTableRequest", body)).partitions or {}))
    -- what is not a partition-key value is refused
    for _, bad in ipairs({ { 1.5 }, { true }, { {} }, { wire.INF_MAX } }) do
      local ok, msg, code = wire.encode_request("CreateTable", { name = "t", primary_key = { { "pk", "STRING" } }, splits = bad })
      assert.is_nil(ok)
      assert.equal("OTSInvalidPK", code)   -- as the store answers a split of no key type
      assert.matches("splits%[1%]", msg)
    end
    -- ranges that do not cover INF_MIN..INF_MAX without gaps are refused
    local g = "\3" .. le32(1) .. "g"
    local meta = { table_name = "t", primary_key = { { name = "pk", type = "STRING" } } }
    local rt = { capacity_unit = { read = 0, write = 0 } }
    for i, parts in ipairs({
      { { begin = g, ["end"] = "\10" } },                                         -- not from INF_MIN
      { { begin = "\9", ["end"] = g } },                                          -- not to INF_MAX
      { { begin = "\9", ["end"] = g }, { begin = "\3" .. le32(1) .. "h", ["end"] = "\10" } },  -- a gap
      { { begin = "\9", ["end"] = "\1" .. ("\0"):rep(8) }, { begin = "\1" .. ("\0"):rep(8), ["end"] = "\10" } }, -- a DOUBLE
      { { begin = "\9", ["end"] = "\3" .. le32(9) .. "g" }, { begin = "\3" .. le32(9) .. "g", ["end"] = "\10" } }, -- truncated
    }) do
      local b = assert(core.proto_encode("CreateTableRequest", { table_meta = meta, reserved_throughput = rt, partitions = parts }))
      local ok, msg, code = wire.decode_request("CreateTable", b)
      assert.is_nil(ok)
      assert.equal(i == 4 and "OTSInvalidPK" or "OTSParameterInvalid", code)
      assert.matches("partitions", msg)
    end
  end)

  it("refuses malformed bodies with nil, msg, code", function()
    local good = assert(wire.encode_request("PutRow", REQUESTS[1][2]))
    -- every cut either fails cleanly or is itself a complete message
    -- (cut at a field boundary after the required fields)
    local failed = 0
    for n = 0, #good - 1 do
      local cut = good:sub(1, n)
      local r, msg, code = wire.decode_request("PutRow", cut)
      if r then
        assert.equal(cut, wire.encode_request("PutRow", r))
      else
        failed = failed + 1
        assert.is_string(msg)
        assert.equal("OTSParameterInvalid", code)
      end
    end
    assert.is_true(failed >= #good - 2)
    local r, _, code = wire.decode_response("GetRange", "\10\2\10\0\18\5\117\0\0\0\1")
    assert.is_nil(r)
    assert.equal("CorruptPlainBuffer", code)
    r, _, code = wire.decode_response("GetRow", "garbage")
    assert.is_nil(r)
    assert.equal("CorruptMessage", code)
    assert.has_error(function() wire.encode_request("Nope", {}) end, "otskit.wire: unknown api Nope")
  end)

  it("puts a store behind the codec: the answers are the store's", function()
    local db = assert(store.open({ partitions = false }))
    local function call(api, method, req)
      local body = assert(wire.encode_request(api, req))
      local sreq = assert(wire.decode_request(api, body))
      local res, msg, code = db[method](db, sreq)
      if not res then return nil, msg, code end
      res.latency = nil
      return assert(wire.decode_response(api, assert(wire.encode_response(api, res)), req))
    end
    assert.same({ table = "t" }, call("CreateTable", "create_table", { name = "t", primary_key = { { "pk", "STRING" }, { "n", "INTEGER" } } }))
    for i = 1, 20 do
      assert(call("PutRow", "put_row", { table = "t", primary_key = { { "pk", "k" .. (i % 3) }, { "n", i } },
        columns = { s = "v" .. i, b = wire.binary("\0" .. i), d = i + 0.5 } }))
    end
    local r = assert(call("UpdateRow", "update_row", { table = "t", primary_key = { { "pk", "k1" }, { "n", 1 } },
      update = { INCREMENT = { c = 5 }, DELETE_ALL = { "d" } } }))
    assert.is_table(r.consumed)
    local g = assert(call("GetRow", "get_row", { table = "t", primary_key = { { "pk", "k1" }, { "n", 1 } } }))
    assert.equal(5, g.row.columns.c)
    assert.equal("v1", g.row.columns.s)
    assert.is_nil(g.row.columns.d)
    assert.equal("\0" .. 1, g.row.columns.b.value or g.row.columns.b)
    local range = assert(call("GetRange", "get_range", { table = "t", start = { { "pk", wire.INF_MIN }, { "n", wire.INF_MIN } },
      stop = { { "pk", wire.INF_MAX }, { "n", wire.INF_MAX } }, limit = 7 }))
    local direct = assert(db:get_range({ table = "t", start = { { "pk", store.INF_MIN }, { "n", store.INF_MIN } },
      stop = { { "pk", store.INF_MAX }, { "n", store.INF_MAX } }, limit = 7 }))
    assert.equal(#direct.rows, #range.rows)
    for i, row in ipairs(direct.rows) do assert.same(row.primary_key, range.rows[i].primary_key) end
    assert.same(direct.next_start_primary_key, range.next_start_primary_key)
    local _, msg, code = call("PutRow", "put_row", { table = "t", primary_key = { { "pk", "k1" }, { "n", 1 } },
      columns = {}, condition = "EXPECT_NOT_EXIST" })
    assert.equal("OTSConditionCheckFail", code)
    assert.same({ code, msg }, { wire.decode_error(wire.encode_error(code, msg)) })
    local bw = assert(call("BatchWriteRow", "batch_write_row", { tables = { { table = "t", rows = {
      { type = "PUT", primary_key = { { "pk", "z" }, { "n", 1 } }, columns = { s = "z" } },
      { type = "DELETE", primary_key = { { "pk", "k1" }, { "n", 1 } }, condition = "EXPECT_NOT_EXIST" } } } } }))
    assert.equal(1, bw.failed)
    local bg = assert(call("BatchGetRow", "batch_get_row", { tables = { { table = "t",
      primary_keys = { { { "pk", "z" }, { "n", 1 } }, { { "pk", "none" }, { "n", 1 } } } } } }))
    assert.equal("z", bg.tables[1].rows[1].row.columns.s)
    assert.is_nil(bg.tables[1].rows[2].row)
    assert.same({ table_names = { "t" } }, call("ListTable", "list_table", {}))
    db:close()
  end)

  it("carries versions, types, filters, auto-increment and table options between client and store", function()
    local db = assert(store.open({ partitions = false }))
    local function call(api, method, req)
      local sreq = assert(wire.decode_request(api, assert(wire.encode_request(api, req))))
      local res, msg, code = db[method](db, sreq)
      if not res then return nil, msg, code end
      res.latency = nil
      local body = assert(wire.encode_response(api, res))
      local back = assert(wire.decode_response(api, body, req))
      return back, res
    end
    local now = os.time() * 1000
    local opts = { time_to_live = -1, max_versions = 3, max_time_deviation = 86400, allow_update = true }
    assert(call("CreateTable", "create_table", { name = "v", primary_key = { { "k", "BINARY" }, { "id", "INTEGER", "AUTO_INCREMENT" } },
      options = opts, reserved = { read = 0, write = 0 } }))
    local d, direct = call("DescribeTable", "describe_table", { name = "v" })
    assert.same(opts, d.options)
    assert.same(direct.table_meta.primary_key, d.table_meta.primary_key)
    local p = assert(call("PutRow", "put_row", { table = "v", primary_key = { { "k", wire.binary("\0k") }, { "id", wire.AUTO_INCREMENT } },
      columns = { { "s", "old", now - 2000 }, { "s", "new", now - 1000 }, { "b", wire.binary("\1\2"), now } }, return_type = "RT_PK" }))
    local pk = p.row.primary_key
    assert.equal("number", type(pk[2][2]))             -- the generated value
    local g, gs = call("GetRow", "get_row", { table = "v", primary_key = pk, max_versions = 2 })
    assert.same(gs.row.cells, g.row.cells)              -- every version, ts and type, as the store gave them
    assert.equal("new", g.row.columns.s)
    local f = call("GetRow", "get_row", { table = "v", primary_key = pk,
      filter = { column = "s", comparator = "EQUAL", value = "nope" } })
    assert.is_nil(f.row)
    local u = assert(call("UpdateTable", "update_table", { name = "v", options = { max_versions = 1 } }))
    assert.equal(1, u.options.max_versions)
    db:close()
  end)
end)
