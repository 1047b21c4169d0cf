-- bench/runs.lua -- the bench results as data, from a checkout (not part
-- of the installed library):
--   lua5.4 bench/runs.lua compare [--threshold 10] [--kind ratio] BASE.json NEW.json
--   lua5.4 bench/runs.lua plot RUN.json... [-o trend.svg]
--   lua5.4 bench/runs.lua report RUN.json [-o bench/RESULTS.md | -]
--   lua5.4 bench/runs.lua collect -o RUN.json PART.json...   (bench/run.sh)
-- `make bench` and `make bench-compare` run it; luajit runs it alike.
-- `lua5.4 bench/runs.lua --help` lists the options (bench_cmd.lua).
local dir = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
package.path = dir .. "/?.lua;" .. dir .. "/../lua/?.lua;" .. dir .. "/../lua/?/init.lua;" .. package.path
local argparse = require "argparse"
local cmd = require "bench_cmd"

local parser = argparse("bench/runs.lua", "The bench run documents: compare, plot, report, collect.")
cmd.configure(parser)
os.exit(cmd.run(parser:parse(arg)) or 0)
