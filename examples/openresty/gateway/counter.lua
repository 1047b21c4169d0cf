--- gateway.counter -- POST /counters/{id}?by=n (an INCREMENT, one
-- UpdateRow returning the new value) and POST /counters/{id}?mode=cas
-- (read, then put the value + 1 only if it is still what was read, again
-- on a conflict), GET /counters/{id}. Table "counters": primary key
-- (id STRING), column n. Both nginx workers write through the service,
-- which applies each write atomically: neither form loses an acknowledged
-- increment (spec/openresty checks it).
local gwdb = require "gateway.db"

local counter = {}

local MAX_CAS = 1000 -- conflicts before giving up (503): a bound, not a loop forever

--- add(id, by) -> value | nil, msg, code. Not retried after an ambiguous
-- failure (the client's rule for unconditional writes): an increment is
-- never applied twice.
function counter.add(id, by)
  local res, msg, code = gwdb.client():update_row { table = "counters", primary_key = { id },
    update = { INCREMENT = { n = by } }, return_type = "RT_AFTER_MODIFY", return_column_names = { "n" } }
  if not res then return nil, msg, code end
  return res.row.columns.n
end

local RING = 32 -- tokens of the last writes kept in column w

local function token()
  return ("%d-%.6f-%d"):format(ngx.worker.pid(), ngx.now(), math.random(0, 2 ^ 30))
end

-- the value the token's put wrote, from w = "tok=value;tok=value;..."
local function find(w, tok)
  if type(w) ~= "string" then return nil end
  local v = w:match(";" .. tok:gsub("%p", "%%%0") .. "=(%-?%d+);")
  return v and tonumber(v)
end

local function push(w, tok, value)
  local list = {}
  if type(w) == "string" then for e in w:gmatch("[^;]+") do list[#list + 1] = e end end
  list[#list + 1] = ("%s=%d"):format(tok, value)
  while #list > RING do table.remove(list, 1) end
  return ";" .. table.concat(list, ";") .. ";"
end

--- cas(id) -> value, conflicts | nil, msg, code: the optimistic-lock loop.
-- Each put also records a token of this call (one per call, kept across
-- tries) with the value it wrote, in a ring of the last 32 writes. The
-- client does not resend a conditional put whose answer was lost (it
-- answers OTSOutcomeUnknown: the put may have landed); the next read
-- finds the token when it did, and otherwise the value check guarantees
-- the lost put can no longer apply. So an increment applies once.
function counter.cas(id)
  local db = gwdb.client()
  local mine, tried = token(), false
  for conflicts = 0, MAX_CAS do
    local r, msg, code = db:get_row { table = "counters", primary_key = { id } }
    if not r then return nil, msg, code end
    local cols = r.row and r.row.columns or {}
    local done = tried and find(cols.w, mine)
    if done then return done, conflicts - 1 end
    local cur = cols.n
    local cond = cur == nil and "EXPECT_NOT_EXIST" or { row_existence = "EXPECT_EXIST",
      column_condition = { column = "n", comparator = "EQUAL", value = cur } }
    local ok, m2, c2 = db:put_row { table = "counters", primary_key = { id },
      columns = { n = (cur or 0) + 1, w = push(cols.w, mine, (cur or 0) + 1) }, condition = cond }
    if ok then return (cur or 0) + 1, conflicts end
    tried = true
    if c2 ~= "OTSConditionCheckFail" and c2 ~= "OTSOutcomeUnknown" then return nil, m2, c2 end
  end
  return nil, "too many conflicting writers", "OTSServerBusy"
end

--- get(id) -> value (0 when missing) | nil, msg, code
function counter.get(id)
  local r, msg, code = gwdb.client():get_row { table = "counters", primary_key = { id } }
  if not r then return nil, msg, code end
  return r.row and r.row.columns.n or 0
end

return counter
