-- examples/counter.lua -- an optimistic-lock counter under contention:
-- 25 clients (coroutines) increment at once, interleaving at every store
-- request; conditional updates retried on condition failure lose nothing.
-- Run from a checkout after `make`: sh examples/run.sh counter
local store = require "otskit.store"
local counter = require "otskit.patterns.counter"

local db = assert(store.open {})
-- a store that lets the other clients run before each request
local shared = setmetatable({}, { __index = function(_, k)
  local f = db[k]
  if type(f) ~= "function" then return f end
  return function(_, ...) if coroutine.isyieldable() then coroutine.yield() end return f(db, ...) end
end })
local yield_sleep = function() if coroutine.isyieldable() then coroutine.yield() end end
local c = counter.new { store = shared, table = "counters",
  retry = { sleep = yield_sleep, backoff = { base = 0.001, cap = 0.01, max_attempts = 0, deadline = 0 } } }
assert(c:create())

local clients = {}
for i = 1, 25 do clients[i] = coroutine.create(function() for _ = 1, 8 do assert(c:incr("page-views")) end end) end
local live = #clients
while live > 0 do
  live = 0
  for _, co in ipairs(clients) do
    if coroutine.status(co) ~= "dead" then assert(coroutine.resume(co)) end
    if coroutine.status(co) ~= "dead" then live = live + 1 end
  end
end
print(("page-views = %d (25 clients x 8 increments), %d conflicts retried"):format(c:get("page-views"), c.stats.conflicts))
assert(c:get("page-views") == 200)
print(c:incr("page-views", 0.5))   --> nil  ...by must be an integer...  BadValue
