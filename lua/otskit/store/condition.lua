--- otskit.store.condition -- row-existence and column conditions.
--
-- condition = "IGNORE" | "EXPECT_EXIST" | "EXPECT_NOT_EXIST"
--           | { row_existence = <one of those>, column_condition = cc }
-- cc = { column = name, comparator = "EQUAL" | "NOT_EQUAL" | "GREATER_THAN"
--        | "GREATER_EQUAL" | "LESS_THAN" | "LESS_EQUAL", value = v,
--        pass_if_missing = true, latest_version_only = true }
--    | { logical = "AND" | "OR" | "NOT", conditions = { cc, ... } }
-- AND / OR take two or more sub-conditions, NOT exactly one.
local values = require "otskit.store.values"

local condition = {}

local EXIST = { IGNORE = true, EXPECT_EXIST = true, EXPECT_NOT_EXIST = true }
local CMP = {
  EQUAL = function(r) return r == 0 end,
  NOT_EQUAL = function(r) return r ~= 0 end,
  GREATER_THAN = function(r) return r > 0 end,
  GREATER_EQUAL = function(r) return r >= 0 end,
  LESS_THAN = function(r) return r < 0 end,
  LESS_EQUAL = function(r) return r <= 0 end,
}
local MAX_DEPTH, MAX_LEAVES = 10, 32

local function invalid(msg) return nil, msg, "OTSParameterInvalid" end

-- validated copy of a column condition; leaves counts single conditions
local function parse_cc(cc, depth, count)
  if type(cc) ~= "table" then return invalid("column_condition must be a table") end
  if depth > MAX_DEPTH then return invalid("column_condition nested deeper than " .. MAX_DEPTH) end
  if cc.logical ~= nil then
    local op = cc.logical
    if op ~= "AND" and op ~= "OR" and op ~= "NOT" then
      return invalid("logical operator must be AND, OR or NOT, got " .. tostring(op))
    end
    local subs = cc.conditions
    if type(subs) ~= "table" then return invalid(op .. " condition needs a conditions list") end
    local n = #subs
    if op == "NOT" and n ~= 1 then return invalid("NOT takes exactly one sub-condition, got " .. n) end
    if op ~= "NOT" and n < 2 then return invalid(op .. " takes two or more sub-conditions, got " .. n) end
    local out = { logical = op }
    for i = 1, n do
      local c, msg, code = parse_cc(subs[i], depth + 1, count)
      if not c then return nil, msg, code end
      out[i] = c
    end
    return out
  end
  local col = cc.column
  if type(col) ~= "string" or col == "" then return invalid("single column condition needs a column name") end
  local f = CMP[cc.comparator]
  if not f then return invalid("comparator must be EQUAL, NOT_EQUAL, GREATER_THAN, GREATER_EQUAL, LESS_THAN or LESS_EQUAL, got " .. tostring(cc.comparator)) end
  if cc.value == nil then return invalid("column condition on '" .. col .. "' needs a value") end
  local ty, v = values.classify(cc.value)
  if not ty then return invalid("column condition on '" .. col .. "': " .. v) end
  count[1] = count[1] + 1
  if count[1] > MAX_LEAVES then return invalid("more than " .. MAX_LEAVES .. " column conditions") end
  return { column = col, test = f, type = ty, value = v, pass_if_missing = cc.pass_if_missing ~= false }
end

--- condition.parse(c, allowed) -> parsed | nil, msg, code. allowed: the
-- set of row-existence values the operation accepts.
function condition.parse(c, allowed)
  if c == nil then return { exist = "IGNORE" } end
  if type(c) == "string" then c = { row_existence = c } end
  if type(c) ~= "table" then return invalid("condition must be a string or a table") end
  local ex = c.row_existence or "IGNORE"
  if not EXIST[ex] then return invalid("row_existence must be IGNORE, EXPECT_EXIST or EXPECT_NOT_EXIST, got " .. tostring(ex)) end
  if allowed and not allowed[ex] then return invalid("row_existence " .. ex .. " is not allowed for this operation") end
  local out = { exist = ex }
  if c.column_condition ~= nil then
    local cc, msg, code = parse_cc(c.column_condition, 1, { 0 })
    if not cc then return nil, msg, code end
    out.cc = cc
  end
  return out
end

--- condition.needs_row(parsed) -> whether evaluating it reads the row
function condition.needs_row(p) return p.exist ~= "IGNORE" or p.cc ~= nil end

local function eval(cc, cols, types)
  if cc.logical == "NOT" then return not eval(cc[1], cols, types) end
  if cc.logical == "AND" then
    for i = 1, #cc do if not eval(cc[i], cols, types) then return false end end
    return true
  end
  if cc.logical == "OR" then
    for i = 1, #cc do if eval(cc[i], cols, types) then return true end end
    return false
  end
  local v = cols and cols[cc.column]
  if v == nil then return cc.pass_if_missing end
  local r = values.compare(types[cc.column], v, cc.type, cc.value)
  if r == nil then return cc.test == CMP.NOT_EQUAL end -- values of different types are never equal
  return cc.test(r)
end

--- condition.check(parsed, exists, cols, types) -> true | nil, msg, code
function condition.check(p, exists, cols, types)
  if p.exist == "EXPECT_EXIST" and not exists then
    return nil, "Condition check failed: the row does not exist.", "OTSConditionCheckFail"
  end
  if p.exist == "EXPECT_NOT_EXIST" and exists then
    return nil, "Condition check failed: the row exists.", "OTSConditionCheckFail"
  end
  if p.cc and not eval(p.cc, exists and cols or nil, types) then
    return nil, "Condition check failed: the column condition is false.", "OTSConditionCheckFail"
  end
  return true
end

return condition
