--- gateway.json -- JSON through lua-cjson, what OpenResty users have
-- (Debian: lua-cjson; OpenResty bundles its own fork). cjson.safe: bad
-- input is nil, err (nesting deeper than 1000 included), never a raise.
--
-- Two things the plain lua-cjson 2.1.0 gets wrong for this API, fixed
-- here with the same result on OpenResty's fork:
-- - it writes numbers with at most 14 significant digits, so a ts of
--   2^53 - 2 would come back as 9.007199254741e+15: a number that 14
--   digits do not round-trip is written with 17 (%.17g) instead;
-- - it writes an empty table as {}: a list that may be empty goes
--   through json.array(t) and is written as [].
local cjson = require "cjson.safe"

local json = { null = cjson.null }
local coder = cjson.new and cjson.new() or cjson

-- a placeholder no client can guess (they are swapped for raw JSON text
-- after encoding)
local function token()
  local f = io.open("/dev/urandom", "rb")
  local bytes = f and f:read(12) or tostring({}) .. tostring(os.time())
  if f then f:close() end
  return "otskit-json-" .. bytes:gsub(".", function(c) return ("%02x"):format(c:byte()) end)
end
local MARK = token()
local EMPTY = MARK .. "-empty"
local NUM = MARK .. "-num:"
local function esc(x) return (x:gsub("%p", "%%%0")) end
local EMPTY_Q, NUM_Q = '"' .. esc(EMPTY) .. '"', '"' .. esc(NUM) .. '([-+.%deE]+)"'

--- json.array(t) -> t, written as a JSON array even when empty
function json.array(t)
  if next(t) == nil then
    if coder.empty_array then return coder.empty_array end   -- OpenResty's fork
    return EMPTY
  end
  return t
end

local fmt14 = "%.14g"
-- a copy of v with the numbers 14 digits would change as placeholders
local function prepare(v)
  local t = type(v)
  if t == "number" then
    if v == v and v ~= math.huge and v ~= -math.huge and tonumber(fmt14:format(v)) ~= v then
      return NUM .. ("%.17g"):format(v)
    end
    return v
  end
  if t ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = prepare(x) end
  return setmetatable(out, getmetatable(v))
end

--- json.encode(v) -> text | nil, err
function json.encode(v)
  local text, err = coder.encode(prepare(v))
  if not text then return nil, err end
  if text:find(MARK, 1, true) then
    text = text:gsub(EMPTY_Q, "[]")
    text = text:gsub(NUM_Q, "%1")
  end
  return text
end

--- json.decode(text) -> value | nil, err (JSON null is json.null)
function json.decode(text)
  return coder.decode(text)
end

return json
