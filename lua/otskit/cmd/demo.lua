--- otskit demo -- the main job: every access pattern of the best practices
-- beside the design they warn against (timestamp first, sequential order
-- numbers, SellerID first, uncompressed 3 MB values, ...), on the same
-- synthetic workload, on the embedded store: a side-by-side table per
-- pattern and an SVG picture of write load per partition over time.
local scenarios = require "otskit.analyze.scenarios"
local analyze_cmd = require "otskit.cmd.analyze"

local demo = {}

function demo.configure(p)
  p:option("--svg", "Write the picture here ('-' for none).", "otskit-demo.svg")
  p:option("--only", "Run only these scenarios (comma-separated names).")
  p:flag("--list", "List the scenarios and exit.")
  p:flag("--keys", "Also print the key designs first (as `otskit keys`).")
  p:flag("-q --quiet", "No progress on stderr.")
  p:flag("--json", "Print one JSON document (every scenario and design: measures, errors, findings) instead of the tables.")
  analyze_cmd.endpoint_options(p)
end

function demo.run(args)
  if args.list then
    for _, s in ipairs(scenarios) do print(("%-12s %s"):format(s.name, s.title)) end
    return 0
  end
  local list = {}
  if args.only then
    local want = {}
    for n in args.only:gmatch("[^,%s]+") do want[n] = true end
    for _, s in ipairs(scenarios) do if want[s.name] then list[#list + 1] = s; want[s.name] = nil end end
    local unknown = next(want)
    if unknown then io.stderr:write(("otskit demo: no scenario %q (see --list)\n"):format(unknown)); return 2 end
  else
    for i, s in ipairs(scenarios) do list[i] = s end
  end
  if args.keys and args.json then
    io.stderr:write("otskit demo: --keys and --json do not go together (the JSON document is all stdout holds)\n")
    return 2
  end
  if args.keys then require("otskit.cmd.keys").run(); print() end
  local ok, client = pcall(analyze_cmd.client_of, args)
  if not ok then io.stderr:write("otskit demo: " .. tostring(client) .. "\n"); return 2 end
  local say = args.json and function() end or print
  say(("otskit demo: naive table designs beside the recommended ones, same workload, %s")
    :format(client and ("data on " .. args.endpoint .. " (partitions simulated locally)") or "embedded store"))
  say("(simulated time; a partition takes at most 25 rows per second, then throttles with")
  say(" OTSServerBusy; every client retries through otskit.retry with the Tablestore classification)")
  local out = args.svg ~= "-" and args.svg or false
  local res = analyze_cmd.run_all(list, { svg = out, quiet = args.quiet, prog = "otskit demo", client = client,
                                          json = args.json })
  say("The key designs themselves (spliced keys, hash prefixes, buckets, packed tuples): otskit keys")
  return res and 0 or 1
end

return demo
