-- spec/support/hang_probe.lua -- for spec/run_reap_spec.lua (not a spec of
-- its own: spec/run.sh runs it by name): starts two `otskit serve`, one
-- leading a session of its own (setsid), appends the pids of each (bin/otskit,
-- its nginx master and workers) to the file $OTSKIT_PROBE_OUT, a line a
-- server, then hangs until spec/run.sh's timeout stops the run.
local serve = require "support.serve"

describe("a run that hangs", function()
  it("leaves its servers running", function()
    for _, o in ipairs({ { setsid = true }, {} }) do
      local s = assert(serve.start(o))
      local pids = {}
      local function tree(p) -- p and every process under it
        pids[#pids + 1] = p
        for c in serve.sh(serve.PGREP .. " -P " .. p):gmatch("%d+") do tree(c) end
      end
      tree(s.pid)
      local f = io.open(s.tmp .. "/ng/logs/nginx.pid") -- (setsid: not under bin/otskit)
      local m = f and f:read("l")
      if f then f:close() end
      local seen = false
      for _, p in ipairs(pids) do seen = seen or p == m end
      if m and m:match("^%d+$") and not seen then tree(m) end
      local out = assert(io.open(assert(os.getenv("OTSKIT_PROBE_OUT")), "a"))
      out:write(table.concat(pids, " "), "\n")
      out:close()
    end
    os.execute("sleep 600")
  end)
end)
