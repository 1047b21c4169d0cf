--- otskit.store.txn -- the store under several connections and on a
-- damaged file: every operation is one SQLite transaction (DB:_txn), the
-- table definitions follow what other connections change (DB:_sync), and
-- what is read from the file is checked (metadata rows, keys, and the
-- kv layer's per-row checksum) before it is used. A kv failure becomes
-- the service's code (dberr).
local base = require "otskit.store.base"
local keycodec = require "otskit.key"
local kv = require("otskit.core").kv
local DB, L = base.DB, base.LIMITS

local txn = {}

local KV_WHAT = { KVCorrupt = "the store file is damaged: ", KVFull = "the disk is full: " }

--- txn.dberr(msg, code) -> nil, msg, code: a kv failure as the service
-- reports it. Lock contention that outlasted the busy timeout is
-- OTSServerBusy (retryable: the transaction was rolled back, nothing was
-- applied); a table another connection dropped is OTSObjectNotExist;
-- damage, a full disk or anything else OTSInternalServerError.
function txn.dberr(msg, code)
  msg = tostring(msg)
  if code == "KVBusy" then return nil, "the store is busy (another connection holds its lock): " .. msg, "OTSServerBusy" end
  if code == "KVNoTable" then return nil, "the table was dropped by another connection: " .. msg, "OTSObjectNotExist" end
  return nil, (KV_WHAT[code] or "") .. msg, "OTSInternalServerError"
end
local dberr = txn.dberr

function txn.damaged(msg) return nil, "the store file is damaged: " .. tostring(msg), "OTSInternalServerError" end
local damaged = txn.damaged

-- nil when v, read from a stored key, has the type of key column c, else why not
local function col_why(t, i, v)
  local c = t.pk[i]
  local ok
  if c.type == "INTEGER" then ok = type(v) == "number" or (type(v) == "table" and keycodec.kind(v) == "int")
  else ok = type(v) == "string" end
  if not ok then return ("a stored key of table %s: column %s is not %s"):format(t.name, c.name, c.type) end
  return nil
end

--- txn.key_vals(t, k) -> the primary-key values of stored key k of table
-- t, checked against its schema | nil, msg (a damaged key, never used)
function txn.key_vals(t, k)
  local vals = keycodec.unpack(k)
  if type(vals) ~= "table" then return nil, "a stored key of table " .. t.name .. " is not a tuple" end
  local n = #vals -- an array: unpack gives key.null for a nil element
  if n ~= t.npk then return nil, ("a stored key of table %s has %d columns, not %d"):format(t.name, n, t.npk) end
  -- 1 to 4 columns, unrolled: a loop that runs once per read is where
  -- LuaJIT starts a trace it then aborts ("leaving loop in root trace")
  local why = col_why(t, 1, vals[1])
    or n > 1 and (col_why(t, 2, vals[2]) or n > 2 and (col_why(t, 3, vals[3]) or n > 3 and col_why(t, 4, vals[4])))
  if why then return nil, why end
  return vals
end
local key_vals = txn.key_vals

--- txn.unhex(h) -> bytes | nil when h is not lowercase hex pairs
function txn.unhex(h)
  if #h % 2 ~= 0 or h:find("[^0-9a-f]") then return nil end
  return (h:gsub("..", function(x) return string.char(tonumber(x, 16)) end))
end

local PK_TYPES = base.set{ "INTEGER", "STRING", "BINARY" }
local OPT_KEYS = base.set{ "split_rows", "split_bytes", "split_load", "window", "history" }
local TAB_KEYS = base.set{ "time_to_live", "max_versions", "max_time_deviation" }
local RES_KEYS = base.set{ "read", "write" }

--- txn.parse_meta(name, text) -> { pk, bounds, popts, options, reserved }
-- | nil, msg: a metadata row ("pk <name> <TYPE>", "auto <column>",
-- "tab <option> <n>", "res <read|write> <n>", "bound <hex>", "opt <k> <v>"
-- lines) with every field checked: a damaged row is reported, never used.
function txn.parse_meta(name, text)
  local function bad(why) return nil, ("metadata of table %q: %s"):format(tostring(name), why) end
  if not base.valid_name(name) then return bad("not a valid table name") end
  local m = { pk = {}, bounds = {}, popts = {}, options = {}, reserved = {} }
  local seen, auto = {}, {}
  for line in text:gmatch("[^\n]+") do
    local a, b, c = line:match("^(%S+) (%S+) ?(%S*)$")
    local num = tonumber(c)
    if a == "pk" then
      if not base.valid_name(b) or not PK_TYPES[c] or seen[b] then return bad("bad primary key line") end
      seen[b] = true
      m.pk[#m.pk + 1] = { name = b, type = c }
    elseif a == "auto" and c == "" then
      auto[b] = true
    elseif a == "bound" and c == "" then
      local raw = txn.unhex(b)
      if not raw then return bad("a split bound is not hex") end
      m.bounds[#m.bounds + 1] = raw
    elseif a == "opt" and OPT_KEYS[b] then
      if not num or num ~= num or num <= 0 or num == math.huge then return bad("bad option " .. b) end
      m.popts[b] = num
    elseif (a == "tab" and TAB_KEYS[b]) or (a == "res" and RES_KEYS[b]) then
      if not num or num ~= math.floor(num) or math.abs(num) >= 2 ^ 53 then return bad("bad " .. a .. " " .. b) end
      if a == "tab" then m.options[b] = num else m.reserved[b] = num end
    elseif not (txn.meta_ext and txn.meta_ext(m, a, b, c)) then
      return bad("unknown line")
    end
  end
  if #m.pk < 1 or #m.pk > L.pk_columns then return bad("needs 1 to 4 primary key columns, has " .. #m.pk) end
  for n in pairs(auto) do
    if not seen[n] then return bad("auto names no key column") end
  end
  if txn.meta_check then
    local okx, whyx = txn.meta_check(m)
    if not okx then return bad(whyx) end
  end
  for i, col in ipairs(m.pk) do
    col.auto = auto[col.name]
    if col.auto and (i == 1 or col.type ~= "INTEGER") then return bad("bad AUTO_INCREMENT column") end
  end
  local t1 = { name = name, pk = { m.pk[1] }, npk = 1 }
  for i, b in ipairs(m.bounds) do
    if not key_vals(t1, b) then return bad("split bound " .. i .. " is not a " .. m.pk[1].type) end
    if i > 1 and kv.cmp(m.bounds[i - 1], b) >= 0 then return bad("split bounds out of order") end
  end
  return m
end

-- A db failure inside a callback (partition accounting): raised as a
-- table so DB:_txn returns it as nil, msg, code, never a Lua error.
local DBFAIL = {}
--- txn.check(v, msg, code) -> v, or raises the failure for DB:_txn
function txn.check(v, msg, code)
  if v == nil and msg ~= nil then error(setmetatable({ msg = msg, code = code }, DBFAIL), 0) end
  return v
end

--- txn.failure(e) -> nil, msg, code when e, an error caught out of a
-- transaction, is a db failure txn.check raised (the service's code, as
-- txn.dberr); false for any other error (re-raise it). Whatever catches
-- a raise out of DB:_txn_open's paths (db:put_row_pb, db:get_row_pb...,
-- which run without a pcall) answers a db failure with this.
function txn.failure(e)
  if getmetatable(e) ~= DBFAIL then return false end
  return dberr(e.msg, e.code)
end

-- The metadata generation: a counter row in "meta" that every change of
-- a table's definition (create, delete, update_table, a split) increments
-- in its transaction, so other connections notice changes SQLite's
-- schema cookie does not show. Its key is not a table name.
local GEN = "\0gen"

--- db:_bump() -> true | nil, msg, code (inside a write transaction)
function DB:_bump()
  local h = self.h
  local g, err, code = h:get("meta", GEN)
  if g == nil and err then return dberr(err, code) end
  local n = (tonumber(g) or 0) + 1
  local ok, e2, c2 = h:put("meta", GEN, tostring(n))
  if not ok then return dberr(e2, c2) end
  self.gen = tostring(n)
  return true
end

--- db:_sync() -> true | nil, msg, code: brings self.tables up to what is
-- on disk when any connection changed a definition (inside a
-- transaction); a table whose row is unchanged keeps its object and its
-- partition accounting.
function DB:_sync()
  local h = self.h
  local v, err, code = h:schema()
  if v == nil then return dberr(err, code) end
  local g, e1, c1 = h:get("meta", GEN)
  if g == nil and e1 then return dberr(e1, c1) end
  g = g or "0"
  if v == self.schema and g == self.gen then return true end
  local cur, m, c = h:scan("meta")
  if not cur then return dberr(m, c) end
  local seen = {}
  while true do
    local ks, vs, n = cur:fetch(256)
    if ks == nil then return dberr(vs, n) end
    if n == 0 then break end
    for i = 1, n do
      local name, text = ks[i], vs[i]
      if name ~= GEN then
        local meta, why = txn.parse_meta(name, text)
        if not meta then return damaged(why) end
        local has, e2, c2 = h:has("t_" .. name)
        if has == nil then return dberr(e2, c2) end
        if not has then return damaged(("table %s has metadata but no data table"):format(name)) end
        seen[name] = true
        for _, ix in ipairs(meta.ext and meta.ext.indexes or {}) do seen[ix.name] = true end
        local old = self.tables[name]
        if not (old and old.meta == text) then
          local ok, r = pcall(self._attach, self, name, meta.pk, meta.bounds, meta.popts, meta.options, meta.reserved, meta.ext)
          if not ok then
            local f, fm, fc = txn.failure(r)
            if f == false then error(r, 0) end
            return f, fm, fc
          end
          r.meta = text
        end
      end
    end
  end
  for name in pairs(self.tables) do
    if not seen[name] then self.tables[name] = nil end
  end
  self.schema, self.gen = v, g
  return true
end

-- The end of a transaction both wrappers share: fn answered r1..r4
-- (r1 nil: a failure r2, r3, rolled back unless r4 is "commit").
local function finish(h, r1, r2, r3, r4)
  if r1 == nil and r4 ~= "commit" then
    h:rollback()
    return nil, r2, r3
  end
  local ok, err, code = h:commit()
  if not ok then
    h:rollback()
    return dberr(err, code)
  end
  if r1 == nil then return nil, r2, r3 end
  return r1, r2
end

--- db:_txn(write, fn [, req]) -> fn's results | nil, msg, code. Runs
-- fn(self, req) as one SQLite transaction: BEGIN IMMEDIATE for writes
-- (the write lock is taken before anything is read, so a read-modify-
-- write such as INCREMENT or a condition check cannot interleave with
-- another connection's), BEGIN for reads (one snapshot). Commits when fn
-- returns a result (or nil, msg, code, "commit": an injected fault after
-- the write), rolls back otherwise or when fn raises (re-raised; a db
-- failure inside a callback is returned). Lock contention beyond the
-- busy timeout: OTSServerBusy, nothing applied.
function DB:_txn(write, fn, req)
  local h = self.h
  if h == nil then error("otskit.store: db is closed", 3) end
  -- a transaction an error raised out of DB:_txn_open left open is rolled
  -- back first (else this call would run inside it: its write never
  -- committed, the write lock kept)
  if self._open then self:_recover() end
  if h:in_txn() then return fn(self, req) end
  local ok, err, code = h:begin(not write)
  if not ok then return dberr(err, code) end
  ok, err, code = self:_sync()
  local okp, r1, r2, r3, r4
  if ok then
    okp, r1, r2, r3, r4 = pcall(fn, self, req) -- (no vararg: LuaJIT aborts traces on one)
  else
    okp, r1, r2, r3 = true, nil, err, code
  end
  if not okp then
    h:rollback()
    local f, fm, fc = txn.failure(r1)
    if f == false then error(r1, 0) end
    return f, fm, fc
  end
  return finish(h, r1, r2, r3, r4)
end

--- db:_txn_open(write, fn, req): DB:_txn without its pcall, for a
-- server's hot paths (db:get_row_pb, db:get_range_pb, db:put_row_pb).
-- LuaJIT cannot compile a trace that returns through pcall into a frame
-- below the one it started in ("NYI: return to lower frame"), and under
-- DB:_txn every trace that starts after a C call inside fn does: each
-- request's tail ran interpreted after a few aborted attempts. Here an
-- error raised out of fn leaves the transaction open, marked
-- (self._open): db:_recover() rolls it back -- otskit serve calls it when
-- a request raises, before anything else runs on this db -- and so does
-- the next db:_txn_open or DB:_txn (fn calls neither). Returns as DB:_txn,
-- except that a db failure inside fn (txn.check) is raised, not
-- returned: the catcher maps it with txn.failure.
function DB:_txn_open(write, fn, req)
  local h = self.h
  if h == nil then error("otskit.store: db is closed", 3) end
  if self._open then self:_recover() end
  if h:in_txn() then return fn(self, req) end
  local ok, err, code = h:begin(not write)
  if not ok then return dberr(err, code) end
  self._open = true
  ok, err, code = self:_sync()
  local r1, r2, r3, r4
  if ok then
    r1, r2, r3, r4 = fn(self, req)
  else
    r1, r2, r3 = nil, err, code
  end
  self._open = nil
  return finish(h, r1, r2, r3, r4)
end

--- db:_recover(): rolls back the transaction an error raised out of
-- db:_txn_open left open (nothing when there is none).
function DB:_recover()
  if not self._open then return end
  self._open = nil
  local h = self.h
  if h and h:in_txn() then h:rollback() end
end

--- db:check() -> true | nil, msg, code: SQLite's integrity check of the
-- whole file, then every stored row against its checksum, its table's
-- key schema and the row codec. Damage is OTSInternalServerError naming
-- what is wrong. store.open{ integrity_check = true } runs it first.
function DB:check()
  local h = self.h
  if h == nil then error("otskit.store: db is closed", 2) end
  local ok, err, code = h:integrity()
  if not ok then return dberr(err, code) end
  return self:_txn(false, function()
    for _, t in pairs(self.tables) do
      local cur, m, c = h:scan(t.kv)
      if not cur then return dberr(m, c) end
      while true do
        local ks, vs, n = cur:fetch(512)
        if ks == nil then return dberr(vs, n) end
        if n == 0 then break end
        for i = 1, n do
          local _, why = key_vals(t, ks[i])
          if why then return damaged(why) end
          local cols, e = require("otskit.core").row.decode(vs[i])
          if not cols then return damaged("a row of table " .. t.name .. ": " .. tostring(e)) end
        end
      end
    end
    return true
  end)
end

--- txn.wrap(): every operation that touches the file becomes one
-- transaction (writes take the write lock first, reads see one snapshot,
-- both see what other connections changed). Called once by init.lua
-- after every part has defined its methods.
function txn.wrap()
  for name, write in pairs({ create_table = true, delete_table = true, update_table = true, put_row = true,
      update_row = true, delete_row = true, batch_write_row = true, get_row = false, get_range = false,
      batch_get_row = false, describe_table = false, list_table = false,
      compute_split_points_by_size = false }) do
    local op = DB[name]
    DB[name] = function(self, req) -- every operation takes one request table
      if self.h == nil then error("otskit.store: db is closed", 2) end
      return self:_txn(write, op, req)
    end
  end
end

return txn
