-- examples/orders.lua -- sequential order numbers behind an md5 prefix:
-- writes scatter over every partition; point reads recompute the key.
-- Run from a checkout after `make`: sh examples/run.sh orders
local store = require "otskit.store"
local hashprefix = require "otskit.patterns.hashprefix"

local now = 0
local db = assert(store.open { clock = function() return now end, partition = { window = 10 } })
local p = hashprefix.new { store = db, table = "orders", algo = "md5", len = 4, width = 10 }
local splits = {}
for k = 1, 15 do splits[k] = ("%x"):format(k) end
assert(p:create(splits))

for n = 90000001, 90003000 do
  if n % 100 == 0 then now = now + 1 end
  assert(p:put(n, { total = n % 997 }))
end
local hs = db:hotspots("orders")
print(("3000 sequential orders over %d partitions: the busiest took %.1f%% of the writes")
  :format(hs.partitions, 100 * hs.share))
print("order 90000005 is stored under", p:key(90000005))
print("its total:", p:get(90000005).total)
local some = assert(p:get_many { 90000001, 90000002, 99999999 })
print("batch read:", some[1].total, some[2].total, some[3])   --> 2  3  false (missing)
print(p:get(-5))                                            --> nil  ...  BadKey
