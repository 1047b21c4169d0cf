--- otskit.server.text -- error messages every SDK can read: a message may
-- echo what a request carried (a column name with a NUL byte, bytes that
-- are not UTF-8), and protobuf strings must be UTF-8 without NUL (otskit's
-- encoder refuses a NUL: the answer would become a 500 after the request
-- was applied). text.message(s) is s with every NUL, control byte and
-- byte of an ill-formed UTF-8 sequence written as \xHH, cut to 1024 bytes.
local text = {}

local MAX = 1024

-- the length of the well-formed UTF-8 sequence at i (0 when ill-formed)
local function seq(s, i)
  local byte = string.byte
  local c = byte(s, i)
  local len
  if c >= 0xC2 and c <= 0xDF then len = 2
  elseif c >= 0xE0 and c <= 0xEF then len = 3
  elseif c >= 0xF0 and c <= 0xF4 then len = 4
  else return 0 end
  if i + len - 1 > #s then return 0 end
  local c2 = byte(s, i + 1)
  if (c == 0xE0 and c2 < 0xA0) or (c == 0xED and c2 > 0x9F)
     or (c == 0xF0 and c2 < 0x90) or (c == 0xF4 and c2 > 0x8F) then
    return 0
  end
  for j = i + 1, i + len - 1 do
    local b = byte(s, j)
    if b < 0x80 or b > 0xBF then return 0 end
  end
  return len
end

--- text.message(s) -> s as a message that always encodes (see above);
-- a non-string becomes its tostring.
function text.message(s)
  if type(s) ~= "string" then s = tostring(s) end
  if #s > MAX then s = s:sub(1, MAX) end
  if not s:find("[%z\1-\8\11\12\14-\31\127-\255]") then return s end
  local out, i, n = {}, 1, #s
  while i <= n do
    local c = s:byte(i)
    if c >= 0x80 then
      local len = seq(s, i)
      if len > 0 then
        out[#out + 1] = s:sub(i, i + len - 1)
        i = i + len
      else
        out[#out + 1] = ("\\x%02X"):format(c)
        i = i + 1
      end
    else
      if c < 32 and c ~= 9 and c ~= 10 and c ~= 13 or c == 127 then
        out[#out + 1] = ("\\x%02X"):format(c)
      else
        out[#out + 1] = string.char(c)
      end
      i = i + 1
    end
  end
  return table.concat(out)
end

return text
