--- otskit.merge -- many sorted sources (e.g. the buckets of a table whose
-- first key column is `ts mod 16`) merged back into one ordered, pageable
-- stream, with resume cursors. The merge runs in C (a loser tree over byte
-- keys); this module validates options and drives the fetches.
local core = require "otskit.core"
local openresty = require "otskit.openresty"
local C = core.merge

local merge = {}

local type, error, tostring, pcall = type, error, tostring, pcall
local floor = math.floor

local function fail(msg, level) error("otskit.merge: " .. msg, (level or 1) + 1) end

local function is_int(v) return type(v) == "number" and v == floor(v) end

-- Validates a key spec: field name, array index, or list of PK positions.
local function check_key(key)
  local t = type(key)
  if t == "string" or (t == "number" and is_int(key) and key >= 1) then return false end
  if t == "table" and #key >= 1 and #key <= 16 then
    for i = 1, #key do
      if not (is_int(key[i]) and key[i] >= 1 and key[i] <= 64) then
        fail("key positions must be integers 1..64", 3)
      end
    end
    return true
  end
  fail("key must be a field name, an array index or a list of primary-key positions", 3)
end

local function check_order(order)
  if order == nil or order == "asc" then return false end
  if order == "desc" then return true end
  fail("order must be \"asc\" or \"desc\"", 3)
end

local function check_count(v, what, lo, hi, level)
  if not (is_int(v) and v >= lo and v <= hi) then
    fail(("%s must be an integer %d..%d"):format(what, lo, hi), level + 1)
  end
  return v
end

-- LuaJIT: push and pull of byte keys through the FFI (compiled by the
-- JIT; otskit.ffi declares the ABI and honours OTSKIT_NO_FFI), the same C
-- merge underneath; the C API binding otherwise.
local ffi, lib
do
  local F = require "otskit.ffi"
  ffi, lib = F.ffi, F.lib
end
-- the ABI's status constants (csrc/ffi/otskit_ffi.h)
local PULL_MORE, PULL_NEED, PULL_END, PULL_ENOMEM, ADD_OK, ADD_EORDER, SRC_ROWS, SRC_DONE
if lib then
  PULL_MORE, ADD_OK = lib.OTSKIT_MERGE_MORE, lib.OTSKIT_MERGE_OK
  PULL_NEED, PULL_END, PULL_ENOMEM = lib.OTSKIT_MERGE_NEED, lib.OTSKIT_MERGE_END, lib.OTSKIT_MERGE_ENOMEM
  ADD_EORDER, SRC_ROWS, SRC_DONE = lib.OTSKIT_MERGE_EORDER, lib.OTSKIT_SOURCE_ROWS, lib.OTSKIT_SOURCE_DONE
end

local has_table_new, table_new = pcall(require, "table.new")
if not has_table_new then table_new = function() return {} end end

local FM = {}     -- methods of the FFI-backed merge object
FM.__index = FM
local CHUNK = 1024

-- Scratch arrays shared by every merge of this Lua state: push and pull
-- use them only within one call and never run other Lua code meanwhile
-- (no yield, no metamethod), so no two calls can interleave on them.
local s_items, s_got, s_keys, s_lens
if lib then
  s_items, s_got = ffi.new("otskit_merge_item[?]", CHUNK), ffi.new("size_t[1]")
  s_keys, s_lens = ffi.new("const char *[?]", CHUNK), ffi.new("size_t[?]", CHUNK)
end

local function ffi_merge(ud, k, key)
  return setmetatable({
    ud = ud, p = ffi.cast("otskit_merge *", ud:_ptr()), k = k, key = key, batches = {},
  }, FM)
end

local function live(self)
  local p = self.p
  if p == nil then error("otskit.merge: merge is closed", 3) end
  return p
end

function FM:push(i, rows, done)
  local p = live(self)
  if not is_int(i) then
    error("otskit.merge: bad argument source (not an integer, got " .. type(i) .. ")", 2)
  end
  if i < 1 or i > self.k then error(("otskit.merge: source %d out of range 1..%d"):format(i, self.k), 2) end
  if type(rows) ~= "table" then error("bad argument #3 to 'push' (table expected, got " .. type(rows) .. ")", 2) end
  local src = i - 1
  local st = lib.otskit_merge_state(p, src)
  if st == SRC_DONE then error(("otskit.merge: source %d pushed after done"):format(i), 2) end
  if st == SRC_ROWS then error(("otskit.merge: source %d pushed before its rows were merged"):format(i), 2) end
  local n = #rows
  self.batches[i] = rows -- kept first: the merge never holds keys of rows it cannot hand out
  if lib.otskit_merge_begin(p, src, n) ~= ADD_OK then error("otskit.merge: out of memory", 2) end
  local key, keys, lens, got = self.key, s_keys, s_lens, s_got
  -- CHUNK rows at a time: first every key's pointer (no string is read),
  -- then their lengths, then one C call adds them all
  for r0 = 1, n, CHUNK do
    local cnt = n - r0 + 1
    if cnt > CHUNK then cnt = CHUNK end
    local why, bad
    for j = 0, cnt - 1 do
      local row = rawget(rows, r0 + j)
      if type(row) ~= "table" then
        why, bad = "is a " .. type(row) .. ", not a table", r0 + j
        break
      end
      local v = rawget(row, key)
      if type(v) ~= "string" then
        why = v == nil and "has no key" or "key must be a string, got " .. type(v)
        bad = r0 + j
        break
      end
      keys[j] = v
    end
    -- rows before a bad one still go in: a key out of order among them wins
    local upto = bad and bad - r0 or cnt
    -- the key strings may be scattered in memory: their lengths are read
    -- after one C call has asked for all of them, not one miss at a time
    lib.otskit_merge_prefetch(keys, upto)
    for j = 0, upto - 1 do lens[j] = #rawget(rawget(rows, r0 + j), key) end
    local rc = lib.otskit_merge_add_n(p, src, keys, lens, upto, got)
    if rc ~= ADD_OK then
      why, bad = rc == ADD_EORDER and "is out of order in its source" or "out of memory", r0 + tonumber(got[0])
    end
    if why then
      lib.otskit_merge_abort(p, src)
      error(("otskit.merge: source %d row %d %s"):format(i, bad, why), 2)
    end
  end
  lib.otskit_merge_end(p, src, done and 1 or 0)
end

function FM:pull(max, into)
  local p = live(self)
  if max == nil then max = 2 ^ 62
  elseif not is_int(max) or max < 0 then error("otskit.merge: max must be >= 0", 2) end
  if into ~= nil and type(into) ~= "table" then
    error("bad argument #3 to 'pull' (table expected, got " .. type(into) .. ")", 2)
  end
  local items, gotp, batches = s_items, s_got, self.batches
  local out, st = into, 0
  if not out then -- sized for what this pull can emit
    local b = tonumber(lib.otskit_merge_bound(p))
    if b > max then b = max end
    out = table_new(b < 1048576 and b or 1048576, 0)
  end
  local base = #out
  local n = 0
  while true do
    local want = max - n
    if want > CHUNK then want = CHUNK end
    st = lib.otskit_merge_pull(p, items, want, gotp)
    local got = tonumber(gotp[0])
    for j = 0, got - 1 do
      local it = items[j]
      rawset(out, base + n + j + 1, rawget(batches[it.src + 1], it.row + 1))
    end
    n = n + got
    if st == PULL_ENOMEM then error("otskit.merge: out of memory", 2) end
    if st ~= PULL_MORE or n >= max then break end
  end
  if st == PULL_NEED then return out, lib.otskit_merge_need(p) + 1 end
  return out, st == PULL_END and "done" or "more"
end

function FM:close()
  if self.p ~= nil then
    self.p = nil
    self.batches = {}
    self.ud:close()
  end
end

for _, name in ipairs { "needs", "state", "last", "emitted", "exhausted" } do
  FM[name] = function(self, ...)
    live(self)
    return self.ud[name](self.ud, ...)
  end
end

-- A merge object: the C userdata, or on LuaJIT (byte keys) its FFI wrapper.
local function new_merge(k, desc, dedup, limit, key)
  local ud = C.new(k, desc, dedup, limit, key)
  if lib and type(key) ~= "table" then return ffi_merge(ud, k, key) end
  return ud
end

--- merge.new{ sources = k, key = K, order = "asc"|"desc", limit = n,
-- dedup = bool } -> m. A merge of k sources (1..1024) you feed yourself:
--   m:push(i, rows, done)  hands source i its next batch (rows already in
--     the merge order) and says whether source i ends with it. Only a
--     source whose rows were all merged ("pending") can be pushed.
--   m:pull([max [, into]]) -> rows, state: up to max rows in merged order
--     (appended to the array `into` when given, and that array returned);
--     state is
--     "more" (stopped at max), "done" (nothing left, or limit reached) or
--     the number of the source that must be pushed before anything else can
--     be emitted (nothing past a pending source's last key is ever emitted).
--   m:needs() -> the pending sources; m:state(i) -> "pending"|"rows"|"done";
--   m:emitted(), m:exhausted(), m:close().
-- K: a field name (row[K] is a byte string), an array index, or a list of
-- primary-key positions ({2} or {2, 3}: typed columns of row.primary_key,
-- INTEGER as int64, STRING/BINARY as bytes, Tablestore order). Equal keys
-- go out by source number; dedup emits only the first of equal keys.
function merge.new(opts)
  if type(opts) ~= "table" then fail("new expects an options table", 2) end
  local k = check_count(opts.sources, "sources", 1, 1024, 2)
  check_key(opts.key)
  local desc = check_order(opts.order)
  if opts.limit ~= nil then check_count(opts.limit, "limit", 1, 2 ^ 53, 2) end
  return new_merge(k, desc, opts.dedup and true or false, opts.limit, opts.key)
end

-- The values of the typed key columns of a row, for a cursor.
local function pk_values(row, key)
  local pk = row.primary_key or row.primaryKey
  local vals = {}
  for i = 1, #key do
    local col = pk[key[i]]
    if type(col) == "table" then
      local v = col[2]
      if v == nil then v = col.value end
      col = v
    end
    vals[i] = col
  end
  return vals
end

-- Runners: each takes a list of jobs (functions) and returns once all ran.
local function run_sequential(jobs)
  for i = 1, #jobs do jobs[i]() end
end

local function run_ngx(jobs) return openresty.run_threads(jobs, "merge") end

local function pick_runner(parallel)
  if type(parallel) == "function" then return parallel end
  -- an object with a parallel method: otskit.client (its requests go out together)
  if type(parallel) == "table" and type(parallel.parallel) == "function" then
    return function(jobs) return parallel:parallel(jobs) end
  end
  if parallel == false or parallel == "sequential" then return run_sequential end
  if parallel == "ngx" then
    if not openresty.ngx() then fail("parallel = \"ngx\" needs OpenResty", 3) end
    return run_ngx
  end
  if parallel == nil or parallel == true then
    if openresty.can_yield() then return run_ngx end
    return run_sequential
  end
  fail("parallel must be nil, false, \"ngx\", a function(jobs) or an object with a parallel method", 3)
end

local function bad_cursor(msg) return nil, "otskit.merge: bad cursor (" .. msg .. ")", "BadCursor" end

-- equal continuations: the same value, or tables equal member by member
-- (a key {{name, value}, ...}); depth-bounded
local function same(a, b, depth)
  if a == b then return true end
  if type(a) ~= "table" or type(b) ~= "table" or (depth or 0) > 8 then return false end
  if getmetatable(a) ~= getmetatable(b) then return false end
  for k, v in pairs(a) do
    if not same(v, b[k], (depth or 0) + 1) then return false end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end

--- merge.read{ sources = list | k, fetch = f, key = K, limit = n,
-- order = "asc"|"desc", cursor = text, secret = s, dedup = bool,
-- parallel = nil|false|"ngx"|function(jobs)|client, max_empty = 1000,
-- first_rows = n, max_stall = 32, deadline = s, clock = f }
--   -> rows, cursor   (cursor nil when everything was read)
--   -> nil, message, code   (a fetch failed: its message and code; a bad
--      cursor: "BadCursor"; a source stuck on empty pages: "EmptyPages";
--      a source whose continuation does not advance -- fetch returned no
--      rows and the `after` it was given max_stall times in a row --
--      "NoProgress"; the whole read past
--      `deadline` seconds (clock(): seconds, default otskit.backoff.now),
--      checked between rounds of fetches: "RequestTimeout")
-- One page of at most n rows of the merged sources. f(src, after, want, i)
-- reads source i (src = sources[i]) in the read's order and returns
-- rows, next: at most `want` rows (want = rows still needed for the page)
-- and a continuation (nil or false when the source has no more rows) --
-- or nil, message, code on failure. `after` is nil (read from the start),
-- the `next` your fetch returned last time for this source, or, on the
-- first call of a resumed read, { resume = true, key = k, inclusive = b }:
-- start just after key k (at k when inclusive) in the read's order; k is a
-- string, or for typed keys the list of key column values. The first
-- fetch of each source in a page asks for first_rows rows (default: about
-- twice its share, min(limit, max(32, ceil(2 * limit / k)))); a source
-- whose rows were all merged is asked for all the rows still needed. A fetch may
-- return an empty page with a continuation; it is called again. Only
-- sources whose rows were all merged are refetched, so at most one page
-- per source is held at a time. With a secret (>= 16 bytes) cursors are
-- signed with HMAC-SHA256 and checked.
function merge.read(opts)
  if type(opts) ~= "table" then fail("read expects an options table", 2) end
  local sources = opts.sources
  if is_int(sources) then
    local list = {}
    for i = 1, check_count(sources, "sources", 1, 1024, 2) do list[i] = i end
    sources = list
  elseif type(sources) ~= "table" then
    fail("sources must be a list or a count", 2)
  end
  local k = check_count(#sources, "#sources", 1, 1024, 2)
  local fetch = opts.fetch
  if type(fetch) ~= "function" then fail("fetch must be a function", 2) end
  local typed = check_key(opts.key)
  local key = opts.key
  local desc = check_order(opts.order)
  local limit = check_count(opts.limit, "limit", 1, 2 ^ 31, 2)
  local dedup = opts.dedup and true or false
  local secret = opts.secret
  if secret ~= nil and (type(secret) ~= "string" or #secret < 16) then
    fail("secret must be a string of at least 16 bytes", 2)
  end
  local max_empty = opts.max_empty or 1000
  local max_stall = opts.max_stall
  if type(max_stall) == "nil" then max_stall = 32 end
  if not is_int(max_stall) or max_stall < 1 then fail("max_stall must be an integer >= 1", 2) end
  local stalled = {}
  local deadline = opts.deadline
  -- (type(): a LuaJIT NULL cdata equals nil)
  if type(deadline) ~= "nil" and (type(deadline) ~= "number" or not (deadline > 0)) then
    fail("deadline must be a positive number of seconds", 2)
  end
  if type(opts.clock) ~= "nil" and type(opts.clock) ~= "function" then fail("clock must be a function", 2) end
  local now = opts.clock or require("otskit.backoff").now
  local t_end = deadline and now() + deadline
  -- rows asked of each source the first time in a page: about twice its
  -- share, so a page of 1000 over 64 buckets reads ~2000 rows, not 64 000;
  -- a source that runs dry is then asked for all the rows still needed
  local first = opts.first_rows
  if first == nil then
    first = math.min(limit, math.max(32, math.ceil(2 * limit / k)))
  else
    check_count(first, "first_rows", 1, 2 ^ 31, 2)
  end
  local run = pick_runner(opts.parallel)

  local after = {}
  if opts.cursor ~= nil then
    local c, msg, code = core.resume.decode(opts.cursor, secret)
    if not c then return nil, msg, code end
    if c.k ~= k then return bad_cursor("it was made for " .. c.k .. " sources, not " .. k) end
    if c.desc ~= desc then return bad_cursor("it was made for the other order") end
    if c.dedup ~= dedup then return bad_cursor("it was made with dedup " .. (c.dedup and "on" or "off")) end
    if c.typed ~= typed or (typed and #c.key ~= #key) then
      return bad_cursor("it was made for another key")
    end
    for i = 1, k do
      -- equal keys go out by source number: sources after the cursor's
      -- source still owe their rows equal to the key (unless dedup'd)
      after[i] = { resume = true, key = c.key, inclusive = (not dedup) and i > c.src }
    end
  end

  local m = new_merge(k, desc, dedup, limit, key)
  local out, n = {}, 0
  local empty = {}
  local needs = m:needs()
  local asked = {}
  while true do
    local want = limit - n
    local res = {}
    local jobs = {}
    for j = 1, #needs do
      local i = needs[j]
      local w = want
      if not asked[i] and first < w then w = first end
      asked[i] = true
      jobs[j] = function()
        res[i] = { pcall(fetch, sources[i], after[i], w, i) }
      end
    end
    run(jobs)
    for j = 1, #needs do
      local i = needs[j]
      local r = res[i]
      if r == nil then m:close(); fail("parallel runner returned before the fetch of source " .. i .. " ran", 2) end
      if not r[1] then m:close(); error(r[2], 0) end
      local rows, nxt = r[2], r[3]
      if rows == nil then
        m:close()
        return nil, r[3] or ("otskit.merge: fetch of source " .. i .. " failed"), r[4]
      end
      if type(rows) ~= "table" then
        m:close()
        fail("fetch of source " .. i .. " returned a " .. type(rows) .. ", not a table of rows", 2)
      end
      -- a page may end before its first row (no rows, the next key where
      -- it began); the same continuation max_stall times in a row is a
      -- source that would never end
      if nxt and after[i] ~= nil and #rows == 0 and same(nxt, after[i]) then
        stalled[i] = (stalled[i] or 0) + 1
        if stalled[i] >= max_stall then
          m:close()
          return nil, ("otskit.merge: source %d returned the continuation it was given %d times in a row "
            .. "(its next key does not advance)"):format(i, stalled[i]), "NoProgress"
        end
      else
        stalled[i] = 0
      end
      if #rows == 0 and nxt then
        empty[i] = (empty[i] or 0) + 1
        if empty[i] > max_empty then
          m:close()
          return nil, "otskit.merge: source " .. i .. " returned " .. max_empty ..
            " empty pages in a row", "EmptyPages"
        end
      else
        empty[i] = 0
      end
      m:push(i, rows, not nxt)
      after[i] = nxt or nil
    end
    local _, state = m:pull(want, out)
    n = #out
    if state == "done" then break end
    if t_end and now() > t_end then
      m:close()
      return nil, ("otskit.merge: the read's deadline (%g s) passed"):format(deadline), "RequestTimeout"
    end
    needs = m:needs()
  end

  local cursor
  if n == limit and not m:exhausted() then
    local src, ikey = m:last()
    local ckey = typed and pk_values(out[n], key) or ikey
    local msg, code
    cursor, msg, code = core.resume.encode(k, src, desc, dedup, typed, ckey, secret)
    if not cursor then m:close(); return nil, msg, code end
  end
  m:close()
  return out, cursor
end

return merge
