--- otskit.cmd.bench_json -- the small JSON codec of the bench results (no
-- dependency: the results must be readable wherever bin/otskit runs).
-- encode(v) -> text: objects with sorted keys (stable diffs), arrays for
-- tables with keys 1..n (an empty table is []), integers exactly, other
-- numbers with 9 significant digits, NaN and infinities as null.
-- decode(text) -> value | nil, message: the whole of RFC 8259 (null is
-- decoded as json.null, so arrays keep their length).
local json = {}

json.null = setmetatable({}, { __tostring = function() return "null" end })

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
    if depth > 64 then error("otskit.bench_json: nesting deeper than 64 (a cycle?)", 0) end
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
        if type(k) ~= "string" then error("otskit.bench_json: object key is a " .. type(k), 0) end
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
    error("otskit.bench_json: cannot encode a " .. t, 0)
  end
end

--- json.encode(v [, indent]) -> text (indent: e.g. "  " for one key a line)
function json.encode(v, indent)
  local out = {}
  enc(v, out, indent, 0)
  return table.concat(out)
end

-- decoder: recursive descent over the string; errors carry the offset
local function utf8char(c)
  if c < 0x80 then return string.char(c) end
  if c < 0x800 then return string.char(0xC0 + math.floor(c / 64), 0x80 + c % 64) end
  if c < 0x10000 then
    return string.char(0xE0 + math.floor(c / 4096), 0x80 + math.floor(c / 64) % 64, 0x80 + c % 64)
  end
  return string.char(0xF0 + math.floor(c / 262144), 0x80 + math.floor(c / 4096) % 64,
    0x80 + math.floor(c / 64) % 64, 0x80 + c % 64)
end

local function decoder(s)
  local pos = 1
  local function fail(what) error({ ("%s at byte %d"):format(what, pos) }, 0) end
  local function ws() pos = s:find("[^ \t\r\n]", pos) or #s + 1 end
  local value
  local function string_()
    pos = pos + 1
    local out = {}
    while true do
      local a, b = s:find('^[^"\\%c]+', pos)
      if a then out[#out + 1] = s:sub(a, b); pos = b + 1 end
      local c = s:sub(pos, pos)
      if c == '"' then pos = pos + 1; return table.concat(out) end
      if c ~= "\\" then fail(c == "" and "unterminated string" or "control character in string") end
      local e = s:sub(pos + 1, pos + 1)
      local simple = ({ ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" })[e]
      if simple then out[#out + 1] = simple; pos = pos + 2
      elseif e == "u" then
        local h = s:match("^%x%x%x%x", pos + 2)
        if not h then fail("bad \\u escape") end
        local c1 = tonumber(h, 16)
        pos = pos + 6
        if c1 >= 0xD800 and c1 < 0xDC00 then
          local l = s:match("^\\u(%x%x%x%x)", pos)
          local c2 = l and tonumber(l, 16)
          if not c2 or c2 < 0xDC00 or c2 > 0xDFFF then fail("lone surrogate") end
          c1 = 0x10000 + (c1 - 0xD800) * 1024 + (c2 - 0xDC00)
          pos = pos + 6
        elseif c1 >= 0xDC00 and c1 < 0xE000 then fail("lone surrogate") end
        out[#out + 1] = utf8char(c1)
      else fail("bad escape") end
    end
  end
  function value(depth)
    if depth > 200 then fail("nesting too deep") end
    ws()
    local c = s:sub(pos, pos)
    if c == "{" then
      pos = pos + 1
      local t = {}
      ws()
      if s:sub(pos, pos) == "}" then pos = pos + 1; return t end
      while true do
        ws()
        if s:sub(pos, pos) ~= '"' then fail("expected a key") end
        local k = string_()
        ws()
        if s:sub(pos, pos) ~= ":" then fail("expected ':'") end
        pos = pos + 1
        t[k] = value(depth + 1)
        ws()
        c = s:sub(pos, pos)
        pos = pos + 1
        if c == "}" then return t end
        if c ~= "," then pos = pos - 1; fail("expected ',' or '}'") end
      end
    elseif c == "[" then
      pos = pos + 1
      local t = {}
      ws()
      if s:sub(pos, pos) == "]" then pos = pos + 1; return t end
      while true do
        t[#t + 1] = value(depth + 1)
        ws()
        c = s:sub(pos, pos)
        pos = pos + 1
        if c == "]" then return t end
        if c ~= "," then pos = pos - 1; fail("expected ',' or ']'") end
      end
    elseif c == '"' then return string_()
    elseif s:find("^true", pos) then pos = pos + 4; return true
    elseif s:find("^false", pos) then pos = pos + 5; return false
    elseif s:find("^null", pos) then pos = pos + 4; return json.null
    else
      local n = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
      if not n or not n:find("^-?0%f[^%d]") and not n:find("^-?[1-9]") or n:find("%.$") or n:find("%.[eE]")
        or n:find("[eE][-+]?$") then
        fail(c == "" and "unexpected end" or "unexpected character")
      end
      pos = pos + #n
      return tonumber(n)
    end
  end
  return function()
    local v = value(0)
    ws()
    if pos <= #s then fail("trailing data") end
    return v
  end
end

--- json.decode(text) -> value | nil, message
function json.decode(s)
  if type(s) ~= "string" then return nil, "otskit.bench_json: expected a string" end
  local ok, v = pcall(decoder(s))
  if ok then return v end
  if type(v) == "table" then return nil, "invalid JSON: " .. v[1] end
  error(v, 0)
end

return json
