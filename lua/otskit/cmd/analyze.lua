--- otskit analyze FILE.lua -- runs your own scenario (the file returns a
-- table: see otskit.analyze for the contract, and
-- docs/analyze.md) the way `otskit demo` runs the built-in
-- ones: every design on a fresh embedded store, the side-by-side table on
-- stdout, the hot-spot picture as SVG.
local analyze = require "otskit.analyze"
local report = require "otskit.analyze.report"
local svg = require "otskit.analyze.svg"
local json = require "otskit.analyze.json"

local cmd = {}

--- The --endpoint options shared by `otskit analyze` and `otskit demo`.
function cmd.endpoint_options(p)
  p:option("--endpoint", "Run against this Tablestore endpoint (or `otskit serve`) instead of the embedded store.")
  p:option("--instance", "Instance name (default: $OTSKIT_INSTANCE or otskit).")
  p:option("--access-key-id", "Access key id (default: $OTSKIT_ACCESS_KEY_ID or otskit).")
  p:option("--access-key-secret", "Access key secret (default: $OTSKIT_ACCESS_KEY_SECRET or otskit-secret).")
end

--- cmd.client_of(args) -> an otskit.client for --endpoint, or nil.
function cmd.client_of(args)
  if not args.endpoint then return nil end
  return require("otskit.client").new{ endpoint = args.endpoint,
    instance = args.instance or os.getenv("OTSKIT_INSTANCE") or "otskit",
    access_key_id = args.access_key_id or os.getenv("OTSKIT_ACCESS_KEY_ID") or "otskit",
    access_key_secret = args.access_key_secret or os.getenv("OTSKIT_ACCESS_KEY_SECRET") or "otskit-secret" }
end

function cmd.configure(p)
  p:argument("file", "A Lua file returning a scenario (or a list of them).")
  p:option("--svg", "Write the picture to this file (default: <scenario name>.svg; '-' for none).")
  p:flag("-q --quiet", "No progress on stderr.")
  p:flag("--json", "Print one JSON document (every scenario and design: measures, errors, findings) instead of the tables.")
  cmd.endpoint_options(p)
  p:epilog([[The file returns a scenario table:
  { name, title, ops, rate, queries, capacity, split_rows, seed,
    item = function(i, rng), query_item = function(q, rng),
    designs = { { name, label, setup = function(env) -> state,
                  write = function(state, item, env) -> ok,
                  query = function(state, q, env) -> rows,
                  report = function(state, env) -> {measure = value} }, ... } }
env.store is the metered embedded store, env.retry the retry options.
See docs/analyze.md and examples/scenario_pageviews.lua.]])
end

-- Is stderr a terminal? (then progress rewrites one line in place;
-- otherwise one line per design, so logs stay readable)
local function stderr_tty()
  local ok, how, code = os.execute("test -t 2")
  if type(ok) == "number" then return ok == 0 end -- Lua 5.1 / LuaJIT without 5.2 compat
  return ok == true and how == "exit" and code == 0
end

-- Progress on stderr for scenario i of n.
local function progress_fn(quiet, i, n, name, tty)
  if quiet then return nil end
  local last, t0 = -1, os.clock()
  return function(design, done, total)
    local p = total > 0 and math.floor(100 * done / total) or 100
    if tty and p ~= last then
      last = p
      io.stderr:write(("\r%s: [%d/%d] %s, %s design: %3d%% of %d operations"):format(
        cmd.prog or "otskit", i, n, name, design, p, total))
      if done == total then io.stderr:write("\n") end
      io.stderr:flush()
    elseif not tty and done == total then
      io.stderr:write(("%s: [%d/%d] %s, %s design: %d operations, %.1f s\n"):format(
        cmd.prog or "otskit", i, n, name, design, total, os.clock() - t0))
      t0 = os.clock()
    end
  end
end

--- cmd.run_all(list, opts) -> results: runs the scenarios, prints their
-- tables (opts.json: the JSON document instead, nothing else on stdout),
-- writes the SVG (opts.svg: path or false). opts.quiet, opts.prog,
-- opts.client (an otskit.client: the data on its server).
function cmd.run_all(list, opts)
  cmd.prog = opts.prog
  local results = {}
  local clock0 = os.clock()
  local tty = not opts.quiet and stderr_tty()
  for i, sc in ipairs(list) do
    results[i] = analyze.run(sc, { progress = progress_fn(opts.quiet, i, #list, sc.name, tty), client = opts.client })
  end
  local say = opts.json and function() end or print
  if opts.json then
    io.stdout:write(json.encode(json.document(results, { tool = opts.prog })), "\n")
  else
    for i, r in ipairs(results) do
      print()
      for _, line in ipairs(report.text(r, #list > 1 and i or nil)) do print(line) end
    end
    print()
    if #list > 1 or opts.digest then
      print("In short")
      print("--------")
      for _, line in ipairs(report.digest(results)) do print(line) end
      print()
    end
  end
  if opts.svg then
    local f, err = io.open(opts.svg, "wb")
    if not f then io.stderr:write(("otskit: cannot write %s: %s\n"):format(opts.svg, err)); return nil end
    f:write(svg.render(results, { title = opts.title }))
    f:close()
    say(("The picture of write load per partition over time: %s"):format(opts.svg))
  end
  if not opts.quiet then
    io.stderr:write(("%s: %d scenarios in %.1f s of CPU\n"):format(opts.prog or "otskit", #list, os.clock() - clock0))
  end
  return results
end

function cmd.run(args)
  local list, err = analyze.load(args.file)
  if not list then io.stderr:write("otskit analyze: " .. tostring(err) .. "\n"); return 2 end
  local out = args.svg
  if out == nil then out = list[1].name .. ".svg" elseif out == "-" then out = false end
  if not args.json then
    print(("otskit analyze %s: %d scenario%s, each design on a fresh embedded store (simulated time)")
      :format(args.file, #list, #list == 1 and "" or "s"))
  end
  local ok, client = pcall(cmd.client_of, args)
  if not ok then io.stderr:write("otskit analyze: " .. tostring(client) .. "\n"); return 2 end
  local res
  ok, res = pcall(cmd.run_all, list, { svg = out, quiet = args.quiet, prog = "otskit analyze", client = client,
                                       json = args.json })
  if not ok then io.stderr:write("otskit analyze: " .. tostring(res):gsub("^otskit%.analyze: ", "") .. "\n"); return 1 end
  return res and 0 or 1
end

return cmd
