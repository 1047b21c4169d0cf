-- otskit.client.verify.compare (the key order the client checks a GetRange
-- answer's rows against) takes a shortcut for two plain STRING or two
-- integral number values: on random keys of every form it answers what
-- `reference` below (the comparison before the shortcut, cell by cell)
-- answers. verify.rows passes a well-ordered GetRange answer in one pass
-- (each key against the one before, the bounds against the first and the
-- last): on random answers, ordered or not, inside the range or not, it
-- answers what `reference_range` (every row against both bounds) answers.
local verify = require "otskit.client.verify"
local values = require "otskit.values"
local helper = require "helper"

local LUA54 = math.type ~= nil
local N = helper.trials(2000)
local INF_MIN, INF_MAX = values.INF_MIN, values.INF_MAX

local function cell(e)
  local v = e[2]
  if v == INF_MIN then return 0 end
  if v == INF_MAX then return 2 end
  local tag = e[3]
  if values.is_typed(v) then tag, v = v.type, v.value end
  local t = type(v)
  if t == "string" then
    if tag == "BINARY" then return 1, "BINARY", v end
    if tag == "INTEGER" then
      local n = values.decimal(v)
      if n == nil then return 1 end
      return 1, "INTEGER", n
    end
    if tag == nil or tag == "STRING" then return 1, "STRING", v end
    return 1
  end
  if t == "number" and (tag == nil or tag == "INTEGER") and v == math.floor(v) then return 1, "INTEGER", v end
  if t == "cdata" and (tag == nil or tag == "INTEGER") then
    local n = values.decimal((tostring(v):gsub("U?LL$", "")))
    if n ~= nil then return 1, "INTEGER", n end
  end
  return 1
end
local function int_text(v)
  if type(v) == "string" then return v end
  if math.type then return ("%d"):format(v) end
  return ("%.0f"):format(v)
end
local function int_cmp(a, b)
  if type(a) == "number" and type(b) == "number" then return a < b and -1 or (a > b and 1 or 0) end
  local sa, sb = int_text(a), int_text(b)
  local na, nb = sa:sub(1, 1) == "-", sb:sub(1, 1) == "-"
  if na ~= nb then return na and -1 or 1 end
  local r
  if #sa ~= #sb then r = #sa < #sb and -1 or 1 else r = sa < sb and -1 or (sa > sb and 1 or 0) end
  return na and -r or r
end
local function reference(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then return nil end
  local n = math.max(#a, #b)
  if n == 0 then return nil end
  for i = 1, n do
    local x, y = a[i], b[i]
    if type(x) ~= "table" or type(y) ~= "table" or x[1] ~= y[1] or type(x[1]) ~= "string" then return nil end
    local rx, tx, vx = cell(x)
    local ry, ty, vy = cell(y)
    if rx ~= ry then return rx < ry and -1 or 1 end
    if rx ~= 1 then return 0 end
    if tx == nil or ty == nil or tx ~= ty then return nil end
    local r = tx == "INTEGER" and int_cmp(vx, vy) or (vx < vy and -1 or (vx > vy and 1 or 0))
    if r ~= 0 then return r end
  end
  return 0
end

local function value(r)
  local k = r.int(1, 14)
  if k <= 3 then return r.bytes(r.int(0, 3), "ab\0") end
  if k <= 6 then local v = r.int(-3, 3); return LUA54 and math.tointeger(v) or v end
  if k == 7 then return r.int(-3, 3) + 0.5 end
  if k == 8 then return ({ 0 / 0, math.huge, -math.huge, -0.0, 2 ^ 53, 3.0 })[r.int(1, 6)] end
  if k == 9 then return INF_MIN end
  if k == 10 then return INF_MAX end
  if k == 11 then return values.binary(r.bytes(r.int(0, 2), "ab")) end
  if k == 12 then return ({ "9007199254740993", "-9007199254740993", "12", "x" })[r.int(1, 4)] end
  if k == 13 then return values.integer(LUA54 and r.int(-3, 3) or tostring(r.int(-3, 3))) end
  return true
end
local TAGS = { "BINARY", "INTEGER", "STRING", "DOUBLE" }
local function key(r)
  local k = {}
  for i = 1, r.int(0, 3) do
    local e = { r.int(0, 8) == 0 and "y" or ("c" .. i), value(r) }
    if r.int(0, 5) == 0 then e[3] = TAGS[r.int(1, #TAGS)] end
    k[i] = r.int(0, 30) == 0 and "junk" or e
  end
  return k
end

-- the GetRange check before the one-pass shortcut
local function show(pk)
  local parts = {}
  for i, e in ipairs(type(pk) == "table" and pk or {}) do
    if i > 4 then parts[#parts + 1] = "..."; break end
    local v = type(e) == "table" and e[2]
    if v == INF_MIN then v = "INF_MIN" elseif v == INF_MAX then v = "INF_MAX" end
    local s = tostring(v)
    if #s > 32 then s = s:sub(1, 32) .. "..." end
    parts[#parts + 1] = tostring(type(e) == "table" and e[1]) .. "=" .. s
  end
  return "(" .. table.concat(parts, ", ") .. ")"
end
local function bad(code, msg, network) return { code = code, message = msg, network = network or nil } end
local function foreign(what, pk, asked)
  return bad("OTSResponseInvalid", ("%s %s is not the key or range asked %s"):format(what, show(pk), asked), true)
end
local function reference_range(req, out)
  local compare = reference
  local backward = req.direction == "BACKWARD"
  local lo, hi = req.start, req.stop
  local asked = ("[%s, %s)"):format(show(lo), show(hi))
  local function inside(pk, may_equal_stop)
    local a, b = compare(pk, lo), compare(pk, hi)
    if backward then
      if a == 1 then return false end
      if b == -1 or (b == 0 and not may_equal_stop) then return false end
    else
      if a == -1 then return false end
      if b == 1 or (b == 0 and not may_equal_stop) then return false end
    end
    return true
  end
  local prev
  for _, row in ipairs(out.rows or {}) do
    local pk = type(row) == "table" and row.primary_key
    if pk then
      if not inside(pk) then return foreign("row", pk, asked) end
      if prev then
        local r = compare(pk, prev)
        if r ~= nil and ((not backward and r ~= 1) or (backward and r ~= -1)) then
          return bad("OTSResponseInvalid", "GetRange rows out of order at " .. show(pk), true)
        end
      end
      prev = pk
    end
  end
  local nx = out.next_start_primary_key
  if nx ~= nil then
    if not inside(nx, true) then return foreign("next_start_primary_key", nx, asked) end
    if prev then
      local r = compare(nx, prev)
      if r ~= nil and ((not backward and r ~= 1) or (backward and r ~= -1)) then
        return bad("OTSResponseInvalid", "GetRange next_start_primary_key " .. show(nx)
          .. " is not past the last row " .. show(prev), true)
      end
    end
  end
  return nil
end

-- keys of two columns from small domains (ties and order both common)
local function small_key(r)
  local function v1()
    local k = r.int(1, 12)
    if k == 1 then return INF_MIN elseif k == 2 then return INF_MAX end
    if k == 3 then return "x" end -- another type: not comparable
    local v = r.int(1, 4)
    return LUA54 and math.tointeger(v) or v
  end
  local function v2()
    local k = r.int(1, 10)
    if k == 1 then return INF_MIN elseif k == 2 then return INF_MAX end
    return ({ "a", "b", "c" })[r.int(1, 3)]
  end
  local key = { { "c1", v1() }, { "c2", v2() } }
  if r.int(0, 20) == 0 then key[2] = nil end
  if r.int(0, 30) == 0 then key[1][1] = "other" end
  return key
end

describe("otskit.client.verify.compare (property)", function()
  it("verify.rows of a GetRange answer: what checking every row against both bounds answers", function()
    local r = helper.rng(3102)
    for trial = 1, N do
      local backward = r.int(0, 1) == 1
      local req = { table = "t", start = small_key(r), stop = small_key(r), direction = backward and "BACKWARD" or nil }
      if r.int(0, 2) == 0 then -- the usual whole range
        req.start = { { "c1", backward and INF_MAX or INF_MIN }, { "c2", backward and INF_MAX or INF_MIN } }
        req.stop = { { "c1", backward and INF_MIN or INF_MAX }, { "c2", backward and INF_MIN or INF_MAX } }
      end
      local keys = {}
      for i = 1, r.int(0, 6) do keys[i] = small_key(r) end
      if r.int(0, 3) > 0 then -- mostly in order
        table.sort(keys, function(a, b)
          local c = reference(a, b)
          if backward then return c == 1 end
          return c == -1
        end)
      end
      local out = { rows = {} }
      for i, k in ipairs(keys) do out.rows[i] = r.int(0, 40) == 0 and { columns = {} } or { primary_key = k } end
      if r.int(0, 2) == 0 then out.next_start_primary_key = small_key(r) end
      local want, got = reference_range(req, out), verify.rows("GetRange", req, out)
      assert.same(want, got, "trial " .. trial)
    end
  end)

  it("answers what the cell-by-cell comparison answers, on keys of every form", function()
    local r = helper.rng(3101)
    for trial = 1, N do
      local a = key(r)
      local b = r.int(0, 2) == 0 and a or key(r)
      if r.int(0, 3) == 0 then -- a shared prefix, then a difference
        b = {}
        for i, e in ipairs(a) do b[i] = e end
        if #b > 0 then b[#b] = key(r)[1] or b[#b] end
      end
      local want, got = reference(a, b), verify.compare(a, b)
      assert(want == got, ("trial %d: %s ~= %s"):format(trial, tostring(got), tostring(want)))
    end
  end)
end)
