-- examples/months.lua -- hot and cold data in one table per month; a read
-- of the last 45 days merges two month tables, newest first.
-- Run from a checkout after `make`: sh examples/run.sh months
local store = require "otskit.store"
local hotcold = require "otskit.patterns.hotcold"

local db = assert(store.open {})
local ev = hotcold.new { store = db, prefix = "events", first = "2026-01", last = "2026-06",
                        secret = "example secret of 16+ bytes" }
assert(ev:create())
local t0 = hotcold.month_start("2026-01")
local rows = {}
for i = 0, 1799 do rows[#rows + 1] = { "device-" .. (i % 3), t0 + i * 8640, tostring(i), { reading = i } } end
assert(ev:put_many(rows))

local to = hotcold.month_start("2026-06") + 20 * 86400
local page, cursor = assert(ev:read { key = "device-1", from = to - 45 * 86400, to = to, limit = 5 })
for _, r in ipairs(page) do print(r.month, r.ts, r.columns.reading) end
local n = #page
while cursor do
  page, cursor = assert(ev:read { key = "device-1", from = to - 45 * 86400, to = to, limit = 5, cursor = cursor })
  n = n + #page
end
print(("device-1: %d readings in the last 45 days, across %s and %s"):format(n, ev:month(to - 45 * 86400), ev:month(to - 1)))
print(ev:put("device-1", hotcold.month_start("2026-07"), "x", {}))   --> nil  ...outside 2026-01..2026-06  BadMonth
