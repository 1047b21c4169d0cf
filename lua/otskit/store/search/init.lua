--- otskit.store.search -- the search index (多元索引) of the embedded
-- store: create, describe, list, update (TTL) and delete; every index is
-- built from the table's rows when created and then follows every write
-- (put, update, delete, batch) in the write's own transaction, so a
-- search sees each write at once (db:search_delay(seconds) delays it, as
-- the service's near-real-time sync does). Searching is in
-- otskit.store.search.run. The tables behind an index: see
-- otskit.store.search.docs.
local base = require "otskit.store.base"
local txn = require "otskit.store.txn"
local keycodec = require "otskit.key"
local values = require "otskit.store.values"
local cjson = require "cjson.safe"
local sql = require("otskit.core").sql
local schema = require "otskit.store.search.schema"
local docs = require "otskit.store.search.docs"
local build = require "otskit.store.search.build"

local DB = base.DB
local invalid, check_req, valid_name, now_ms = base.invalid, base.check_req, base.valid_name, base.now_ms
local dberr = txn.dberr

local search = {}

local META = [[
CREATE TABLE IF NOT EXISTS s_meta (tbl TEXT NOT NULL, idx TEXT NOT NULL, id INTEGER NOT NULL, def TEXT NOT NULL,
  created INTEGER NOT NULL, ttl INTEGER NOT NULL, PRIMARY KEY (tbl, idx));
CREATE TABLE IF NOT EXISTS s_pending (tbl TEXT NOT NULL, key BLOB NOT NULL, due REAL NOT NULL, PRIMARY KEY (tbl, key));
]]

search.LIMITS = { indexes_per_table = 5, min_ttl = 86400 }

local guarded = docs.guarded
search.guarded = guarded

local function has_meta(h)
  local r = docs.run(h, "SELECT 1 FROM sqlite_master WHERE name = 's_meta'")
  return r[1] ~= nil
end
search.has_meta = has_meta

--- db:_search_defs() -> { [table] = { [index] = ix } } (cached per
-- definition generation; ix = { name, table, id, p, def, ttl, created })
function DB:_search_defs()
  local sx = self.sx
  if sx and sx.gen == self.gen then return sx.by end
  local h = self.h
  local by = {}
  if has_meta(h) then
    for _, r in ipairs(docs.run(h, "SELECT tbl, idx, id, def, created, ttl FROM s_meta WHERE tbl <> ''")) do
      local t = self.tables[r[1]]
      if t then
        local req = cjson.decode(r[4])
        local def = schema.rebuild(req, t)
        def.vec = docs.run(h, "SELECT 1 FROM sqlite_master WHERE name = ?1", { "s" .. r[3] .. "_vec" })[1] ~= nil
        -- an index made before the value columns of p.."doc" has none
        def.cols = docs.run(h, "SELECT count(*) FROM pragma_table_info(?1) WHERE name GLOB 'a[0-9]*'",
          { "s" .. r[3] .. "_doc" })[1][1] > 0
        -- an index made before num/kw held the row key has no pk column
        def.keyed = docs.run(h, "SELECT 1 FROM pragma_table_info(?1) WHERE name = 'pk'", { "s" .. r[3] .. "_num" })[1] ~= nil
        docs.prepare(def)
        by[r[1]] = by[r[1]] or {}
        by[r[1]][r[2]] = { name = r[2], table = r[1], id = r[3], p = "s" .. r[3] .. "_", def = def, req = req,
          created = r[5], ttl = r[6] }
      end
    end
  end
  self.sx = { gen = self.gen, by = by, meta = next(by) ~= nil or has_meta(h) }
  return by
end

--- db:_search_index(table, index) -> t, ix | nil, msg, code
function DB:_search_index(tname, iname)
  local t, msg, code = self:_table(tname)
  if not t then return nil, msg, code end
  if type(iname) ~= "string" then return invalid("index_name must be a string") end
  local ix = (guarded(self._search_defs, self) or {})[tname]
  ix = ix and ix[iname]
  if not ix then return nil, ("search index [%s] of table [%s] does not exist"):format(iname, tname), "OTSObjectNotExist" end
  return t, ix
end

-- the routing key of a row (the packed values of the routing fields)
function search.route(def, vals)
  if #def.routing == 0 then return nil end
  local r = {}
  for i, f in ipairs(def.routing) do r[i] = vals[f.pos] end
  return keycodec.pack(r)
end

-- (re)indexes the row with key k of table t in index ix, from the table;
-- sink: a build's (docs.sink), the row not yet in the index; blob: the
-- stored row when the caller has read it
function search.reindex(self, t, ix, k, sink, blob)
  local h = self.h
  local err, code
  if blob == nil then blob, err, code = h:get(t.kv, k) end
  if blob == nil and err then error(setmetatable({ msg = err, code = code }, docs.FAIL), 0) end
  if blob == nil then return not sink and docs.remove(h, ix.p, ix.def, k) end
  local now = now_ms(self)
  local cut = t.ttl_ms and now - t.ttl_ms or nil
  -- (LuaJIT: with the types, to tell an INTEGER beyond 2^53, decimal text, from a STRING)
  local cols, types, _, kept, _, ts = values.decode(blob, nil, not values.LUA54, cut, nil, t.maxv)
  if not cols then error(setmetatable({ msg = "a stored row: " .. tostring(types), code = "KVCorrupt" }, docs.FAIL), 0) end
  if types then
    for name, ty in pairs(types) do
      if ty == "INTEGER" and type(cols[name]) == "string" then cols[name] = values.integer(cols[name]) end
    end
  end
  if kept == 0 and #blob > 0 then return not sink and docs.remove(h, ix.p, ix.def, k) end
  -- primary key columns are fields too (the service indexes them by name)
  local vals = txn.key_vals(t, k)
  for i, c in ipairs(t.pk) do
    local v = vals[i]
    if type(v) == "table" then v = values.integer(tostring(v)) end -- LuaJIT int64 beyond 2^53
    if cols[c.name] == nil then cols[c.name] = v end
  end
  docs.put(h, ix.p, ix.def, k, search.route(ix.def, vals), ts, cols, sink)
end

--- db:search_delay(seconds | nil): from now on a write becomes searchable
-- `seconds` after it (0 or nil: at once, the default). Searches see the
-- rows whose delay has passed (the service syncs within seconds).
function DB:search_delay(s)
  if s ~= nil and (type(s) ~= "number" or s < 0 or s ~= s) then
    error("otskit.store: search_delay takes a number of seconds >= 0", 2)
  end
  self.sdelay = (s and s > 0) and s or nil
end

-- the write hook: after a write to a table with search indexes
local function after_write(self, t, k)
  local by = self:_search_defs()
  local list = by[t.name]
  if not list or next(list) == nil then return end
  if self.sdelay then
    docs.run(self.h, "INSERT OR REPLACE INTO s_pending (tbl, key, due) VALUES (?1, CAST(?2 AS BLOB), ?3)",
      { t.name, k, self:now() + self.sdelay })
    return
  end
  for _, ix in pairs(list) do search.reindex(self, t, ix, k) end
end

--- db:_search_catch_up(): indexes the delayed writes now due
function DB:_search_catch_up()
  local h = self.h
  self:_search_defs()
  if not self.sx.meta then return end
  local due = docs.run(h, "SELECT tbl, key FROM s_pending WHERE due <= ?1", { self:now() })
  if not due[1] then return end
  local by = self:_search_defs()
  for _, r in ipairs(due) do
    local t = self.tables[r[1]]
    if t and by[r[1]] then
      for _, ix in pairs(by[r[1]]) do search.reindex(self, t, ix, r[2]) end
    end
    docs.run(h, "DELETE FROM s_pending WHERE tbl = ?1 AND key = CAST(?2 AS BLOB)", { r[1], r[2] })
  end
end

-- the hook into the store's write path: every applied single-row write
-- (put_row, update_row, delete_row, each row of batch_write_row)
local apply = DB._apply
function DB:_apply(t, plan)
  local acct, m, c = apply(self, t, plan)
  if acct then
    -- a table without search indexes (the cached definitions current, as
    -- _search_defs would return them without a query) skips the pcall:
    -- a trace returning from after_write's early return into pcall's
    -- frame aborts ("NYI: return to lower frame") on every write
    local sx = self.sx
    if sx and sx.gen == self.gen and sx.by[t.name] == nil then return acct, m, c end
    local ok, m2, c2 = guarded(after_write, self, t, plan.key)
    if ok == nil and m2 then return nil, m2, c2 end
  end
  return acct, m, c
end

-- deleting a table deletes its search indexes
local delete_table = DB.delete_table
function DB:delete_table(req)
  local name = type(req) == "table" and (req.name or req.table) or nil
  local by = self.h and name and self.tables[name] and guarded(self._search_defs, self) or nil
  local res, m, c = delete_table(self, req)
  if res and by and by[name] then
    for _, ix in pairs(by[name]) do
      local ok, e, code = guarded(function()
        sql.exec(self.h, docs.drop(ix.p, ix.def))
        docs.run(self.h, "DELETE FROM s_meta WHERE tbl = ?1 AND idx = ?2", { name, ix.name })
        docs.run(self.h, "DELETE FROM s_pending WHERE tbl = ?1", { name })
        return true
      end)
      if not ok then return nil, e, code end
    end
    self.sx = nil
  end
  return res, m, c
end

----------------------------------------------------------------------
-- management

local CREATE_FIELDS = base.set{ "table", "index", "schema", "time_to_live", "source_index_name" }

local function check_ttl(t, ttl)
  if ttl == nil then return -1 end
  if type(ttl) ~= "number" or ttl ~= math.floor(ttl) or (ttl ~= -1 and ttl < search.LIMITS.min_ttl) then
    return invalid("time_to_live must be -1 (never) or at least " .. search.LIMITS.min_ttl .. " seconds")
  end
  local tt = t.ttl_ms and t.ttl_ms / 1000 or -1
  if tt ~= -1 and (ttl == -1 or ttl > tt) then
    return invalid(("the index time_to_live (%d) must not exceed the table's time_to_live (%d)"):format(ttl, tt))
  end
  return ttl
end

local function secret(h)
  local r = docs.run(h, "SELECT def FROM s_meta WHERE tbl = '' AND idx = ''")
  if r[1] then return r[1][1] end
  local f = io.open("/dev/urandom", "rb")
  local s = f and f:read(32)
  if f then f:close() end
  if not s or #s < 32 then s = tostring(os.time()) .. tostring({}) .. tostring(os.clock()) end
  s = (s:gsub(".", function(ch) return ("%02x"):format(ch:byte()) end))
  docs.run(h, "INSERT INTO s_meta VALUES ('', '', 0, ?1, 0, 0)", { s })
  return s
end

--- db:_search_secret() -> the key the store signs tokens with
function DB:_search_secret()
  if self.ssecret then return self.ssecret end
  local r = docs.run(self.h, "SELECT def FROM s_meta WHERE tbl = '' AND idx = ''")
  self.ssecret = r[1] and r[1][1] or nil
  return self.ssecret
end

local function create(self, req)
  local ok, m, c = base.known(req, CREATE_FIELDS, "create_search_index")
  if not ok then return nil, m, c end
  local t, msg, code = self:_table(req.table)
  if not t then return nil, msg, code end
  if not valid_name(req.index) then return invalid("invalid index name: " .. tostring(req.index)) end
  local ttl, tm, tc = check_ttl(t, req.time_to_live)
  if not ttl then return nil, tm, tc end
  local h = self.h
  local defs = self:_search_defs()
  local mine = defs[t.name] or {}
  if mine[req.index] then return nil, ("search index [%s] already exists"):format(req.index), "OTSObjectAlreadyExist" end
  local n = 0
  for _ in pairs(mine) do n = n + 1 end
  if n >= search.LIMITS.indexes_per_table then
    return invalid("a table has at most " .. search.LIMITS.indexes_per_table .. " search indexes")
  end
  local s = req.schema
  if req.source_index_name ~= nil then
    local src = mine[req.source_index_name]
    if not src then return nil, "source index " .. tostring(req.source_index_name) .. " does not exist", "OTSObjectNotExist" end
    if s == nil then s = src.req end
  end
  local def, dm, dc = schema.check(s, t)
  if not def then return nil, dm, dc end
  docs.prepare(def)
  local text = cjson.encode(s)
  assert(sql.exec(h, META))
  self.ssecret = secret(h)
  local id = docs.run(h, "SELECT coalesce(max(id), 0) + 1 FROM s_meta")[1][1]
  local ix = { name = req.index, table = t.name, id = id, p = "s" .. id .. "_", def = def }
  local e1, e2, e3 = sql.exec(h, docs.ddl(ix.p, def, true))
  if not e1 then return dberr(e2, e3) end
  docs.run(h, "INSERT INTO s_meta VALUES (?1, ?2, ?3, ?4, ?5, ?6)", { t.name, req.index, id, text, now_ms(self), ttl })
  -- build from the rows already in the table
  e1, e2, e3 = build.run(self, t, ix, search.reindex, now_ms)
  if not e1 then return dberr(e2, e3) end
  local b1, b2, b3 = self:_bump()
  if not b1 then return nil, b2, b3 end
  self.sx = nil
  return {}
end

--- db:create_search_index{ table, index, schema = { field_schemas = {...},
-- index_setting = { routing_fields }, index_sort = { sorters } },
-- time_to_live = -1, source_index_name } -> {} | nil, msg, code. The
-- index holds every existing row when this returns. source_index_name
-- copies that index's schema when no schema is given (a reindex).
function DB:create_search_index(req)
  check_req(req, "create_search_index")
  return self:_txn(true, function() return guarded(create, self, req) end)
end

--- db:list_search_index{ table } -> { indices = { {table_name, index_name} } }
-- (sorted by index name)
function DB:list_search_index(req)
  check_req(req, "list_search_index")
  return self:_txn(false, function()
    local ok, m, c = base.known(req, base.set{ "table" }, "list_search_index")
    if not ok then return nil, m, c end
    local t, msg, code = self:_table(req.table)
    if not t then return nil, msg, code end
    local by, e2, c2 = guarded(self._search_defs, self)
    if not by then return nil, e2, c2 end
    local out = {}
    for name in pairs(by[t.name] or {}) do out[#out + 1] = { table_name = t.name, index_name = name } end
    table.sort(out, function(a, b) return a.index_name < b.index_name end)
    return { indices = out }
  end)
end

--- db:describe_search_index{ table, index } -> { schema, sync_stat = {
-- sync_phase = "INCR", current_sync_timestamp (µs) }, index_status = {
-- status = "RUNNING", status_description = "" }, time_to_live,
-- create_time (µs), row_count, brother_index_name? }
function DB:describe_search_index(req)
  check_req(req, "describe_search_index")
  return self:_txn(false, function()
    local ok, m, c = base.known(req, base.set{ "table", "index" }, "describe_search_index")
    if not ok then return nil, m, c end
    local t, ix, code = self:_search_index(req.table, req.index)
    if not t then return nil, ix, code end
    return guarded(function()
      local n = docs.run(self.h, ("SELECT count(*) FROM %sdoc WHERE parent IS NULL"):format(ix.p))[1][1]
      return { schema = schema.describe(ix.def), time_to_live = ix.ttl, create_time = ix.created * 1000,
        sync_stat = { sync_phase = "INCR", current_sync_timestamp = now_ms(self) * 1000 },
        index_status = { status = "RUNNING", status_description = "" }, row_count = n }
    end)
  end)
end

--- db:update_search_index{ table, index, time_to_live } -> {}
function DB:update_search_index(req)
  check_req(req, "update_search_index")
  return self:_txn(true, function()
    local ok, m, c = base.known(req, base.set{ "table", "index", "time_to_live" }, "update_search_index")
    if not ok then return nil, m, c end
    local t, ix, code = self:_search_index(req.table, req.index)
    if not t then return nil, ix, code end
    if req.time_to_live == nil then return invalid("update_search_index: nothing to update (time_to_live)") end
    local ttl, tm, tc = check_ttl(t, req.time_to_live)
    if not ttl then return nil, tm, tc end
    return guarded(function()
      docs.run(self.h, "UPDATE s_meta SET ttl = ?1 WHERE tbl = ?2 AND idx = ?3", { ttl, t.name, ix.name })
      local b1, b2, b3 = self:_bump()
      if not b1 then return nil, b2, b3 end
      self.sx = nil
      return {}
    end)
  end)
end

--- db:delete_search_index{ table, index } -> {}
function DB:delete_search_index(req)
  check_req(req, "delete_search_index")
  return self:_txn(true, function()
    local ok, m, c = base.known(req, base.set{ "table", "index" }, "delete_search_index")
    if not ok then return nil, m, c end
    local t, ix, code = self:_search_index(req.table, req.index)
    if not t then return nil, ix, code end
    return guarded(function()
      local e1, e2, e3 = sql.exec(self.h, docs.drop(ix.p, ix.def))
      if not e1 then return dberr(e2, e3) end
      docs.run(self.h, "DELETE FROM s_meta WHERE tbl = ?1 AND idx = ?2", { t.name, ix.name })
      local b1, b2, b3 = self:_bump()
      if not b1 then return nil, b2, b3 end
      self.sx = nil
      return {}
    end)
  end)
end

require "otskit.store.search.run"
require "otskit.store.search.scan" -- db:compute_splits, db:parallel_scan
return search
