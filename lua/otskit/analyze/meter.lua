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
-- partition. Reads are counted (requests, rows, bytes) per phase.
local key = require "otskit.key"

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
    keys = {},        -- window index -> { ["table#id"] = { n, vals = { [partition-key value] = rows }, more } }
    sec = {},         -- second -> { ["table#id"] = rows } for throttling
    reads = { write = { requests = 0, rows = 0, bytes = 0 }, query = { requests = 0, rows = 0, bytes = 0 } },
    writes = { requests = 0, rows = 0, throttled = 0 },
    max_window = 0 }, M)
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
  return name .. "#" .. t.parts[lo].id
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

-- how many distinct partition-key values are remembered per partition
-- and window (enough to tell "one value" from "a run of values")
local MAX_KEYS = 64

-- counts a row the store accepted on partition id; pk: its primary key
-- (the partition-key values each partition took, per window, name the
-- cause of a hot spot)
function M:_record(id, pk)
  if id == nil then return end
  local w = math.floor(self.clock() / self.window)
  if w > self.max_window then self.max_window = w end
  local l = self.load[w]
  if not l then l = {}; self.load[w] = l end
  l[id] = (l[id] or 0) + 1
  local first = first_of(pk)
  local tf = type(first)
  if tf == "string" or tf == "number" then
    local kw = self.keys[w]
    if not kw then kw = {}; self.keys[w] = kw end
    local kp = kw[id]
    if not kp then kp = { n = 0, vals = {} }; kw[id] = kp end
    if kp.vals[first] then kp.vals[first] = kp.vals[first] + 1
    elseif kp.n < MAX_KEYS then kp.n = kp.n + 1; kp.vals[first] = 1
    else kp.more = true end
  end
  self.totals[id] = (self.totals[id] or 0) + 1
  self.writes.rows = self.writes.rows + 1
end

local BUSY = "Partition is throttled: too many writes per second."

function M:_single(method, req)
  self.writes.requests = self.writes.requests + 1
  if type(req) == "table" and type(req.table) == "string" then
    local id = self:_locate(req.table, req.primary_key)
    if not self:_admit(id) then return nil, BUSY, "OTSServerBusy" end
  end
  local res, msg, code = self.db[method](self.db, req)
  if res and type(req) == "table" then
    self:_record(self:_locate(req.table, req.primary_key), req.primary_key)
    self:_refresh(req.table)
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
        local id = type(r) == "table" and self:_locate(spec.table, r.primary_key) or nil
        if self:_admit(id) then rows[#rows + 1] = r; keep[#rows] = { id, r.primary_key }
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
    if not res then return nil, msg, code end
    local k = 0
    for _, s in ipairs(sub.tables) do
      if #s.rows > 0 then
        k = k + 1
        for j, rr in ipairs(res.tables[k].rows) do
          if rr.ok then self:_record(s.keep[j][1], s.keep[j][2]) end
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

function M:_read(method, req)
  local r = self.reads[self.phase] or self.reads.write
  r.requests = r.requests + 1
  local res, msg, code = self.db[method](self.db, req)
  if res then
    if res.rows then
      r.rows = r.rows + #res.rows
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

function M:get_row(req) return self:_read("get_row", req) end
function M:get_range(req) return self:_read("get_range", req) end
function M:batch_get_row(req) return self:_read("batch_get_row", req) end

function M:create_table(req)
  local res, msg, code = self.db:create_table(req)
  if res then self:_refresh(req.name) end
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
