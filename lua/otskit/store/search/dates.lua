--- otskit.store.search.dates -- date_histogram buckets: intervals of
-- MILLISECOND..WEEK (fixed lengths; weeks start on Monday) or MONTH,
-- QUARTER_YEAR, YEAR (calendar months), shifted by a time zone ("+05:30")
-- and an offset, as SQL bucket numbers and back to each bucket's first
-- millisecond (UTC); and date text parsed by a field's date_formats
-- (dates.parse).
local base = require "otskit.store.base"

local dates = {}

local INTERVAL_KEYS = base.set{ "value", "unit" }

local function bad(msg) return nil, msg, "OTSParameterInvalid" end

local MS = { MILLISECOND = 1, SECOND = 1000, MINUTE = 60000, HOUR = 3600000, DAY = 86400000, WEEK = 7 * 86400000 }
local MONTHS = { MONTH = 1, QUARTER_YEAR = 3, YEAR = 12 }
local MONDAY = 4 * 86400000 -- 1970-01-05, the first Monday after the epoch

--- date formats a missing value or a field_range bound may take on a field
-- the index does not have
dates.FORMATS = { "yyyy-MM-dd HH:mm:ss", "yyyy-MM-dd'T'HH:mm:ss.SSSSSS", "yyyy-MM-dd'T'HH:mm:ss.SSS",
  "yyyy-MM-dd'T'HH:mm:ss", "yyyy-MM-dd" }

--- dates.interval({ value, unit }, what, optional) -> { ms | months } | nil, msg, code
function dates.interval(v, what, optional)
  if v == nil and optional then return { ms = 0 } end
  if type(v) ~= "table" or type(v.value) ~= "number" or v.value ~= math.floor(v.value) then
    return bad(what .. " must be { value (an integer), unit }")
  end
  local ok, km, kc = base.known(v, INTERVAL_KEYS, what)
  if not ok then return nil, km, kc end
  if not optional and v.value <= 0 then return bad(what .. ": value must be > 0") end
  if MS[v.unit] then return { ms = v.value * MS[v.unit], week = v.unit == "WEEK" } end
  if MONTHS[v.unit] then
    if optional then return bad(what .. ": an offset is a fixed length (MILLISECOND..WEEK)") end
    return { months = v.value * MONTHS[v.unit] }
  end
  return bad(what .. ": unit must be YEAR, QUARTER_YEAR, MONTH, WEEK, DAY, HOUR, MINUTE, SECOND or MILLISECOND")
end

--- dates.zone("+05:30" | "-08:00" | nil) -> ms east of UTC | nil, msg, code
function dates.zone(s, what)
  if s == nil or s == "" or s == "Z" or s == "UTC" then return 0 end
  if type(s) ~= "string" then return bad(what .. ": time_zone must be a string such as +05:30") end
  local sign, h, m = s:match("^([+-])(%d%d):?(%d%d)$")
  if not sign or tonumber(h) > 18 or tonumber(m) > 59 then return bad(what .. ": time_zone must look like +05:30") end
  local ms = (tonumber(h) * 60 + tonumber(m)) * 60000
  return sign == "-" and -ms or ms
end

--- dates.bucket_sql(ctx, x, iv, off, tz) -> SQL: the bucket number of the
-- milliseconds x (floor_div and ym_index: C functions of the connection,
-- otskit's csrc/core/bucket.c, one call per value)
function dates.bucket_sql(ctx, x, iv, off, tz)
  local shift = tz - off.ms
  if iv.ms then
    if iv.week then shift = shift - MONDAY end
    return ("floor_div((%s) + %s, %s)"):format(x, ctx:bind(shift), ctx:bind(iv.ms))
  end
  return ("floor_div(ym_index(strftime('%%Y%%m', ((%s) + %s) / 1000.0, 'unixepoch')), %s)"):format(x, ctx:bind(shift),
    ctx:bind(iv.months))
end

-- days since 1970-01-01 of a civil date (Howard Hinnant's algorithm)
local function days(y, m, d)
  local fl = math.floor
  y = m <= 2 and y - 1 or y
  local era = fl((y >= 0 and y or y - 399) / 400)
  local yoe = y - era * 400
  local doy = fl((153 * (m + (m > 2 and -3 or 9)) + 2) / 5) + d - 1
  local doe = yoe * 365 + fl(yoe / 4) - fl(yoe / 100) + doy
  return era * 146097 + doe - 719468
end
dates.days = days

-- a Java date pattern (yyyy MM dd HH mm ss SSS, quoted literals) -> a Lua
-- pattern and the order of its captures
local function date_pattern(f)
  local pat, order, i = { "^" }, {}, 1
  while i <= #f do
    local c = f:sub(i, i)
    local run = f:match("^" .. (c:match("%w") and c or "%" .. c) .. "+", i)
    if c == "'" then
      local j = f:find("'", i + 1, true) or #f + 1
      pat[#pat + 1] = (f:sub(i + 1, j - 1):gsub("%p", "%%%0"))
      i = j + 1
    elseif c:match("[yMdHmsS]") then
      local n = #run
      if c == "y" and n ~= 4 then return nil end
      pat[#pat + 1] = "(" .. string.rep("%d", n) .. ")"
      order[#order + 1] = c
      i = i + n
    elseif c:match("%a") then
      return nil -- a letter the parser does not know (time zones, names)
    else
      pat[#pat + 1] = "%" .. c
      i = i + 1
    end
  end
  pat[#pat + 1] = "$"
  return table.concat(pat), order
end

--- dates.parse(s, formats) -> milliseconds since the epoch (UTC) of date
-- text s in the first of the Java patterns formats it matches | nil
function dates.parse(s, formats)
  for _, f in ipairs(formats or {}) do
    local pat, order = date_pattern(f)
    if pat then
      local caps = { s:match(pat) }
      if caps[1] then
        local v = { y = 1970, M = 1, d = 1, H = 0, m = 0, s = 0, S = 0 }
        for i, k in ipairs(order) do
          if k == "S" then -- a fraction of a second of any precision -> ms
            v.S = math.floor(tonumber(caps[i]) * 1000 / 10 ^ #caps[i])
          else
            v[k] = tonumber(caps[i])
          end
        end
        if v.M >= 1 and v.M <= 12 and v.d >= 1 and v.d <= 31 and v.H < 24 and v.m < 60 and v.s < 60 then
          return ((days(v.y, v.M, v.d) * 24 + v.H) * 60 + v.m) * 60000 + v.s * 1000 + v.S
        end
      end
    end
  end
  return nil
end

--- dates.bucket_start(b, iv, off, tz) -> the first millisecond (UTC) of bucket b
function dates.bucket_start(b, iv, off, tz)
  local shift = tz - off.ms
  local v
  if iv.ms then
    if iv.week then shift = shift - MONDAY end
    v = b * iv.ms - shift
  else
    local idx = b * iv.months
    local y = math.floor(idx / 12)
    v = days(y, idx - y * 12 + 1, 1) * 86400000 - shift
  end
  return math.tointeger and math.tointeger(v) or v
end

--- dates.params(g, what) -> interval, offset, time zone of a
-- date_histogram (group-by or composite source) g | nil, msg, code
function dates.params(g, what)
  local iv, m, c = dates.interval(g.interval, what .. ".interval")
  if not iv then return nil, m, c end
  local off, m1, c1 = dates.interval(g.offset, what .. ".offset", true)
  if not off then return nil, m1, c1 end
  local tz, m2, c2 = dates.zone(g.time_zone, what)
  if not tz then return nil, m2, c2 end
  return iv, off, tz
end

return dates
