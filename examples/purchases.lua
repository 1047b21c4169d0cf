-- examples/purchases.lua -- the card purchases of the best practices: a
-- spliced partition key "DeviceID,SellerID" (DeviceID zero-padded to 6
-- digits, ',' below every character of the fields), then CardID and
-- OrderNumber. Devices are many and evenly used, so writes spread; the
-- key sorts like the tuple, so DeviceID in [15, 100) is one range read.
-- Run from a checkout after `make`: sh examples/run.sh purchases
local store = require "otskit.store"
local spliced = require "otskit.patterns.spliced"

local db = assert(store.open {})
local p = spliced.new { store = db, table = "purchases", secret = "example secret of 16+ bytes",
  splice = { sep = ",", { "DeviceID", "int", width = 6 }, { "SellerID", "string", charset = "alnum" } },
  rest = { { "CardID", "INTEGER" }, { "OrderNumber", "INTEGER" } } }
assert(p:create { "000250", "000500", "000750" })

local rows, n = {}, 0
for device = 0, 999, 3 do
  for _, seller in ipairs { "a100", "a1001", "a101" } do
    n = n + 1
    rows[#rows + 1] = { { device, seller }, { 16 + device % 50, n }, { Amount = 100 * device % 9973 } }
  end
end
assert(p:put_many(rows))

local count, pages, cursor = 0, 0, nil
repeat
  local page
  page, cursor = assert(p:range { from = { 15 }, to = { 100 }, limit = 40, cursor = cursor })
  pages = pages + 1
  count = count + #page
  if pages == 1 then
    for i = 1, 4 do
      local r = page[i]
      print(("DeviceID %3d  SellerID %-5s  CardID %d  OrderNumber %d  Amount %d"):format(
        r.fields[1], r.fields[2], r.rest[1], r.rest[2], r.columns.Amount))
    end
  end
until not cursor
print(("%d purchases with DeviceID in [15, 100), %d pages, %d rows read"):format(count, pages, p.stats.rows_read))
assert(count == 29 * 3)

print(p:put({ 1234567, "a100" }, { 1, 1 }, {}))   --> nil  ...does not fit 6 digits...  IntTooWide
print(p:put({ 15, "a-100" }, { 1, 1 }, {}))       --> nil  ...outside charset 'alnum'  OutOfCharset
