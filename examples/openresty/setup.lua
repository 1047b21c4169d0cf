--- examples/openresty/setup.lua DB -- creates the gateway's file db and
-- its tables before nginx starts. The store reads table definitions when
-- a connection opens, so they must exist before any worker opens the db.
local store = require "otskit.store"

local path = assert(arg[1], "usage: setup.lua DB")
local db = assert(store.open { path = path })
for _, t in ipairs {
  { name = "series", primary_key = { { "b", "INTEGER" }, { "id", "STRING" }, { "ts", "INTEGER" } } },
  { name = "blobs", primary_key = { { "id", "STRING" } } },
  { name = "counters", primary_key = { { "id", "STRING" } } },
} do
  local ok, msg, code = db:create_table(t)
  if not ok and code ~= "OTSObjectAlreadyExist" then error(msg) end
end
-- the event stream of /events: otskit.patterns.timeseries's own table
local ok, msg, code = require("otskit.patterns.timeseries").new { store = db, table = "events" }:create()
if not ok and code ~= "OTSObjectAlreadyExist" then error(msg) end
db:close()
