--- otskit.analyze.meter -- a store in front of the embedded store that
-- measures what a design does to it, and throttles hot partitions.
--
-- It answers like the store (the same methods, requests and responses),
-- so access patterns run through it unchanged. For every row written it
-- finds the partition (db:partitions of the row's table) and counts the
-- row in that partition's current window of the simulated clock. A
-- partition takes at most `capacity` rows per second: beyond that a
-- single-row write fails with OTSServerBusy (nothing applied) and the
-- rows of a batch fail one by one, as Tablestore throttles a hot
-- partition. Reads are counted (requests, rows, bytes, ranges) per phase.
--
-- What the diagnosis (otskit.analyze.diagnose) reads from it:
--   demand[second]["table#id"] = { n, refused, vals = { [pk1] = attempts },
--     nv, other (rows without a plain partition key), fn, fvals, fnv (the
--     same for first attempts only) }: every row attempted on a partition
--     in a second of the simulated clock (admitted or throttled)
--   tstats[table] = { initial (partitions at create), rows (written),
--     first (first attempts: the rows the workload writes, retries aside),
--     tail (first attempts whose partition key was >= every one attempted
--     before: the write landed at the table's current end), vals = { [pk1]
--     = { rows, secs, last, packed } } (first attempts per value, and in
--     how many distinct seconds), nsecs (seconds with first attempts),
--     offered = { [second] = first attempts } }
--   errors: { code, message (the first), count, op } per code the store
--     answered (the meter's own throttling is counted in writes.throttled)
--   err_seq: errors recorded so far (to tell which operation met which)
local key = require "otskit.key"
local columns = require "otskit.analyze.columns"

local meter = {}
local M = {}
M.__index = function(self, k)
  local v = M[k]
  if v ~= nil then return v end
  -- anything not metered goes straight to the store
  local db = rawget(self, "db")
  local f = db[k]
  if type(f) == "function" then
    return function(s, ...) if s == self then return f(db, ...) end return f(s, ...) end
  end
  return f
end

--- meter.new(db, opts) -> store. opts: clock() (simulated seconds),
-- capacity (rows per partition per second; false: no throttling),
-- window (seconds per heat-map column, default 1).
function meter.new(db, opts)
  local self = setmetatable({ db = db, clock = opts.clock, capacity = opts.capacity or false,
    window = opts.window or 1, phase = "write",
    tables = {},      -- name -> { parts = list (from db:partitions), packed lows }
    load = {},        -- window index -> { ["table#id"] = rows }
    born = {},        -- "table#id" -> first window seen
    totals = {},      -- "table#id" -> rows
    sec = {},         -- second -> { ["table#id"] = rows } for throttling
    reads = { write = { requests = 0, rows = 0, bytes = 0 }, query = { requests = 0, rows = 0, bytes = 0 },
              report = { requests = 0, rows = 0, bytes = 0 } },
    writes = { requests = 0, rows = 0, throttled = 0 },
    demand = {},      -- second -> { ["table#id"] = { n, refused, vals, nv, other } }
    tstats = {},      -- table -> key-shape statistics (see the header)
    errors = {}, err_by_code = {}, err_seq = 0, last_error = nil,
    op_seen = {},     -- packed primary keys attempted by the current operation
    pending = {},     -- table -> { [packed next start key] = true }: pages to continue
    tokens = {},      -- search tokens handed back: [token] = true
    max_window = 0 }, M)
  for _, r in pairs(self.reads) do r.ranges = 0 end
  return self
end

local function value_bytes(v)
  local t = type(v)
  if t == "string" then return #v end
  if t == "boolean" then return 1 end
  return 8
end

local function row_bytes(row)
  if type(row) ~= "table" then return 0 end
  local n = 0
  for _, c in ipairs(row.primary_key or {}) do n = n + value_bytes(c[2]) end
  for _, v in pairs(row.columns or {}) do n = n + value_bytes(v) end
  return n
end

function M:_refresh(name)
  local list = self.db:partitions(name)
  if not list then self.tables[name] = nil; return nil end
  local lows = {}
  for i, p in ipairs(list) do lows[i] = p.lo ~= nil and key.pack { p.lo } or "" end
  local t = { parts = list, lows = lows, n = #list }
  self.tables[name] = t
  local w = self:_win()
  for _, p in ipairs(list) do
    local id = name .. "#" .. p.id
    if not self.born[id] then self.born[id] = w end
  end
  return t
end

function M:_win()
  return math.floor(self.clock() / self.window)
end

-- the partition-key (first column) value of a primary key
local function first_of(pk)
  local first = type(pk) == "table" and pk[1] or nil
  if type(first) == "table" and getmetatable(first) == nil then first = first[2] end
  return first
end

-- a primary key (values, or { name, value } cells) packed as a tuple;
-- false when it holds something else (INF_MIN, INF_MAX)
local function pack_pk(pk)
  local vals = {}
  for i, c in ipairs(type(pk) == "table" and pk or {}) do
    if type(c) == "table" and getmetatable(c) == nil then c = c[2] end
    vals[i] = c
  end
  return pcall(key.pack, vals)
end

-- the partition id ("table#id") holding a row with this primary key
function M:_locate(name, pk)
  local t = self.tables[name] or self:_refresh(name)
  if not t then return nil end
  local first = first_of(pk)
  local ok, k = pcall(key.pack, { first })
  if not ok then return nil end
  local lo, hi = 1, t.n
  while lo < hi do -- the last partition whose low bound <= k
    local mid = math.floor((lo + hi + 1) / 2)
    if key.compare(t.lows[mid], k) <= 0 then lo = mid else hi = mid - 1 end
  end
  return name .. "#" .. t.parts[lo].id, k
end

-- may this row be written now? (takes its share of the partition's
-- capacity this second: a write that then fails still cost the partition)
function M:_admit(id)
  if id == nil then return true end
  local now = self.clock()
  if self.capacity then
    -- rows this partition took in this second (time is not monotonic:
    -- each operation runs on its own clock, retries sleep forward)
    local sec = math.floor(now)
    local s = self.sec[sec]
    if not s then s = {}; self.sec[sec] = s end
    local n = s[id] or 0
    if n >= self.capacity then
      self.writes.throttled = self.writes.throttled + 1
      return false
    end
    s[id] = n + 1
  end
  return true
end

local function tstat(self, name)
  local ts = self.tstats[name]
  if not ts then
    ts = { rows = 0, first = 0, tail = 0, vals = {}, nvals = 0, secs = {}, nsecs = 0, offered = {} }
    self.tstats[name] = ts
  end
  return ts
end

--- store:begin_op(): a new write operation starts (rows it attempts again
-- are retries, not new writes).
function M:begin_op() self.op_seen = {} end

-- one row attempted on partition id (packed partition key pk1) of table
-- name: its demand this second (all attempts, and first attempts: the
-- rows the workload asks for, retries aside), by partition-key value;
-- for a first attempt, the table's key statistics (did it land at the
-- table's current end?)
function M:_attempt(name, id, pk, pk1, refused)
  local s = math.floor(self.clock())
  local first = first_of(pk)
  local ok, full = pack_pk(pk)
  local fresh = false
  if ok and pk1 ~= nil then
    local k = name .. "\0" .. full
    fresh = not self.op_seen[k]   -- else a retry of a row this operation attempted
    self.op_seen[k] = true
  end
  local d = self.demand[s]
  if not d then d = {}; self.demand[s] = d end
  local c = d[id]
  if not c then c = { n = 0, refused = 0, vals = {}, nv = 0, other = 0, fn = 0, fvals = {}, fnv = 0 }; d[id] = c end
  c.n = c.n + 1
  if refused then c.refused = c.refused + 1 end
  if first == nil then c.other = c.other + 1
  elseif c.vals[first] then c.vals[first] = c.vals[first] + 1
  else c.nv = c.nv + 1; c.vals[first] = 1 end
  if not fresh then return end
  c.fn = c.fn + 1
  if c.fvals[first] then c.fvals[first] = c.fvals[first] + 1 else c.fnv = c.fnv + 1; c.fvals[first] = 1 end
  local ts = tstat(self, name)
  ts.first = ts.first + 1
  ts.offered[s] = (ts.offered[s] or 0) + 1
  if not ts.secs[s] then ts.secs[s] = true; ts.nsecs = ts.nsecs + 1 end
  local tf = type(first)
  if tf == "string" or tf == "number" then
    local v = ts.vals[first]
    if not v then
      local okp, packed = pcall(key.pack, { first })
      v = { rows = 0, secs = 0, last = nil, packed = okp and packed or "" }
      ts.vals[first] = v
      ts.nvals = ts.nvals + 1
    end
    v.rows = v.rows + 1
    if v.last ~= s then v.last = s; v.secs = v.secs + 1 end
  end
  if ts.max == nil or key.compare(pk1, ts.max) >= 0 then
    if ts.max ~= nil then ts.tail = ts.tail + 1 end
    ts.max = pk1
  end
end

-- an error the store answered (not the meter's own throttling)
function M:_error(op, msg, code)
  code = type(code) == "string" and code or "(no code)"
  local e = self.err_by_code[code]
  if not e then
    e = { code = code, message = tostring(msg), count = 0, op = op }
    self.err_by_code[code] = e
    self.errors[#self.errors + 1] = e
  end
  e.count = e.count + 1
  self.err_seq = self.err_seq + 1
  self.last_error = e
end

-- counts a row the store accepted on partition id (pk: its primary key)
function M:_record(id, pk)
  if id == nil then return end
  local w = math.floor(self.clock() / self.window)
  if w > self.max_window then self.max_window = w end
  local l = self.load[w]
  if not l then l = {}; self.load[w] = l end
  l[id] = (l[id] or 0) + 1
  self.totals[id] = (self.totals[id] or 0) + 1
  self.writes.rows = self.writes.rows + 1
  local ts = tstat(self, id:match("^(.*)#[^#]*$"))
  ts.rows = ts.rows + 1
end

local BUSY = "Partition is throttled: too many writes per second."

function M:_single(method, req)
  self.writes.requests = self.writes.requests + 1
  if type(req) == "table" and type(req.table) == "string" then
    local id, pk1 = self:_locate(req.table, req.primary_key)
    local admit = self:_admit(id)
    if id then self:_attempt(req.table, id, req.primary_key, pk1, not admit) end
    if not admit then return nil, BUSY, "OTSServerBusy" end
  end
  local res, msg, code = self.db[method](self.db, req)
  if res and type(req) == "table" then
    self:_record(self:_locate(req.table, req.primary_key), req.primary_key)
    self:_refresh(req.table)
  elseif not res then
    self:_error(method, msg, code)
  end
  return res, msg, code
end

function M:put_row(req) return self:_single("put_row", req) end
function M:update_row(req) return self:_single("update_row", req) end
function M:delete_row(req) return self:_single("delete_row", req) end

function M:batch_write_row(req)
  self.writes.requests = self.writes.requests + 1
  if type(req) ~= "table" or type(req.tables) ~= "table" then return self.db:batch_write_row(req) end
  local sub, refused, any = { tables = {} }, {}, false
  for i, spec in ipairs(req.tables) do
    local rows, keep = {}, {}
    refused[i] = {}
    if type(spec) == "table" and type(spec.rows) == "table" and type(spec.table) == "string" then
      for j, r in ipairs(spec.rows) do
        local id, pk1
        if type(r) == "table" then id, pk1 = self:_locate(spec.table, r.primary_key) end
        local admit = self:_admit(id)
        if id then self:_attempt(spec.table, id, r.primary_key, pk1, not admit) end
        if admit then rows[#rows + 1] = r; keep[#rows] = { id, r.primary_key }
        else refused[i][j] = true end
      end
    else
      return self.db:batch_write_row(req)
    end
    sub.tables[i] = { table = spec.table, rows = rows, keep = keep }
    if #rows > 0 then any = true end
  end
  local res, msg, code
  if any then
    local send = { tables = {} }
    for _, s in ipairs(sub.tables) do
      if #s.rows > 0 then send.tables[#send.tables + 1] = { table = s.table, rows = s.rows } end
    end
    res, msg, code = self.db:batch_write_row(send)
    if not res then self:_error("batch_write_row", msg, code); return nil, msg, code end
    local k = 0
    for _, s in ipairs(sub.tables) do
      if #s.rows > 0 then
        k = k + 1
        for j, rr in ipairs(res.tables[k].rows) do
          if rr.ok then self:_record(s.keep[j][1], s.keep[j][2])
          else self:_error("batch_write_row", rr.message, rr.code) end
        end
      end
    end
    for _, s in ipairs(sub.tables) do self:_refresh(s.table) end
  end
  -- put the answers back in request order, refused rows as OTSServerBusy
  local out, failed, k = { tables = {}, failed = 0 }, 0, 0
  for i, spec in ipairs(req.tables) do
    local s = sub.tables[i]
    local rows = {}
    local got
    if #s.rows > 0 then k = k + 1; got = res.tables[k].rows end
    local pos = 0
    for j = 1, #spec.rows do
      if refused[i][j] then
        rows[j] = { ok = false, code = "OTSServerBusy", message = BUSY }
      else
        pos = pos + 1
        rows[j] = got[pos]
      end
      if not rows[j].ok then failed = failed + 1 end
    end
    out.tables[i] = { table = spec.table, rows = rows }
  end
  out.failed = failed
  return out
end

-- a get_range whose start is a page the store handed back continues
-- that range; any other read request opens a new one (fan-out)
function M:_range_start(method, req)
  if (method == "search" or method == "parallel_scan") and type(req) == "table" and req.token ~= nil then
    if self.tokens[req.token] then self.tokens[req.token] = nil; return false end
    return true
  end
  if method ~= "get_range" or type(req) ~= "table" or type(req.table) ~= "string" then return true end
  local ok, start = pack_pk(req.start)
  local p = self.pending[req.table]
  if ok and p and p[start] then p[start] = nil; return false end
  return true
end

-- the access path of a read: "primary key" (get_row, batch_get_row),
-- "PK range" (get_range), "global index" / "local index" (a read of an
-- index table), "search index" (search, parallel_scan); and what it read
function M:_path(method, req)
  if method == "search" or method == "parallel_scan" then
    return "search index", type(req) == "table" and tostring(req.index) or "?"
  end
  local name = type(req) == "table" and req.table
  if method == "batch_get_row" then
    local t = type(req) == "table" and type(req.tables) == "table" and req.tables[1]
    name = t and t.table
  end
  name = type(name) == "string" and name or "?"
  local kind = self.index_kinds and self.index_kinds[name]
  if kind == nil then
    kind = false
    for tname in pairs(self.tables) do
      local d = self.db:describe_table { name = tname }
      for _, ix in ipairs(d and d.index_metas or {}) do
        if ix.name == name then kind = (ix.index_type == "LOCAL" and "local" or "global") .. " index" end
      end
    end
    self.index_kinds = self.index_kinds or {}
    self.index_kinds[name] = kind
  end
  if kind then return kind, name end
  return method == "get_range" and "PK range" or "primary key", name
end

function M:_read(method, req)
  local r = self.reads[self.phase] or self.reads.write
  r.requests = r.requests + 1
  if self:_range_start(method, req) then r.ranges = r.ranges + 1 end
  local res, msg, code = self.db[method](self.db, req)
  local qk = self.phase == "query" and self.query_kind
  if qk then
    local path, name = self:_path(method, req)
    local k = path .. " " .. name
    local e = qk.paths[k]
    if not e then
      e = { path = path, name = name, requests = 0, rows = 0 }
      qk.paths[k] = e
      qk.order[#qk.order + 1] = k
    end
    e.requests = e.requests + 1
    qk.note(columns.of(method, req))
    if res then
      local n = res.rows and (type(res.scanned) == "number" and res.scanned or #res.rows) or (res.row and 1) or 0
      if res.tables then for _, t in ipairs(res.tables) do for _, row in ipairs(t.rows or {}) do if row.row then n = n + 1 end end end end
      e.rows = e.rows + n
    end
  end
  if not res then self:_error(method, msg, code) end
  if res and res.next_token ~= nil and (method == "search" or method == "parallel_scan") then
    self.tokens[res.next_token] = true
  end
  if res and method == "get_range" and res.next_start_primary_key then
    local ok, nxt = pack_pk(res.next_start_primary_key)
    if ok then
      local p = self.pending[req.table]
      if not p then p = {}; self.pending[req.table] = p end
      p[nxt] = true
    end
  end
  if res then
    if res.rows then
      -- a filtered range read more rows than it returned: the store says
      -- how many (scanned); a server does not (its rows returned count)
      r.rows = r.rows + (type(res.scanned) == "number" and res.scanned or #res.rows)
      for _, row in ipairs(res.rows) do r.bytes = r.bytes + row_bytes(row) end
    elseif res.row then
      r.rows = r.rows + 1
      r.bytes = r.bytes + row_bytes(res.row)
    elseif res.tables then
      for _, t in ipairs(res.tables) do
        for _, row in ipairs(t.rows or {}) do
          if row.row then r.rows = r.rows + 1; r.bytes = r.bytes + row_bytes(row.row) end
        end
      end
    end
  end
  return res, msg, code
end

--- store:search(req), store:parallel_scan(req): counted as reads (the
-- rows a search returns are the rows it read; a request with a token
-- the store handed back continues its range)
function M:search(req) return self:_read("search", req) end
function M:parallel_scan(req) return self:_read("parallel_scan", req) end

--- store:sql(query, opts), store:sql_query{ query }: counted as reads; a
-- SELECT's rows read are what it scanned in the store (result.scanned;
-- from a server, which does not say, the read capacity units it consumed:
-- rows scanned for `otskit serve`), its access path "SQL (full scan)" or
-- "SQL (key ranges)" (result.full_scans; from a server: a full scan when
-- it read >= diagnose.SCAN rows per row returned and >= SCAN_ROWS rows)
function M:_sql(method, ...)
  local r = self.reads[self.phase] or self.reads.write
  r.requests, r.ranges = r.requests + 1, r.ranges + 1
  local res, msg, code = self.db[method](self.db, ...)
  if not res then self:_error(method, msg, code); return res, msg, code end
  local cu = type(res.consumed) == "table" and type(res.consumed.capacity_unit) == "table"
    and res.consumed.capacity_unit.read
  local scanned = res.scanned or tonumber(cu) or 0
  r.rows = r.rows + scanned
  local qk = self.phase == "query" and self.query_kind
  if qk and res.type == "SELECT" then
    local full = res.full_scans
    if full == nil then
      local d = require "otskit.analyze.diagnose"
      local returned = type(res.rows) == "table" and #res.rows or 0
      full = (scanned >= d.SCAN * math.max(returned, 1) and scanned >= d.SCAN_ROWS) and 1 or 0
    end
    local path = full > 0 and "SQL (full scan)" or "SQL (key ranges)"
    local e = qk.paths[path]
    if not e then
      e = { path = path, name = "SELECT", requests = 0, rows = 0 }
      qk.paths[path] = e
      qk.order[#qk.order + 1] = path
    end
    e.requests, e.rows = e.requests + 1, e.rows + scanned
    qk.note(columns.of(method, ...))
  end
  return res, msg, code
end
function M:sql(query, opts) return self:_sql("sql", query, opts) end
function M:sql_query(req) return self:_sql("sql_query", req) end

function M:get_row(req) return self:_read("get_row", req) end
function M:get_range(req) return self:_read("get_range", req) end
function M:batch_get_row(req) return self:_read("batch_get_row", req) end

function M:create_table(req)
  local res, msg, code = self.db:create_table(req)
  if res then
    local t = self:_refresh(req.name)
    local ts = tstat(self, req.name)
    ts.initial = t and t.n or 1
  else
    self:_error("create_table", msg, code)
  end
  return res, msg, code
end

--- store:create_index(req), store:create_search_index(req): the store's;
-- the meter notes that the design has an index (store.indexed)
function M:create_index(req)
  local res, msg, code = self.db:create_index(req)
  if res then self.indexed = true else self:_error("create_index", msg, code) end
  return res, msg, code
end

function M:create_search_index(req)
  local res, msg, code = self.db:create_search_index(req)
  if res then self.indexed = true else self:_error("create_search_index", msg, code) end
  return res, msg, code
end

--- store:partition_order() -> ids ("table#id") of every partition seen, in
-- table order (by first write), then key order.
function M:partition_order()
  local names, seen = {}, {}
  for name in pairs(self.tables) do
    if not seen[name] then seen[name] = true; names[#names + 1] = name end
  end
  table.sort(names)
  local out = {}
  for _, name in ipairs(names) do
    local t = self:_refresh(name)
    if t then for _, p in ipairs(t.parts) do out[#out + 1] = name .. "#" .. p.id end end
  end
  return out
end

--- store:index_footprint() -> what the tables' indexes keep (see
-- otskit.analyze.footprint)
function M:index_footprint() return require("otskit.analyze.footprint")(self, row_bytes, value_bytes) end

--- store:bytes_stored() -> bytes of every table (the partitions' sizes)
function M:bytes_stored(only)
  local n = 0
  for name in pairs(self.tables) do
    if not only or only[name] then
      for _, p in ipairs(self.db:partitions(name) or {}) do n = n + p.bytes end
    end
  end
  return n
end

return meter
