--- otskit.analyze.remote -- the designs of `otskit analyze` / `demo`
-- against a real server (otskit.client: Tablestore or `otskit serve`).
--
-- A store with the store's interface whose data lives on the server:
-- every read and write goes to the client and its answer is returned.
-- Writes (and reads) are mirrored into a local embedded store on the
-- simulated clock, which keeps the partition picture the analysis draws
-- (db:partitions, db:hotspots: a real service does not expose them).
-- Table names get a per-run prefix on the server, and the tables this run
-- created there are deleted by close().
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
  for k in pairs(LOCAL_ONLY) do o[k] = nil end
  return o
end

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
  return setmetatable({ db = db, client = client, prefix = prefix, created = {} }, R)
end

function R:create_table(req)
  local ok, msg, code = self.db:create_table(req)
  if not ok then return nil, msg, code end
  local res, m2, c2 = self.client:create_table(outbound(self, req))
  if not res then return nil, m2, c2 end
  self.created[#self.created + 1] = self.prefix .. req.name
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
