--- otskit -- Tablestore table-design best practices for Lua.
-- require "otskit" gives the version and loads each module on first use:
-- otskit.key, otskit.hash, ... are the same tables require returns.
local core = require "otskit.core"

local otskit = { version = core.version, abi = core.abi }

return setmetatable(otskit, {
  __index = function(t, name)
    local ok, mod = pcall(require, "otskit." .. name)
    if not ok then error("otskit: no module '" .. tostring(name) .. "'", 2) end
    rawset(t, name, mod)
    return mod
  end,
})
