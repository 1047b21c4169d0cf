--- otskit.store.partitions -- the partition model of one table.
--
-- A table's key space is cut into partitions by partition-key values (the
-- first primary-key column): partition i holds the rows whose encoded key
-- is >= its lower bound and < the next partition's. A bound is always the
-- encoding of one partition-key value, which sorts before every row with
-- that value, so one value's rows never straddle two partitions.
--
-- A partition splits when it holds more than split_rows rows or
-- split_bytes stored bytes (at the partition-key value that best halves
-- its rows), or when it serves more than split_load reads+writes in one
-- time window (at the value that best halves a sample of the keys it
-- served). A partition holding a single partition-key value cannot split:
-- that is the hot-spot lesson. Reads and writes are counted per partition
-- per window of `window` seconds of the store's clock.
local kv = require("otskit.core").kv

local partitions = {}
local P = {}
P.__index = P

local SAMPLE = 64

--- partitions.new(opts, hooks) -> model.
-- opts: bounds (sorted encoded partition-key values, the initial split
-- list), split_rows, split_bytes, split_load (nil: that trigger off),
-- window (seconds, default 60), history (windows kept, default 120).
-- hooks: clock() -> seconds; scan(lo, hi) -> iterator of key, value over
-- [lo, hi) (hi nil: to the end); pk1(key) -> encoded partition-key value
-- of a row key; value(enc) -> the decoded partition-key value.
function partitions.new(opts, hooks)
  local self = setmetatable({
    opts = opts, hooks = hooks,
    window = opts.window or 60, history = opts.history or 120,
    los = {}, parts = {}, next_id = 1, windows = {}, splits = 0,
  }, P)
  self.parts[1] = self:_new_part("")
  for i, b in ipairs(opts.bounds or {}) do
    self.los[i] = b
    self.parts[i + 1] = self:_new_part(b)
  end
  return self
end

function P:_new_part(lo)
  local id = self.next_id
  self.next_id = id + 1
  return { id = id, lo = lo, rows = 0, bytes = 0, reads = 0, writes = 0,
           try_rows = 0, sample = {}, seen = 0, sample_win = -1, load_win = -1 }
end

--- model:locate(key) -> index of the partition holding key
function P:locate(key)
  local los = self.los
  if los[1] == nil then return 1 end -- one partition (no C call)
  return kv.bsearch(los, key) + 1
end

-- the counters of the current window (a new record when the window moved)
function P:_window()
  local now = self.hooks.clock()
  local cur = self.cur
  if cur and now >= cur.start and now < cur.stop then return cur end
  local w = math.floor(now / self.window)
  local ws = self.windows
  cur = ws[#ws]
  if cur == nil or cur.w ~= w then
    cur = { w = w, start = w * self.window, stop = (w + 1) * self.window, reads = {}, writes = {} }
    ws[#ws + 1] = cur
    if #ws > self.history then table.remove(ws, 1) end
  end
  self.cur = cur
  return cur
end

function P:_touch(p, key, win)
  -- reservoir sample of the keys this partition served this window
  if p.sample_win ~= win.w then p.sample, p.seen, p.sample_win = {}, 0, win.w end
  p.seen = p.seen + 1
  if p.seen <= SAMPLE then
    p.sample[p.seen] = key
  else
    self.lcg = ((self.lcg or 1) * 48271) % 2147483647
    local j = self.lcg % p.seen + 1
    if j <= SAMPLE then p.sample[j] = key end
  end
end

--- model:write(key, drows, dbytes [, defer]): counts one written row on
-- key's partition; drows/dbytes change its size. May split the partition,
-- unless defer: then model:settle() must follow once the store holds
-- every row the counts describe (a batch counts row by row after commit).
function P:write(key, drows, dbytes, defer)
  local i = self:locate(key)
  local p = self.parts[i]
  local win = self:_window()
  win.writes[p.id] = (win.writes[p.id] or 0) + 1
  p.writes = p.writes + 1
  p.rows = p.rows + drows
  p.bytes = p.bytes + dbytes
  if self.opts.split_load then self:_touch(p, key, win) end
  if not defer then self:_maybe_split(i, p, win) end
end

--- model:resize(key, drows, dbytes): changes the size of key's partition
-- without counting a write (stored versions removed by update_table).
function P:resize(key, drows, dbytes)
  local p = self.parts[self:locate(key)]
  p.rows, p.bytes = p.rows + drows, p.bytes + dbytes
end

--- model:settle(): the split checks deferred by write(..., true).
function P:settle()
  local win, i = self:_window(), 1
  while i <= #self.parts do
    self:_maybe_split(i, self.parts[i], win)
    i = i + 1
  end
end

--- model:read(key [, n]): counts n (default 1) rows read on key's partition.
function P:read(key, n)
  local i = self:locate(key)
  local p = self.parts[i]
  local win = self:_window()
  n = n or 1
  win.reads[p.id] = (win.reads[p.id] or 0) + n
  p.reads = p.reads + n
  if self.opts.split_load then
    self:_touch(p, key, win)
    self:_maybe_split(i, p, win)
  end
end

function P:_maybe_split(i, p, win)
  local o = self.opts
  if (o.split_rows and p.rows > o.split_rows or o.split_bytes and p.bytes > o.split_bytes)
      and p.rows >= p.try_rows then
    if not self:_split(i, p, nil) then p.try_rows = p.rows * 2 end -- one value: retry when doubled
  elseif o.split_load and p.load_win ~= win.w
      and (win.reads[p.id] or 0) + (win.writes[p.id] or 0) > o.split_load then
    p.load_win = win.w -- at most one load split per partition per window
    self:_split(i, p, p.sample)
  end
end

-- The group (index into groups, a list of {encoded value, weight} in key
-- order) whose value best halves the weight, never the first: nil if all
-- weight sits on one partition-key value.
local function best_bound(groups, total)
  local best, best_diff, left = nil, nil, 0
  for g = 1, #groups do
    if g > 1 then
      local diff = math.abs(total - 2 * left)
      if best_diff == nil or diff < best_diff then best, best_diff = g, diff end
    end
    left = left + groups[g][2]
  end
  return best
end

-- Groups keys by partition-key value: {enc, rows, bytes} in key order.
-- The tuple encoding is prefix-free, so a key starting with the last
-- group's value belongs to it: pk1() runs once per value, not per row.
local function group(groups, pk1, k, bytes)
  local last = groups[#groups]
  if last and k:sub(1, #last[1]) == last[1] then
    last[2], last[3] = last[2] + 1, last[3] + bytes
  else
    groups[#groups + 1] = { pk1(k), 1, bytes }
  end
end

-- Splits partition i; sample: nil (by rows) or a list of keys (by load).
function P:_split(i, p, sample)
  local hooks = self.hooks
  local hi = self.los[i] -- the next partition's lower bound, or nil
  local groups, total = {}, 0
  if sample then
    local ks = {}
    for j = 1, #sample do ks[j] = sample[j] end
    table.sort(ks, function(a, b) return kv.cmp(a, b) < 0 end)
    for _, k in ipairs(ks) do group(groups, hooks.pk1, k, 0) end
    total = #ks
  else
    for k, v in hooks.scan(p.lo, hi) do
      group(groups, hooks.pk1, k, #k + #v)
      total = total + 1
    end
  end
  local g = best_bound(groups, total)
  if g == nil then return false end
  local bound = groups[g][1]
  -- a sample may hold keys that moved to a newer partition: stay inside
  if kv.cmp(bound, p.lo) <= 0 or (hi and kv.cmp(bound, hi) >= 0) then return false end
  local q = self:_new_part(bound)
  local lrows, lbytes, rrows, rbytes = 0, 0, 0, 0
  if sample then -- sizes of both sides, exactly, from the store
    for k, v in hooks.scan(p.lo, hi) do
      if kv.cmp(k, bound) < 0 then lrows, lbytes = lrows + 1, lbytes + #k + #v
      else rrows, rbytes = rrows + 1, rbytes + #k + #v end
    end
  else
    for j = 1, #groups do
      local gr = groups[j]
      if j < g then lrows, lbytes = lrows + gr[2], lbytes + gr[3]
      else rrows, rbytes = rrows + gr[2], rbytes + gr[3] end
    end
  end
  -- the new bounds are stored first: a store that fails (raises) leaves
  -- the model as it was, as its transaction leaves the file
  local los = {}
  for j = 1, #self.los do los[j] = self.los[j] end
  table.insert(los, i, bound)
  if hooks.on_split then hooks.on_split(los) end
  self.los = los
  p.rows, p.bytes, q.rows, q.bytes = lrows, lbytes, rrows, rbytes
  table.insert(self.parts, i + 1, q)
  q.load_win = p.load_win
  p.sample, p.seen = {}, 0
  self.splits = self.splits + 1
  return true
end

--- model:list() -> partitions in key order: { id, lo, hi (decoded
-- partition-key values; nil = INF_MIN / INF_MAX), rows, bytes, reads,
-- writes (since creation), window_reads, window_writes (current window) }
function P:list()
  local out, win = {}, self:_window()
  local value = self.hooks.value
  for i, p in ipairs(self.parts) do
    local nxt = self.parts[i + 1]
    out[i] = {
      id = p.id, lo = p.lo ~= "" and value(p.lo) or nil, hi = nxt and value(nxt.lo) or nil,
      rows = p.rows, bytes = p.bytes, reads = p.reads, writes = p.writes,
      window_reads = win.reads[p.id] or 0, window_writes = win.writes[p.id] or 0,
    }
  end
  return out
end

--- model:hotspots() -> report of the kept windows: per window { start,
-- writes, reads, partitions (that saw any), hottest (id), share (of that
-- window's writes on its hottest partition) }, and over all of them
-- { writes, reads, hottest, share, skew (hottest partition's writes /
-- mean writes per partition), partitions, splits }.
function P:hotspots()
  local rep = { windows = {}, writes = 0, reads = 0, splits = self.splits, partitions = #self.parts }
  local tot = {}
  for _, w in ipairs(self.windows) do
    local r = { start = w.start, writes = 0, reads = 0, partitions = 0, share = 0 }
    local seen, best = {}, nil
    for id, n in pairs(w.writes) do
      r.writes = r.writes + n
      tot[id] = (tot[id] or 0) + n
      seen[id] = true
      if best == nil or n > w.writes[best] or (n == w.writes[best] and id < best) then best = id end
    end
    for id, n in pairs(w.reads) do r.reads = r.reads + n; seen[id] = true end
    for _ in pairs(seen) do r.partitions = r.partitions + 1 end
    if best then r.hottest, r.share = best, w.writes[best] / r.writes end
    rep.windows[#rep.windows + 1] = r
    rep.writes, rep.reads = rep.writes + r.writes, rep.reads + r.reads
  end
  local best
  for id, n in pairs(tot) do
    if best == nil or n > tot[best] or (n == tot[best] and id < best) then best = id end
  end
  rep.share, rep.skew = 0, 0
  if best then
    rep.hottest = best
    rep.share = tot[best] / rep.writes
    rep.skew = tot[best] / (rep.writes / #self.parts)
  end
  return rep
end

return partitions
