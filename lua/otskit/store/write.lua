--- otskit.store.write -- single-row writes: validated plans, applied inside or outside a transaction.
local base = require "otskit.store.base"
local keycodec = require "otskit.key"
local values = require "otskit.store.values"
local condition = require "otskit.store.condition"
local schema = require "otskit.store.schema"
local pack = keycodec.pack
local pk_size, pk_out, parse_columns = schema.pk_size, schema.pk_out, schema.parse_columns
local DB, L = base.DB, base.LIMITS
local invalid, check_req, valid_name, ceil_cu, consumed =
  base.invalid, base.check_req, base.valid_name, base.ceil_cu, base.consumed

local write = {}

local PUT_EXIST = nil
local DEL_EXIST = { IGNORE = true, EXPECT_EXIST = true }

function DB:_plan_put(t, row)
  local vals, msg, code = self:_pk_values(t, row.primary_key, false)
  if not vals then return nil, msg, code end
  local names, types, cv, csize = parse_columns(t, row.columns or {}, "columns")
  if not names then return nil, types, cv end
  local cond, m2, c2 = condition.parse(row.condition, PUT_EXIST)
  if not cond then return nil, m2, c2 end
  local size = pk_size(t, vals) + csize
  if size > L.row_bytes then return nil, "row is " .. size .. " bytes, larger than 4 MB", "OTSRequestBodyTooLarge" end
  return { kind = "PUT", key = pack(vals), cond = cond, size = size,
           blob = values.encode(names, types, cv), ret = row.return_type }
end

local UPDATE_OPS = { PUT = true, DELETE = true, DELETE_ALL = true, INCREMENT = true }

function DB:_plan_update(t, row)
  local vals, msg, code = self:_pk_values(t, row.primary_key, false)
  if not vals then return nil, msg, code end
  local up = row.update
  if type(up) ~= "table" then return invalid("update must be a table { PUT = ..., DELETE = ..., DELETE_ALL = ..., INCREMENT = ... }") end
  for k in pairs(up) do
    if not UPDATE_OPS[k] then return invalid("update operation must be PUT, DELETE, DELETE_ALL or INCREMENT, got " .. tostring(k)) end
  end
  local plan = { kind = "UPDATE", size = pk_size(t, vals), ret = row.return_type }
  local seen, ncols = {}, 0
  local function claim(name)
    if not valid_name(name) then return invalid("bad column name: " .. tostring(name)) end
    if t.pknames[name] then return invalid("column '" .. name .. "' is a primary key column") end
    if seen[name] then return invalid("column '" .. name .. "' appears twice in one update") end
    seen[name] = true
    ncols = ncols + 1
    if ncols > L.columns_per_row then
      return nil, "more than " .. L.columns_per_row .. " attribute columns in one row", "OTSOutOfColumnCountLimit"
    end
    return true
  end
  if up.PUT ~= nil then
    local names, types, cv, csize = parse_columns(t, up.PUT, "update.PUT")
    if not names then return nil, types, cv end
    for _, n in ipairs(names) do
      local ok, m, c = claim(n)
      if not ok then return nil, m, c end
    end
    plan.put_names, plan.put_types, plan.put_vals = names, types, cv
    plan.size = plan.size + csize
  end
  plan.del = {}
  for _, op in ipairs({ "DELETE", "DELETE_ALL" }) do
    local list = up[op]
    if list ~= nil then
      if type(list) ~= "table" then return invalid("update." .. op .. " must be a list of column names") end
      for _, n in ipairs(list) do
        if type(n) == "table" then n = n[1] end -- {name, timestamp}: one version per cell here
        local ok, m, c = claim(n)
        if not ok then return nil, m, c end
        plan.del[#plan.del + 1] = n
        plan.size = plan.size + #n
      end
    end
  end
  if up.INCREMENT ~= nil then
    local names, types, cv = parse_columns(t, up.INCREMENT, "update.INCREMENT")
    if not names then return nil, types, cv end
    for i, n in ipairs(names) do
      if types[i] ~= "INTEGER" then return invalid("INCREMENT of '" .. n .. "' needs an INTEGER, got " .. types[i]) end
      local ok, m, c = claim(n)
      if not ok then return nil, m, c end
      plan.size = plan.size + #n + 8
    end
    plan.inc_names, plan.inc_vals = names, cv
  end
  local cond, m2, c2 = condition.parse(row.condition, PUT_EXIST)
  if not cond then return nil, m2, c2 end
  if plan.size > L.row_bytes then return nil, "row is " .. plan.size .. " bytes, larger than 4 MB", "OTSRequestBodyTooLarge" end
  plan.key, plan.cond = pack(vals), cond
  return plan
end

function DB:_plan_delete(t, row)
  local vals, msg, code = self:_pk_values(t, row.primary_key, false)
  if not vals then return nil, msg, code end
  local cond, m2, c2 = condition.parse(row.condition, DEL_EXIST)
  if not cond then return nil, m2, c2 end
  return { kind = "DELETE", key = pack(vals), cond = cond, size = pk_size(t, vals), ret = row.return_type }
end

local PLAN = { PUT = DB._plan_put, UPDATE = DB._plan_update, DELETE = DB._plan_delete }

local function int_add(a, b)
  if values.LUA54 then
    local r = a + b
    -- int64 overflow wraps on 5.4: same sign in, other sign out
    if (a >= 0) == (b >= 0) and (r >= 0) ~= (a >= 0) then return nil end
    return r
  end
  if type(a) ~= "number" or type(b) ~= "number" then return nil end
  local r = a + b
  if r >= values.TWO53 or r <= -values.TWO53 then return nil end -- past 2^53 doubles round
  return r
end

-- Applies a plan: reads the row if needed, checks the condition, writes.
-- -> accounting {key, drows, dbytes} or false (nothing changed) | nil, msg, code
function DB:_apply(t, plan)
  local h = self.h
  local k = plan.key
  local parts = t.parts ~= nil
  if plan.kind == "PUT" and not condition.needs_row(plan.cond) then
    -- the common blind put: one C call reads the old size and writes
    local old, err = h:put(t.kv, k, plan.blob, parts)
    if old == nil then return nil, err, "OTSInternalServerError" end
    if not parts then return { k, 0, 0 } end
    return { k, old and 0 or 1, old and (#plan.blob - old) or (#k + #plan.blob) }
  end
  local need = condition.needs_row(plan.cond) or plan.kind == "UPDATE" or parts
  local old, cols, types
  if need then
    local err
    old, err = h:get(t.kv, k)
    if old == nil and err then return nil, err, "OTSInternalServerError" end
  end
  if plan.cond.exist ~= "IGNORE" or plan.cond.cc or plan.kind == "UPDATE" then
    if old then
      cols, types = values.decode(old, nil, true)
      if not cols then return nil, "stored row is corrupt: " .. types, "OTSInternalServerError" end
    end
    local ok, m, c = condition.check(plan.cond, old ~= nil, cols, types)
    if not ok then return nil, m, c end
  end
  local oldbytes = old and (#k + #old) or 0
  if plan.kind == "DELETE" then
    if not old and need then return { k, 0, 0 } end
    local ok, err = h:delete(t.kv, k)
    if ok == nil then return nil, err, "OTSInternalServerError" end
    return { k, (old or ok) and -1 or 0, -oldbytes }
  end
  local blob = plan.blob
  if plan.kind == "UPDATE" then
    cols, types = cols or {}, types or {}
    if plan.put_names then
      for i, n in ipairs(plan.put_names) do cols[n], types[n] = plan.put_vals[i], plan.put_types[i] end
    end
    for _, n in ipairs(plan.del) do cols[n], types[n] = nil, nil end
    if plan.inc_names then
      for i, n in ipairs(plan.inc_names) do
        local cur = cols[n]
        if cur ~= nil and types[n] ~= "INTEGER" then
          return invalid("INCREMENT of '" .. n .. "': the column is " .. types[n] .. ", not INTEGER")
        end
        local r = int_add(cur or 0, plan.inc_vals[i])
        if r == nil then return invalid("INCREMENT of '" .. n .. "' overflows int64" .. (values.LUA54 and "" or " (or 2^53 on LuaJIT)")) end
        cols[n], types[n] = r, "INTEGER"
      end
    end
    local names, tys, vs, i = {}, {}, {}, 0
    for n, v in pairs(cols) do i = i + 1; names[i], tys[i], vs[i] = n, types[n], v end
    blob = values.encode(names, tys, vs)
  end
  local ok, err = h:put(t.kv, k, blob)
  if not ok then return nil, err, "OTSInternalServerError" end
  return { k, old and 0 or 1, #k + #blob - oldbytes }
end

-- one single-row write operation
function DB:_write(op, kind, req)
  check_req(req, op)
  local lat, fail = self:_fault(op)
  if fail and not self.faults.applied then return nil, self.faults:message(), self.faults.code end
  local t, msg, code = self:_table(req.table)
  if not t then return nil, msg, code end
  local plan, m, c = PLAN[kind](self, t, req)
  if not plan then return nil, m, c end
  local acct, m2, c2 = self:_apply(t, plan)
  if not acct then return nil, m2, c2 end
  self:_account(t, acct)
  if fail then return nil, self.faults:message(), self.faults.code end
  local res = { consumed = consumed(condition.needs_row(plan.cond) and 1 or 0, ceil_cu(plan.size)), latency = lat }
  if plan.ret == "RT_PK" then res.row = { primary_key = pk_out(t, plan.key) } end
  return res
end

--- db:put_row{ table, primary_key, columns = {c = v} | {{"c", v}, ...},
-- condition, return_type = "RT_PK" } -> { consumed, row?, latency }
-- Replaces the whole row.
function DB:put_row(req) return self:_write("put_row", "PUT", req) end

--- db:update_row{ table, primary_key, update = { PUT = columns, DELETE =
-- {names}, DELETE_ALL = {names}, INCREMENT = {c = n} }, condition }
-- Creates the row if missing (unless the condition forbids it).
function DB:update_row(req) return self:_write("update_row", "UPDATE", req) end

--- db:delete_row{ table, primary_key, condition } (IGNORE or EXPECT_EXIST)
function DB:delete_row(req) return self:_write("delete_row", "DELETE", req) end

write.PLAN = PLAN
return write
