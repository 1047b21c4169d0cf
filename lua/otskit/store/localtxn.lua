--- otskit.store.localtxn -- the service's local transactions: one table,
-- one partition-key value, a transaction id on put_row / update_row /
-- delete_row / get_row / get_range / batch_write_row, then commit or abort.
--
-- (Not store/txn.lua, which makes every operation one SQLite transaction.)
-- Start copies the partition's rows into a private kv table "x_<id>"; every
-- request carrying the id runs on that copy with the store's ordinary code,
-- so reads inside see the transaction's writes and conditions, increments
-- and ranges behave as usual. Requests without the id see the base table
-- only, and writes without the id into the locked partition fail with
-- OTSRowOperationConflict. Commit writes the copy's differences into the
-- base table (indexes and partition accounting kept right) in one SQLite
-- transaction; abort drops the copy. Everything lives in the SQLite file,
-- so transactions work across connections and processes (otskit serve
-- workers) and survive a restart. A transaction ends after 60 s, or 60 s
-- without a request (the store's clock); it may write 4 MB.
local base = require "otskit.store.base"
local keycodec = require "otskit.key"
local txn = require "otskit.store.txn"
local maintain = require "otskit.store.maintain"
local DB = base.DB
local invalid, check_req = base.invalid, base.check_req
local dberr = txn.dberr
local pack = keycodec.pack

local localtxn = {}

--- Limits: lifetime and idle time (seconds), bytes written per transaction.
localtxn.LIMITS = { lifetime = 60, idle = 60, bytes = 4194304 }
local TL = localtxn.LIMITS

local T = "ltxn" -- kv table: "id:<id>" records, "lock:<table>\0<pk1>" -> id, "~seq"

local NOT_EXIST = "Session not exist or may be timeout."
local CONFLICT = "Data is being modified by the other request."

local function hex(s) return (s:gsub(".", function(c) return ("%02x"):format(c:byte()) end)) end

local function lock_key(tname, pk1) return "lock:" .. tname .. "\0" .. pk1 end

-- a transaction record <- "id:<id>" row
local function parse(s)
  local tname, pk1h, start, last, bytes = s:match("^(%S+) (%x*) (%d+) (%d+) (%d+)$")
  if not tname then return nil end
  return { table = tname, pk1 = txn.unhex(pk1h), start = tonumber(start), last = tonumber(last), bytes = tonumber(bytes) }
end

local function save(db, id, r)
  local ok, err, code = db.h:put(T, "id:" .. id, ("%s %s %d %d %d"):format(r.table, hex(r.pk1), r.start, r.last, r.bytes))
  if not ok then return dberr(err, code) end
  return true
end

-- ends transaction id (record r): its copy and rows go
local function finish(db, id, r)
  local h = db.h
  local ok, err, code = h:drop("x_" .. id)
  if ok then ok, err, code = h:delete(T, "id:" .. id) end
  if ok ~= nil and r then ok, err, code = h:delete(T, lock_key(r.table, r.pk1)) end
  if ok == nil then return dberr(err, code) end
  return true
end

local function expired(db, r)
  local now = base.now_ms(db)
  return now - r.start > TL.lifetime * 1000 or now - r.last > TL.idle * 1000
end

-- the live record of id -> r | nil, msg, code (an expired one is ended)
local function load(db, id)
  if type(id) ~= "string" or id == "" then return invalid("TransactionID is invalid.") end
  if not id:match("^%x+$") then return nil, NOT_EXIST, "OTSSessionNotExist" end
  local s, err, code = db.h:get(T, "id:" .. id)
  if s == nil and err then return dberr(err, code) end
  local r = s and parse(s)
  if s and not r then return txn.damaged("a local transaction record is malformed") end
  if not r then return nil, NOT_EXIST, "OTSSessionNotExist" end
  if expired(db, r) then
    local ok, m, c = finish(db, id, r)
    if not ok then return nil, m, c end
    return nil, NOT_EXIST, "OTSSessionNotExist", "commit" -- the clean-up stays
  end
  return r
end

-- the transaction holding partition pk1 of table tname -> id | nil (an
-- expired holder is ended) | nil, msg, code
local function holder(db, tname, pk1)
  local id, err, code = db.h:get(T, lock_key(tname, pk1))
  if id == nil and err then return dberr(err, code) end
  if id == nil then return nil end
  local r, m, c = load(db, id)
  if r then return id end
  if c == "OTSSessionNotExist" then
    local ok, e2, c2 = db.h:delete(T, lock_key(tname, pk1))
    if ok == nil then return dberr(e2, c2) end
    return nil
  end
  return nil, m, c
end

local function pk1_of_key(k)
  local vals = keycodec.unpack(k)
  return pack({ vals[1] })
end

-- the partition-key range [lo, hi) of encoded pk1
local function range_of(pk1) return pk1, pk1 .. "\255" end

local START_FIELDS = base.set{ "table", "key" }

--- db:start_local_transaction{ table, key = {{"pk1", value}} | {value} }
-- -> { transaction_id } | nil, msg, code. key: the partition-key column only.
function DB:start_local_transaction(req)
  check_req(req, "start_local_transaction")
  local okf, mf, cf = base.known(req, START_FIELDS, "start_local_transaction")
  if not okf then return nil, mf, cf end
  if req.table == "" then return invalid("Invalid table name: ''.") end
  local t, msg, code = self:_table(req.table)
  if not t then return nil, msg, code end
  if t.base then return invalid("Cannot start a local transaction on an index table: '" .. t.name .. "'.") end
  if type(req.key) ~= "table" then return invalid("key must be the partition-key column {{name, value}}") end
  if #req.key ~= 1 then return invalid("StartLocalTransaction support only one primary key.") end
  if not t.local_txn then
    return invalid("Try to call method using explicit transaction on explicit-transaction-disabled table.")
  end
  if t.auto then return invalid("Local transactions cannot be used on a table with an AUTO_INCREMENT column.") end
  local vals, m, c = self:_pk_values(t, req.key, false, 1)
  if not vals then return nil, m, c end
  local pk1 = pack({ vals[1] })
  local held, m1, c1 = holder(self, t.name, pk1)
  if held then return nil, CONFLICT, "OTSRowOperationConflict" end
  if m1 then return nil, m1, c1 end
  local h = self.h
  local s, err, ecode = h:get(T, "~seq")
  if s == nil and err then return dberr(err, ecode) end
  local n = (tonumber(s) or 0) + 1
  local ok, e2, c2 = h:put(T, "~seq", tostring(n))
  if not ok then return dberr(e2, c2) end
  local now = base.now_ms(self)
  local id = ("%x%08x%04x"):format(n, now % 4294967296, math.random(0, 65535))
  ok, e2, c2 = h:create("x_" .. id)
  if not ok then return dberr(e2, c2) end
  local lo, hi = range_of(pk1)
  local cur, e3, c3 = h:scan(t.kv, lo, hi, false)
  if not cur then return dberr(e3, c3) end
  while true do
    local ks, vs, got = cur:fetch(512)
    if ks == nil then cur:close(); return dberr(vs, got) end
    if got == 0 then break end
    for i = 1, got do
      local okp, e4, c4 = h:put("x_" .. id, ks[i], vs[i])
      if not okp then cur:close(); return dberr(e4, c4) end
    end
  end
  cur:close()
  ok, e2, c2 = h:put(T, lock_key(t.name, pk1), id)
  if not ok then return dberr(e2, c2) end
  ok, e2, c2 = save(self, id, { table = t.name, pk1 = pk1, start = now, last = now, bytes = 0 })
  if not ok then return nil, e2, c2 end
  return { transaction_id = id }
end

local ID_FIELDS = base.set{ "transaction_id" }

local function id_of(req, op)
  check_req(req, op)
  local ok, m, c = base.known(req, ID_FIELDS, op)
  if not ok then return nil, m, c end
  if type(req.transaction_id) ~= "string" or req.transaction_id == "" then return invalid("TransactionID is invalid.") end
  return req.transaction_id
end

--- db:commit_transaction{ transaction_id } -> {} | nil, msg, code: the
-- transaction's writes become visible to everyone, at once.
function DB:commit_transaction(req)
  local id, m, c = id_of(req, "commit_transaction")
  if not id then return nil, m, c end
  local r, m1, c1, how = load(self, id)
  if not r then return nil, m1, c1, how end
  local t = self.tables[r.table]
  if not t or t.base then
    local ok, m2, c2 = finish(self, id, r)
    if not ok then return nil, m2, c2 end
    return nil, "Requested table does not exist.", "OTSObjectNotExist", "commit"
  end
  local h = self.h
  local lo, hi = range_of(r.pk1)
  local function all(kvname)
    local out, order = {}, {}
    local cur, err, code = h:scan(kvname, lo, hi, false)
    if not cur then return dberr(err, code) end
    while true do
      local ks, vs, got = cur:fetch(512)
      if ks == nil then cur:close(); return dberr(vs, got) end
      if got == 0 then break end
      for i = 1, got do out[ks[i]] = vs[i]; order[#order + 1] = ks[i] end
    end
    cur:close()
    return out, order
  end
  local old, oorder, oc = all(t.kv)
  if not old then return nil, oorder, oc end
  local new, norder, nc = all("x_" .. id)
  if not new then return nil, norder, nc end
  -- the lock goes first: the changes are then ordinary writes (indexes,
  -- search indexes and partition accounting follow them as usual)
  local ok, e, cc = finish(self, id, r)
  if not ok then return nil, e, cc end
  local accts = {}
  local function set(k, ob, nb)
    if ob == nb then return true end
    local plan = { kind = nb and "PUT" or "DELETE", key = k, blob = nb, cond = { exist = "IGNORE" },
      size = #k + (nb and #nb or 0) }
    local acct, m1, c1 = self:_apply(t, plan)
    if not acct then return nil, m1, c1 end
    accts[#accts + 1] = acct
    return true
  end
  for _, k in ipairs(oorder) do
    if new[k] == nil then
      ok, e, cc = set(k, old[k], nil)
      if not ok then return nil, e, cc end
    end
  end
  for _, k in ipairs(norder) do
    ok, e, cc = set(k, old[k], new[k])
    if not ok then return nil, e, cc end
  end
  if t.parts then
    for _, a in ipairs(accts) do self:_account(t, a, true) end
    t.parts:settle()
  end
  return {}
end

--- db:abort_transaction{ transaction_id } -> {} | nil, msg, code: the
-- transaction's writes are discarded.
function DB:abort_transaction(req)
  local id, m, c = id_of(req, "abort_transaction")
  if not id then return nil, m, c end
  local r, m1, c1, how = load(self, id)
  if not r then return nil, m1, c1, how end
  local ok, m2, c2 = finish(self, id, r)
  if not ok then return nil, m2, c2 end
  return {}
end

----------------------------------------------------------------------
-- requests carrying a transaction id run on the copy

local raw_table = DB._table
function DB:_table(name)
  local s = self._shadow
  if s and name == s.name then return s end
  return raw_table(self, name)
end

local function out_of_range()
  return nil, "The primary key is out of the partition-key range of the transaction.", "OTSDataOutOfRange"
end

-- the request's pk1 (encoded) -> pk1 | false (not parseable: the op reports it)
local function req_pk1(db, t, pk, allow)
  local vals = db:_pk_values(t, pk, allow)
  if not vals then return false end
  if vals[1] == base.INF_MIN or vals[1] == base.INF_MAX then return "" end
  return pack({ vals[1] })
end

-- checks the request's scope against transaction r -> true | nil, msg, code
local SCOPE = {
  single = function(db, t, r, req)
    local p = req_pk1(db, t, req.primary_key, "auto")
    if p and p ~= r.pk1 then return out_of_range() end
    return true
  end,
  get_range = function(db, t, r, req)
    for _, b in ipairs({ req.start or req.inclusive_start_primary_key, req.stop or req.exclusive_end_primary_key }) do
      local p = req_pk1(db, t, b, "inf")
      if p and p ~= r.pk1 then return out_of_range() end
    end
    return true
  end,
  batch_write_row = function(db, _, r, req)
    if type(req.tables) ~= "table" then return true end
    for _, spec in ipairs(req.tables) do
      if type(spec) == "table" then
        if spec.table ~= r.table then
          return invalid("A BatchWriteRow in a transaction may only write the transaction's table '" .. r.table .. "'.")
        end
        local t = db.tables[r.table]
        for _, row in ipairs(type(spec.rows) == "table" and spec.rows or {}) do
          if type(row) == "table" then
            local p = req_pk1(db, t, row.primary_key, "auto")
            if p and p ~= r.pk1 then return out_of_range() end
          end
        end
      end
    end
    return true
  end,
}
local OPS = { put_row = "single", update_row = "single", delete_row = "single", get_row = "single",
  get_range = "get_range", batch_write_row = "batch_write_row" }

local function in_txn(self, op, raw, req)
  local id = req.transaction_id
  local r, m, c, how = load(self, id)
  if not r then return nil, m, c, how end
  local tname = op == "batch_write_row" and r.table or req.table
  if tname ~= r.table then
    return invalid("Transaction " .. id .. " belongs to table '" .. r.table .. "', not '" .. tostring(tname) .. "'.")
  end
  local t, m1, c1 = raw_table(self, r.table)
  if not t then return nil, m1, c1 end
  local ok, m2, c2 = SCOPE[OPS[op]](self, t, r, req)
  if not ok then return nil, m2, c2 end
  local plain = {}
  for k, v in pairs(req) do if k ~= "transaction_id" then plain[k] = v end end
  local s = {}
  for k, v in pairs(t) do s[k] = v end
  s.kv, s.parts, s.indexes, s.shadow, s.txn_bytes = "x_" .. id, nil, nil, true, r.bytes
  self._shadow = s
  local okp, r1, r2, r3, r4 = pcall(raw, self, plain)
  self._shadow = nil
  if not okp then error(r1, 0) end
  if r1 == nil and r4 ~= "commit" then return nil, r2, r3 end
  r.last, r.bytes = base.now_ms(self), s.txn_bytes
  local oks, m3, c3 = save(self, id, r)
  if not oks then return nil, m3, c3 end
  return r1, r2, r3, r4
end

-- writes: the transaction's size limit; others' writes into a locked partition
local inner_apply = DB._apply
function DB:_apply(t, plan)
  if t.shadow then
    t.txn_bytes = t.txn_bytes + plan.size
    if t.txn_bytes > TL.bytes then
      t.txn_bytes = t.txn_bytes - plan.size
      return nil, "The data size of the transaction exceeds the limit: " .. TL.bytes .. " bytes.",
        "OTSOutOfTransactionDataSizeLimit"
    end
    -- the copy has no indexes; no other hook (search indexes) sees it
    return maintain.apply(self, t, plan)
  elseif t.local_txn then
    local pk1 = plan.vals and pack({ plan.vals[1] }) or pk1_of_key(plan.key)
    local id, m, c = holder(self, t.name, pk1)
    if id then return nil, CONFLICT, "OTSRowOperationConflict" end
    if m then return nil, m, c end
  end
  return inner_apply(self, t, plan)
end

-- index reads while global index changes may be pending: applied first
local READS = { get_row = true, get_range = true, batch_get_row = true }
local function reads_index(self, op, req)
  if not self.index_pending or type(req) ~= "table" then return false end
  if op == "batch_get_row" then
    for _, s in ipairs(type(req.tables) == "table" and req.tables or {}) do
      local t = type(s) == "table" and self.tables[s.table]
      if t and t.base then return true end
    end
    return false
  end
  local t = self.tables[req.table]
  return t and t.base and true or false
end

local RAW = {}

--- localtxn.before_wrap(): called by init.lua before txn.wrap()
function localtxn.before_wrap()
  for op in pairs(OPS) do
    local raw = DB[op]
    RAW[op] = raw
    DB[op] = function(self, req)
      if type(req) == "table" and req.transaction_id ~= nil then return in_txn(self, op, raw, req) end
      if READS[op] and reads_index(self, op, req) then
        local ok, m, c = maintain.flush(self, false)
        if not ok then return nil, m, c end
      end
      return raw(self, req)
    end
  end
  RAW.batch_get_row = DB.batch_get_row
  DB.batch_get_row = function(self, req)
    if reads_index(self, "batch_get_row", req) then
      local ok, m, c = maintain.flush(self, false)
      if not ok then return nil, m, c end
    end
    return RAW.batch_get_row(self, req)
  end
  -- a dropped table's transactions end with it
  local raw_delete = DB.delete_table
  DB.delete_table = function(self, req)
    -- delayed index changes are applied before the indexes go
    local okp, mp, cp = maintain.flush(self, true)
    if not okp then return nil, mp, cp end
    local res, m, c = raw_delete(self, req)
    if not res then return nil, m, c end
    local name = req.name or req.table
    local cur, err, code = self.h:scan(T, "lock:" .. name .. "\0", "lock:" .. name .. "\1", false)
    if not cur then return dberr(err, code) end
    local ids = {}
    while true do
      local k, v = cur:next()
      if k == nil then break end
      ids[#ids + 1] = v
    end
    cur:close()
    for _, id in ipairs(ids) do
      local s = self.h:get(T, "id:" .. id)
      local ok, e2, c2 = finish(self, id, s and parse(s))
      if not ok then return nil, e2, c2 end
    end
    return res
  end
end

--- localtxn.after_wrap(): called by init.lua after txn.wrap(): reads with
-- a transaction id (or over pending index changes) take the write lock,
-- and the new operations become transactions of their own.
function localtxn.after_wrap()
  for op in pairs(READS) do
    local wrapped, inner = DB[op], DB[op]
    inner = nil
    DB[op] = function(self, req)
      if type(req) == "table" and (req.transaction_id ~= nil or reads_index(self, op, req)) then
        if self.h == nil then error("otskit.store: db is closed", 2) end
        inner = inner or localtxn.inner[op]
        return self:_txn(true, inner, req)
      end
      return wrapped(self, req)
    end
  end
  for _, op in ipairs({ "create_index", "drop_index", "add_defined_column", "delete_defined_column",
      "start_local_transaction", "commit_transaction", "abort_transaction" }) do
    local raw = DB[op]
    DB[op] = function(self, req)
      if self.h == nil then error("otskit.store: db is closed", 2) end
      return self:_txn(true, raw, req)
    end
  end
end

--- localtxn.capture(): the unwrapped read functions (between the two phases)
function localtxn.capture()
  localtxn.inner = { get_row = DB.get_row, get_range = DB.get_range, batch_get_row = DB.batch_get_row }
end

return localtxn
