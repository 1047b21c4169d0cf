-- Property: a wrong value for any option of any public constructor or
-- options-taking call is refused with an error that starts "otskit." (or
-- answered nil, message, code, or accepted when the value happens to be
-- valid) -- never a raw Lua error ("attempt to compare number with nil").
-- The options of each call are its valid example's keys plus every key the
-- call reads (seen through a proxy), so a new option is fuzzed without
-- editing this file.
local store = require "otskit.store"
local blob = require "otskit.blob"
local backoff = require "otskit.backoff"
local retry = require "otskit.retry"
local merge = require "otskit.merge"
local key = require "otskit.key"

-- wrong values of every type, and numbers at the edges
local BAD = {
  5, -1, 0, 0.5, 1e300, -1e300, 2 ^ 63, 0 / 0, math.huge, -math.huge,
  "x", "", "5", true, false, {}, { 1, 2 }, { x = 1 }, function() end,
  setmetatable({}, { __index = function() error("boom") end }), coroutine.create(function() end),
}
if jit then BAD[#BAD + 1] = require("ffi").cast("void*", 0) end
if io.stdout then BAD[#BAD + 1] = io.stdout end

local SECRET = "spec secret, 16+ bytes"
local quiet = { sleep = function() end, budget = false, backoff = { base = 0.001, cap = 0.001, max_attempts = 2 } }

local function db()
  local d = assert(store.open())
  assert(d:create_table { name = "t", primary_key = { { "id", "STRING" } } })
  return d
end

local parts = blob.split(("abc"):rep(100), { chunk_size = 64 })
local frame = blob.pack("hello")

-- name, base options, call(opts)
local CASES = {
  { "store.open", {}, function(o) local d, m, c = store.open(o); if d then d:close() end; return d, m, c end },
  { "store.open partition", { partition = { split_rows = 10 } }, function(o)
      local d, m, c = store.open { partition = o.partition }
      if d then d:close() end
      return d, m, c
    end, { partition = true } },
  { "db:inject", { rate = 0.1 }, function(o) return db():inject(o) end,
    { rate = 1, row_rate = 1, code = 1, applied = 1, latency = 1, ops = 1, seed = 1, sleep = 1 } },
  { "db:create_table partition", { split_rows = 10 }, function(o)
      return db():create_table { name = "u", primary_key = { { "id", "STRING" } }, partition = o }
    end, { split_rows = 1, split_bytes = 1, split_load = 1, window = 1, history = 1 } },
  { "backoff.new", { strategy = "full", base = 0.1, cap = 1 }, function(o) return backoff.new(o) end },
  { "backoff.budget", { capacity = 10 }, function(o) return backoff.budget(o) end },
  { "retry.call", { op = "GetRow", sleep = function() end, budget = false },
    function(o) return retry.call(function() return 1 end, o) end,
    { classify = 1, idempotent = 1, conditional = 1, backoff = 1, budget = 1, clock = 1, deadline = 1 } },
  { "retry.batch_write", { sleep = function() end, budget = false },
    function(o) return retry.batch_write(function(b) local r = {}; for i = 1, #b do r[i] = true end; return r end, { 1 }, o) end,
    { classify = 1, op = 1, backoff = 1, budget = 1, clock = 1 } },
  { "retry.tablestore", { idempotent = true }, function(o) return retry.tablestore("OTSTimeout", "PutRow", o) end },
  { "blob.pack", { codec = "zstd" }, function(o) return blob.pack("hello world", o) end,
    { level = 1, dict = 1, checksum = 1, context = 1 } },
  { "blob.unpack", {}, function(o) return blob.unpack(frame, o) end, { max_size = 1, dict = 1, context = 1 } },
  { "blob.split", { chunk_size = 64 }, function(o) return blob.split("abcdef", o) end,
    { max_cell = 1, layout = 1, name = 1, generation = 1, key = 1 } },
  { "blob.join", {}, function(o) return blob.join(parts.manifest, parts.chunks, o) end, { max_size = 1 } },
  { "blob.joiner", {}, function(o) return blob.joiner(parts.manifest, o) end, { max_size = 1 } },
  { "blob.splitter", { chunk_size = 64 }, function(o) return blob.splitter(o, function() end) end,
    { max_cell = 1, layout = 1, name = 1, generation = 1 } },
  { "blob.plan", {}, function(o) return blob.plan(parts, o) end,
    { max_rows = 1, max_bytes = 1, max_columns = 1, previous = 1, max_cleanup = 1 } },
  { "blob.train", { size = 1024 }, function(o)
      local s = {}
      for i = 1, 20 do s[i] = ("sample %d "):format(i):rep(20) end
      return blob.train(s, o)
    end },
  { "merge.new", { sources = 2, key = "k" }, function(o) return merge.new(o) end,
    { order = 1, limit = 1, dedup = 1 } },
  { "merge.read", { sources = 2, key = "k", limit = 5, fetch = function() return {}, nil end, parallel = false },
    function(o) return merge.read(o) end,
    { order = 1, cursor = 1, secret = 1, dedup = 1, max_empty = 1, first_rows = 1 } },
  { "key.hash_prefix", { algo = "md5", len = 4 }, function(o) return key.hash_prefix(o) end },
  { "key.buckets", { n = 4 }, function(o) return key.buckets(o) end, { by = 1, algo = 1 } },
  { "key.splice", { sep = ",", { "a", "int", width = 4 }, { "b", "string" } }, function(o) return key.splice(o) end },
  { "patterns.counter", { store = db(), table = "counters", retry = quiet },
    function(o) return require("otskit.patterns.counter").new(o) end },
  { "patterns.timeseries", { store = db(), table = "m", secret = SECRET, retry = quiet },
    function(o) return require("otskit.patterns.timeseries").new(o) end },
  { "patterns.hashprefix", { store = db(), table = "orders", retry = quiet },
    function(o) return require("otskit.patterns.hashprefix").new(o) end },
  { "patterns.chunked", { store = db(), table = "docs", chunk_size = 1000, retry = quiet },
    function(o) return require("otskit.patterns.chunked").new(o) end },
  { "patterns.hotcold", { store = db(), prefix = "ev", first = "2026-01", last = "2026-06", retry = quiet },
    function(o) return require("otskit.patterns.hotcold").new(o) end },
  { "patterns.colsplit", { store = db(), table = "users", primary_key = { { "id", "STRING" } }, hot = { "a" },
      retry = quiet },
    function(o) return require("otskit.patterns.colsplit").new(o) end },
  { "patterns.spliced", { store = db(), table = "p", secret = SECRET, retry = quiet,
      splice = { sep = ",", { "D", "int", width = 6 }, { "S", "string", charset = "alnum" } },
      rest = { { "C", "INTEGER" } } },
    function(o) return require("otskit.patterns.spliced").new(o) end },
  { "patterns.import", { store = db(), table = "t", rows = { { primary_key = { { "id", "a" } }, columns = { v = 1 } } },
      retry = quiet },
    function(o) return require("otskit.patterns.import").run(o) end },
}

-- the keys a call reads from its options (through a proxy of the base)
local function keys_read(base, call)
  local seen = {}
  local proxy = setmetatable({}, { __index = function(_, k) seen[k] = true; return base[k] end })
  pcall(call, proxy)
  return seen
end

-- the error message without the "file:line: " position prefix
local function bare(e)
  e = tostring(e)
  return (e:gsub("^[^:\n]*:%d+: ", ""))
end

describe("every option of every constructor, fed wrong values", function()
  for _, case in ipairs(CASES) do
    local name, base, call, extra = case[1], case[2], case[3], case[4]
    it(name .. ": refuses with otskit.<module>: ..., never a raw Lua error", function()
      assert(pcall(call, base), name .. ": the base options must be valid")
      local keys = keys_read(base, call)
      for k in pairs(base) do keys[k] = true end
      for k in pairs(extra or {}) do keys[k] = true end
      local raw, tried = {}, 0
      for k in pairs(keys) do
        if type(k) == "string" then
          for _, v in ipairs(BAD) do
            local o = {}
            for bk, bv in pairs(base) do o[bk] = bv end
            o[k] = v
            tried = tried + 1
            local ok, err = pcall(call, o)
            -- an error the caller's own object raised (BAD's __index) passes through as is
            if not ok and not bare(err):match("^otskit[%.:]") and not tostring(err):match("boom") then
              raw[#raw + 1] = ("%s{ %s = %s }: %s"):format(name, k, tostring(v), tostring(err):sub(1, 160))
            end
          end
        end
      end
      assert.is_true(tried > 0)
      assert.equal(0, #raw, table.concat(raw, "\n"))
    end)
  end
end)
