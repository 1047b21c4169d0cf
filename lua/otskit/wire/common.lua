--- otskit.wire.common -- what every message codec of otskit.wire shares:
-- the refusal of options otskit cannot honour (an unsupported option is
-- refused, never ignored), the parameter error, and small message helpers.
local unknown_key = require("otskit.core").wire.unknown_key

local common = {}

common.INVALID = "OTSParameterInvalid"
common.EMPTY = {}

--- common.invalid(msg) -> nil, msg, "OTSParameterInvalid"
function common.invalid(msg) return nil, msg, common.INVALID end
local invalid = common.invalid

--- common.check_keys(req, allowed, what) -> true | nil, msg, code: every key of
-- the request table req is in the set allowed. Raises (a programming
-- mistake) when req is not a table.
function common.check_keys(req, allowed, what)
  if type(req) ~= "table" then error("otskit.wire: " .. what .. " takes a request table", 3) end
  local k = unknown_key(req, allowed) -- in C: no short loop for LuaJIT to abort a trace on
  if k ~= nil then return invalid(what .. ": unsupported option '" .. tostring(k) .. "'") end
  return true
end

--- common.set(...) -> { [arg] = true } of the (non-nil) arguments.
function common.set(...)
  local s = {}
  for _, k in ipairs({ ... }) do s[k] = true end
  return s
end

--- common.refuse(m, what, field...) -> true | nil, msg, code: a decoded
-- request message m carries none of the fields (otskit cannot honour them).
-- (at most four fields, no vararg and no loop: every request passes here
-- and LuaJIT aborts traces on both)
function common.refuse(m, what, a, b, c, d, e)
  if e ~= nil then error("otskit.wire: refuse takes at most four fields", 2) end
  local k = m[a] ~= nil and a or b ~= nil and m[b] ~= nil and b or c ~= nil and m[c] ~= nil and c
    or d ~= nil and m[d] ~= nil and d or nil
  if k then return invalid(what .. ": unsupported field '" .. k .. "'") end
  return true
end

--- common.sorted_keys(t) -> the keys of t, sorted.
function common.sorted_keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks)
  return ks
end

--- common.consumed(c) -> the ConsumedCapacity message (read and write
-- capacity units, 0 when absent), on both sides of the wire.
function common.consumed(c)
  local cu = c and c.capacity_unit or {}
  return { capacity_unit = { read = cu.read or 0, write = cu.write or 0 } }
end

--- common.table_name(req) -> the table a request names (table or name).
function common.table_name(req) return req.table or req.name end

return common
