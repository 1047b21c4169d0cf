--- otskit.json -- JSON documents that diff well: the output of
-- `otskit analyze --json` / `otskit demo --json` and the bench run files.
-- Writing promises the same text for the same value on Lua 5.4 and
-- LuaJIT, run after run: object keys sorted; a table with keys 1..n is an
-- array, an empty table an object unless marked with json.array (or
-- opts.empty_array); integral numbers within 2^53 written exactly ("%d",
-- never 3.0 or 1e3), others with opts.digits significant digits (17 by
-- default: they read back equal); NaN and infinities as null; with
-- opts.indent, one key a line and arrays of plain values on one line.
-- Reading is lua-cjson's (cjson.safe), RFC 8259 numbers only, with
-- integral numbers read back as integers.
local cjson = require("cjson.safe").new()
cjson.decode_invalid_numbers(false)

local json = {}

--- json.null: what null decodes to and encodes from.
json.null = cjson.null

local ARRAY = {}
--- json.array(t) -> t, encoded as a JSON array even when empty.
function json.array(t) return setmetatable(t or {}, ARRAY) end

local ESC = { ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f",
  ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }

local function str(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return ESC[c] or ("\\u%04x"):format(c:byte())
  end) .. '"'
end

local function is_array(t, empty_array)
  if getmetatable(t) == ARRAY then return true end
  local n = 0
  for k in pairs(t) do
    if type(k) ~= "number" or k < 1 or k ~= math.floor(k) then return false end
    n = n + 1
  end
  if n == 0 then return empty_array end
  for i = 1, n do if t[i] == nil then return false end end
  return true
end

local function enc(v, out, o, depth)
  local t = type(v)
  if v == nil or v == json.null then out[#out + 1] = "null"
  elseif t == "boolean" then out[#out + 1] = tostring(v)
  elseif t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then out[#out + 1] = "null"
    elseif v == math.floor(v) and math.abs(v) < 2 ^ 53 then out[#out + 1] = ("%d"):format(v)
    else out[#out + 1] = o.fmt:format(v) end
  elseif t == "string" then out[#out + 1] = str(v)
  elseif t == "table" then
    if depth > 64 then error("otskit.json: nesting deeper than 64 (a cycle?)", 0) end
    local indent = o.indent
    local nl = indent and ("\n" .. indent:rep(depth + 1)) or ""
    local close = indent and ("\n" .. indent:rep(depth)) or ""
    if is_array(v, o.empty_array) then
      if #v == 0 then out[#out + 1] = "[]"; return end
      local flat = true -- arrays of plain values stay on one line
      for i = 1, #v do if type(v[i]) == "table" then flat = false; break end end
      out[#out + 1] = "["
      for i = 1, #v do
        if i > 1 then out[#out + 1] = (flat and indent) and ", " or "," end
        if not flat then out[#out + 1] = nl end
        enc(v[i], out, o, depth + 1)
      end
      out[#out + 1] = flat and "]" or (close .. "]")
    else
      local keys = {}
      for k in pairs(v) do
        if type(k) ~= "string" then error("otskit.json: object keys must be strings, got a " .. type(k), 0) end
        keys[#keys + 1] = k
      end
      table.sort(keys)
      out[#out + 1] = "{"
      for i, k in ipairs(keys) do
        if i > 1 then out[#out + 1] = "," end
        out[#out + 1] = nl .. str(k) .. (indent and ": " or ":")
        enc(v[k], out, o, depth + 1)
      end
      out[#out + 1] = close .. "}"
    end
  else
    error("otskit.json: cannot encode a " .. t, 0)
  end
end

local OPTS = { indent = "string", digits = "number", empty_array = "boolean" }

--- json.encode(v [, opts]) -> text. opts.indent (e.g. "  "), opts.digits
-- (1-17, default 17), opts.empty_array (an unmarked empty table is []).
-- Raises on a value JSON cannot hold (a function, a non-string key, a cycle)
-- and on an unknown option.
function json.encode(v, opts)
  local o = { fmt = "%.17g" }
  for k, x in pairs(opts or {}) do
    if OPTS[k] ~= type(x) then error("otskit.json: bad option " .. tostring(k), 2) end
    o[k] = x
  end
  if o.digits then
    if o.digits ~= math.floor(o.digits) or o.digits < 1 or o.digits > 17 then
      error("otskit.json: digits must be an integer 1-17", 2)
    end
    o.fmt = "%." .. ("%d"):format(o.digits) .. "g"
  end
  local out = {}
  enc(v, out, o, 0)
  return table.concat(out)
end

-- lua-cjson reads every number as a float on Lua 5.4 (3 -> 3.0): the
-- integral ones within 2^53 become integers again.
local tointeger = math.tointeger
local function integers(v)
  if type(v) == "number" then
    if tointeger and v == math.floor(v) and v > -2 ^ 53 and v < 2 ^ 53 then return tointeger(v) end
    return v
  end
  if type(v) == "table" then
    for k, x in pairs(v) do v[k] = integers(x) end
  end
  return v
end

--- json.decode(text) -> value | nil, "invalid JSON: ..."
function json.decode(s)
  if type(s) ~= "string" then return nil, "otskit.json: expected a string" end
  local v, err = cjson.decode(s)
  if v == nil then return nil, "invalid JSON: " .. tostring(err) end
  return integers(v)
end

return json
