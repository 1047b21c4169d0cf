--- otskit.store.search.jsonint -- the JSON text of an array field's or a
-- NESTED field's cell read with its integers exact to int64 (the index
-- holds LONG values exactly: lua-cjson reads every number as a double).
local cjson = require "cjson.safe"
local values = require "otskit.values"

local jsonint = {}

-- JSON's integers past a double (16 digits and more) inside an array or
-- nested field's text: cjson would read them as doubles (2^53 + 1 as
-- 2^53), so they are first written as strings behind MARK and read back
-- as exact int64 (5.4: an integer; LuaJIT: a number up to 2^53, a typed
-- INTEGER value beyond it); one past int64 is the double cjson reads.
-- MARK is "\0otskit-int64\0", or "\0otskit-int64-N\0" with the least N
-- when a string of the text itself starts with it (a string is never
-- taken for a marked integer).
local BIG = "%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d"

-- s with each long integer written as the string MARK..digits
-- (MARK_JSON: MARK as JSON spells it) | s
local function mark_ints(s, MARK_JSON)
  if not s:find(BIG) then return s end
  local out, i, n = {}, 1, #s
  while true do
    local a = s:find('["%-%d]', i)
    if not a then break end
    if s:sub(a, a) == '"' then -- a string: as it is
      local j = a + 1
      while true do
        local q = s:find('["\\]', j)
        if not q then j = n + 1; break end
        if s:sub(q, q) == "\\" then j = q + 2 else j = q + 1; break end
      end
      out[#out + 1] = s:sub(i, j - 1)
      i = j
    else -- a number
      local e = s:match("^%-?%d+()", a)
      if not e then -- a lone "-": cjson's to refuse
        out[#out + 1] = s:sub(i, a)
        i = a + 1
      elseif e - a - (s:sub(a, a) == "-" and 1 or 0) >= 16 and not s:find("^[%.eE]", e) then
        out[#out + 1] = s:sub(i, a - 1) .. '"' .. MARK_JSON .. s:sub(a, e - 1) .. '"'
        i = e
      else
        e = s:match("^%-?%d+%.?%d*[eE]?[-+]?%d*()", a)
        out[#out + 1] = s:sub(i, e - 1)
        i = e
      end
    end
  end
  out[#out + 1] = s:sub(i)
  return table.concat(out)
end

local function exact_ints(v, MARK)
  if type(v) == "string" then
    if v:sub(1, #MARK) ~= MARK then return v end
    local t = v:sub(#MARK + 1)
    local x = values.decimal(t)
    if x == nil then return tonumber(t) end
    if type(x) == "string" then return values.integer(x) end
    return x
  end
  if type(v) == "table" then
    for k, x in pairs(v) do v[k] = exact_ints(x, MARK) end
  end
  return v
end

-- any number in v at or past 2^53 (where cjson's double may not be the
-- integer the text spells)
local function past_2_53(v)
  if type(v) == "number" then return v >= 2 ^ 53 or v <= -2 ^ 53 end
  if type(v) == "table" then
    for _, x in pairs(v) do if past_2_53(x) then return true end end
  end
  return false
end

--- jsonint.decode(s) -> the value of JSON text s as cjson reads it, but
-- with integers exact to int64 (see MARK) | nil. The text is read twice
-- only when a number in it is at or past 2^53.
-- whether a string in v (a value) starts with prefix
local function starts(v, prefix)
  if type(v) == "string" then return v:sub(1, #prefix) == prefix end
  if type(v) == "table" then
    for _, x in pairs(v) do if starts(x, prefix) then return true end end
  end
  return false
end

function jsonint.decode(s)
  local v = cjson.decode(s)
  if type(v) ~= "table" or not past_2_53(v) then return v end
  local tag, n = "otskit-int64", 0
  while starts(v, "\0" .. tag .. "\0") do n = n + 1; tag = "otskit-int64-" .. n end
  local m = mark_ints(s, "\\u0000" .. tag .. "\\u0000")
  if m == s then return v end
  return exact_ints(cjson.decode(m), "\0" .. tag .. "\0")
end

return jsonint
