--- otskit.store.batch -- BatchGetRow and BatchWriteRow.
local base = require "otskit.store.base"
local keycodec = require "otskit.key"
local schema = require "otskit.store.schema"
local write = require "otskit.store.write"
local read = require "otskit.store.read"
local dberr = require("otskit.store.txn").dberr
local pack = keycodec.pack
local PLAN, row_out = write.PLAN, read.row_out
local DB, L = base.DB, base.LIMITS
local invalid, check_req, ceil_cu, consumed = base.invalid, base.check_req, base.ceil_cu, base.consumed

local batch = {}


local BGET_FIELDS = base.set{ "table", "primary_keys" }
for _, k in ipairs(schema.READ_OPTIONS) do BGET_FIELDS[k] = true end
local BWRITE_FIELDS = base.set{ "table", "rows" }
local TABLES_FIELD = base.set{ "tables" }

--- db:batch_get_row{ tables = {{ table, primary_keys = {pk, ...}, columns,
-- max_versions, time_range, filter, start_column, end_column }} }
-- -> { tables = {{ table, rows = {{ ok = true, row = row|nil, consumed } |
-- { ok = false, code, message }} }} }: at most 100 rows in all. A bad key
-- fails its row alone (OTSInvalidPK / OTSParameterInvalid), as on the
-- service; a bad table or option fails the request.
function DB:batch_get_row(req)
  check_req(req, "batch_get_row")
  local lat, fail = self:_fault("batch_get_row")
  if fail then return nil, self.faults:message(), self.faults.code end
  local okf, mf, cf = base.known(req, TABLES_FIELD, "batch_get_row")
  if not okf then return nil, mf, cf end
  if type(req.tables) ~= "table" or #req.tables == 0 then return invalid("No row specified in the request of BatchGetRow.") end
  local total, plans = 0, {}
  for i, spec in ipairs(req.tables) do
    if type(spec) ~= "table" then return invalid("tables[" .. i .. "] must be a table") end
    local okt, mt, ct = base.known(spec, BGET_FIELDS, "batch_get_row tables[" .. i .. "]")
    if not okt then return nil, mt, ct end
    local t, msg, code = self:_table(spec.table)
    if not t then return nil, msg, code end
    local o, m2, c2 = self:_read_setup(t, spec)
    if not o then return nil, m2, c2 end
    if type(spec.primary_keys) ~= "table" then return invalid("tables[" .. i .. "].primary_keys must be a list") end
    if #spec.primary_keys == 0 then return invalid("No row specified in the request of BatchGetRow.") end
    local keys, seen = {}, {}
    for j, pk in ipairs(spec.primary_keys) do
      local vals, m, c = self:_pk_values(t, pk)
      if not vals then
        keys[j] = { err = m, code = c }
      else
        local k = pack(vals)
        if seen[k] then return invalid("Duplicated primary key in tables[" .. i .. "]: primary_keys " .. seen[k] .. " and " .. j) end
        seen[k] = j
        keys[j] = k
      end
    end
    total = total + #keys
    plans[i] = { t = t, keys = keys, o = o }
  end
  if total > L.batch_get_rows then return invalid("Rows count exceeds the upper limit: " .. L.batch_get_rows) end
  local out = {}
  for i, p in ipairs(plans) do
    local rows = {}
    for j, k in ipairs(p.keys) do
      if type(k) == "table" then
        rows[j] = { ok = false, code = k.code, message = k.err }
      elseif self.faults and self.faults:row_fails("batch_get_row") then
        rows[j] = { ok = false, code = self.faults.code, message = self.faults:message() }
      else
        local blob, err, ecode = self.h:get(p.t.kv, k)
        if blob == nil and err then
          local _, m, c = dberr(err, ecode)
          if c == "OTSServerBusy" then return nil, m, c end
          rows[j] = { ok = false, code = c, message = m }
        else
          if p.t.parts then p.t.parts:read(k) end
          local row, size = false, 0
          if blob then row, size = row_out(p.t, k, blob, p.o) end
          if row == nil then rows[j] = { ok = false, code = "OTSInternalServerError", message = size }
          else rows[j] = { ok = true, row = row or nil, consumed = consumed(ceil_cu(size), 0) } end
        end
      end
    end
    out[i] = { table = p.t.name, rows = rows }
  end
  return { tables = out, latency = lat }
end

--- db:batch_write_row{ tables = {{ table, rows = {{ type = "PUT" | "UPDATE"
-- | "DELETE", primary_key, columns | update, condition, return_type,
-- return_column_names }, ...} }} } -> { tables = {{ table, rows = {{ ok =
-- true, consumed, row? } | { ok = false, code, message }} }}, failed = n }. At most 200 rows and 4 MB in all; a row
-- may fail alone (its data unchanged) while the others are written; a
-- request-level error writes nothing.
function DB:batch_write_row(req)
  check_req(req, "batch_write_row")
  local lat, fail = self:_fault("batch_write_row")
  local f = self.faults
  if fail and not f.applied then return nil, f:message(), f.code end
  local okf, mf, cf = base.known(req, TABLES_FIELD, "batch_write_row")
  if not okf then return nil, mf, cf end
  if type(req.tables) ~= "table" or #req.tables == 0 then return invalid("No row is specified in BatchWriteRow.") end
  local total, size, specs = 0, 0, {}
  for i, spec in ipairs(req.tables) do
    if type(spec) ~= "table" then return invalid("tables[" .. i .. "] must be a table") end
    local okt, mt, ct = base.known(spec, BWRITE_FIELDS, "batch_write_row tables[" .. i .. "]")
    if not okt then return nil, mt, ct end
    local t, msg, code = self:_table(spec.table)
    if not t then return nil, msg, code end
    if type(spec.rows) ~= "table" then return invalid("tables[" .. i .. "].rows must be a list") end
    if #spec.rows == 0 then return invalid("No operation is specified for table: '" .. t.name .. "'.") end
    total = total + #spec.rows
    if total > L.batch_write_rows then return invalid("Rows count exceeds the upper limit: " .. L.batch_write_rows) end
    local plans = {}
    for j, row in ipairs(spec.rows) do
      if type(row) ~= "table" then return invalid(("tables[%d].rows[%d] must be a table"):format(i, j)) end
      local mk = PLAN[row.type]
      local plan, m, c
      if not mk then
        m, c = "row type must be PUT, UPDATE or DELETE, got " .. tostring(row.type), "OTSParameterInvalid"
      else
        plan, m, c = mk(self, t, row, true)
      end
      if plan then size = size + plan.size end
      plans[j] = plan or { err = m, code = c }
    end
    specs[i] = { t = t, plans = plans }
  end
  if size > L.request_bytes then return invalid("request is " .. size .. " bytes, larger than 4 MB") end
  -- the whole batch is one transaction (DB:_txn): a request-level error
  -- rolls every row back
  local out, accts, failed = {}, {}, 0
  for i, s in ipairs(specs) do
    local rows = {}
    for j, plan in ipairs(s.plans) do
      local r
      if plan.err then
        r = { ok = false, code = plan.code, message = plan.err }
      elseif f and f:row_fails("batch_write_row") then
        r = { ok = false, code = f.code, message = f:message() }
      else
        local acct, m, c = self:_apply(s.t, plan)
        if acct then
          r = { ok = true, consumed = consumed(0, ceil_cu(plan.size)) }
          r.row = write.ret_row(s.t, plan)
          accts[#accts + 1] = { s.t, acct }
        elseif c == "OTSInternalServerError" or c == "OTSServerBusy" or c == "OTSObjectNotExist" then
          return nil, m, c
        else
          r = { ok = false, code = c, message = m }
        end
      end
      if not r.ok then failed = failed + 1 end
      rows[j] = r
    end
    out[i] = { table = s.t.name, rows = rows }
  end
  -- count every row first, then split: a split rescans the store, which
  -- already holds the whole batch
  local touched = {}
  for _, a in ipairs(accts) do
    self:_account(a[1], a[2], true)
    touched[a[1]] = true
  end
  for t in pairs(touched) do if t.parts then t.parts:settle() end end
  if fail then return nil, f:message(), f.code, "commit" end
  return { tables = out, failed = failed, latency = lat }
end

return batch
