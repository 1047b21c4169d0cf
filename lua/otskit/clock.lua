--- otskit.clock -- now() -> seconds since the epoch, sub-millisecond: the
-- wall clock the store stamps cells with and `otskit serve` signs with.
-- Under LuaJIT it is read through the FFI (otskit.ffi), so a compiled
-- request path reads it without leaving its trace (a call through the Lua
-- C API ends the trace); elsewhere it is otskit.core's row.now. Both read
-- the same clock.
local core = require "otskit.core"
local f = require "otskit.ffi"

local clock = {}

if f.lib then
  local lib = f.lib
  function clock.now()
    -- (not a tail call: a root trace starting here would return through
    -- the FFI call into its caller, and abort: "leaving loop in root trace")
    local t = lib.otskit_now()
    return t
  end
else
  clock.now = core.row.now
end

return clock
