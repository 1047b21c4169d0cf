--- otskit.patterns.common -- what every access pattern shares: store calls
-- retried through otskit.retry with the Tablestore classification and
-- counted (requests, retries, rows), pattern-tagged cursors, and checks.
-- Internal to otskit.patterns; its shape may change.
local retry = require "otskit.retry"
local names = require "otskit.names"

local common = {}

--- common.preamble(mod, opts, p) -> opts: the checks every pattern
-- constructor starts with, raising "<mod>: ..." (a programming mistake):
-- opts is a table; it holds no option the constructor does not read
-- (never accepted and ignored); the table name is one by the store's rule
-- (otskit.names), still with the bytes the pattern appends to it; a store
-- is given. p: call ("new" | "run"), options (the constructor's own option
-- names; store and retry are everyone's), name (the option naming the
-- table, default "table"; p.name = false: no table name), suffix (the
-- longest text the pattern appends to that name to make its tables),
-- parallel (also accepts opts.parallel), get_range (a get_range function
-- may stand in for the store).
function common.preamble(mod, opts, p)
  if type(opts) ~= "table" then error(mod .. ": " .. p.call .. " expects an options table", 3) end
  local known = { store = true, retry = true }
  for _, k in ipairs(p.options or {}) do known[k] = true end
  local key = p.name == nil and "table" or p.name
  if key then known[key] = true end
  if p.parallel then known.parallel = true end
  if p.get_range then known.get_range = true end
  for k in pairs(opts) do
    if not known[k] then error(mod .. ": unknown option '" .. tostring(k) .. "'", 3) end
  end
  local v = key and opts[key]
  if key and not (type(v) == "string" and names.valid(v .. (p.suffix or ""))) then
    local what = key == "table" and "a table name" or "a table name prefix"
    local with = p.suffix and (", with \"" .. p.suffix .. "\" appended") or ""
    error(("%s: %s must be %s (%s%s)"):format(mod, key, what, names.RULE, with), 3)
  end
  if p.get_range then
    if opts.get_range ~= nil and type(opts.get_range) ~= "function" then
      error(mod .. ": get_range must be a function", 3)
    end
    if opts.store == nil and opts.get_range == nil then error(mod .. ": store or get_range is required", 3) end
  elseif opts.store == nil then
    error(mod .. ": store is required", 3)
  end
  return opts
end

local floor = math.floor

local RETRY_KEYS = { sleep = true, clock = true, backoff = true, budget = true, schedule = true }

--- common.access(opts, modname) -> acc. opts.store: an object with the
-- SDK-shaped methods (the embedded store, or anything that answers like
-- it); opts.retry: options for retry.call (sleep, clock, backoff, budget).
-- acc.stats counts requests (every attempt), retries, rows_read,
-- rows_written, failed (calls that gave up).
function common.access(opts, modname)
  local db = opts.store
  if db ~= nil and type(db) ~= "table" and type(db) ~= "userdata" then
    error(modname .. ": store must be a store object", 3)
  end
  local ropts = opts.retry or {}
  if type(ropts) ~= "table" then error(modname .. ": retry must be a table of retry.call options", 3) end
  for k in pairs(ropts) do
    if not RETRY_KEYS[k] then error(modname .. ": unknown retry option '" .. tostring(k) .. "'", 3) end
  end
  local acc = { db = db, ropts = ropts, mod = modname,
                stats = { requests = 0, retries = 0, rows_read = 0, rows_written = 0, failed = 0 } }

  --- acc:call(op, fn, extra) -> fn's results | nil, msg, code. fn(attempt)
  -- makes one request; op is its Tablestore name (GetRange, PutRow, ...);
  -- extra: idempotent / conditional / classify for retry.call.
  function acc.call(_, op, fn, extra)
    local o = { op = op }
    for k, v in pairs(ropts) do o[k] = v end
    if extra then for k, v in pairs(extra) do o[k] = v end end
    local st = acc.stats
    local tries = 0
    local r = { retry.call(function(attempt)
      tries = attempt
      st.requests = st.requests + 1
      local a, b, c = fn(attempt)
      -- the store's nil, message, code as the error value retry classifies
      if a == nil and c ~= nil then return nil, { code = c, message = b } end
      return a, b, c
    end, o) }
    if tries > 1 then st.retries = st.retries + tries - 1 end
    if r[1] == nil then st.failed = st.failed + 1 end
    return r[1], r[2], r[3]
  end

  --- acc:store(method, req, op, extra): one store request, retried.
  function acc.store(self, method, req, op, extra)
    local d = self.db
    if d == nil then error(modname .. ": no store given", 3) end
    return self:call(op, function() return d[method](d, req) end, extra)
  end

  --- acc:batch_write(rows, extra) -> nfailed, results. rows: batch_write_row
  -- rows of one table ({table = t, row = r}); sent in one request (the
  -- caller keeps it within the limits); failed rows retried alone.
  function acc.batch_write(self, rows, extra)
    local d = self.db
    local st = self.stats
    local o = {}
    for k, v in pairs(ropts) do o[k] = v end
    if extra then for k, v in pairs(extra) do o[k] = v end end
    local results, nfailed, attempts = retry.batch_write(function(batch)
      st.requests = st.requests + 1
      local by, order = {}, {}
      for i, r in ipairs(batch) do
        local t = by[r.table]
        if not t then t = { table = r.table, rows = {}, idx = {} }; by[r.table] = t; order[#order + 1] = t end
        t.rows[#t.rows + 1] = r.row
        t.idx[#t.rows] = i
      end
      local req = { tables = {} }
      for i, t in ipairs(order) do req.tables[i] = { table = t.table, rows = t.rows } end
      local res, msg, code = d:batch_write_row(req)
      if not res then return nil, { code = code, message = msg } end
      local out = {}
      for i, t in ipairs(order) do
        for j, rr in ipairs(res.tables[i].rows) do
          out[t.idx[j]] = rr.ok and true or { code = rr.code, message = rr.message }
        end
      end
      return out
    end, rows, o)
    if attempts > 1 then st.retries = st.retries + attempts - 1 end
    local written = #rows - nfailed
    st.rows_written = st.rows_written + written
    if nfailed > 0 then st.failed = st.failed + 1 end
    return nfailed, results
  end

  function acc.reset(self)
    for k in pairs(self.stats) do self.stats[k] = 0 end
  end
  return acc
end

--- common.is_int(v): an integral number within +-2^53 (exact on both VMs).
function common.is_int(v)
  return type(v) == "number" and v == floor(v) and v >= -9007199254740992 and v <= 9007199254740992
end

--- common.bad(modname, code, fmt, ...) -> nil, "modname: msg", code
function common.bad(modname, code, fmt, ...)
  return nil, modname .. ": " .. fmt:format(...), code
end

--- Cursors of a pattern: the merge cursor behind a tag naming the pattern
-- (and its table), signed with a secret derived from the caller's and the
-- tag, so a cursor of another pattern or table is refused as BadCursor.
function common.cursor_secret(secret, tag)
  if secret == nil then return nil end
  return secret .. "\0" .. tag
end

-- bound (optional): what the cursor was made for (a query's range, as
-- text without "."): written into the cursor, checked on the way back.
function common.wrap_cursor(tag, c, bound)
  if c == nil then return nil end
  if bound then return tag .. "." .. bound .. "." .. c end
  return tag .. "." .. c
end

function common.unwrap_cursor(modname, tag, c, bound)
  if c == nil then return nil end
  if type(c) ~= "string" then
    return nil, modname .. ": bad cursor (not a string)", "BadCursor"
  end
  local pre = tag .. "."
  if c:sub(1, #pre) ~= pre then
    return nil, modname .. ": bad cursor (made by another pattern or table)", "BadCursor"
  end
  local rest = c:sub(#pre + 1)
  if bound then
    local made, inner = rest:match("^([^.]*)%.(.*)$")
    if made == nil then return nil, modname .. ": bad cursor (no range)", "BadCursor" end
    if made ~= bound then
      return nil, ("%s: bad cursor (made for another query: %s, not %s; pass the same range with a cursor)")
        :format(modname, made, bound), "BadCursor"
    end
    return inner
  end
  return rest
end

--- common.opt(opts, name, default): opts[name], or default when nil.
function common.opt(opts, name, default)
  local v = opts[name]
  if v == nil then return default end
  return v
end

-- The request size of a row, as the store counts it (close enough to stay
-- under the 4 MB limit with a margin): key values, column names and values.
local function cell_size(v)
  local t = type(v)
  if t == "string" then return #v end
  if t == "table" then
    local x = v[1] or v.value
    if type(x) == "string" then return #x end
  end
  return 8
end

function common.row_size(row)
  local n = 0
  for _, c in ipairs(row.primary_key or {}) do
    if type(c) == "table" then n = n + #tostring(c[1]) + cell_size(c[2]) else n = n + cell_size(c) end
  end
  local cols = row.columns or (row.update and row.update.PUT) or {}
  for k, v in pairs(cols) do
    if type(k) == "number" and type(v) == "table" then n = n + #tostring(v[1]) + cell_size(v[2])
    else n = n + #tostring(k) + cell_size(v) end
  end
  return n
end

common.MAX_ROWS, common.MAX_BYTES = 200, 4 * 1024 * 1024 - 64 * 1024

--- common.batches(rows [, max_rows [, max_bytes]]) -> list of batches:
-- consecutive runs of rows ({table, row}) of at most max_rows rows and
-- max_bytes bytes (a single larger row goes alone; the store refuses it).
function common.batches(rows, max_rows, max_bytes)
  max_rows, max_bytes = max_rows or common.MAX_ROWS, max_bytes or common.MAX_BYTES
  local out, cur, bytes = {}, {}, 0
  for _, r in ipairs(rows) do
    local sz = common.row_size(r.row)
    if #cur > 0 and (#cur >= max_rows or bytes + sz > max_bytes) then
      out[#out + 1] = cur
      cur, bytes = {}, 0
    end
    cur[#cur + 1] = r
    bytes = bytes + sz
  end
  if #cur > 0 then out[#out + 1] = cur end
  return out
end

--- common.put_row(p, tbl, pk, columns) -> true | nil, msg, code
-- One PutRow through pattern p's accounted, retried store (a put is
-- idempotent: written twice, the row is the same); counted in p.stats.
function common.put_row(p, tbl, pk, columns)
  local ok, m, c = p.acc:store("put_row", { table = tbl, primary_key = pk, columns = columns or {} },
    "PutRow", { idempotent = true })
  if not ok then return nil, m, c end
  p.stats.rows_written = p.stats.rows_written + 1
  return true
end

--- common.write_batches(acc, rows, extra) -> true | nil, msg, code, nfailed
-- Writes rows ({table, row}) in batches within the request limits, each
-- batch retried (failed rows alone). Puts are idempotent.
function common.write_batches(acc, rows, extra)
  local nfailed, first = 0, nil
  for _, b in ipairs(common.batches(rows)) do
    local nf, results = acc:batch_write(b, extra or { idempotent = true })
    if nf > 0 then
      nfailed = nfailed + nf
      if not first then
        for _, r in ipairs(results) do if r ~= true then first = r; break end end
      end
    end
  end
  if nfailed > 0 then
    local code = type(first) == "table" and first.code or tostring(first)
    local msg = type(first) == "table" and (first.message or first.code) or tostring(first)
    return nil, ("%s: %d rows not written: %s"):format(acc.mod, nfailed, tostring(msg)), code, nfailed
  end
  return true
end

--- common.check_deadline(modname, d) -> true | nil, msg, "OTSParameterInvalid".
-- A read's deadline: nil (none) or a number, the absolute time
-- (otskit.backoff.now() scale, as otskit.client's t_end) past which the
-- read stops with "RequestTimeout".
function common.check_deadline(modname, d)
  if type(d) == "nil" then return true end -- (a LuaJIT NULL cdata equals nil)
  if type(d) ~= "number" or d ~= d then
    return common.bad(modname, "OTSParameterInvalid", "deadline must be a number (absolute otskit.backoff.now() time)")
  end
  return true
end

--- common.past(modname, d) -> nil | nil, msg, "RequestTimeout" when the
-- deadline d (nil: none) has passed. Checked before every read.
function common.past(modname, d)
  if d ~= nil and require("otskit.backoff").now() > d then
    return nil, modname .. ": the read's deadline passed", "RequestTimeout"
  end
end

--- common.read_opts(modname, o) -> true | nil, msg, "OTSParameterInvalid".
-- The options table of a single-key read: nil or { deadline = t }, the
-- absolute time (otskit.backoff.now() scale) checked before every read.
function common.read_opts(modname, o)
  if o == nil then return true end
  if type(o) ~= "table" then return common.bad(modname, "OTSParameterInvalid", "read options must be a table") end
  for f in pairs(o) do
    if f ~= "deadline" then return common.bad(modname, "OTSParameterInvalid", "unknown read option '%s'", tostring(f)) end
  end
  return common.check_deadline(modname, o.deadline)
end

--- common.range_read(acc, r) -> rows, inner cursor | nil, msg, code
-- One page of a read over several sources (buckets, month tables, or a
-- single range), each a get_range in r.direction, merged by otskit.merge
-- on the packed values of the primary-key columns r.keycols (positions).
-- r: sources, table_of(src), start(src), stop(src) -> pk value lists;
-- resume(src, vals) -> pk value list to start at (vals: the key columns
-- of the cursor's row), or nil to start at start(src); get_range(req,
-- src); map(row, src) -> the row to return; limit, cursor (inner),
-- secret, parallel, columns, direction ("FORWARD" | "BACKWARD"),
-- deadline (absolute, see common.check_deadline): checked before every
-- get_range and by merge.read between rounds -> nil, msg, "RequestTimeout".
function common.range_read(acc, r)
  local key, merge = require "otskit.key", require "otskit.merge"
  local pack, unpack_ = key.pack, key.unpack
  local keycols, backward = r.keycols, r.direction == "BACKWARD"
  -- A resume just after the cursor's row reads from that row and drops
  -- it. Until a page with rows comes back, the row is still ahead: a page
  -- with no rows and a next key (the service may end a page early) can
  -- point right at it, so the drop stays pending for the continuation.
  local pending = {}
  local function fetch(src, after, want)
    local start
    if after == nil then
      start = r.start(src)
    elseif after.resume then
      local vals = unpack_(after.key)
      if not vals or #vals ~= #keycols then return nil, acc.mod .. ": bad cursor (key)", "BadCursor" end
      start = r.resume(src, vals)
      if start == nil then
        start = r.start(src)
      elseif not after.inclusive then
        pending[src] = after.key
      end
    else
      start = after
    end
    local drop = pending[src]
    if drop then want = want + 1 end
    local _, pm, pc = common.past(acc.mod, r.deadline)
    if pc then return nil, pm, pc end
    local req = { table = r.table_of(src), start = start, stop = r.stop(src),
                  direction = r.direction, limit = want, columns = r.columns }
    local page, msg, code = acc:call("GetRange", function() return r.get_range(req, src) end)
    if not page then return nil, msg, code end
    local rows = page.rows or {}
    if #rows > 0 then pending[src] = nil end
    acc.stats.rows_read = acc.stats.rows_read + #rows
    local out = {}
    for _, row in ipairs(rows) do
      local pk, vals = row.primary_key, {}
      for j = 1, #keycols do vals[j] = pk[keycols[j]][2] end
      local k = pack(vals)
      if k ~= drop then
        local o = r.map(row, src)
        o.k = k
        out[#out + 1] = o
      end
    end
    return out, page.next_start_primary_key
  end
  local left
  if r.deadline ~= nil then
    local _, pm, pc = common.past(acc.mod, r.deadline)
    if pc then return nil, pm, pc end
    left = r.deadline - require("otskit.backoff").now()
    if not (left > 0) then return nil, acc.mod .. ": the read's deadline passed", "RequestTimeout" end
  end
  local rows, cursor, code = merge.read { sources = r.sources, fetch = fetch, key = "k",
    limit = r.limit, order = backward and "desc" or "asc", cursor = r.cursor,
    secret = r.secret, parallel = r.parallel, deadline = left }
  if not rows then return nil, cursor, code end
  for i = 1, #rows do rows[i].k = nil end
  return rows, cursor
end

--- common.next_start(modname, start, page, stalled) -> the next start key
-- (nil: the range is done), stalled | false, message, "NoProgress". For
-- the get_range loops of the patterns: a page may end before its first
-- row (no rows, next_start_primary_key where it began); the 32nd such
-- page in a row (otskit.client.pager.MAX_STALL) is a read that would
-- never end. stalled: the count so far (0 to begin with).
function common.next_start(modname, start, page, stalled)
  local pager = require "otskit.client.pager"
  local nx = page.next_start_primary_key
  if nx ~= nil and #(page.rows or {}) == 0 and pager.same(nx, start) then
    stalled = stalled + 1
    if stalled >= pager.MAX_STALL then
      return false, ("%s: next_start_primary_key did not advance in %d pages in a row: the read would never end")
        :format(modname, stalled), "NoProgress"
    end
  else
    stalled = 0
  end
  return nx, stalled
end

--- common.check_limit(modname, limit) -> limit | nil, msg, "BadRange"
function common.check_limit(modname, limit)
  if limit == nil then return 100 end
  if not (common.is_int(limit) and limit >= 1 and limit <= 5000) then
    return common.bad(modname, "BadRange", "limit must be an integer 1..5000")
  end
  return limit
end

--- common.parallel_of(opts) -> opts.parallel, or when it is nil and the
-- store is an otskit.client, the client: its fan-outs then go out together.
function common.parallel_of(opts)
  if opts.parallel ~= nil then return opts.parallel end
  local db = opts.store
  -- only a real client: a generic proxy store answers every method name
  local loaded = package.loaded["otskit.client"]
  if type(db) == "table" and loaded and getmetatable(db) == loaded.Client then return db end
  return nil
end

--- common.run_jobs(jobs, parallel): runs every job (a function) and
-- returns when all finished. parallel: a function(jobs) of your own, or
-- an object with a parallel method (otskit.client);
-- "ngx" or nil inside OpenResty (a phase that can yield): ngx.thread per
-- job, the others killed when one fails (otskit.openresty.run_threads);
-- false or nil elsewhere: one after another.
function common.run_jobs(jobs, parallel)
  if type(parallel) == "function" then return parallel(jobs) end
  if type(parallel) == "table" and type(parallel.parallel) == "function" then return parallel:parallel(jobs) end
  local openresty = require "otskit.openresty"
  if parallel == "ngx" and not openresty.ngx() then
    error("otskit.patterns: parallel = \"ngx\" needs OpenResty", 2)
  end
  if parallel == "ngx" or (parallel == nil and openresty.can_yield()) then
    return openresty.run_threads(jobs, "patterns")
  end
  for _, j in ipairs(jobs) do j() end
end

return common
