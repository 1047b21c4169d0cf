--- otskit.store.maintain -- keeps secondary indexes right: every write to
-- a base table (put, update, delete, batch rows, a committed local
-- transaction) recomputes the index rows of the written row from its old
-- and new contents, in the same SQLite transaction; the checks writes to
-- indexed tables get (typed indexed columns, allow_update, read-only
-- index tables); the back-fill of include_base_data; and the optional
-- delay of global index visibility (db:set_index_delay).
local base = require "otskit.store.base"
local keycodec = require "otskit.key"
local values = require "otskit.store.values"
local txn = require "otskit.store.txn"
local write = require "otskit.store.write"
local DB, L = base.DB, base.LIMITS
local invalid = base.invalid
local dberr, key_vals = txn.dberr, txn.key_vals
local pack = keycodec.pack
local decode, encode, classify = values.decode, values.encode, values.classify

local maintain = {}

-- name -> {value, ts, type} of the newest cells of blob among `want`
local function cells_of(blob, want)
  if not blob then return nil end
  local cols, _, _, _, cells = decode(blob, want, true, nil, nil, 1, true)
  if not cols then return nil, _ end
  local m = {}
  for _, c in ipairs(cells) do m[c[1]] = c end
  return m
end

-- the index key and row of base row (vals, cells) in index table o, or
-- nil when the row lacks (or holds with another type) a key column
local function entry(o, vals, cells)
  if not cells then return nil end
  local kvals = {}
  for i, s in ipairs(o.src) do
    if s.pk then
      kvals[i] = vals[s.pk]
    else
      local c = cells[s.col]
      if not c or c[4] ~= s.type then return nil end
      local v = c[2]
      if s.type == "INTEGER" then
        if type(v) ~= "number" then v = keycodec.int(values.int_text(v)) end
      elseif #v > L.pk_cell then
        return nil
      end
      kvals[i] = v
    end
  end
  local names, types, vs, tss, n = {}, {}, {}, {}, 0
  for _, a in ipairs(o.attrs) do
    local c = cells[a.name]
    if c and c[4] == a.type then
      n = n + 1
      names[n], types[n], vs[n], tss[n] = a.name, c[4], c[2], c[3]
    end
  end
  return pack(kvals), encode(names, types, vs, tss)
end

-- the pending (delayed) index changes: kv table "ipending", keys the
-- zero-padded sequence number (write order), values
-- "<due ms> <index> <P|D> <#key>\n" .. key .. row
local PENDING, SEQ = "ipending", "~seq"

local function enqueue(db, o, op, ik, blob)
  local h = db.h
  local s, err, code = h:get(PENDING, SEQ)
  if s == nil and err then return dberr(err, code) end
  local n = (tonumber(s) or 0) + 1
  local ok, e2, c2 = h:put(PENDING, SEQ, tostring(n))
  if ok then
    local due = base.now_ms(db) + math.floor(db.index_delay * 1000 + 0.5)
    ok, e2, c2 = h:put(PENDING, ("%020d"):format(n),
      ("%s %s %s %d\n"):format(values.int_text(due), o.name, op, #ik) .. ik .. (blob or ""))
  end
  if not ok then return dberr(e2, c2) end
  return true
end

--- maintain.flush(db, all) -> true | nil, msg, code: applies the pending
-- index changes that are due (all: every one), in write order.
function maintain.flush(db, all)
  local h = db.h
  if not db.index_pending then return true end
  local ok, err, code = h:create(PENDING)
  if not ok then return dberr(err, code) end
  local cur, e1, c1 = h:scan(PENDING, nil, "~", false)
  if not cur then return dberr(e1, c1) end
  local now, done = base.now_ms(db), {}
  while true do
    local k, v = cur:next()
    if k == nil then break end
    local due, name, op, len, rest = v:match("^(%d+) (%S+) ([PD]) (%d+)\n()")
    due, len = tonumber(due), tonumber(len)
    if not due then cur:close(); return txn.damaged("a pending index change is malformed") end
    if not all and due > now then break end
    local ik = v:sub(rest, rest + len - 1)
    local o = db.tables[name]
    if o and o.base then
      if op == "D" then ok, err, code = h:delete(o.kv, ik)
      else ok, err, code = h:put(o.kv, ik, v:sub(rest + len)) end
      if ok == nil then cur:close(); return dberr(err, code) end
    end
    done[#done + 1] = k
  end
  cur:close()
  for _, k in ipairs(done) do
    ok, err, code = h:delete(PENDING, k)
    if ok == nil then return dberr(err, code) end
  end
  return true
end

--- maintain.sync_row(db, t, k, old, new) -> true | nil, msg, code: the
-- index rows of base row k (stored bytes old -> new; nil: no row) made right.
function maintain.sync_row(db, t, k, old, new)
  local idx = t.indexes
  if not idx or old == new then return true end
  local vals, why = key_vals(t, k)
  if not vals then return txn.damaged(why) end
  local oc, e1 = cells_of(old, t.want)
  local nc, e2 = cells_of(new, t.want)
  if (old and not oc) or (new and not nc) then return txn.damaged("a stored row: " .. tostring(e1 or e2)) end
  local h = db.h
  local delay = db.index_delay and db.index_delay > 0
  if db.index_pending and not delay then
    local ok, m, c = maintain.flush(db, true)
    if not ok then return nil, m, c end
  end
  for _, o in ipairs(idx) do
    local ok_, ob = entry(o, vals, oc)
    local nk, nb = entry(o, vals, nc)
    if ok_ ~= nk or ob ~= nb then
      local later = delay and o.global
      local ok, err, code = true, nil, nil
      if ok_ and ok_ ~= nk then
        if later then ok, err, code = enqueue(db, o, "D", ok_)
        else
          local done
          done, err, code = h:delete(o.kv, ok_) -- false: it was not there (no back-fill)
          if done == nil then return dberr(err, code) end
        end
      end
      if ok and nk then
        if later then ok, err, code = enqueue(db, o, "P", nk, nb)
        else
          ok, err, code = h:put(o.kv, nk, nb)
          if not ok then return dberr(err, code) end
        end
      end
      if not ok then return nil, err, code end
    end
  end
  return true
end

--- maintain.backfill(db, t, o) -> true | nil, msg, code: index table o
-- filled from every row of base table t (include_base_data).
function maintain.backfill(db, t, o)
  local h = db.h
  local cur, err, code = h:scan(t.kv, nil, nil, false)
  if not cur then return dberr(err, code) end
  while true do
    local ks, vs, n = cur:fetch(512)
    if ks == nil then cur:close(); return dberr(vs, n) end
    if n == 0 then break end
    for i = 1, n do
      local vals, why = key_vals(t, ks[i])
      if not vals then cur:close(); return txn.damaged(why) end
      local cells, e = cells_of(vs[i], t.want)
      if not cells then cur:close(); return txn.damaged("a stored row: " .. tostring(e)) end
      local ik, ib = entry(o, vals, cells)
      if ik then
        local ok, e2, c2 = h:put(o.kv, ik, ib)
        if not ok then cur:close(); return dberr(e2, c2) end
      end
    end
    local _, fail = db:_fault("create_index") -- (an injected failure part way)
    if fail then cur:close(); return nil, db.faults:message(), db.faults.code end
  end
  cur:close()
  return true
end

--- db:set_index_delay(seconds): from now on, changes to global indexes
-- made through this db become visible `seconds` after their write (the
-- service's global indexes are eventually consistent); 0 turns it off
-- (what is pending is applied with the next write to an indexed table).
-- Local indexes stay synchronous. Raises on a bad value.
function DB:set_index_delay(s)
  if type(s) ~= "number" or s ~= s or s < 0 or s > 3600 then
    error("otskit.store: set_index_delay takes seconds in 0..3600", 2)
  end
  self.index_delay = s
  if s > 0 and not self.index_pending then
    self.index_pending = true
    local ok, err, code = self:_txn(true, function() return self.h:create(PENDING) end)
    if not ok then return nil, err, code end
  end
  return true
end

-- writes: the old row before, the index rows after
local raw_apply = DB._apply
function DB:_apply(t, plan)
  if not t.indexes then return raw_apply(self, t, plan) end
  local h, old = self.h, nil
  if plan.key then
    local err, code
    old, err, code = h:get(t.kv, plan.key)
    if old == nil and err then return dberr(err, code) end
  end
  local acct, m, c = raw_apply(self, t, plan)
  if not acct then return nil, m, c end
  local new
  if plan.kind == "PUT" then new = plan.blob
  elseif plan.kind == "UPDATE" then
    local err, code
    new, err, code = h:get(t.kv, plan.key)
    if new == nil and err then return dberr(err, code) end
  end
  local ok, m2, c2 = maintain.sync_row(self, t, plan.key, old, new)
  if not ok then return nil, m2, c2 end
  return acct
end

-- an indexed defined column written with another type than declared
local function bad_type(t, name, ty)
  local d = t.indexed[name]
  if d and d.type ~= ty then
    return ("Column '%s' is defined as %s and used by an index, the value is %s."):format(name, d.type, ty)
  end
end

local function check_put(t, cols)
  for k, v in pairs(cols) do
    local name, val = k, v
    if type(k) == "number" then name, val = v[1], v[2] end
    local why = bad_type(t, name, (classify(val)))
    if why then return invalid(why) end
  end
  return true
end

for kind, plan_fn in pairs(write.PLAN) do
  write.PLAN[kind] = function(self, t, row, batch)
    if t.base then
      return invalid("Index table '" .. t.name .. "' is read-only: write to its base table '" .. t.base.name .. "'.")
    end
    if kind == "UPDATE" and t.options.allow_update == false then
      return invalid("UpdateRow is not allowed on table '" .. t.name .. "': its allow_update option is false.")
    end
    local plan, m, c = plan_fn(self, t, row, batch)
    if not plan then return nil, m, c end
    if t.indexed then
      if kind == "PUT" then
        local ok, m2, c2 = check_put(t, row.columns or {})
        if not ok then return nil, m2, c2 end
      elseif kind == "UPDATE" then
        for i, n in ipairs(plan.put_names or {}) do
          local why = bad_type(t, n, plan.put_types[i])
          if why then return invalid(why) end
        end
        for _, n in ipairs(plan.inc_names or {}) do
          local why = bad_type(t, n, "INTEGER")
          if why then return invalid(why) end
        end
      end
    end
    return plan
  end
end

--- maintain.apply: DB:_apply with index maintenance and no later hook
maintain.apply = DB._apply
maintain.entry, maintain.cells_of = entry, cells_of
return maintain
