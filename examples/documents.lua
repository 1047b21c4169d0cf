-- examples/documents.lua -- a 3 MB document, compressed and chunked with
-- the manifest written last. A rewrite that fails half-way (injected
-- faults) leaves the previous version readable.
-- Run from a checkout after `make`: sh examples/run.sh documents
local store = require "otskit.store"
local chunked = require "otskit.patterns.chunked"

local db = assert(store.open {})
local docs = chunked.new { store = db, table = "docs", chunk_size = 1024 * 1024,
  retry = { sleep = function() end, backoff = { max_attempts = 2 } } } -- no real waits here
assert(docs:create())

local lines = {}
for i = 1, 62000 do
  lines[i] = ('{"id":%d,"user":"user-%d","event":"%s"}'):format(i, i * 7919 % 100000, i % 3 == 0 and "buy" or "view")
end
local v1 = table.concat(lines, "\n")
local info = assert(docs:put("report-2026", v1))
print(("%d bytes -> %d chunks, %d bytes stored"):format(info.length, info.count, info.stored))
print("bytes 1000..1040:", docs:read_range("report-2026", 1000, 1040))

-- a rewrite that fails half-way: its chunks are written, then the store
-- refuses the manifest (the commit). The old version is still the one
-- read; the new chunks were removed again (sweep() finds nothing left).
db:inject { rate = 1, code = "OTSServerBusy", ops = { "put_row" } }
local ok, msg, code = docs:put("report-2026", v1:upper())
print("rewrite under faults:", ok, msg, code)
assert(not ok)
db:inject(nil)
assert(docs:get("report-2026") == v1)
print("previous version still readable; orphan chunks left:", docs:sweep("report-2026"))

assert(docs:put("report-2026", "short now"))
print("after a shorter rewrite:", docs:get("report-2026"))
print(docs:put("big", ("x"):rep(65 * 1024 * 1024)))  --> nil  ...over max_value...  TooLarge
assert(docs:delete("report-2026"))
print("deleted:", docs:get("report-2026"))            --> false
