--- otskit.analyze.remote -- the designs of `otskit analyze` / `demo`
-- against a real server (otskit.client: Tablestore or `otskit serve`).
--
-- A store with the store's interface whose data lives on the server:
-- every read and write goes to the client and its answer is returned.
-- Writes (and reads) are mirrored into a local embedded store on the
-- simulated clock, which keeps the partition picture the analysis draws
-- (db:partitions, db:hotspots: a real service does not expose them).
-- Table names get a per-run prefix on the server (so do global index names,
-- which share the tables' namespace, and the names of those tables in SQL
-- text), and the tables this run created there are deleted by close()
-- (their indexes with them).
local remote = {}
local R = {}

local MIRRORED = { put_row = true, update_row = true, delete_row = true, batch_write_row = true,
                   get_row = true, get_range = true, batch_get_row = true }
-- store-only options the wire format does not carry (the embedded
-- store's own partition-splitting thresholds)
local LOCAL_ONLY = { partition = true }

local function copy(t)
  local o = {}
  for k, v in pairs(t) do o[k] = v end
  return o
end

-- the request with its table names prefixed
local function outbound(self, req)
  local o = copy(req)
  if type(o.table) == "string" then o.table = self.prefix .. o.table end
  if type(o.name) == "string" then o.name = self.prefix .. o.name end
  if type(o.tables) == "table" then
    o.tables = {}
    for i, s in ipairs(req.tables) do
      local s2 = copy(s)
      if type(s2.table) == "string" then s2.table = self.prefix .. s2.table end
      o.tables[i] = s2
    end
  end
  if type(o.index_meta) == "table" and type(o.index_meta.name) == "string" then   -- create_index
    o.index_meta = copy(o.index_meta)
    o.index_meta.name = self.prefix .. o.index_meta.name
  end
  if type(o.index_name) == "string" and o.table ~= nil then o.index_name = self.prefix .. o.index_name end -- drop_index
  for k in pairs(LOCAL_ONLY) do o[k] = nil end
  return o
end

-- SQL text with the names of this run's tables prefixed: every bare or
-- quoted identifier (`x`, "x") outside string literals ('...') that names a
-- table or global index this run created. (A column named like such a
-- table would be renamed too: the server then refuses the statement.)
local function prefix_sql(self, q)
  local out, i, n = {}, 1, #q
  local function name(w)
    if self.names[w] then return self.prefix .. w end
    return w
  end
  while i <= n do
    local c = q:sub(i, i)
    if c == "'" then
      local j = i + 1
      while j <= n do
        if q:sub(j, j) == "'" then
          if q:sub(j + 1, j + 1) == "'" then j = j + 2 else break end
        else j = j + 1 end
      end
      out[#out + 1] = q:sub(i, j)
      i = j + 1
    elseif c == "`" or c == '"' then
      local j = q:find(c, i + 1, true) or n
      out[#out + 1] = c .. name(q:sub(i + 1, j - 1)) .. q:sub(j, j)
      i = j + 1
    elseif c:match("[%a_]") then
      local w = q:match("^[%w_]+", i)
      out[#out + 1] = name(w)
      i = i + #w
    else
      local j = q:find("[%a_'`\"]", i) or n + 1
      out[#out + 1] = q:sub(i, j - 1)
      i = j
    end
  end
  return table.concat(out)
end
remote._prefix_sql = prefix_sql

local function inbound(self, res)
  if type(res) ~= "table" then return res end
  local n = #self.prefix
  local function strip(s)
    if type(s) == "string" and s:sub(1, n) == self.prefix then return s:sub(n + 1) end
    return s
  end
  if type(res.tables) == "table" then
    for _, t in ipairs(res.tables) do t.table = strip(t.table) end
  end
  if type(res.table_meta) == "table" then res.table_meta.table = strip(res.table_meta.table) end
  if type(res.index_metas) == "table" then
    for _, ix in ipairs(res.index_metas) do ix.name = strip(ix.name) end
  end
  if type(res.table_names) == "table" then
    local mine = {}
    for _, name in ipairs(res.table_names) do
      if name:sub(1, n) == self.prefix then mine[#mine + 1] = strip(name) end
    end
    res.table_names = mine
  end
  return res
end

R.__index = function(self, k)
  local v = R[k]
  if v ~= nil then return v end
  local api = require("otskit.client").APIS[k]
  if api then
    return function(s, req)
      req = req or {}
      if MIRRORED[k] then s.db[k](s.db, req) end
      local res, msg, code = s.client[k](s.client, outbound(s, req))
      if not res then return nil, msg, code end
      return inbound(s, res)
    end
  end
  -- partitions, hotspots, now, inject, fault_stats...: the local store
  local f = self.db[k]
  if type(f) == "function" then return function(s, ...) return f(s.db, ...) end end
  return f
end

--- remote.new(db, client, prefix) -> store. db: the local embedded store
-- (on the simulated clock), client: an otskit.client, prefix: the table
-- name prefix on the server.
function remote.new(db, client, prefix)
  return setmetatable({ db = db, client = client, prefix = prefix, created = {}, names = {} }, R)
end

--- sql(query, opts) / sql_query{ query }: the server's SQL engine
-- (client:sql), on the prefixed names of this run's tables.
function R:sql(query, opts)
  if type(query) ~= "string" then return nil, "query must be a string", "OTSParameterInvalid" end
  return self.client:sql(prefix_sql(self, query), opts)
end

function R:sql_query(req)
  if type(req) ~= "table" or type(req.query) ~= "string" then
    return nil, "sql_query expects { query = string }", "OTSParameterInvalid"
  end
  return self.client:sql_query { query = prefix_sql(self, req.query) }
end

function R:create_index(req)
  local res, msg, code = self.client:create_index(outbound(self, req))
  if not res then return nil, msg, code end
  if type(req.index_meta) == "table" and type(req.index_meta.name) == "string" then
    self.names[req.index_meta.name] = true
  end
  return res
end

function R:create_table(req)
  local ok, msg, code = self.db:create_table(req)
  if not ok then return nil, msg, code end
  local res, m2, c2 = self.client:create_table(outbound(self, req))
  if not res then return nil, m2, c2 end
  self.created[#self.created + 1] = self.prefix .. req.name
  self.names[req.name] = true
  return ok
end

function R:delete_table(req)
  self.db:delete_table(req)
  return self.client:delete_table(outbound(self, req))
end

--- close(): deletes the server tables this run created, closes the local store.
function R:close()
  for _, name in ipairs(self.created) do self.client:delete_table{ name = name } end
  self.created = {}
  return self.db:close()
end

return remote
