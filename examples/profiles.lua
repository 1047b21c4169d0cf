-- examples/profiles.lua -- a table split by column access frequency: the
-- hot columns (status, balance) in users_hot, the rest in users_cold.
-- Run from a checkout after `make`: sh examples/run.sh profiles
local store = require "otskit.store"
local colsplit = require "otskit.patterns.colsplit"

local db = assert(store.open {})
local users = colsplit.new { store = db, table = "users", primary_key = { { "id", "STRING" } },
                             hot = { "status", "balance" } }
assert(users:create())
for i = 1, 500 do
  assert(users:put({ ("u%04d"):format(i) }, { status = "active", balance = i, bio = ("about me "):rep(200) }))
end
users.acc:reset()
local hot = assert(users:get({ "u0042" }, { "status", "balance" }))
print("hot read:", hot.status, hot.balance, ("(%d request)"):format(users.stats.requests))
assert(users:update({ "u0042" }, { balance = 1000 }))
local all = assert(users:get({ "u0042" }))
print("full read:", all.status, all.balance, #all.bio .. " bytes of bio")
local hb, cb = 0, 0
for _, p in ipairs(db:partitions("users_hot")) do hb = hb + p.bytes end
for _, p in ipairs(db:partitions("users_cold")) do cb = cb + p.bytes end
print(("users_hot holds %d bytes, users_cold %d: hot reads touch %.1f%% of the data"):format(hb, cb, 100 * hb / (hb + cb)))
print(users:get({ 42 }))   --> nil  ...column id must be STRING...  BadKey
