--- otskit.client.batch -- BatchWriteRow and BatchGetRow with per-row
-- retries: after an attempt, only the rows that failed with a retryable
-- code are sent again (retry.batch_write), so a row that was written is
-- never written twice and a request of 200 rows with 3 throttled rows
-- resends 3.
local retry = require "otskit.retry"

local batch = {}

local function copy(t)
  local o = {}
  for k, v in pairs(t) do o[k] = v end
  return o
end

-- The list field of a table spec: rows (writes) or primary_keys (reads).
local FIELD = { BatchWriteRow = "rows", BatchGetRow = "primary_keys" }

--- batch.run(client, api, req) -> response | nil, message, code,
-- request_id, http_status. The response has the store's shape: tables =
-- {{ table, rows = {{ ok = true, ... } | { ok = false, code, message }} }}
-- in request order (plus failed = n for writes). A row still failing
-- after the retries carries its last error; a row left unsent because
-- the retry budget ran out carries code "RetryBudgetExhausted".
function batch.run(self, api, req)
  local client = require "otskit.client"
  local field = FIELD[api]
  local specs = req.tables
  if type(specs) ~= "table" or #specs == 0 then
    -- let the codec and the service say what is wrong, as for any call
    return self:_call(api, req)
  end
  local items = {}
  for ti, spec in ipairs(specs) do
    if type(spec) ~= "table" or type(spec[field]) ~= "table" then return self:_call(api, req) end
    for ri, row in ipairs(spec[field]) do
      items[#items + 1] = { ti = ti, ri = ri, row = row,
        idempotent = field == "rows" and client.is_idempotent(api, row) or nil }
    end
  end
  if #items == 0 then return self:_call(api, req) end
  local t_end = self:_deadline()
  local got = {}        -- item index -> the row result the service returned
  local answered = false
  local last_err
  local first_encode_err
  local index_of = {}
  for i, it in ipairs(items) do index_of[it] = i end
  self.stats.calls = self.stats.calls + 1

  local function send(sub)
    -- regroup the rows of this attempt by table, in request order
    local groups, by_ti, out = {}, {}, { tables = {} }
    for k, v in pairs(req) do if k ~= "tables" then out[k] = v end end
    for _, it in ipairs(sub) do
      local g = by_ti[it.ti]
      if not g then
        local spec = copy(specs[it.ti])
        spec[field] = {}
        g = { spec = spec, items = {} }
        by_ti[it.ti] = g
        groups[#groups + 1] = g
      end
      g.spec[field][#g.spec[field] + 1] = it.row
      g.items[#g.items + 1] = it
    end
    table.sort(groups, function(a, b) return a.items[1].ti < b.items[1].ti end)
    for k, g in ipairs(groups) do out.tables[k] = g.spec end
    local body, msg, code = self.wire.encode_request(api, out)
    if body == nil then
      first_encode_err = first_encode_err or { msg, code or "OTSParameterInvalid" }
      return nil, { code = code or "OTSParameterInvalid", message = msg }
    end
    local res, err = self:_exchange(api, body, t_end, out)
    if res == nil then last_err = err; return nil, err end
    local rtabs = res.tables
    if type(rtabs) ~= "table" or #rtabs ~= #groups then
      last_err = { code = "OTSResponseInvalid", message = api .. " response has " ..
        tostring(type(rtabs) == "table" and #rtabs or 0) .. " tables for " .. #groups .. " sent", request_id = res.request_id }
      return nil, last_err
    end
    answered = true
    local results = {}
    local pos = {}
    for k, g in ipairs(groups) do
      local rt = rtabs[k]
      -- match by name when the service orders tables differently
      if rt.table ~= g.spec.table then
        for _, t2 in ipairs(rtabs) do if t2.table == g.spec.table then rt = t2 end end
      end
      local rows = rt.rows or {}
      if #rows ~= #g.items then
        answered = false
        last_err = { code = "OTSResponseInvalid", message = ("%s response has %d rows for table %s, %d sent")
          :format(api, #rows, tostring(g.spec.table), #g.items), request_id = res.request_id }
        return nil, last_err
      end
      for j, it in ipairs(g.items) do pos[it] = rows[j] end
    end
    for j, it in ipairs(sub) do
      local r = pos[it]
      got[index_of[it]] = r
      if r.ok then
        results[j] = true
      else
        results[j] = { code = r.code, message = r.message, idempotent = it.idempotent }
      end
    end
    self.last_request_id = res.request_id
    return results
  end

  -- a row's own error says whether it may be repeated; a whole-request
  -- failure is retried only when every row of the request is idempotent
  local all_idem = true
  for _, it in ipairs(items) do
    if field == "rows" and not it.idempotent then all_idem = false; break end
  end
  local opts = self:_retry_opts(api, nil, function(err)
    local idem = all_idem
    if type(err) == "table" and err.idempotent ~= nil then idem = err.idempotent end
    return client.classify(err, api, idem)
  end)
  local results, nfailed = retry.batch_write(send, items, opts)
  if not answered then
    if first_encode_err then return nil, first_encode_err[1], first_encode_err[2] end
    local e = last_err or results[1]
    if type(e) == "table" and (e.code == "RetryBudgetExhausted" or e.code == retry.OUTCOME_UNKNOWN) then e = e.last or e end
    local msg = type(e) == "table" and (e.message or e.code) or tostring(e)
    local code = type(e) == "table" and e.code or nil
    if type(results[1]) == "table" and results[1].code == "RetryBudgetExhausted" then
      return nil, "retry budget exhausted", "RetryBudgetExhausted", e.request_id, e.http_status
    end
    -- a write request that got no trustworthy answer: some rows may be written
    for _, r in ipairs(results) do
      if type(r) == "table" and r.code == retry.OUTCOME_UNKNOWN then
        local le = type(r.last) == "table" and r.last or {}
        return nil, "outcome unknown: the BatchWriteRow may have been applied (" ..
          tostring(le.code or code) .. ": " .. tostring(le.message or msg) .. ")", retry.OUTCOME_UNKNOWN,
          le.request_id, le.http_status
      end
    end
    return client.failure(msg, code, e)
  end
  local out = { tables = {}, request_id = self.last_request_id }
  for ti, spec in ipairs(specs) do out.tables[ti] = { table = spec.table, rows = {} } end
  for i, it in ipairs(items) do
    local r = results[i]
    local row
    if r == true then
      row = got[i]
    elseif type(r) == "table" and r.code == "RetryBudgetExhausted" then
      row = { ok = false, code = "RetryBudgetExhausted", message = "retry budget exhausted" }
    elseif type(r) == "table" then
      row = { ok = false, code = r.code or (r.bare and ("HTTP" .. tostring(r.http_status))), message = r.message }
    else
      row = { ok = false, code = tostring(r), message = tostring(r) }
    end
    out.tables[it.ti].rows[it.ri] = row
  end
  if api == "BatchWriteRow" then out.failed = nfailed end
  return out
end

return batch
