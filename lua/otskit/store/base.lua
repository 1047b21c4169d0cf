--- otskit.store.base -- what every part of the store shares: the db
-- class, the service's limits, the key sentinels and small helpers.
local values = require "otskit.store.values"
local names = require "otskit.names"

local base = {}

--- The value of an AUTO_INCREMENT key column in a write, and the open
-- ends of a key column in get_range bounds: otskit.values's sentinels
-- (the same objects otskit.wire and otskit.client use).
local shared = require "otskit.values"
base.AUTO_INCREMENT, base.INF_MIN, base.INF_MAX = shared.AUTO_INCREMENT, shared.INF_MIN, shared.INF_MAX

--- The service's documented limits, enforced with its error codes.
base.LIMITS = {
  pk_columns = 4, pk_cell = values.MAX_PK_CELL, cell = values.MAX_CELL,
  columns_per_row = 1024, columns_to_get = 128, row_bytes = 4194304,
  batch_write_rows = 200, batch_get_rows = 100, request_bytes = 4194304,
  range_rows = 5000, range_bytes = 4194304, name_bytes = names.MAX_BYTES,
}

local DB = {}
DB.__index = DB
base.DB = DB

function base.invalid(msg) return nil, msg, "OTSParameterInvalid" end

function base.check_req(req, op)
  if type(req) ~= "table" then error("otskit.store: " .. op .. " takes a request table", 3) end
end

--- base.valid_name(s): a table or column name by the service's rule
-- (otskit.names, which the pattern constructors check against too)
base.valid_name = names.valid

function base.ceil_cu(bytes)
  local n = math.ceil(bytes / 4096)
  return n < 1 and 1 or n
end

local unknown_key = require("otskit.core").wire.unknown_key

--- base.known(req, allowed, what) -> true | nil, msg, code: refuses a
-- field the store does not support (never accepted and ignored). The
-- keys are walked in C (no Lua loop for LuaJIT to abort a trace on: every
-- request passes here).
function base.known(req, allowed, what)
  local k = unknown_key(req, allowed)
  if k ~= nil then
    return nil, what .. ": unsupported option '" .. tostring(k) .. "'", "OTSParameterInvalid"
  end
  return true
end

--- base.list(v, what) -> true | nil, msg, code: v is a list (a table whose
-- keys are exactly 1..#v): a list with another key is refused, the key
-- never ignored. (Not for request tables: a Lua loop.)
function base.list(v, what)
  if type(v) ~= "table" then return nil, what .. " must be a list", "OTSParameterInvalid" end
  local n = #v
  for k in pairs(v) do
    if type(k) ~= "number" or k < 1 or k > n or k ~= math.floor(k) then
      return nil, what .. " must be a list: unsupported key '" .. tostring(k) .. "'", "OTSParameterInvalid"
    end
  end
  return true
end

--- base.set{...} -> { [v] = true, ... }
function base.set(list)
  local s = {}
  for _, v in ipairs(list) do s[v] = true end
  return s
end

--- The table options of the service and their defaults.
base.OPTION_DEFAULTS = { time_to_live = -1, max_versions = 1, max_time_deviation = 86400 }

--- base.now_ms(db) -> the store's clock in integral milliseconds
function base.now_ms(db)
  local ms = math.floor((db.clock() + db.offset) * 1000) -- (no tail call: see otskit.clock)
  return ms
end

function base.consumed(read, write)
  return { capacity_unit = { read = read, write = write } }
end

function DB:_account(t, acct, defer)
  if t.parts and acct then t.parts:write(acct[1], acct[2], acct[3], defer) end
end

function DB:_fault(op)
  local f = self.faults
  if not f then return 0, false end
  local lat, fail = f:call(op)
  self.offset = self.offset + lat
  self.last_latency = lat
  return lat, fail
end

return base
