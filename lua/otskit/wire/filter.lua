--- otskit.wire.filter -- filters, row conditions and return content: the
-- store's filter and condition tables <-> the protobuf Filter,
-- Condition and ReturnContent messages (a filter's value in PlainBuffer).
local core = require("otskit.core").wire
local pb = require "otskit.wire.plainbuffer"
local common = require "otskit.wire.common"

local invalid = common.invalid

local filter = {}

local CMP = { EQUAL = 1, NOT_EQUAL = 1, GREATER_THAN = 1, GREATER_EQUAL = 1, LESS_THAN = 1, LESS_EQUAL = 1 }
local LOGICAL = { NOT = 1, AND = 1, OR = 1 }

-- a filter / column condition -> the Filter message as a table
local function filter_msg(f, depth)
  depth = depth or 0
  if type(f) ~= "table" then return invalid("filter must be a table") end
  if depth > 32 then return invalid("filter nested too deep") end
  if f.pagination ~= nil then
    local p = f.pagination
    if type(p) ~= "table" then return invalid("filter.pagination must be { offset =, limit = }") end
    local b, msg = core.proto_encode("ColumnPaginationFilter", { offset = p.offset or 0, limit = p.limit })
    if not b then return invalid("filter.pagination: " .. msg) end
    return { type = "FT_COLUMN_PAGINATION", filter = b }
  end
  if f.logical ~= nil then
    if not LOGICAL[f.logical] then return invalid("filter.logical must be NOT, AND or OR, got " .. tostring(f.logical)) end
    if type(f.conditions) ~= "table" then return invalid("a " .. f.logical .. " filter needs conditions") end
    local subs = {}
    for i, c in ipairs(f.conditions) do
      local m, msg, code = filter_msg(c, depth + 1)
      if not m then return nil, msg, code end
      subs[i] = m
    end
    local b, msg = core.proto_encode("CompositeColumnValueFilter", { combinator = "LO_" .. f.logical, sub_filters = subs })
    if not b then return invalid(msg) end
    return { type = "FT_COMPOSITE_COLUMN_VALUE", filter = b }
  end
  if not CMP[f.comparator] then
    return invalid("filter comparator must be EQUAL, NOT_EQUAL, GREATER_THAN, GREATER_EQUAL, LESS_THAN or LESS_EQUAL, got " .. tostring(f.comparator))
  end
  if type(f.column) ~= "string" then return invalid("filter needs a column name") end
  local v, msg, code = pb.encode_value(f.value)
  if not v then return nil, msg, code end
  local b, m2 = core.proto_encode("SingleColumnValueFilter", {
    comparator = "CT_" .. f.comparator, column_name = f.column, column_value = v,
    filter_if_missing = f.pass_if_missing == false, latest_version_only = f.latest_version_only ~= false,
  })
  if not b then return invalid(m2) end
  return { type = "FT_SINGLE_COLUMN_VALUE", filter = b }
end

local function encode_filter(f)
  local m, msg, code = filter_msg(f)
  if not m then return nil, msg, code end
  return core.proto_encode("Filter", m)
end

local function filter_from(m, depth)
  if depth > 32 then return invalid("filter nested too deep") end
  local t = m.type
  if t == "FT_SINGLE_COLUMN_VALUE" then
    local s, msg = core.proto_decode("SingleColumnValueFilter", m.filter)
    if not s then return invalid("filter: " .. msg) end
    local v, m2, c2 = pb.decode_value(s.column_value)
    if v == nil then return nil, m2, c2 end
    return { column = s.column_name, comparator = s.comparator:sub(4), value = v,
             pass_if_missing = not s.filter_if_missing, latest_version_only = s.latest_version_only }
  elseif t == "FT_COMPOSITE_COLUMN_VALUE" then
    local c, msg = core.proto_decode("CompositeColumnValueFilter", m.filter)
    if not c then return invalid("filter: " .. msg) end
    local conds = {}
    for i, sub in ipairs(c.sub_filters or {}) do
      local f, m2, c2 = filter_from(sub, depth + 1)
      if not f then return nil, m2, c2 end
      conds[i] = f
    end
    return { logical = c.combinator:sub(4), conditions = conds }
  elseif t == "FT_COLUMN_PAGINATION" then
    local p, msg = core.proto_decode("ColumnPaginationFilter", m.filter)
    if not p then return invalid("filter: " .. msg) end
    return { pagination = { offset = p.offset, limit = p.limit } }
  end
  return invalid("unsupported filter type " .. tostring(t))
end

local function decode_filter(bytes)
  local m, msg = core.proto_decode("Filter", bytes)
  if not m then return invalid("filter: " .. msg) end
  return filter_from(m, 0)
end

local EXIST = { IGNORE = true, EXPECT_EXIST = true, EXPECT_NOT_EXIST = true }

-- the messages of the plain conditions, shared (proto_encode only reads them)
local PLAIN_COND = { IGNORE = { row_existence = "IGNORE" }, EXPECT_EXIST = { row_existence = "EXPECT_EXIST" },
                     EXPECT_NOT_EXIST = { row_existence = "EXPECT_NOT_EXIST" } }

local function encode_condition(c)
  if c == nil then return PLAIN_COND.IGNORE end
  if type(c) == "string" then
    if not EXIST[c] then return invalid("condition must be IGNORE, EXPECT_EXIST or EXPECT_NOT_EXIST, got " .. c) end
    return PLAIN_COND[c]
  end
  if type(c) ~= "table" then return invalid("condition must be a string or a table") end
  local re = c.row_existence or "IGNORE"
  if not EXIST[re] then return invalid("condition.row_existence must be IGNORE, EXPECT_EXIST or EXPECT_NOT_EXIST, got " .. tostring(re)) end
  local out = { row_existence = re }
  if c.column_condition ~= nil then
    local b, msg, code = encode_filter(c.column_condition)
    if not b then return nil, msg, code end
    out.column_condition = b
  end
  return out
end

local function decode_condition(m)
  if m.column_condition == nil then return m.row_existence end
  local cc, msg, code = decode_filter(m.column_condition)
  if not cc then return nil, msg, code end
  return { row_existence = m.row_existence, column_condition = cc }
end

local RT = { RT_NONE = true, RT_PK = true, RT_AFTER_MODIFY = true }

local function encode_return(req)
  local rt, names = req.return_type, req.return_column_names
  if rt == nil and names == nil then return nil end
  if rt ~= nil and not RT[rt] then return invalid("return_type must be RT_NONE, RT_PK or RT_AFTER_MODIFY, got " .. tostring(rt)) end
  return { return_type = rt, return_column_names = names }
end

local function decode_return(m, req)
  local rc = m.return_content
  if rc then req.return_type, req.return_column_names = rc.return_type, rc.return_column_names end
end

--- filter.encode(f) -> bytes of the Filter message | nil, msg, code: f a
-- store filter ({column =, comparator =, value = [, pass_if_missing =,
-- latest_version_only =]}, {logical =, conditions =}, or {pagination =}).
filter.encode = encode_filter
--- filter.decode(bytes) -> the store filter | nil, msg, code.
filter.decode = decode_filter
--- filter.encode_condition(c) -> the Condition message | nil, msg, code:
-- c nil, a row existence string, or {row_existence =, column_condition =}.
filter.encode_condition = encode_condition
--- filter.decode_condition(m) -> the store condition | nil, msg, code.
filter.decode_condition = decode_condition
--- filter.encode_return(req) -> the ReturnContent message | nil (none) |
-- nil, msg, code: from req.return_type and req.return_column_names.
filter.encode_return = encode_return
--- filter.decode_return(m, req): sets req.return_type and
-- req.return_column_names from the message's return content.
filter.decode_return = decode_return

return filter
