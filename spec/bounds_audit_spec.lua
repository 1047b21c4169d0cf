-- The bounds audit (#24): every public entry point that takes a count or a
-- size from the caller, one row each, with the values that must be
-- refused — negative, zero where a count must be positive, fractional,
-- NaN, ±inf, huge, the first value past the cap, and a wrong type. Each
-- refusal follows the module's convention: `nil, message, code` for bad
-- input (`code` asserted), or a raise naming the module for a programming
-- mistake. Every call returns within a second (nothing runs for minutes,
-- allocates in proportion to the claim or is silently clamped), and the
-- cap itself (or a value just inside it) is accepted: the row is not
-- refusing everything. Client rows assert nothing was sent.
local key = require "otskit.key"
local blob = require "otskit.blob"
local merge = require "otskit.merge"
local backoff = require "otskit.backoff"
local retry = require "otskit.retry"
local store = require "otskit.store"
local client = require "otskit.client"
local timeseries = require "otskit.patterns.timeseries"
local hashprefix = require "otskit.patterns.hashprefix"
local spliced = require "otskit.patterns.spliced"
local hotcold = require "otskit.patterns.hotcold"
local chunked = require "otskit.patterns.chunked"
local import = require "otskit.patterns.import"
local clock = require("otskit.backoff").now

local NaN, INF = 0 / 0, math.huge
local I32 = 2147483647

-- the usual bad numbers, then the entry's own (the first past its cap, ...)
local function bad(...)
  local t = { -1, 1.5, NaN, INF, -INF, 1e300, true, "x", {} }
  for _, v in ipairs({ ... }) do t[#t + 1] = v end
  return t
end

local db = assert(store.open {})
assert(db:create_table { name = "t", primary_key = { { "id", "STRING" } } })
assert(db:put_row { table = "t", primary_key = { "a" }, columns = { v = 1 } })
assert(db:create_search_index { table = "t", index = "ix", schema = { field_schemas = {
  { field_name = "v", field_type = "LONG" } } } })
local RANGE = { table = "t", inclusive_start_primary_key = { store.INF_MIN }, exclusive_end_primary_key = { store.INF_MAX } }
local function with(base, k, v)
  local t = {}
  for kk, vv in pairs(base) do t[kk] = vv end
  t[k] = v
  return t
end

-- a client whose transport counts what would have been sent
local sent = 0
local cl = client.new { endpoint = "http://127.0.0.1:1", instance = "i", access_key_id = "a",
  access_key_secret = "b", retry = false,
  transport = function() sent = sent + 1; return nil, "no network here", "connect" end }
local CRANGE = { table = "t", inclusive_start_primary_key = { { "id", store.INF_MIN } },
  exclusive_end_primary_key = { { "id", store.INF_MAX } } }

-- durations (seconds) are at most a day: beyond it, a size or a timestamp
-- was passed as a duration (and the transport turns seconds into a long
-- of milliseconds)
local DAY = 86400
local DURATION = { -1, 0, NaN, INF, -INF, 1e300, DAY + 0.001, DAY + 1, true, "x", {} }
local function new_client(o)
  local t = { endpoint = "http://127.0.0.1:1", instance = "i", access_key_id = "a", access_key_secret = "b" }
  for k, v in pairs(o) do t[k] = v end
  return client.new(t)
end
local http = require("otskit.core").http
local function http_submit(o)
  local s = assert(http.new {})
  local req = { url = "http://127.0.0.1:1/" }
  for k, v in pairs(o) do req[k] = v end
  local ok, r = pcall(s.submit, s, req)
  s:close()
  if not ok then error(r, 0) end
  return r
end

local parts = blob.split(("x"):rep(1000), { chunk_size = 100 })
local ts = timeseries.new { store = db, table = "m", buckets = 2 }
assert(ts:create())
local hp = hashprefix.new { store = db, table = "h" }
assert(hp:create())
local sp = spliced.new { store = db, table = "s", splice = { { "a", "int", width = 4 } } }
assert(sp:create())
local hc = hotcold.new { store = db, prefix = "hc", first = "2026-01", last = "2026-02" }
assert(hc:create())
local ch = chunked.new { store = db, table = "c", chunk_size = 16 }
assert(ch:create())
assert(ch:put("k", ("y"):rep(100)))
local ids = {}
for i = 1, hashprefix.MAX_IDS + 1 do ids[i] = i end
local ok_ids = { table.unpack and table.unpack(ids, 1, 3) or unpack(ids, 1, 3) }
local function months(n) -- "2026-01" and the month n - 1 later
  local m = 2026 * 12 + n - 1
  return ("%04d-%02d"):format(math.floor(m / 12), m % 12 + 1)
end

-- { name, call(v), { bad values }, good value, refusal }: refusal "raise"
-- (the message names `mod`) or a code for nil, message, code
local ROWS = {
  -- otskit.key
  { "key.pack{n}", function(v) return key.pack { n = v } end, bad(1000001), 3, "raise", "otskit.key" },
  { "key.hash_prefix{len}", function(v) return key.hash_prefix { len = v } end, bad(0, 33), 32, "raise", "otskit.key" },
  { "key.hash_prefix{len} crc32c", function(v) return key.hash_prefix { algo = "crc32c", len = v } end, bad(0, 9), 8, "raise", "otskit.key" },
  { "key.buckets{n}", function(v) return key.buckets { n = v } end, bad(0, I32 + 1), I32, "raise", "otskit.key" },
  { "key.buckets{width}", function(v) return key.buckets { n = 100, width = v } end, bad(1, 20), 19, "raise", "otskit.key" },
  { "buckets:all() n", function(v) return key.buckets { n = v }:all() end, { 1048577, I32 }, 4, "raise", "otskit.key" },
  { "buckets:label(i)", function(v) return key.buckets { n = 4 }:label(v) end, bad(4), 3, "raise", "otskit.key" },
  { "key.splice width", function(v) return key.splice { { "a", "int", width = v } } end, bad(0, 20), 19, "raise", "otskit.key" },
  { "key.reverse_ts(ts)", function(v) return key.reverse_ts(v) end, bad(), 5, "raise", "otskit.key" },
  -- otskit.blob
  { "blob.split{chunk_size}", function(v) return blob.split("abc", { chunk_size = v }) end, bad(0, 2 ^ 31), 1, "raise", "otskit.blob" },
  { "blob.split{max_cell}", function(v) return blob.split("abc", { max_cell = v }) end, bad(0, 40, 2 ^ 31), 2097152, "raise", "otskit.blob" },
  { "blob.split chunk count", function(v) return blob.split(("z"):rep(v), { chunk_size = 1 }) end,
    { blob.MAX_CHUNKS + 1 }, 1000, "TooLarge" },
  { "blob.splitter{chunk_size}", function(v) return blob.splitter({ chunk_size = v }, function() end) end, bad(0, 2 ^ 31), 4, "raise", "otskit.blob" },
  { "blob.join{max_size}", function(v) return blob.join(parts.manifest, parts.chunks, { max_size = v }) end, bad(2 ^ 53 + 2), 1000, "raise", "otskit.blob" },
  { "blob.join max_size below the manifest", function(v) return blob.join(parts.manifest, parts.chunks, { max_size = v }) end, { 0, 999 }, 1000, "TooLarge" },
  { "blob.joiner{max_size}", function(v) return blob.joiner(parts.manifest, { max_size = v }) end, bad(2 ^ 53 + 2), 1000, "raise", "otskit.blob" },
  { "blob.unpack{max_size}", function(v) return blob.unpack(blob.pack("hello"), { max_size = v }) end, bad(2 ^ 53), 5, "raise", "otskit.blob" },
  { "blob.pack{level}", function(v) return blob.pack("hello", { level = v }) end, { 1.5, NaN, INF, -INF, 1e300, true, "x", {}, 23, -131073 }, 22, "raise", "otskit.blob" },
  { "blob.train{size}", function(v) return blob.train({ "aaaa", "bbbb" }, { size = v }) end, bad(0, 255, 2 ^ 31), nil, "raise", "otskit.blob" },
  { "blob.plan{max_cleanup}", function(v) return blob.plan(parts, { max_cleanup = v }) end, bad(2 ^ 53 + 2), 0, "raise", "otskit.blob" },
  { "blob.read_range(start)", function(v) return blob.read_range(parts.manifest, function(i) return parts.chunks[i + 1] end, v, 10) end,
    bad(11), 0, "raise", "otskit.blob" },
  { "blob.read_range(stop)", function(v) return blob.read_range(parts.manifest, function(i) return parts.chunks[i + 1] end, 0, v) end,
    bad(), 10, "raise", "otskit.blob" },
  -- otskit.merge
  { "merge.read{sources}", function(v) return merge.read { sources = v, key = "k", limit = 10, fetch = function() return {} end } end, bad(0, 1025), 1024, "raise", "otskit.merge" },
  { "merge.read{limit}", function(v) return merge.read { sources = 1, key = "k", limit = v, fetch = function() return {} end } end, bad(0, 2 ^ 31 + 1), 2 ^ 31, "raise", "otskit.merge" },
  { "merge.read{first_rows}", function(v) return merge.read { sources = 1, key = "k", limit = 10, first_rows = v, fetch = function() return {} end } end, bad(0, 2 ^ 31 + 1), 5, "raise", "otskit.merge" },
  { "merge.new{sources}", function(v) return merge.new { sources = v, key = "k" } end, bad(0, 1025), 1024, "raise", "otskit.merge" },
  { "merge.new{limit}", function(v) return merge.new { sources = 1, key = "k", limit = v } end, bad(0, 2 ^ 53 + 2), 7, "raise", "otskit.merge" },
  { "merge:push(source)", function(v) return merge.new { sources = 2, key = "k" }:push(v, {}, true) end, bad(0, 3), 2, "raise", "otskit.merge" },
  -- otskit.backoff, otskit.retry (retry budgets and schedules)
  { "backoff.new{max_attempts}", function(v) return backoff.new { max_attempts = v } end, { -1, 1.5, NaN, -INF, 1e300, true, "x" }, 3, "raise", "otskit.backoff" },
  -- durations: at most a day (DAY)
  { "backoff.new{base}", function(v) return backoff.new { base = v } end, { -1, 0, NaN, INF, -INF, 1e300, DAY + 0.5, true, "x" }, DAY, "raise", "otskit.backoff" },
  { "backoff.new{cap}", function(v) return backoff.new { cap = v } end, { -1, 0, NaN, INF, -INF, 1e300, DAY + 1, true, "x" }, DAY, "raise", "otskit.backoff" },
  { "backoff.new{throttle_base}", function(v) return backoff.new { throttle_base = v } end, { -1, NaN, INF, -INF, 1e300, DAY + 1, true, "x" }, DAY, "raise", "otskit.backoff" },
  { "backoff.new{multiplier}", function(v) return backoff.new { multiplier = v } end, { -1, 0, NaN, INF, -INF, true, "x" }, 2, "raise", "otskit.backoff" },
  { "backoff.new{deadline}", function(v) return backoff.new { deadline = v } end, { -1, NaN, -INF, 1e300, DAY + 1, true, "x" }, DAY, "raise", "otskit.backoff" },
  { "schedule:next(elapsed)", function(v) return backoff.new {}:next(v) end, { -1, NaN, -INF, true, "x" }, 0, "raise", "otskit.backoff" },
  { "backoff.budget{capacity}", function(v) return backoff.budget { capacity = v } end, { -1, NaN, INF, -INF, true, "x" }, 500, "raise", "otskit.backoff" },
  { "backoff.budget{retry_cost}", function(v) return backoff.budget { retry_cost = v } end, { -1, NaN, INF, -INF, true, "x" }, 5, "raise", "otskit.backoff" },
  { "backoff.budget{percent}", function(v) return backoff.budget { type = "ratio", percent = v } end, { -1, NaN, INF, 1e300, 1001, true, "x" }, 10, "raise", "otskit.backoff" },
  { "backoff.budget{window}", function(v) return backoff.budget { type = "ratio", window = v } end, { -1, 0, NaN, INF, true, "x" }, 10, "raise", "otskit.backoff" },
  { "retry.call{backoff.max_attempts}", function(v) return retry.call(function() return 1 end, { backoff = { max_attempts = v } }) end,
    { -1, 1.5, NaN, -INF, 1e300, true, "x" }, 3, "raise", "otskit.backoff" },
  { "retry.call{backoff.base}", function(v) return retry.call(function() return 1 end, { backoff = { base = v } }) end,
    { -1, 0, NaN, INF, 1e300, DAY + 1, true, "x" }, DAY, "raise", "otskit.backoff" },
  { "retry.call{backoff.deadline}", function(v) return retry.call(function() return 1 end, { backoff = { deadline = v } }) end,
    { -1, NaN, 1e300, DAY + 1, true, "x" }, DAY, "raise", "otskit.backoff" },
  { "retry.batch_write rows", function(v) return retry.batch_write(function(b) return b end, v) end,
    { 7, "x", -- a __len of -1 (LuaJIT ignores __len on tables: the list is what it holds)
      #setmetatable({}, { __len = function() return -1 end }) == -1 and setmetatable({}, { __len = function() return -1 end }) or nil },
    { 1 }, "raise", "otskit.retry" },
  -- otskit.store
  { "store get_range{limit}", function(v) return db:get_range(with(RANGE, "limit", v)) end, bad(0, I32 + 1), I32, "OTSParameterInvalid" },
  { "store get_range{max_versions}", function(v) return db:get_range(with(RANGE, "max_versions", v)) end, bad(0, I32 + 1), I32, "OTSParameterInvalid" },
  { "store get_row{max_versions}", function(v) return db:get_row { table = "t", primary_key = { "a" }, max_versions = v } end, bad(0, I32 + 1), I32, "OTSParameterInvalid" },
  { "store batch_get_row{max_versions}", function(v)
      return db:batch_get_row { tables = { { table = "t", primary_keys = { { "a" } }, max_versions = v } } }
    end, bad(0, I32 + 1), 2, "OTSParameterInvalid" },
  { "store update_table{max_versions}", function(v) return db:update_table { name = "t", options = { max_versions = v } } end, bad(0, I32 + 1), 1, "OTSParameterInvalid" },
  { "store update_table{time_to_live}", function(v) return db:update_table { name = "t", options = { time_to_live = v } } end,
    { -2, 1.5, NaN, INF, -INF, 1e300, true, "x", {}, 0, 86399, I32 + 1 }, -1, "OTSParameterInvalid" },
  { "store search{limit}", function(v) return db:search { table = "t", index = "ix", limit = v } end, bad(1001, 2 ^ 31 + 1), 1000, "OTSParameterInvalid" },
  { "store search{offset}", function(v) return db:search { table = "t", index = "ix", offset = v } end, bad(100000, 2 ^ 31 + 1), 0, "OTSParameterInvalid" },
  { "store compute_split_points_by_size{split_size}", function(v) return db:compute_split_points_by_size { table = "t", split_size = v } end,
    bad(0), 1, "OTSParameterInvalid" },
  { "store batch_get_row key count", function(v)
      local pks = {}
      for i = 1, v do pks[i] = { "k" .. i } end
      return db:batch_get_row { tables = { { table = "t", primary_keys = pks } } }
    end, { 101, 10000 }, 100, "OTSParameterInvalid" },
  { "store batch_write_row row count", function(v)
      local rows = {}
      for i = 1, v do rows[i] = { type = "PUT", primary_key = { "k" .. i }, columns = { v = i } } end
      return db:batch_write_row { tables = { { table = "t", rows = rows } } }
    end, { 201, 10000 }, 200, "OTSParameterInvalid" },
  { "store set_index_delay(s)", function(v) return db:set_index_delay(v) end, { -1, NaN, INF, 1e300, true, "x" }, 0, "raise", "otskit.store" },
  -- otskit.client (nothing is sent)
  { "client get_range{limit}", function(v) return cl:get_range(with(CRANGE, "limit", v)) end, bad(0, I32 + 1), nil, "OTSParameterInvalid", sent = true },
  { "client get_range{max_versions}", function(v) return cl:get_range(with(CRANGE, "max_versions", v)) end, bad(0, I32 + 1), nil, "OTSParameterInvalid", sent = true },
  { "client get_row{max_versions}", function(v) return cl:get_row { table = "t", primary_key = { { "id", "a" } }, max_versions = v } end,
    bad(0, I32 + 1), nil, "OTSParameterInvalid", sent = true },
  { "client batch_get_row{max_versions}", function(v)
      return cl:batch_get_row { tables = { { table = "t", primary_keys = { { { "id", "a" } } }, max_versions = v } } }
    end, bad(0, I32 + 1), nil, "OTSParameterInvalid", sent = true },
  { "client search{limit}", function(v) return cl:search { table = "t", index = "i", limit = v } end, bad(2 ^ 31), nil,
    "OTSParameterInvalid", sent = true },
  { "client search{offset}", function(v) return cl:search { table = "t", index = "i", offset = v } end, bad(2 ^ 31), nil,
    "OTSParameterInvalid", sent = true },
  { "client parallel_scan{limit}", function(v) return cl:parallel_scan { table = "t", index = "i", session_id = "s", limit = v } end, bad(0, 2 ^ 31), nil, "OTSParameterInvalid", sent = true },
  { "client.new{timeout}", function(v) return new_client { timeout = v } end, DURATION, DAY, "raise", "otskit.client" },
  { "client.new{connect_timeout}", function(v) return new_client { connect_timeout = v } end, DURATION, DAY, "raise", "otskit.client" },
  { "client.new{skew}", function(v) return new_client { skew = v } end, DURATION, DAY, "raise", "otskit.client" },
  { "client.new{retry.base}", function(v) return new_client { retry = { base = v } } end, DURATION, DAY, "raise", "otskit.backoff" },
  { "client.new{retry.cap}", function(v) return new_client { retry = { cap = v } } end, DURATION, DAY, "raise", "otskit.backoff" },
  { "client.new{retry.deadline}", function(v) return new_client { retry = { deadline = v } } end,
    { -1, NaN, -INF, 1e300, DAY + 1, true, "x" }, DAY, "raise", "otskit.backoff" },
  -- the curl transport under the client (csrc/lua/lhttp.c: seconds to a long of ms)
  { "http session:submit{timeout}", function(v) return http_submit { timeout = v } end, DURATION, DAY, "raise", "otskit.http" },
  { "http session:submit{connect_timeout}", function(v) return http_submit { connect_timeout = v } end, DURATION, DAY, "raise", "otskit.http" },
  -- otskit.patterns
  { "timeseries.new{buckets}", function(v) return timeseries.new { store = db, table = "m", buckets = v } end, bad(0, 1025), 1024, "raise", "otskit.patterns.timeseries" },
  { "timeseries:read{limit}", function(v) return ts:read { limit = v } end, bad(0, 5001), 5000, "BadRange" },
  { "hashprefix.new{width}", function(v) return hashprefix.new { store = db, table = "h", width = v } end, bad(0, 16), 15, "raise", "otskit.patterns.hashprefix" },
  { "hashprefix.new{len}", function(v) return hashprefix.new { store = db, table = "h", len = v } end, bad(0, 33), 32, "raise", "otskit" },
  { "hashprefix:get_many id count", function(v) return hp:get_many(v) end, { ids }, ok_ids, "BadRange" },
  { "spliced:range{limit}", function(v) return sp:range { limit = v } end, bad(0, 5001), 5000, "BadRange" },
  { "hotcold:read{limit}", function(v) return hc:read { key = "k", from = 1767225600, to = 1767225700, limit = v } end, bad(0, 5001), 5000, "BadRange" },
  { "hotcold.new month count", function(v) return hotcold.new { store = db, prefix = "hx", first = "2026-01", last = months(v) } end,
    { 1025, 10000 }, 1024, "raise", "otskit.patterns.hotcold" },
  { "chunked.new{chunk_size}", function(v) return chunked.new { store = db, table = "c", chunk_size = v } end, bad(0, 2 * 1048576 - 1023), 1024, "raise", "otskit.patterns.chunked" },
  { "chunked.new{max_value}", function(v) return chunked.new { store = db, table = "c", max_value = v } end, bad(2 ^ 53 + 2), 0, "raise", "otskit.patterns.chunked" },
  { "chunked:read_range(stop)", function(v) return ch:read_range("k", 0, v) end, bad(101), 100, "BadRange" },
  { "import.run{workers}", function(v) return import.run { store = db, table = "t", rows = {}, workers = v } end, bad(0, 257), 256, "raise", "otskit.patterns.import" },
  { "import.run{max_rows}", function(v) return import.run { store = db, table = "t", rows = {}, max_rows = v } end, bad(0, 201), 200, "raise", "otskit.patterns.import" },
}

local function show(v)
  if type(v) == "table" then return "a table" end
  return type(v) == "string" and ("%q"):format(v) or tostring(v)
end

describe("bounds audit: every size taken from input is refused out of range, at once", function()
  for _, row in ipairs(ROWS) do
    local name, call, values, good, how, mod = row[1], row[2], row[3], row[4], row[5], row[6]
    it(name, function()
      for _, v in ipairs(values) do
        local what = name .. " = " .. show(v)
        sent = 0
        local t0 = clock()
        local r = { pcall(call, v) }
        local took = clock() - t0
        assert.is_true(took < 1, what .. " took " .. took .. " s")
        if how == "raise" then
          assert.is_false(r[1], what .. " was accepted")
          assert.is_truthy(tostring(r[2]):find(mod, 1, true), what .. ": " .. tostring(r[2]))
        else
          assert.is_true(r[1], what .. " raised: " .. tostring(r[2]))
          assert.is_nil(r[2], what .. " was accepted")
          assert.is_string(r[3], what)
          assert.equal(how, r[4], what .. ": " .. tostring(r[3]))
        end
        if row.sent then assert.equal(0, sent, what .. " was sent") end
      end
      if good ~= nil then -- the cap itself passes the check
        local r = { pcall(call, good) }
        assert.is_true(r[1], name .. " = " .. show(good) .. " raised: " .. tostring(r[2]))
        if how ~= "raise" then assert.is_not_equal(how, r[4], name .. " = " .. show(good) .. ": " .. tostring(r[3])) end
      end
    end)
  end
end)

-- Integer fields of the protobuf messages take Lua numbers only: a numeric
-- string ("7") is a type mistake the client refuses before sending (the
-- encoder does not coerce it onto the wire), nil, msg, OTSParameterInvalid;
-- the same request with the number is sent.
local NUMERIC_STRINGS = { "7", "0x7", "7.0", " 7", "1e3", "" }
local PK = { { "id", "a" } }
local INT_FIELDS = {
  { "get_range{limit}", function(v) return cl:get_range(with(CRANGE, "limit", v)) end, 7 },
  { "get_range{max_versions}", function(v) return cl:get_range(with(CRANGE, "max_versions", v)) end, 2 },
  { "get_row{max_versions}", function(v) return cl:get_row { table = "t", primary_key = PK, max_versions = v } end, 2 },
  { "get_row{time_range start}", function(v) return cl:get_row { table = "t", primary_key = PK, time_range = { v, 9 } } end, 1 },
  { "get_row{time_range specific}", function(v) return cl:get_row { table = "t", primary_key = PK, time_range = { specific = v } } end, 1 },
  { "get_range{time_range stop}", function(v) return cl:get_range(with(CRANGE, "time_range", { 1, v })) end, 9 },
  { "batch_get_row{max_versions}", function(v)
      return cl:batch_get_row { tables = { { table = "t", primary_keys = { PK }, max_versions = v } } }
    end, 2 },
  { "create_table{options.time_to_live}", function(v)
      return cl:create_table { name = "t", primary_key = { { "id", "STRING" } }, options = { time_to_live = v } }
    end, 86400 },
  { "create_table{options.max_versions}", function(v)
      return cl:create_table { name = "t", primary_key = { { "id", "STRING" } }, options = { max_versions = v } }
    end, 1 },
  { "update_table{options.max_time_deviation}", function(v)
      return cl:update_table { name = "t", options = { max_time_deviation = v } }
    end, 86400 },
  { "compute_split_points_by_size{split_size}", function(v)
      return cl:compute_split_points_by_size { table = "t", split_size = v }
    end, 1 },
  { "search{limit}", function(v) return cl:search { table = "t", index = "i", limit = v } end, 7 },
  { "search{offset}", function(v) return cl:search { table = "t", index = "i", offset = v } end, 7 },
  { "parallel_scan{limit}", function(v) return cl:parallel_scan { table = "t", index = "i", session_id = "s", limit = v } end, 7 },
}

describe("bounds audit: integer fields take numbers, never numeric strings", function()
  for _, row in ipairs(INT_FIELDS) do
    local name, call, good = row[1], row[2], row[3]
    it("client " .. name, function()
      for _, v in ipairs(NUMERIC_STRINGS) do
        local what = name .. " = " .. show(v)
        sent = 0
        local r = { pcall(call, v) }
        assert.is_true(r[1], what .. " raised: " .. tostring(r[2]))
        assert.is_nil(r[2], what .. " was accepted")
        assert.equal("OTSParameterInvalid", r[4], what .. ": " .. tostring(r[3]))
        assert.equal(0, sent, what .. " was sent")
      end
      sent = 0
      local r = { pcall(call, good) }
      assert.is_true(r[1], name .. " = " .. show(good) .. " raised: " .. tostring(r[2]))
      assert.equal(1, sent, name .. " = " .. show(good) .. " was not sent: " .. tostring(r[3]))
    end)
  end
end)
