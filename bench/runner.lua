--- bench/runner.lua FILE OUT -- runs one bench file (bench/*_bench.lua) in
-- this interpreter with the harness recording (bench/lib.lua), and writes
-- what it recorded as JSON to OUT: the sections' markdown text, every
-- measure with its repetitions, the bench's status and CPU time. The text
-- still goes to stdout as the bench runs. Exit status 1 if the bench failed
-- (the JSON is written anyway and says so).
local file, out = arg[1], arg[2]
if not file or not out then
  io.stderr:write("usage: runner.lua BENCH_FILE OUT.json\n")
  os.exit(2)
end
local bench = require "lib"
local json = require "bench_json"

bench.capture(os.getenv("OTSKIT_BENCH_ECHO") ~= "0")
local t0 = os.clock()
local ok, err = xpcall(function() dofile(file) end, debug.traceback)
local doc = bench.document()
doc.bench = (file:match("([^/]+)_bench%.lua$") or file)
doc.file = file
doc.status = ok and "ok" or "failed"
doc.error = (not ok) and tostring(err) or nil
doc.cpu_seconds = os.clock() - t0
if not ok then io.stderr:write(("bench %s (%s) failed: %s\n"):format(doc.bench, bench.abi, tostring(err))) end
local f = assert(io.open(out, "w"))
f:write(json.encode(doc, " "), "\n")
f:close()
os.exit(ok and 0 or 1)
