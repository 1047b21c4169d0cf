--- otskit.store.faults -- injected failures and latency, so retry and
-- fan-out code can be exercised against the local store.
--
-- Nothing here blocks. Injected latency advances the store's simulated
-- clock (db:now()) and is reported in each response's `latency` field and
-- in db:fault_stats(); a `sleep` hook, if given, is called with it (pass
-- ngx.sleep in OpenResty, or a socket.sleep outside; it is called from
-- Lua, never from C, so it may yield).
local faults = {}
local F = {}
F.__index = F

local errors = require "otskit.errors"

-- the codes an injected fault may carry: the service's codes that the
-- official SDKs' default policies retry (otskit.errors classes)
local function retryable(code)
  local e = errors.get(code)
  return e ~= nil and e.side == "service" and e.class ~= "never"
end

local OPS = {
  put_row = true, get_row = true, update_row = true, delete_row = true,
  batch_write_row = true, batch_get_row = true, get_range = true,
}
-- operations only a config that names them in `ops` affects
local NAMED = { create_index = true }

local function bad(msg) error("otskit.store: faults: " .. msg, 3) end

--- faults.new(cfg) -> injector. cfg:
--   rate      fraction of calls that fail, 0..1 (default 0)
--   code      the retryable code they fail with (default OTSServerBusy)
--   row_rate  fraction of rows of batch_write_row / batch_get_row that
--             fail individually with `code` (default 0)
--   applied   true: a failing write is applied before it reports the
--             failure (a timed-out write that did land)
--   latency   seconds added to every call: a number, {min, max} (uniform),
--             or function(op) -> seconds
--   ops       list of operation names to affect (default: all the row
--             operations); "create_index" only when named: the
--             include_base_data back-fill fails after each batch of rows
--             it indexed (the create_index is then undone)
--   seed      PRNG seed (default 1): the same seed fails the same calls
--   sleep     function(seconds) called with each call's latency
local CFG = { rate = "number", row_rate = "number", code = "string", applied = "boolean",
  latency = true, ops = "table", seed = "number", sleep = "function" }

function faults.new(cfg)
  if type(cfg) ~= "table" then bad("config must be a table") end
  for k, v in pairs(cfg) do
    local want = CFG[k]
    if not want then bad("unknown option " .. tostring(k)) end
    if want ~= true and type(v) ~= want then bad(k .. " must be a " .. want .. ", got " .. type(v)) end
  end
  if cfg.seed ~= nil and (cfg.seed ~= cfg.seed or math.abs(cfg.seed) >= 2 ^ 53) then bad("seed must be a finite number below 2^53") end
  local self = setmetatable({ rate = cfg.rate or 0, row_rate = cfg.row_rate or 0,
    code = cfg.code or "OTSServerBusy", applied = cfg.applied and true or false,
    latency = cfg.latency or 0, sleep = cfg.sleep, seed = cfg.seed or 1,
    stats = { calls = 0, failed = 0, rows_failed = 0, latency = 0 } }, F)
  for _, k in ipairs({ "rate", "row_rate" }) do
    local v = self[k]
    if type(v) ~= "number" or v ~= v or v < 0 or v > 1 then bad(k .. " must be a number in 0..1") end
  end
  if not retryable(self.code) then bad("code must be a retryable Tablestore code, got " .. tostring(self.code)) end
  local lt = type(self.latency)
  if lt == "table" then
    local lo, hi = self.latency[1], self.latency[2]
    if type(lo) ~= "number" or type(hi) ~= "number" or lo < 0 or hi < lo or hi == math.huge then bad("latency {min, max} needs 0 <= min <= max") end
  elseif lt == "number" then
    if self.latency < 0 or self.latency ~= self.latency or self.latency == math.huge then bad("latency must be a finite number >= 0") end
  elseif lt ~= "function" then bad("latency must be a number, {min, max} or a function") end
  if self.sleep ~= nil and type(self.sleep) ~= "function" then bad("sleep must be a function") end
  if cfg.ops then
    self.ops = {}
    for _, op in ipairs(cfg.ops) do
      if not OPS[op] and not NAMED[op] then bad("unknown operation " .. tostring(op)) end
      self.ops[op] = true
    end
  end
  local s = math.floor(self.seed) % 2147483647
  self.s = s == 0 and 1 or s
  return self
end

-- uniform in [0, 1): Park-Miller, exact in doubles on both interpreters
function F:random()
  self.s = (self.s * 48271) % 2147483647
  return (self.s - 1) / 2147483646
end

function F:applies(op)
  if NAMED[op] then return self.ops ~= nil and self.ops[op] == true end
  return self.ops == nil or self.ops[op] == true
end

--- injector:call(op) -> latency (seconds), failing (boolean) for one call
function F:call(op)
  if not self:applies(op) then return 0, false end
  local st = self.stats
  st.calls = st.calls + 1
  local lat = self.latency
  if type(lat) == "table" then lat = lat[1] + (lat[2] - lat[1]) * self:random()
  elseif type(lat) == "function" then
    lat = lat(op)
    if type(lat) ~= "number" or lat < 0 then error("otskit.store: faults: latency function must return seconds >= 0", 3) end
  end
  st.latency = st.latency + lat
  if lat > 0 and self.sleep then self.sleep(lat) end
  local fail = self.rate > 0 and self:random() < self.rate
  if fail then st.failed = st.failed + 1 end
  return lat, fail
end

--- injector:row_fails(op) -> whether one row of a batch fails
function F:row_fails(op)
  if self.row_rate <= 0 or not self:applies(op) then return false end
  if self:random() < self.row_rate then
    self.stats.rows_failed = self.stats.rows_failed + 1
    return true
  end
  return false
end

--- injector:message() -> the service's message for the injected code
function F:message() return errors.message(self.code) end

return faults
