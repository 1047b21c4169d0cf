--- otskit.store.write -- single-row writes: validated plans, applied
-- inside or outside a transaction; cell versions, AUTO_INCREMENT keys and
-- the returned row (return_type).
local base = require "otskit.store.base"
local keycodec = require "otskit.key"
local values = require "otskit.store.values"
local condition = require "otskit.store.condition"
local schema = require "otskit.store.schema"
local txn = require "otskit.store.txn"
local purge = require "otskit.store.purge"
local dberr = txn.dberr
local pack = keycodec.pack
local pk_size, pk_out, parse_columns, is_ts = schema.pk_size, schema.pk_out, schema.parse_columns, schema.is_ts
local DB, L, AUTO = base.DB, base.LIMITS, base.AUTO_INCREMENT
local invalid, check_req, valid_name, ceil_cu, consumed, now_ms =
  base.invalid, base.check_req, base.valid_name, base.ceil_cu, base.consumed, base.now_ms

local write = {}

local PUT_EXIST = nil
local DEL_EXIST = { IGNORE = true, EXPECT_EXIST = true }
local COMMON = { "primary_key", "condition", "return_type" }
local FIELDS, BATCH_FIELDS = {}, {}
for kind, extra in pairs({ PUT = { "columns", "return_column_names" }, UPDATE = { "update", "return_column_names" },
                           DELETE = {} }) do
  local f, b = base.set(COMMON), base.set(COMMON)
  for _, k in ipairs(extra) do f[k], b[k] = true, true end
  f.table, b.type = true, true
  FIELDS[kind], BATCH_FIELDS[kind] = f, b
end
local OP = { PUT = "put_row", UPDATE = "update_row", DELETE = "delete_row" }
local HUGE_VERSIONS = 2147483647

-- return_type and return_column_names -> ret, names (set or nil) | nil, msg, code
local function parse_return(row, kind)
  local rt = row.return_type
  if rt == "RT_NONE" then rt = nil end
  if rt ~= nil and rt ~= "RT_PK" and rt ~= "RT_AFTER_MODIFY" then
    return invalid("return_type must be RT_NONE, RT_PK or RT_AFTER_MODIFY, got " .. tostring(rt))
  end
  if rt == "RT_AFTER_MODIFY" and kind == "DELETE" then return invalid("return_type RT_AFTER_MODIFY is not supported by DeleteRow") end
  local rn, names = row.return_column_names, nil
  if rn ~= nil then
    if rt ~= "RT_AFTER_MODIFY" then return invalid("return_column_names needs return_type RT_AFTER_MODIFY") end
    if type(rn) ~= "table" then return invalid("return_column_names must be a list of column names") end
    names = {}
    for _, n in ipairs(rn) do
      if not valid_name(n) then return invalid("bad column name in return_column_names: " .. tostring(n)) end
      names[n] = true
    end
  end
  return rt or false, names
end

-- a written timestamp must lie within max_time_deviation of the clock
local function check_ts(t, ts, now)
  if ts < now - t.dev_ms or ts > now + t.dev_ms then
    return invalid(("timestamp %s is more than max_time_deviation (%d s) away from the store's clock (%s)")
      :format(values.int_text(ts), math.floor(t.dev_ms / 1000), values.int_text(now)))
  end
  return true
end

-- the checks every write shares -> vals, cond, ret, ret_names | nil, msg, code
function DB:_plan_common(t, row, kind, batch, allowed_exist)
  local ok, m0, c0 = base.known(row, (batch and BATCH_FIELDS or FIELDS)[kind], batch and "batch_write_row" or OP[kind])
  if not ok then return nil, m0, c0 end
  local vals, msg, code = self:_pk_values(t, row.primary_key, kind ~= "DELETE" and "auto" or nil)
  if not vals then return nil, msg, code end
  local cond, m2, c2 = condition.parse(row.condition, allowed_exist, t.pknames)
  if not cond then return nil, m2, c2 end
  if t.auto and vals[t.auto] == AUTO and condition.needs_row(cond) then
    return invalid("a write that generates an AUTO_INCREMENT value takes no condition (row_existence IGNORE)")
  end
  local ret, rnames = parse_return(row, kind)
  if ret == nil then return nil, rnames, "OTSParameterInvalid" end
  return vals, cond, ret, rnames
end

function DB:_plan_put(t, row, batch)
  local vals, cond, ret, rnames = self:_plan_common(t, row, "PUT", batch, PUT_EXIST)
  if not vals then return nil, cond, ret end
  local names, types, cv, tss, csize = parse_columns(t, row.columns or {}, "columns")
  if not names then return nil, types, cv end
  local now = now_ms(self)
  if tss then
    for i = 1, #names do
      local ts = tss[i]
      if ts then
        local ok, m, c = check_ts(t, ts, now)
        if not ok then return nil, m, c end
      end
    end
  end
  local size = pk_size(t, vals) + csize
  if size > L.row_bytes then return invalid("row is " .. size .. " bytes, larger than 4 MB") end
  local blob, bad = values.encode(names, types, cv, tss, now) -- cells without ts: now
  if not blob then return invalid("column '" .. names[bad] .. "' is not valid UTF-8") end
  if tss then
    -- versions the table's settings hide are not stored (purge.lua); a
    -- row whose every cell is expired is stored as written: reads skip it
    local trimmed = purge.trim(blob, t.maxv, t.ttl_ms and now - t.ttl_ms or nil)
    if trimmed then blob = trimmed end
  end
  local plan = { kind = "PUT", vals = vals, cond = cond, size = size, blob = blob, ret = ret, ret_names = rnames }
  if not (t.auto and vals[t.auto] == AUTO) then plan.key = pack(vals) end
  if ret == "RT_AFTER_MODIFY" then
    local cells = {}
    for i = 1, #names do cells[i] = { names[i], cv[i], tss and tss[i] or now, types[i] } end
    plan.after = cells
  end
  return plan
end

local UPDATE_OPS = { PUT = true, DELETE = true, DELETE_ALL = true, INCREMENT = true }

function DB:_plan_update(t, row, batch)
  local vals, cond, ret, rnames = self:_plan_common(t, row, "UPDATE", batch, PUT_EXIST)
  if not vals then return nil, cond, ret end
  local up = row.update
  if type(up) ~= "table" then return invalid("update must be a table { PUT = ..., DELETE = ..., DELETE_ALL = ..., INCREMENT = ... }") end
  for k in pairs(up) do
    if not UPDATE_OPS[k] then return invalid("update operation must be PUT, DELETE, DELETE_ALL or INCREMENT, got " .. tostring(k)) end
  end
  local plan = { kind = "UPDATE", vals = vals, cond = cond, size = pk_size(t, vals), ret = ret, ret_names = rnames,
                 del1 = {}, delall = {}, touched = {} }
  local now = now_ms(self)
  local claimed, ncols = {}, 0
  -- a column takes part in one kind of operation per update
  local function claim(name, op)
    if not valid_name(name) then return invalid("bad column name: " .. tostring(name)) end
    if t.pknames[name] then return invalid("Duplicated attribute column name with primary key column: '" .. name .. "'.") end
    if claimed[name] and claimed[name] ~= op then
      return invalid("column '" .. name .. "' appears in both " .. claimed[name] .. " and " .. op .. " of one update")
    end
    if op ~= "PUT" and op ~= "DELETE" and claimed[name] then
      return invalid("column '" .. name .. "' appears twice in " .. op)
    end
    claimed[name] = op
    plan.touched[name] = true
    ncols = ncols + 1
    if ncols > L.columns_per_row then
      return invalid("The number of attribute columns exceeds the limit: " .. L.columns_per_row)
    end
    return true
  end
  if up.PUT ~= nil then
    local names, types, cv, tss, csize = parse_columns(t, up.PUT, "update.PUT")
    if not names then return nil, types, cv end
    tss = tss or {}
    for i, n in ipairs(names) do
      local ok, m, c = claim(n, "PUT")
      if not ok then return nil, m, c end
      if tss[i] then
        ok, m, c = check_ts(t, tss[i], now)
        if not ok then return nil, m, c end
      else
        tss[i] = now
      end
    end
    plan.put_names, plan.put_types, plan.put_vals, plan.put_ts = names, types, cv, tss
    plan.size = plan.size + csize
  end
  if up.DELETE ~= nil then
    if type(up.DELETE) ~= "table" then return invalid("update.DELETE must be a list of {name, ts}") end
    local seen = {}
    for i, d in ipairs(up.DELETE) do
      if type(d) ~= "table" or not is_ts(d[2]) then
        return invalid("update.DELETE[" .. i .. "] must be {name, ts} (one version); DELETE_ALL takes names")
      end
      local ok, m, c = claim(d[1], "DELETE")
      if not ok then return nil, m, c end
      local id = d[1] .. "@" .. values.int_text(d[2])
      if seen[id] then return invalid("update.DELETE names the version " .. id .. " twice") end
      seen[id] = true
      plan.del1[#plan.del1 + 1] = { d[1], d[2] }
      plan.size = plan.size + #d[1] + 8
    end
  end
  if up.DELETE_ALL ~= nil then
    if type(up.DELETE_ALL) ~= "table" then return invalid("update.DELETE_ALL must be a list of column names") end
    for _, n in ipairs(up.DELETE_ALL) do
      local ok, m, c = claim(n, "DELETE_ALL")
      if not ok then return nil, m, c end
      plan.delall[n] = true
      plan.size = plan.size + #n
    end
  end
  if up.INCREMENT ~= nil then
    local names, types, cv, tss = parse_columns(t, up.INCREMENT, "update.INCREMENT")
    if not names then return nil, types, cv end
    for i, n in ipairs(names) do
      if types[i] ~= "INTEGER" then return invalid("INCREMENT of '" .. n .. "' needs an INTEGER, got " .. types[i]) end
      if tss and tss[i] then return invalid("INCREMENT of '" .. n .. "' takes no timestamp") end
      local ok, m, c = claim(n, "INCREMENT")
      if not ok then return nil, m, c end
      plan.size = plan.size + #n + 8
    end
    plan.inc_names, plan.inc_vals = names, cv
  end
  if ncols == 0 then return invalid("UpdateRow needs at least one column operation (PUT, DELETE, DELETE_ALL or INCREMENT)") end
  plan.creates = plan.put_names ~= nil or plan.inc_names ~= nil
  plan.now = now
  if plan.size > L.row_bytes then return invalid("row is " .. plan.size .. " bytes, larger than 4 MB") end
  if not (t.auto and vals[t.auto] == AUTO) then plan.key = pack(vals) end
  return plan
end

function DB:_plan_delete(t, row, batch)
  local vals, cond, ret = self:_plan_common(t, row, "DELETE", batch, DEL_EXIST)
  if not vals then return nil, cond, ret end
  return { kind = "DELETE", key = pack(vals), cond = cond, size = pk_size(t, vals), ret = ret }
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

-- The next AUTO_INCREMENT value for the partition-key value of vals:
-- above the last one handed out (kept in the kv table "autoinc", so it
-- survives a reopen) and at least the clock in microseconds, as the
-- service's values grow with time.
function DB:_auto_value(t, vals)
  local h = self.h
  local ak = t.name .. "\0" .. pack({ vals[1] })
  -- read under the write lock every time: another connection may have
  -- handed out values since (a cached last value would repeat them)
  local s, err, ecode = h:get("autoinc", ak)
  if s == nil and err then return dberr(err, ecode) end
  local last = 0
  if s then
    last = s:match("^%d+$") and tonumber(s)
    if not last then return txn.damaged("an AUTO_INCREMENT counter is not a number") end
    if values.LUA54 then last = math.tointeger(last) or last end
  end
  local v = math.floor((self.clock() + self.offset) * 1e6)
  if v <= last then v = last + 1 end
  local ok, err2, ecode2 = h:put("autoinc", ak, values.int_text(v))
  if not ok then return dberr(err2, ecode2) end
  return v
end

-- a stored row's cells: the visible ones (within time_to_live, at most
-- max_versions per column), the newest of each column and its type
local function visible(t, old, now)
  local cut = t.ttl_ms and now - t.ttl_ms or nil
  local cols, types, _, kept, cells = values.decode(old, nil, true, cut, nil, t.maxv, true)
  if not cols then return nil, types end
  return cols, types, cells, kept
end

local function cell_less(a, b)
  if a[1] ~= b[1] then return a[1] < b[1] end
  return a[3] > b[3]
end

-- the update's cells after merging its operations into `cells`
local function merge_update(t, plan, cols, types, cells)
  local out, n = {}, 0
  local del1 = {}
  for _, d in ipairs(plan.del1) do del1[d[1] .. "@" .. values.int_text(d[2])] = true end
  -- a new cell replaces the version of the same column and timestamp
  local put = {}
  if plan.put_names then
    for i, name in ipairs(plan.put_names) do put[name .. "@" .. values.int_text(plan.put_ts[i])] = true end
  end
  if plan.inc_names then
    for _, name in ipairs(plan.inc_names) do put[name .. "@" .. values.int_text(plan.now)] = true end
  end
  for _, c in ipairs(cells or {}) do
    local id = c[1] .. "@" .. values.int_text(c[3])
    if not plan.delall[c[1]] and not del1[id] and not put[id] then
      n = n + 1
      out[n] = c
    end
  end
  if plan.put_names then
    for i, name in ipairs(plan.put_names) do
      n = n + 1
      out[n] = { name, plan.put_vals[i], plan.put_ts[i], plan.put_types[i] }
    end
  end
  if plan.inc_names then
    for i, name in ipairs(plan.inc_names) do
      local cur = cols and cols[name]
      if cur ~= nil and types[name] ~= "INTEGER" then
        return invalid("INCREMENT of '" .. name .. "': the column is " .. types[name] .. ", not INTEGER")
      end
      local r = int_add(cur or 0, plan.inc_vals[i])
      if r == nil then return invalid("INCREMENT of '" .. name .. "' overflows int64" .. (values.LUA54 and "" or " (or 2^53 on LuaJIT)")) end
      n = n + 1
      out[n] = { name, r, plan.now, "INTEGER" }
    end
  end
  -- keep the newest max_versions of each column
  table.sort(out, cell_less)
  local kept, k, prev, nv = {}, 0, nil, 0
  for i = 1, n do
    local c = out[i]
    if c[1] ~= prev then prev, nv = c[1], 0 end
    nv = nv + 1
    if nv <= t.maxv then k = k + 1; kept[k] = c end
  end
  return kept
end

local function encode_cells(cells)
  local names, tys, vs, tss = {}, {}, {}, {}
  for i, c in ipairs(cells) do names[i], vs[i], tss[i], tys[i] = c[1], c[2], c[3], c[4] end
  return values.encode(names, tys, vs, tss)
end

-- Applies a plan: reads the row if needed, checks the condition, writes.
-- -> accounting {key, drows, dbytes} | nil, msg, code. Fills plan.key
-- (a generated AUTO_INCREMENT value) and plan.after (RT_AFTER_MODIFY).
function DB:_apply(t, plan)
  local h = self.h
  local k = plan.key
  if k == nil then -- an AUTO_INCREMENT value to generate
    local v, err, ecode = self:_auto_value(t, plan.vals)
    if not v then return nil, err, ecode end
    local vals = {}
    for i = 1, #plan.vals do vals[i] = plan.vals[i] end
    vals[t.auto] = v
    k = pack(vals)
    plan.key = k
  end
  local parts = t.parts ~= nil
  if plan.kind == "PUT" and not condition.needs_row(plan.cond) then
    -- the common blind put: one C call reads the old size and writes
    local old, err, ecode = h:put(t.kv, k, plan.blob, parts)
    if old == nil then return dberr(err, ecode) end
    if not parts then return { k, 0, 0 } end
    return { k, old and 0 or 1, old and (#plan.blob - old) or (#k + #plan.blob) }
  end
  local need = condition.needs_row(plan.cond) or plan.kind == "UPDATE" or parts
  local old
  if need then
    local err, ecode
    old, err, ecode = h:get(t.kv, k)
    if old == nil and err then return dberr(err, ecode) end
  end
  local cols, types, cells, exists = nil, nil, nil, old ~= nil
  if old and (condition.needs_row(plan.cond) or plan.kind == "UPDATE") then
    local kept
    cols, types, cells, kept = visible(t, old, plan.now or now_ms(self))
    if not cols then return txn.damaged("a stored row: " .. tostring(types)) end
    exists = #old == 0 or kept > 0 -- a row whose every cell expired is gone
  end
  local ok, m, c = condition.check(plan.cond, exists, cols, types, cells)
  if not ok then return nil, m, c end
  local oldbytes = old and (#k + #old) or 0
  if plan.kind == "DELETE" then
    if not old and need then return { k, 0, 0 } end
    local done, err, ecode = h:delete(t.kv, k)
    if done == nil then return dberr(err, ecode) end
    return { k, (old or done) and -1 or 0, -oldbytes }
  end
  local blob = plan.blob
  if plan.kind == "UPDATE" then
    -- only deletes on a missing row: the service creates nothing
    if not exists and not plan.creates then return { k, 0, 0 } end
    local merged, m2, c2 = merge_update(t, plan, exists and cols or nil, types, exists and cells or nil)
    if not merged then return nil, m2, c2 end
    local bad
    blob, bad = encode_cells(merged)
    if not blob then return invalid("column '" .. merged[bad][1] .. "' is not valid UTF-8") end
    if plan.ret == "RT_AFTER_MODIFY" then plan.after = merged end
  end
  local done, err, ecode = h:put(t.kv, k, blob)
  if not done then return dberr(err, ecode) end
  return { k, old and 0 or 1, #k + #blob - oldbytes }
end

-- the row a write returns (return_type), or nil
function write.ret_row(t, plan)
  if not plan.ret then return nil end
  local row = { primary_key = pk_out(t, plan.key) }
  if plan.ret == "RT_PK" then row.columns = {}; return row end   -- as the wire decodes it
  local cells = plan.after or {}
  table.sort(cells, cell_less)
  local want = plan.ret_names or (plan.touched or nil)
  local cols, out, prev = {}, {}, nil
  for _, c in ipairs(cells) do
    if c[1] ~= prev and (want == nil or want[c[1]]) then
      cols[c[1]] = c[2]
      out[#out + 1] = { c[1], c[2], c[3], c[4] }
    end
    prev = c[1]
  end
  row.columns, row.cells = cols, out
  return row
end

function DB:_account(t, acct, defer)
  if t.parts and acct then t.parts:write(acct[1], acct[2], acct[3], defer) end
end

-- one single-row write operation
function DB:_write(op, kind, req)
  check_req(req, op)
  local lat, fail = self:_fault(op)
  if fail and not self.faults.applied then return nil, self.faults:message(), self.faults.code end
  local t, msg, code = self:_table(req.table)
  if not t then return nil, msg, code end
  local plan, m, c = PLAN[kind](self, t, req, false)
  if not plan then return nil, m, c end
  local acct, m2, c2 = self:_apply(t, plan)
  if not acct then return nil, m2, c2 end
  self:_account(t, acct)
  -- an applied fault: committed (DB:_txn), then reported
  if fail then return nil, self.faults:message(), self.faults.code, "commit" end
  local res = { consumed = consumed(condition.needs_row(plan.cond) and 1 or 0, ceil_cu(plan.size)), latency = lat }
  if plan.ret then res.row = write.ret_row(t, plan) end
  return res
end

--- db:put_row{ table, primary_key, columns = {c = v} | {{"c", v [, ts]}, ...},
-- condition, return_type, return_column_names } -> { consumed, row?, latency }
-- Replaces the whole row (every version of every column).
function DB:put_row(req) return self:_write("put_row", "PUT", req) end

--- db:update_row{ table, primary_key, update = { PUT = columns, DELETE =
-- {{name, ts}, ...}, DELETE_ALL = {names}, INCREMENT = {c = n} }, condition,
-- return_type, return_column_names }
-- Creates the row if missing (unless the condition forbids it, or the
-- update only deletes: then nothing is written).
function DB:update_row(req) return self:_write("update_row", "UPDATE", req) end

--- db:delete_row{ table, primary_key, condition } (IGNORE or EXPECT_EXIST)
function DB:delete_row(req) return self:_write("delete_row", "DELETE", req) end

----------------------------------------------------------------------
-- PutRow straight from its PlainBuffer row (for a server)

local from_put_pb = require("otskit.core").row.from_put_pb
local IGNORE = { exist = "IGNORE" }

-- inside the write transaction: false when this request is not one
-- put_pb answers (the general path decides and answers it)
local function put_pb(self, m)
  local t = self.tables[m.table_name]
  -- index tables, indexed tables and the local-transaction copy: their
  -- plans have more checks (maintain.lua, localtxn.lua)
  if t == nil or t.base or t.indexes or t.indexed or t.shadow or self._shadow then return false end
  local now = now_ms(self)
  local k, blob, size, any_ts = from_put_pb(m.row, t.pk, now, t.dev_ms, L.columns_per_row, L.cell, L.pk_cell,
    L.row_bytes)
  if not k then return false end
  if any_ts then
    -- as DB:_plan_put: versions the table's settings hide are not stored
    local trimmed = purge.trim(blob, t.maxv, t.ttl_ms and now - t.ttl_ms or nil)
    if trimmed then blob = trimmed end
  end
  local plan = { kind = "PUT", cond = IGNORE, size = size, blob = blob, ret = m.ret, key = k }
  local acct, m2, c2 = self:_apply(t, plan)
  if not acct then return nil, m2, c2 end
  self:_account(t, acct)
  local res = { consumed = consumed(0, ceil_cu(size)), latency = 0 }
  if plan.ret then res.row = write.ret_row(t, plan) end
  return res
end

--- db:put_row_pb(m) -> what db:put_row answers | false: m is a decoded
-- PutRowRequest message (otskit.wire.decode_message): its PlainBuffer row
-- goes into the stored key and row in C (core.row.from_put_pb) without a
-- Lua table per cell. Answers exactly what db:put_row answers for the same
-- request (spec/store_put_pb_spec.lua); false for what it does not
-- answer -- a condition other than IGNORE, a column condition, return_type
-- RT_AFTER_MODIFY or return column names, a transaction, injected faults,
-- indexed or index tables, and any row the C conversion does not take
-- (AUTO_INCREMENT, a bad or duplicate cell, a limit passed...): call
-- db:put_row with the decoded request instead. An error raised out of it
-- leaves its transaction open until db:_recover() (DB:_txn_open); a db
-- failure in the partition accounting (a split's write refused...) is
-- raised too, and otskit.store.txn's txn.failure(e) gives its nil, msg,
-- code (what db:put_row answers for it).
function DB:put_row_pb(m)
  if type(m) ~= "table" or type(m.table_name) ~= "string" or type(m.row) ~= "string" or self.faults
      or m.transaction_id ~= nil then
    return false
  end
  local c = m.condition
  if type(c) ~= "table" or (c.row_existence ~= "IGNORE" or c.column_condition ~= nil) then return false end
  local rc, ret = m.return_content, false
  if rc ~= nil then
    if rc.return_column_names ~= nil or (rc.return_type ~= nil and rc.return_type ~= "RT_NONE"
        and rc.return_type ~= "RT_PK") then
      return false
    end
    if rc.return_type == "RT_PK" then ret = "RT_PK" end
  end
  local t = self.tables[m.table_name]
  if t ~= nil and (t.base or t.indexes or t.indexed) then return false end -- (before the transaction)
  if self.h == nil then error("otskit.store: db is closed", 2) end
  -- no pcall (DB:_txn_open): a raise leaves the write open for db:_recover
  return self:_txn_open(true, put_pb, { table_name = m.table_name, row = m.row, ret = ret })
end

write.PLAN, write.HUGE_VERSIONS = PLAN, HUGE_VERSIONS
return write
