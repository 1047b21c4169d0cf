--- otskit.cli -- the commands behind bin/otskit (lua-argparse).
local argparse = require "argparse"

local cli = {}

-- Each command: a module under otskit.cmd with configure(parser) and
-- run(args) -> exit status.
local commands = {
  { name = "demo", summary = "Run every access pattern beside its naive design: tables and a hot-spot picture." },
  { name = "analyze", summary = "Run your own scenario file (naive vs recommended designs) the same way." },
  { name = "keys", summary = "Show the key designs of the best practices on example data." },
  { name = "serve", summary = "Run a local Tablestore-protocol server (nginx) the official SDKs can use." },
}

function cli.main(argv)
  local parser = argparse("otskit", "Tablestore table-design best practices, fast, for Lua.")
  parser:command_target("command")
  parser:flag("--version", "Print the version and exit."):action(function()
    print("otskit " .. require("otskit.core").version); os.exit(0)
  end)
  for _, c in ipairs(commands) do
    local sub = parser:command(c.name, c.summary)
    local mod = require("otskit.cmd." .. c.name)
    if mod.configure then mod.configure(sub) end
  end
  local args = parser:parse(argv)
  return require("otskit.cmd." .. args.command).run(args) or 0
end

return cli
