--- otskit.patterns.counter -- a counter under an optimistic lock (best
-- practices: "read a column, update with the condition 'column still
-- equals what I read', retry on condition failure").
--
-- Row (name STRING) with columns value, ver and ops. An increment reads
-- the row, then writes value + by and ver + 1 only if ver is still what
-- it read (or, for a new counter, only if the row does not exist). A
-- failed condition means another client won the race: read again and
-- retry, after a jittered backoff (otskit.retry), so no increment is
-- lost and none is applied twice. `ops` keeps the last 32 operation
-- tokens with the value each produced: after an ambiguous failure (a
-- timeout of a write that may have landed) the next attempt finds its
-- token and returns instead of incrementing again.
--
--   local counter = require "otskit.patterns.counter"
--   local c = counter.new{ store = db, table = "counters", retry = {...} }
--   c:create()              -> true | nil, msg, code
--   c:incr(name [, by = 1]) -> new value, attempts | nil, msg, code
--   c:get(name)             -> value (0 when missing) | nil, msg, code
--   c.stats                 -> requests, retries, conflicts, ...
-- by: an integer within +-2^53. Codes: BadKey, BadValue, OTSOutcomeUnknown
-- (a write that may have landed could not be confirmed: more than 32
-- other increments came in between, or the retry schedule ran out after
-- an ambiguous attempt), the store's; after the retry schedule runs out,
-- the last error's code (usually OTSConditionCheckFail).
local common = require "otskit.patterns.common"
local retry = require "otskit.retry"

local M = {}
local MOD = "otskit.patterns.counter"
local RING = 32

local P = {}
P.__index = P

local function raise(msg) error(MOD .. ": " .. msg, 3) end

-- a process-unique client id: 8 random bytes (hex), then a sequence
local client_id
local function new_token()
  if not client_id then
    local f = io.open("/dev/urandom", "rb")
    local b = f and f:read(8)
    if f then f:close() end
    if not b or #b ~= 8 then b = tostring({}) .. tostring(os.time()) .. tostring(os.clock()) end
    client_id = require("otskit.hash").xxh3(b, true)
    M._seq = 0
  end
  M._seq = M._seq + 1
  return ("%s.%d"):format(client_id, M._seq)
end

--- counter.new(opts) -> counter (see the header). opts.retry.backoff
-- defaults to { base = 0.005, cap = 0.2, max_attempts = 100, deadline = 30 }
-- (contention is expected: many short waits, not three long ones), and
-- opts.retry.budget to false (conflicts are not a failing service; pass
-- a budget, e.g. retry.budget, to count them).
function M.new(opts)
  common.preamble(MOD, opts, { call = "new" })
  local name = opts.table
  if type(opts.retry) ~= "nil" and type(opts.retry) ~= "table" then raise("retry must be a table of retry.call options") end
  local ropts = {}
  for k, v in pairs(opts.retry or {}) do ropts[k] = v end
  if ropts.backoff == nil and ropts.schedule == nil then
    ropts.backoff = { base = 0.005, cap = 0.2, max_attempts = 100, deadline = 30 }
  end
  -- losing a race is not a failing service: unless told otherwise, the
  -- retries of a contended counter do not drain the process retry budget
  if ropts.budget == nil then ropts.budget = false end
  local self = setmetatable({ table = name,
    acc = common.access({ store = opts.store, retry = ropts }, MOD) }, P)
  self.stats = self.acc.stats
  self.stats.conflicts = 0
  return self
end

function P:create()
  local ok, msg, code = self.acc:store("create_table", { name = self.table,
    primary_key = { { "name", "STRING" } } }, "CreateTable")
  if not ok then return nil, msg, code end
  return true
end

local function check_name(n)
  if type(n) ~= "string" or n == "" or #n > 1024 then
    return common.bad(MOD, "BadKey", "name must be a string of 1..1024 bytes")
  end
  return n
end

-- the value the op token produced, from the ring text "tok=value;..."
local function find_op(ops, token)
  if type(ops) ~= "string" then return nil end
  local v = ops:match(token:gsub("%p", "%%%0") .. "=(%-?%d+);")
  return v and tonumber(v)
end

local function push_op(ops, token, value)
  local list = {}
  if type(ops) == "string" then for e in ops:gmatch("[^;]+;") do list[#list + 1] = e end end
  list[#list + 1] = ("%s=%.0f;"):format(token, value)
  while #list > RING do table.remove(list, 1) end
  return table.concat(list)
end

--- c:incr(name [, by]) -> new value, attempts | nil, msg, code
function P:incr(name, by)
  local n, msg, code = check_name(name)
  if not n then return nil, msg, code end
  if by == nil then by = 1 end
  if not common.is_int(by) then return common.bad(MOD, "BadValue", "by must be an integer, got %s", tostring(by)) end
  local db, st, tname = self.acc.db, self.stats, self.table
  local token = new_token()
  local pk = { { "name", name } }
  local unsure = false  -- an earlier attempt may have landed
  local amb_ver         -- the version that attempt read
  local attempts = 0
  -- a lost race and an ambiguous failure are both retried: the next
  -- attempt re-reads, and after an ambiguous one looks for its token first
  local classify = function(err)
    local c = type(err) == "table" and err.code or err
    if c == "OTSConditionCheckFail" or retry.ambiguous(err) then return "retry" end
    return retry.tablestore(err, "UpdateRow")
  end
  local value, m, c = self.acc:call("UpdateRow", function(attempt)
    attempts = attempt
    local res, rm, rc = db:get_row { table = tname, primary_key = pk }
    if not res then return nil, { code = rc, message = rm } end
    local row = res.row and res.row.columns
    if unsure then
      local done = row and find_op(row.ops, token)
      if done then return done end
      -- not in the ring: either it never landed, or 32+ writes came after
      if row and row.ver and row.ver - amb_ver > RING then
        return nil, { code = retry.OUTCOME_UNKNOWN,
                      message = MOD .. ": increment may have been applied; not confirmed" }
      end
    end
    local cur, ver = row and row.value or 0, row and row.ver or 0
    local new = cur + by
    local cond = row and { row_existence = "EXPECT_EXIST",
      column_condition = { column = "ver", comparator = "EQUAL", value = ver } } or "EXPECT_NOT_EXIST"
    st.requests = st.requests + 1 -- the update (the read was counted)
    local ok, um, uc = db:update_row { table = tname, primary_key = pk, condition = cond,
      update = { PUT = { value = new, ver = ver + 1, ops = push_op(row and row.ops, token, new) } } }
    if ok then return new end
    if uc == "OTSConditionCheckFail" then st.conflicts = st.conflicts + 1 end
    if not unsure and retry.ambiguous({ code = uc, message = um }) then unsure, amb_ver = true, ver end
    return nil, { code = uc, message = um }
  end, { classify = classify })
  if value == nil then return nil, m, c end
  return value, attempts
end

--- c:get(name) -> value (0 when the counter does not exist) | nil, msg, code
function P:get(name)
  local n, msg, code = check_name(name)
  if not n then return nil, msg, code end
  local res, m, c = self.acc:store("get_row", { table = self.table, primary_key = { { "name", name } },
    columns = { "value" } }, "GetRow")
  if not res then return nil, m, c end
  return res.row and res.row.columns.value or 0
end

return M
