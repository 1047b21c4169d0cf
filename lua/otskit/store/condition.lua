--- otskit.store.condition -- row-existence and column conditions.
--
-- condition = "IGNORE" | "EXPECT_EXIST" | "EXPECT_NOT_EXIST"
--           | { row_existence = <one of those>, column_condition = cc }
-- cc = { column = name, comparator = "EQUAL" | "NOT_EQUAL" | "GREATER_THAN"
--        | "GREATER_EQUAL" | "LESS_THAN" | "LESS_EQUAL", value = v,
--        pass_if_missing = true, latest_version_only = true }
--    | { logical = "AND" | "OR" | "NOT", conditions = { cc, ... } }
-- AND / OR take two or more sub-conditions, NOT exactly one. The same
-- shape is a read filter (condition.parse_filter). A column of the
-- primary key is refused (conditions and filters test attribute columns).
-- latest_version_only = false: any version of the column may satisfy it.
local values = require "otskit.store.values"
local errors = require "otskit.errors"
local row = require("otskit.core").row

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
local MAX_FILTER_LEAVES = 10 -- the service: a filter has at most 10 sub-conditions

local function invalid(msg) return nil, msg, "OTSParameterInvalid" end
local SINGLE_FIELDS = { column = true, comparator = true, value = true, pass_if_missing = true, latest_version_only = true }

-- validated copy of a column condition; leaves counts single conditions
local function parse_cc(cc, depth, count, pknames)
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
      local c, msg, code = parse_cc(subs[i], depth + 1, count, pknames)
      if not c then return nil, msg, code end
      out[i] = c
    end
    return out
  end
  local col = cc.column
  if type(col) ~= "string" or col == "" then return invalid("single column condition needs a column name") end
  if pknames and pknames[col] then
    return invalid("column condition on '" .. col .. "': primary key columns cannot be tested, only attribute columns")
  end
  for k in pairs(cc) do
    if not SINGLE_FIELDS[k] then return invalid("column condition on '" .. col .. "': unsupported option '" .. tostring(k) .. "'") end
  end
  local f = CMP[cc.comparator]
  if not f then return invalid("comparator must be EQUAL, NOT_EQUAL, GREATER_THAN, GREATER_EQUAL, LESS_THAN or LESS_EQUAL, got " .. tostring(cc.comparator)) end
  if cc.value == nil then return invalid("column condition on '" .. col .. "' needs a value") end
  local ty, v = values.classify(cc.value)
  if not ty then return invalid("column condition on '" .. col .. "': " .. v) end
  if ty == "STRING" and not row.utf8(v) then return invalid("column condition on '" .. col .. "': value is not valid UTF-8") end
  count[1] = count[1] + 1
  if count[1] > count.max then return invalid("more than " .. count.max .. " column conditions") end
  return { column = col, test = f, type = ty, value = v, pass_if_missing = cc.pass_if_missing ~= false,
           all = cc.latest_version_only == false }
end

--- condition.parse_filter(f, pknames) -> parsed | nil, msg, code: a read
-- filter (single or composite); pknames: the table's key column names.
function condition.parse_filter(f, pknames)
  return parse_cc(f, 1, { 0, max = MAX_FILTER_LEAVES }, pknames)
end

--- condition.all_versions(parsed) -> whether a single condition in it
-- looks at every version (latest_version_only = false)
function condition.all_versions(cc)
  if cc.logical then
    for i = 1, #cc do if condition.all_versions(cc[i]) then return true end end
    return false
  end
  return cc.all
end

--- condition.parse(c, allowed, pknames) -> parsed | nil, msg, code.
-- allowed: the set of row-existence values the operation accepts.
function condition.parse(c, allowed, pknames)
  if c == nil then return { exist = "IGNORE" } end
  if type(c) == "string" then c = { row_existence = c } end
  if type(c) ~= "table" then return invalid("condition must be a string or a table") end
  local ex = c.row_existence or "IGNORE"
  if not EXIST[ex] then return invalid("row_existence must be IGNORE, EXPECT_EXIST or EXPECT_NOT_EXIST, got " .. tostring(ex)) end
  if allowed and not allowed[ex] then return invalid("row_existence " .. ex .. " is not allowed for this operation") end
  local out = { exist = ex }
  if c.column_condition ~= nil then
    local cc, msg, code = parse_cc(c.column_condition, 1, { 0, max = MAX_LEAVES }, pknames)
    if not cc then return nil, msg, code end
    out.cc = cc
  end
  return out
end

--- condition.needs_row(parsed) -> whether evaluating it reads the row
function condition.needs_row(p) return p.exist ~= "IGNORE" or p.cc ~= nil end

local function test_one(cc, ty, v)
  local r = values.compare(ty, v, cc.type, cc.value)
  if r == nil then return cc.test == CMP.NOT_EQUAL end -- values of different types are never equal
  return cc.test(r)
end

-- cols/types: the newest version of each column; cells: every version
-- ({name, value, ts, type}), needed only by latest_version_only = false
local function eval(cc, cols, types, cells)
  if cc.logical == "NOT" then return not eval(cc[1], cols, types, cells) end
  if cc.logical == "AND" then
    for i = 1, #cc do if not eval(cc[i], cols, types, cells) then return false end end
    return true
  end
  if cc.logical == "OR" then
    for i = 1, #cc do if eval(cc[i], cols, types, cells) then return true end end
    return false
  end
  local v = cols and cols[cc.column]
  if v == nil then return cc.pass_if_missing end
  if cc.all and cells then
    local name = cc.column
    for i = 1, #cells do
      local c = cells[i]
      if c[1] == name and test_one(cc, c[4], c[2]) then return true end
    end
    return false
  end
  return test_one(cc, types[cc.column], v)
end
condition.eval = eval

--- condition.check(parsed, exists, cols, types [, cells]) -> true | nil, msg, code
function condition.check(p, exists, cols, types, cells)
  if p.exist == "EXPECT_EXIST" and not exists then
    return errors.fail("OTSConditionCheckFail")
  end
  if p.exist == "EXPECT_NOT_EXIST" and exists then
    return errors.fail("OTSConditionCheckFail")
  end
  if p.cc and not eval(p.cc, exists and cols or nil, types, cells) then
    return errors.fail("OTSConditionCheckFail")
  end
  return true
end

return condition
