--- bench_json -- JSON of the bench run documents. Writing: the encoder
-- below, because the files are diffed and compared across runs: objects
-- with sorted keys (stable diffs), arrays for tables with keys 1..n (an
-- empty table is []), integral numbers exactly ("%d", never 3.0 or 1e3),
-- other numbers with 9 significant digits, NaN and infinities as null,
-- arrays of plain numbers on one line. Reading: lua-cjson (cjson.safe).
-- encode(v [, indent]) -> text; decode(text) -> value | nil, message.
local cjson = require("cjson.safe").new()

-- RFC 8259 numbers only: no NaN, Infinity or hex
cjson.decode_invalid_numbers(false)

local json = {}

--- json.null: what null decodes to (and encodes from); arrays keep their length.
json.null = cjson.null

local ESC = { ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f",
  ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }

local function str(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return ESC[c] or ("\\u%04x"):format(c:byte())
  end) .. '"'
end

local function num(x)
  if x ~= x or x == math.huge or x == -math.huge then return "null" end
  if x == math.floor(x) and math.abs(x) < 2 ^ 53 then return ("%d"):format(x) end
  return (("%.9g"):format(x))
end

local function is_array(t)
  local n = 0
  for k in pairs(t) do
    if type(k) ~= "number" or k < 1 or k ~= math.floor(k) then return false end
    n = n + 1
  end
  for i = 1, n do if t[i] == nil then return false end end
  return true
end

local function enc(v, out, indent, depth)
  local t = type(v)
  if v == nil or v == json.null then out[#out + 1] = "null"
  elseif t == "boolean" then out[#out + 1] = tostring(v)
  elseif t == "number" then out[#out + 1] = num(v)
  elseif t == "string" then out[#out + 1] = str(v)
  elseif t == "table" then
    if depth > 64 then error("bench_json: nesting deeper than 64 (a cycle?)", 0) end
    local nl = indent and ("\n" .. indent:rep(depth + 1)) or ""
    local close = indent and ("\n" .. indent:rep(depth)) or ""
    if is_array(v) then
      if #v == 0 then out[#out + 1] = "[]"; return end
      -- arrays of plain numbers stay on one line (the repetitions)
      local flat = true
      for i = 1, #v do if type(v[i]) == "table" then flat = false; break end end
      out[#out + 1] = "["
      for i = 1, #v do
        if i > 1 then out[#out + 1] = (flat and indent) and ", " or "," end
        if not flat then out[#out + 1] = nl end
        enc(v[i], out, indent, depth + 1)
      end
      out[#out + 1] = flat and "]" or (close .. "]")
    else
      local keys = {}
      for k in pairs(v) do
        if type(k) ~= "string" then error("bench_json: object key is a " .. type(k), 0) end
        keys[#keys + 1] = k
      end
      table.sort(keys)
      out[#out + 1] = "{"
      for i, k in ipairs(keys) do
        if i > 1 then out[#out + 1] = "," end
        out[#out + 1] = nl .. str(k) .. (indent and ": " or ":")
        enc(v[k], out, indent, depth + 1)
      end
      out[#out + 1] = close .. "}"
    end
  else
    error("bench_json: cannot encode a " .. t, 0)
  end
end

--- json.encode(v [, indent]) -> text (indent: e.g. "  " for one key a line)
function json.encode(v, indent)
  local out = {}
  enc(v, out, indent, 0)
  return table.concat(out)
end

-- lua-cjson reads every number as a float on Lua 5.4 (3 -> 3.0): the
-- integral ones within 2^53 (all the encoder writes as "%d") become
-- integers again, so a value prints as it did when it was written.
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
  if type(s) ~= "string" then return nil, "bench_json: expected a string" end
  local v, err = cjson.decode(s)
  if v == nil then return nil, "invalid JSON: " .. tostring(err) end
  return integers(v)
end

return json
