-- spec/support/procs.lua -- starting helper servers for specs and benches:
-- a process whose first stdout line is its port; it stops when its stdin
-- closes (the handle returned here owns that stdin).
local procs = {}

local function sleep(s) os.execute("sleep " .. s) end

--- procs.start(cmd) -> { port = n, stop = function } | nil, message.
-- cmd is a shell command; its first stdout line must be the port.
function procs.start(cmd)
  local out = os.tmpname()
  local pipe = io.popen(cmd .. " > " .. out .. " 2>" .. out .. ".err", "w")
  local port
  for _ = 1, 200 do
    local f = io.open(out)
    local line = f and f:read("l")
    if f then f:close() end
    port = line and tonumber(line)
    if port then break end
    sleep(0.05)
  end
  local function stop()
    if pipe then pipe:close(); pipe = nil end
    os.remove(out); os.remove(out .. ".err")
  end
  if not port then
    local f = io.open(out .. ".err")
    local err = f and f:read("a") or ""
    if f then f:close() end
    stop()
    return nil, "server did not start: " .. err
  end
  return { port = port, stop = stop }
end

return procs
