-- spec/run.sh stops a busted run that outlasts OTSKIT_SPEC_TIMEOUT, and
-- with it every server the run started, also one leading a session of its
-- own (out of reach of timeout's signal to the run's process group and of
-- the run's process tree): a run of spec/support/hang_probe.lua, which
-- starts two `otskit serve` and hangs, must leave none of their processes.
local serve = require "support.serve"

local function alive(pid)
  local ok = os.execute("kill -0 " .. pid .. " 2>/dev/null")
  return ok == true or ok == 0
end

describe("spec/run.sh", function()
  it("a timed-out run leaves no server behind", function()
    local out = os.tmpname()
    local text = serve.sh(("OTSKIT_SPEC_TIMEOUT=25 OTSKIT_PROBE_OUT=%s sh spec/run.sh spec spec/support/hang_probe.lua 2>&1")
      :format(out))
    local pids, lines = {}, 0
    for line in io.lines(out) do
      lines = lines + 1
      for p in line:gmatch("%d+") do pids[#pids + 1] = p end
    end
    os.remove(out)
    local left = {}
    for _, p in ipairs(pids) do if alive(p) then left[#left + 1] = p end end
    -- (leave nothing running, whatever the outcome)
    if #left > 0 then os.execute("kill -KILL " .. table.concat(left, " ") .. " 2>/dev/null") end
    assert.matches("busted lua5.4: did not finish", text, 1, true)
    assert.matches("busted luajit: did not finish", text, 1, true)
    -- two servers a VM, each bin/otskit, an nginx master and its worker
    -- (and what runs under them)
    assert.equal(4, lines, text)
    assert.is_true(#pids >= 12, text)
    assert.same({}, left, text)
  end)
end)
