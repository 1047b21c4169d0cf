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

local function token()
  return ("%d-%.6f-%d"):format(ngx.worker.pid(), ngx.now(), math.random(0, 2 ^ 30))
end

--- cas(id) -> value, conflicts | nil, msg, code: the optimistic-lock loop.
-- Each put also writes a token of its own: a conditional put is retried
-- after a lost answer, and when the first try had been applied the retry
-- fails its condition; the token read back tells that apart from another
-- writer's change (unless another writer changed the row again since).
function counter.cas(id)
  local db = gwdb.client()
  local mine
  for conflicts = 0, MAX_CAS do
    local r, msg, code = db:get_row { table = "counters", primary_key = { id } }
    if not r then return nil, msg, code end
    local cols = r.row and r.row.columns or {}
    if mine and cols.w == mine then return cols.n, conflicts - 1 end
    local cur = cols.n
    local cond = cur == nil and "EXPECT_NOT_EXIST" or { row_existence = "EXPECT_EXIST",
      column_condition = { column = "n", comparator = "EQUAL", value = cur } }
    mine = token()
    local ok, m2, c2 = db:put_row { table = "counters", primary_key = { id },
      columns = { n = (cur or 0) + 1, w = mine }, condition = cond }
    if ok then return (cur or 0) + 1, conflicts end
    if c2 ~= "OTSConditionCheckFail" then return nil, m2, c2 end
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
