--- gateway.counter -- POST /counters/{id}?by=n (INCREMENT) and
-- POST /counters/{id}?mode=cas (read, then put the value + 1 only if it is
-- still what was read, again on a conflict), GET /counters/{id}. Both
-- nginx workers share the store file: every store write is one SQLite
-- transaction under the file's write lock, so neither form loses an
-- acknowledged increment (spec/openresty checks it).
local series = require "gateway.series"

local counter = {}

local MAX_CAS = 1000 -- conflicts before giving up (503): a bound, not a loop forever

local function db() return series.db() end

--- add(id, by) -> value | nil, msg, code
function counter.add(id, by)
  local res, msg, code = db():update_row { table = "counters", primary_key = { id },
    update = { INCREMENT = { n = by } }, return_type = "RT_PK" }
  if not res then return nil, msg, code end
  local r = db():get_row { table = "counters", primary_key = { id } }
  return r and r.row and r.row.columns.n
end

--- cas(id) -> value, conflicts | nil, msg, code: the optimistic-lock loop
function counter.cas(id)
  for conflicts = 0, MAX_CAS do
    local r, msg, code = db():get_row { table = "counters", primary_key = { id } }
    if not r then return nil, msg, code end
    local cur = r.row and r.row.columns.n
    local cond = cur == nil and "EXPECT_NOT_EXIST" or { row_existence = "EXPECT_EXIST",
      column_condition = { column = "n", comparator = "EQUAL", value = cur } }
    local ok, m2, c2 = db():put_row { table = "counters", primary_key = { id },
      columns = { n = (cur or 0) + 1 }, condition = cond }
    if ok then return (cur or 0) + 1, conflicts end
    if c2 ~= "OTSConditionCheckFail" then return nil, m2, c2 end
  end
  return nil, "too many conflicting writers", "OTSServerBusy"
end

--- get(id) -> value (0 when missing) | nil, msg, code
function counter.get(id)
  local r, msg, code = db():get_row { table = "counters", primary_key = { id } }
  if not r then return nil, msg, code end
  return r.row and r.row.columns.n or 0
end

return counter
