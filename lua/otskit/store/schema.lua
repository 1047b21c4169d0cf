--- otskit.store.schema -- a request's primary keys, columns and read
-- options checked against the table schema.
local base = require "otskit.store.base"
local keycodec = require "otskit.key"
local values = require "otskit.store.values"
local condition = require "otskit.store.condition"
local key_vals = require("otskit.store.txn").key_vals
local pack, unpack = keycodec.pack, keycodec.unpack
local INF_MIN, INF_MAX, AUTO = base.INF_MIN, base.INF_MAX, base.AUTO_INCREMENT
local DB, L = base.DB, base.LIMITS
local invalid, valid_name = base.invalid, base.valid_name
local utf8_ok = require("otskit.core").row.utf8

local schema = {}

local INF = { [INF_MIN] = true, [INF_MAX] = true }
-- the service's names of value types, in its OTSInvalidPK messages
local VT = { INTEGER = "VT_INTEGER", STRING = "VT_STRING", BINARY = "VT_BLOB", DOUBLE = "VT_DOUBLE",
             BOOLEAN = "VT_BOOLEAN" }

local function bad_pk(msg) return nil, msg, "OTSInvalidPK" end

-- key column i of pk into vals[i] -> true | nil, msg, code (see DB:_pk_values)
local function pk_value(t, pk, allow, vals, i)
  local col, v = t.pk[i], pk[i]
  if type(v) == "table" and not INF[v] and v ~= AUTO and not values.is_typed(v) then
    if v[1] ~= col.name then
      return bad_pk(("Validate PK name fail. Input: %s, Meta: %s."):format(tostring(v[1]), col.name))
    end
    local tag
    v, tag = v[2], v[3]
    if tag ~= nil and not INF[v] and v ~= AUTO then
      local why
      v, why = values.retype(v, tag)
      if v == nil then return invalid(("primary key column '%s': %s"):format(col.name, why)) end
    end
  end
  if INF[v] then
    if allow ~= "inf" then return invalid("INF_MIN and INF_MAX are only allowed in get_range bounds") end
  elseif v == AUTO then
    if allow ~= "auto" or not col.auto then
      return invalid(("AUTO_INCREMENT is only allowed in writes, in the table's AUTO_INCREMENT column (not '%s')"):format(col.name))
    end
  else
    local ty, x = values.classify(v)
    if ty == "STRING" and col.type == "BINARY" then ty = "BINARY"
    elseif ty == "DOUBLE" and col.type == "INTEGER" and not values.is_typed(v)
        and x == math.floor(x) and x >= -2^63 and x < 2^63 then
      ty, x = "INTEGER", values.LUA54 and math.tointeger(x) or x -- 5.4: 2^40 is a float
    end
    if ty ~= col.type then
      if ty == nil then return invalid(("primary key column '%s': %s"):format(col.name, tostring(x))) end
      return bad_pk(("Validate PK type fail. Input: %s, Meta: %s."):format(VT[ty], VT[col.type]))
    end
    if ty == "INTEGER" and type(x) == "string" then
      x = keycodec.int(x) -- LuaJIT: an int64 beyond 2^53, as decimal text
    elseif ty ~= "INTEGER" and #x > L.pk_cell then
      return invalid(("primary key column '%s' is %d bytes, longer than %d"):format(col.name, #x, L.pk_cell))
    elseif ty == "STRING" and not utf8_ok(x) then
      return invalid(("primary key column '%s' is not valid UTF-8"):format(col.name))
    end
    v = x
  end
  vals[i] = v
  return true
end

-- The values of a primary key in schema order: pk is {{name, v [, type]},
-- ...} (the SDK form; type: the tag of a key read back, see
-- otskit.values.key_cell, which v must have) or {v1, v2, ...}. n: how many columns to expect (default all).
-- allow: nil, "inf" (get_range bounds) or "auto" (writes: AUTO_INCREMENT
-- in the table's AUTO_INCREMENT column). The service's codes and messages:
-- OTSInvalidPK for a key of the wrong size, names or types.
function DB:_pk_values(t, pk, allow, n)
  if type(pk) ~= "table" then return invalid("primary_key must be a table") end
  n = n or t.npk
  if #pk ~= n then
    return bad_pk(("Validate PK size fail. Input: %d, Meta: %d."):format(#pk, n))
  end
  local vals = {}
  -- 1 to 4 columns, unrolled: a loop that runs once per request is where
  -- LuaJIT starts a trace it then aborts ("leaving loop in root trace")
  local ok, m, c = pk_value(t, pk, allow, vals, 1)
  if ok and n > 1 then ok, m, c = pk_value(t, pk, allow, vals, 2) end
  if ok and n > 2 then ok, m, c = pk_value(t, pk, allow, vals, 3) end
  if ok and n > 3 then ok, m, c = pk_value(t, pk, allow, vals, 4) end
  for i = 5, n do
    if not ok then break end
    ok, m, c = pk_value(t, pk, allow, vals, i)
  end
  if not ok then return nil, m, c end
  return vals
end

-- the pk size for limits: names plus values (an AUTO_INCREMENT value: 8)
local function pk_size(t, vals)
  local n = 0
  for i, c in ipairs(t.pk) do
    local v = vals[i]
    n = n + #c.name + ((c.type == "INTEGER" or v == AUTO) and 8 or #v)
  end
  return n
end

-- the encoded lower/upper bound of a get_range key with INF columns
local function bound_key(vals)
  local n = #vals
  local pre, inf
  if n > 4 then
    pre = {}
    for i = 1, n do
      local v = vals[i]
      if INF[v] then inf = v; break end
      pre[i] = v
    end
  else
    -- 1 to 4 columns, unrolled: a loop that runs once per range read is
    -- where LuaJIT starts a trace it then aborts
    local v1, v2, v3, v4 = vals[1], vals[2], vals[3], vals[4]
    if n < 1 then pre = {}
    elseif INF[v1] then pre, inf = {}, v1
    elseif n < 2 then pre = { v1 }
    elseif INF[v2] then pre, inf = { v1 }, v2
    elseif n < 3 then pre = { v1, v2 }
    elseif INF[v3] then pre, inf = { v1, v2 }, v3
    elseif n < 4 then pre = { v1, v2, v3 }
    elseif INF[v4] then pre, inf = { v1, v2, v3 }, v4
    else pre = { v1, v2, v3, v4 } end
  end
  local b = pack(pre)
  if inf == INF_MAX then b = b .. "\255" end -- above every tuple type code
  -- (not `return pack(pre)`: a root trace started here that returns
  -- through the tail-called packer aborts, "leaving loop in root trace")
  return b
end

-- key column c's value v as read back: {name, value [, type]}
local function key_out(c, v)
  if type(v) == "table" then v = tostring(v) end -- LuaJIT int64 beyond 2^53: decimal text
  return values.key_cell(c.name, c.type, v)      -- tagged as otskit.wire decodes it
end

-- the primary key of key k as {{name, value}, ...}; nil when k (read
-- from the file) does not match the table's key schema
local function pk_out(t, k)
  local vals = key_vals(t, k)
  if not vals then return nil end
  -- 1 to 4 columns, unrolled (no one-iteration loop for LuaJIT to abort a trace on)
  local pk, n = t.pk, t.npk
  local out = { key_out(pk[1], vals[1]) }
  if n > 1 then
    out[2] = key_out(pk[2], vals[2])
    if n > 2 then
      out[3] = key_out(pk[3], vals[3])
      if n > 3 then out[4] = key_out(pk[4], vals[4]) end
    end
  end
  return out
end

local function is_ts(v)
  return type(v) == "number" and v >= 0 and v < 2^63 and v == math.floor(v)
end
schema.is_ts = is_ts

-- Attribute cells to write: {c = v} or {{"c", v [, ts]}, ...}.
-- -> names, types, vals, tss (nil when no cell gives a ts, else ts or
-- false per cell), size | nil, msg, code
local function parse_columns(t, cols, what)
  if type(cols) ~= "table" then return invalid(what .. " must be a table") end
  local names, types, vals, tss, size, seen, n = {}, {}, {}, nil, 0, {}, 0
  for k, v in pairs(cols) do
    local name, val, ts = k, v, false
    if type(k) == "number" then
      if type(v) ~= "table" then return invalid(what .. "[" .. k .. "] must be {name, value [, ts]}") end
      name, val, ts = v[1], v[2], v[3]
      if ts == nil then ts = false
      elseif not is_ts(ts) then return invalid(what .. "[" .. k .. "]: timestamp must be an integer >= 0 (ms)") end
    end
    if not valid_name(name) then return invalid("bad column name: " .. tostring(name)) end
    if t.pknames[name] then return invalid("Duplicated attribute column name with primary key column: '" .. name .. "'.") end
    local id = ts and name .. "@" .. ts or name
    if seen[id] then return invalid("duplicate column: " .. name) end
    seen[id] = true
    local ty, x = values.classify(val)
    if not ty then return invalid("column '" .. name .. "': " .. tostring(x)) end
    local sz = values.size(ty, x)
    if ty == "STRING" or ty == "BINARY" then
      if sz > L.cell then return invalid(("column '%s' is %d bytes, longer than %d"):format(name, sz, L.cell)) end
      -- (STRING values are checked for UTF-8 by the encoder, in the same pass)
    end
    n = n + 1
    if n > L.columns_per_row then
      return invalid("The number of attribute columns exceeds the limit: " .. L.columns_per_row)
    end
    names[n], types[n], vals[n] = name, ty, x
    if ts then
      if not tss then
        tss = {}
        for j = 1, n - 1 do tss[j] = false end
      end
      tss[n] = ts
    elseif tss then
      tss[n] = false
    end
    size = size + #name + sz
  end
  return names, types, vals, tss, size
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

schema.READ_OPTIONS = { "columns", "max_versions", "time_range", "filter", "start_column", "end_column" }

-- The read options of a get_row / get_range / batch_get_row table entry
-- -> o | nil, msg, code. o: want (set or nil), lo, hi (ts range, ms),
-- maxv, filter (parsed), pagination, start_col, end_col, simple (the C
-- decode alone gives the answer), and whether nothing at all was asked
-- beyond the defaults (plain: a row with no cells is returned).
function DB:_read_opts(t, req)
  local want, m, c = parse_get_columns(t, req.columns)
  if m then return nil, m, c end
  local o = { want = want, plain = want == nil, simple = true }
  local mv, tr = req.max_versions, req.time_range
  if mv ~= nil then
    if type(mv) ~= "number" or mv < 1 or mv ~= math.floor(mv) or mv > 2147483647 then
      return invalid("max_versions must be an integer 1..2147483647, got " .. tostring(mv))
    end
  end
  local lo, hi
  if tr ~= nil then
    if type(tr) ~= "table" then return invalid("time_range must be { start, stop } or { specific = ts }") end
    if tr.specific ~= nil then
      if tr[1] ~= nil or tr[2] ~= nil or not is_ts(tr.specific) then
        return invalid("time_range { specific = ts } takes one integer ts >= 0 and nothing else")
      end
      lo, hi = tr.specific, tr.specific + 1
    else
      lo, hi = tr[1] or tr.start, tr[2] or tr.stop
      if not is_ts(lo) or not is_ts(hi) or lo >= hi then
        return invalid("time_range must be { start, stop } with integers 0 <= start < stop (ms)")
      end
    end
    o.plain = false
  end
  -- without max_versions a time_range returns every version in it
  local maxv = mv or (tr ~= nil and t.maxv) or 1
  if maxv > t.maxv then maxv = t.maxv end
  if t.ttl_ms then
    local cut = base.now_ms(self) - t.ttl_ms
    if lo == nil or lo < cut then lo = cut end
  end
  o.lo, o.hi, o.maxv = lo, hi, maxv
  local sc, ec = req.start_column, req.end_column
  if sc ~= nil or ec ~= nil then
    if (sc ~= nil and not valid_name(sc)) or (ec ~= nil and not valid_name(ec)) then
      return invalid("start_column / end_column must be column names")
    end
    o.start_col, o.end_col, o.simple, o.plain = sc, ec, false, false
  end
  local f = req.filter
  if f ~= nil then
    if type(f) ~= "table" then return invalid("filter must be a table") end
    if f.pagination ~= nil then
      local p = f.pagination
      for k in pairs(f) do
        if k ~= "pagination" then return invalid("filter: a pagination filter takes nothing but pagination, got '" .. tostring(k) .. "'") end
      end
      if type(p) ~= "table" then return invalid("filter.pagination must be { offset =, limit = }") end
      local off, lim = p.offset or 0, p.limit
      if type(off) ~= "number" or off < 0 or off ~= math.floor(off)
          or type(lim) ~= "number" or lim < 1 or lim ~= math.floor(lim) then
        return invalid("filter.pagination needs integers offset >= 0 and limit >= 1")
      end
      for k in pairs(p) do
        if k ~= "offset" and k ~= "limit" then return invalid("filter.pagination: unsupported option '" .. tostring(k) .. "'") end
      end
      o.page_off, o.page_lim, o.simple = off, lim, false
    else
      local cc, m2, c2 = condition.parse_filter(f, t.pknames)
      if not cc then return nil, m2, c2 end
      o.filter = cc
      if condition.all_versions(cc) then o.simple = false end
    end
  end
  return o
end

schema.pk_size, schema.bound_key, schema.pk_out = pk_size, bound_key, pk_out
schema.parse_columns, schema.parse_get_columns = parse_columns, parse_get_columns
return schema
