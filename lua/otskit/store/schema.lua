--- otskit.store.schema -- a request's primary keys and columns checked against the table schema.
local base = require "otskit.store.base"
local keycodec = require "otskit.key"
local values = require "otskit.store.values"
local pack, unpack = keycodec.pack, keycodec.unpack
local INF_MIN, INF_MAX = base.INF_MIN, base.INF_MAX
local DB, L = base.DB, base.LIMITS
local invalid, check_req, valid_name, ceil_cu, consumed =
  base.invalid, base.check_req, base.valid_name, base.ceil_cu, base.consumed

local schema = {}

local INF = { [INF_MIN] = true, [INF_MAX] = true }

-- The values of a primary key in schema order: pk is {{name, v}, ...} (the
-- SDK form) or {v1, v2, ...}. n: how many columns to expect (default all).
function DB:_pk_values(t, pk, allow_inf, n)
  if type(pk) ~= "table" then return invalid("primary_key must be a table") end
  n = n or t.npk
  if #pk ~= n then
    return invalid(("primary key of table %s has %d columns, got %d"):format(t.name, n, #pk))
  end
  local vals = {}
  for i = 1, n do
    local col, v = t.pk[i], pk[i]
    if type(v) == "table" and not INF[v] and not values.is_typed(v) then
      if v[1] ~= col.name then
        return invalid(("primary key column %d must be '%s', got '%s'"):format(i, col.name, tostring(v[1])))
      end
      v = v[2]
    end
    if INF[v] then
      if not allow_inf then return invalid("INF_MIN and INF_MAX are only allowed in get_range bounds") end
    else
      local ty, x = values.classify(v)
      if ty == "STRING" and col.type == "BINARY" then ty = "BINARY"
      elseif ty == "DOUBLE" and col.type == "INTEGER" and not values.is_typed(v)
          and x == math.floor(x) and x >= -2^63 and x < 2^63 then
        ty, x = "INTEGER", values.LUA54 and math.tointeger(x) or x -- 5.4: 2^40 is a float
      end
      if ty ~= col.type then
        return invalid(("primary key column '%s' must be %s, got %s"):format(col.name, col.type, ty or type(v)))
      end
      if ty == "INTEGER" and type(x) == "string" then
        x = keycodec.int(x) -- LuaJIT: an int64 beyond 2^53, as decimal text
      elseif ty ~= "INTEGER" and #x > L.pk_cell then
        return invalid(("primary key column '%s' is %d bytes, longer than %d"):format(col.name, #x, L.pk_cell))
      end
      v = x
    end
    vals[i] = v
  end
  return vals
end

-- the pk size for limits: names plus values
local function pk_size(t, vals)
  local n = 0
  for i, c in ipairs(t.pk) do
    local v = vals[i]
    n = n + #c.name + (c.type == "INTEGER" and 8 or #v)
  end
  return n
end

-- the encoded lower/upper bound of a get_range key with INF columns
local function bound_key(vals)
  local pre = {}
  for i = 1, #vals do
    local v = vals[i]
    if v == INF_MIN then return pack(pre) end
    if v == INF_MAX then return pack(pre) .. "\255" end -- above every tuple type code
    pre[i] = v
  end
  return pack(pre)
end

local function pk_out(t, k)
  local vals = unpack(k)
  local out = {}
  for i, c in ipairs(t.pk) do
    local v = vals[i]
    if type(v) == "table" then v = tostring(v) end -- LuaJIT int64 beyond 2^53: decimal text
    out[i] = { c.name, v }
  end
  return out
end

-- Attribute columns to write: {c = v} or {{"c", v}, ...}.
-- -> names, types, vals, size | nil, msg, code
local function parse_columns(t, cols, what)
  if type(cols) ~= "table" then return invalid(what .. " must be a table") end
  local names, types, vals, size, seen, n = {}, {}, {}, 0, {}, 0
  for k, v in pairs(cols) do
    local name, val = k, v
    if type(k) == "number" then
      if type(v) ~= "table" then return invalid(what .. "[" .. k .. "] must be {name, value}") end
      name, val = v[1], v[2]
    end
    if not valid_name(name) then return invalid("bad column name: " .. tostring(name)) end
    if t.pknames[name] then return invalid("column '" .. name .. "' is a primary key column") end
    if seen[name] then return invalid("duplicate column: " .. name) end
    seen[name] = true
    local ty, x = values.classify(val)
    if not ty then return invalid("column '" .. name .. "': " .. tostring(x)) end
    local sz = values.size(ty, x)
    if (ty == "STRING" or ty == "BINARY") and sz > L.cell then
      return invalid(("column '%s' is %d bytes, longer than %d"):format(name, sz, L.cell))
    end
    n = n + 1
    if n > L.columns_per_row then
      return nil, "more than " .. L.columns_per_row .. " attribute columns in one row", "OTSOutOfColumnCountLimit"
    end
    names[n], types[n], vals[n] = name, ty, x
    size = size + #name + sz
  end
  return names, types, vals, size
end

-- columns_to_get -> set of names, or nil for all
local function parse_get_columns(t, cols)
  if cols == nil then return nil end
  if type(cols) ~= "table" then return invalid("columns must be a list of names") end
  if #cols > L.columns_to_get then return invalid("more than " .. L.columns_to_get .. " columns to get") end
  if #cols == 0 then return nil end
  local set = {}
  for _, c in ipairs(cols) do
    if not valid_name(c) then return invalid("bad column name: " .. tostring(c)) end
    if not t.pknames[c] then set[c] = true end
  end
  return set
end

schema.pk_size, schema.bound_key, schema.pk_out = pk_size, bound_key, pk_out
schema.parse_columns, schema.parse_get_columns = parse_columns, parse_get_columns
return schema
