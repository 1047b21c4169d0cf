-- A worker process for spec/store_procs_spec.lua and bench/store_writers.lua:
-- lua store_worker.lua <package.path> <package.cpath> <db path> <mode> <count> <id>
-- Modes: inc (INCREMENT one counter), cas (read w, put w+1 if w is still
-- what was read), create (create table "race" with a key type by id),
-- put (blind puts of distinct rows). OTSServerBusy is retried (nothing
-- was applied). Prints "done=N busy=N conflict=N ms=N".
package.path, package.cpath = arg[1], arg[2]
local store = require "otskit.store"
local path, mode, count, id = arg[3], arg[4], tonumber(arg[5]), tonumber(arg[6])
local clock = os.clock
local ok, socket = pcall(require, "socket")
if ok then clock = socket.gettime end

local db
repeat
  local m, c
  db, m, c = store.open { path = path }
  if not db and c ~= "OTSServerBusy" then error(m) end
until db

local done, busy, conflict = 0, 0, 0
local t0 = clock()
local function again(r, msg, code)
  if r then return false end
  if code == "OTSServerBusy" then busy = busy + 1; return true end
  if code == "OTSConditionCheckFail" then conflict = conflict + 1; return true end
  error(tostring(msg) .. " " .. tostring(code))
end

for i = 1, count do
  if mode == "inc" then
    while again(db:update_row { table = "c", primary_key = { "n" }, update = { INCREMENT = { v = 1 } } }) do end
  elseif mode == "cas" then
    while true do
      local r, msg, code = db:get_row { table = "c", primary_key = { "n" } }
      if not again(r, msg, code) then
        local w = r.row.columns.w
        if not again(db:put_row { table = "c", primary_key = { "n" }, columns = { v = r.row.columns.v, w = w + 1 },
            condition = { row_existence = "EXPECT_EXIST",
              column_condition = { column = "w", comparator = "EQUAL", value = w } } }) then break end
      end
    end
  elseif mode == "create" then
    local r, msg, code = db:create_table { name = "race", primary_key = { { "id", id % 2 == 0 and "INTEGER" or "STRING" } } }
    if not r and code ~= "OTSObjectAlreadyExist" then error(tostring(msg) .. " " .. tostring(code)) end
    done = done + (r and 1 or 0) - 1 -- counts the winner only
  elseif mode == "put" then
    while again(db:put_row { table = "c", primary_key = { ("w%d-%d"):format(id, i) }, columns = { v = i } }) do end
  end
  done = done + 1
end
io.write(("done=%d busy=%d conflict=%d ms=%d\n"):format(done, busy, conflict, math.floor((clock() - t0) * 1000)))
db:close()
