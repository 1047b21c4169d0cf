-- examples/import.lua -- importing a sorted data set: shuffled into
-- BatchWriteRow requests within the limits, so every batch spreads over
-- the partitions instead of hammering one.
-- Run from a checkout after `make`: sh examples/run.sh import
local store = require "otskit.store"
local import = require "otskit.patterns.import"

local db = assert(store.open {})
local splits = {}
for k = 1, 15 do splits[k] = ("user-%06d"):format(k * 625) end
assert(db:create_table { name = "users", primary_key = { { "id", "STRING" } }, splits = splits })

local rows = {}
for i = 1, 10000 do rows[i] = { { ("user-%06d"):format(i) }, { plan = i % 3 == 0 and "pro" or "free" } } end
local rep = assert(import.run { store = db, table = "users", rows = rows, seed = 42, workers = 4,
  progress = function(done, total) if done % 5000 == 0 then print(("imported %d of %d"):format(done, total)) end end })
print(("%d rows in %d batches, %d requests, %d retries, %d failed"):format(
  rep.written, rep.batches, rep.requests, rep.retries, rep.failed))
local per = {}
for i, p in ipairs(db:partitions("users")) do per[i] = p.writes end
print("rows written per partition: " .. table.concat(per, " "))
print(import.run { store = db, table = "users", rows = { { { 42 } } } })  --> nil  ...must be STRING...  BadKey
