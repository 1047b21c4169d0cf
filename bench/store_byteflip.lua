-- bench/store_byteflip.lua [trials] [seed] [integrity] [part|nopart]: flips one byte of a
-- store file per trial (every position reachable, spread over the file),
-- opens it and reads everything back, and sorts each trial into:
--   raised   a Lua error escaped the store (must be 0)
--   error    nil, message, code (the damage was reported)
--   correct  every row read back exactly (the byte was unused or repaired)
--   wrong    different data and no error: silent damage
-- Prints "trials=N raised=N error=N correct=N wrong=N". integrity=1 opens
-- with store.open{ integrity_check = true }; nopart opens with
-- partitions = false (no scan of every row at open: damage is found by
-- the reads that touch it). Run from the repo root:
--   lua5.4 bench/store_byteflip.lua 2000
local LUA54 = _VERSION == "Lua 5.4" and not jit
local build = LUA54 and "build/5.4" or "build/jit"
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = build .. "/?.so;" .. package.cpath
local store = require "otskit.store"

local trials = tonumber(arg and arg[1]) or 500
local seed = tonumber(arg and arg[2]) or 1
local integrity = arg and arg[3] == "1"
local partitions = not (arg and arg[4] == "nopart")

local function rm(p) for _, s in ipairs({ "", "-wal", "-shm" }) do os.remove(p .. s) end end

-- the reference file: two tables, 300 rows of mixed types
local base = os.tmpname()
rm(base)
local model = { a = {}, b = {} }
do
  local db = assert(store.open { path = base })
  assert(db:create_table { name = "a", primary_key = { { "id", "INTEGER" } } })
  assert(db:create_table { name = "b", primary_key = { { "g", "STRING" }, { "n", "INTEGER" } } })
  for i = 1, 200 do
    local cols = { s = ("v%d-"):format(i):rep(i % 7 + 1), n = i * 3, d = i / 4, f = i % 2 == 0 }
    assert(db:put_row { table = "a", primary_key = { i }, columns = cols })
    model.a[#model.a + 1] = { { { "id", i } }, cols }
  end
  for i = 1, 100 do
    local cols = { x = ("x"):rep(i * 5) }
    assert(db:put_row { table = "b", primary_key = { "g" .. (i % 5), i }, columns = cols })
  end
  local all = assert(db:get_range { table = "b", start = { store.INF_MIN, store.INF_MIN }, stop = { store.INF_MAX, store.INF_MAX } })
  model.b = all.rows
  db:close()
end
local f = assert(io.open(base, "rb"))
local bytes = f:read("*a")
f:close()

local function same(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) ~= "table" then return a == b end
  for k, v in pairs(a) do if not same(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

-- every row of a table, paging through get_range -> rows | nil, msg, code
local function read_all(db, name, n)
  local s, e = {}, {}
  for i = 1, n do s[i], e[i] = store.INF_MIN, store.INF_MAX end
  local rows = {}
  repeat
    local r, msg, code = db:get_range { table = name, start = s, stop = e }
    if not r then return nil, msg, code end
    for _, row in ipairs(r.rows) do rows[#rows + 1] = row end
    s = r.next_start_primary_key
  until s == nil
  return rows
end

-- one trial: "error", "correct" or "wrong" (raises escape to the caller)
local function trial(path)
  local db, msg, code = store.open { path = path, integrity_check = integrity, partitions = partitions }
  if not db then return "error", msg, code end
  local a, b, point, w
  a, msg, code = read_all(db, "a", 1)
  if a then b, msg, code = read_all(db, "b", 2) end
  if b then point, msg, code = db:get_row { table = "a", primary_key = { 77 } } end
  -- and a write: it must apply or fail cleanly
  if point then w, msg, code = db:update_row { table = "a", primary_key = { 5 }, update = { INCREMENT = { n = 1 } } } end
  db:close()
  if not w then return "error", msg, code end
  if #a ~= #model.a then return "wrong", "table a has " .. #a .. " rows, not " .. #model.a end
  for i, row in ipairs(a) do
    if not same(row.primary_key, model.a[i][1]) or not same(row.columns, model.a[i][2]) then return "wrong", "row a" .. i end
  end
  if not same(b, model.b) then return "wrong", "table b (" .. #b .. " rows)" end
  if not point.row or not same(point.row.columns, model.a[77][2]) then return "wrong", "get_row a77" end
  return "correct"
end

local counts = { raised = 0, error = 0, correct = 0, wrong = 0 }
local path = os.tmpname()
local rnd = seed
local function rand(n) rnd = (rnd * 1103515245 + 12345) % 2147483648; return rnd % n end
local raised_msgs, kinds = {}, {}
for t = 1, trials do
  -- positions spread evenly over the file, a random one inside each slot
  local slot = #bytes / trials
  local pos = math.floor((t - 1) * slot + rand(math.max(1, math.floor(slot)))) + 1
  if pos > #bytes then pos = #bytes end
  local flip = rand(255) + 1
  local damaged = bytes:sub(1, pos - 1) .. string.char(bit32 and bit32.bxor(bytes:byte(pos), flip)
    or (LUA54 and load("return function(a, b) return a ~ b end")()(bytes:byte(pos), flip))
    or require("bit").bxor(bytes:byte(pos), flip)) .. bytes:sub(pos + 1)
  rm(path)
  local out = assert(io.open(path, "wb"))
  out:write(damaged)
  out:close()
  local ok, r, emsg, ecode = pcall(trial, path)
  if ok then
    counts[r] = counts[r] + 1
    if r == "wrong" and os.getenv("VERBOSE") then io.stderr:write(("wrong at byte %d: %s\n"):format(pos, emsg)) end
    if r == "error" then
      local k = tostring(ecode) .. " " .. tostring(emsg):gsub("%d+", "N"):sub(1, 70)
      kinds[k] = (kinds[k] or 0) + 1
    end
  else
    counts.raised = counts.raised + 1
    raised_msgs[#raised_msgs + 1] = ("byte %d: %s"):format(pos, tostring(r))
  end
end
rm(path); rm(base)
for i = 1, math.min(5, #raised_msgs) do io.stderr:write(raised_msgs[i], "\n") end
if os.getenv("VERBOSE") then
  for k, n in pairs(kinds) do io.stderr:write(("%5d  %s\n"):format(n, k)) end
end
print(("trials=%d raised=%d error=%d correct=%d wrong=%d bytes=%d"):format(trials, counts.raised, counts.error,
  counts.correct, counts.wrong, #bytes))
