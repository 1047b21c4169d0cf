--- otskit.store.search.scan -- db:compute_splits and db:parallel_scan of
-- a search index: a scan's session, its max_parallel parts (each
-- document in exactly one, by id), each part's rows in primary key order
-- in pages of at most LIMITS.scan_limit, a page's token living alive_time
-- seconds. The query, columns_to_get and timeout_ms are a search's
-- (otskit.store.search.run).
local base = require "otskit.store.base"
local docs = require "otskit.store.search.docs"
local query = require "otskit.store.search.query"
local sort = require "otskit.store.search.sort"
local run = require "otskit.store.search.run"

local DB = base.DB
local invalid, check_req, now_ms = base.invalid, base.check_req, base.now_ms
local guarded = docs.guarded
local L = run.LIMITS
local nparams, columns, row_of, key_types, key_rows = run.nparams, run.columns, run.row_of, run.key_types, run.key_rows
local is_count, bad_timeout, TIMEOUT_RULE, arm, timed = run.is_count, run.bad_timeout, run.TIMEOUT_RULE, run.arm, run.timed
local where = run.where

local parallel = {}

local function splits(self, req)
  local ok, m, c = base.known(req, base.set{ "table", "index" }, "compute_splits")
  if not ok then return nil, m, c end
  local t, ix, code = self:_search_index(req.table, req.index)
  if not t then return nil, ix, code end
  local n = docs.run(self.h, ("SELECT count(*) FROM %sdoc WHERE parent IS NULL"):format(ix.p))[1][1]
  local size = math.max(1, math.min(L.max_parallel, math.ceil(n / 100000)))
  local session = sort.token(self:_search_secret() or "", t.name .. "/" .. ix.name,
    { kind = "session", after = {}, extra = { size = size, at = now_ms(self) } })
  return { session_id = session, splits_size = size }
end

--- db:compute_splits{ table, index } -> { session_id, splits_size }
function DB:compute_splits(req)
  check_req(req, "compute_splits")
  return self:_txn(false, function() return guarded(splits, self, req) end)
end

local SCAN_FIELDS = base.set{ "table", "index", "session_id", "query", "limit", "alive_time", "token",
  "current_parallel_id", "max_parallel", "columns_to_get", "timeout_ms" }

local function scan(self, req)
  local ok, m, c = base.known(req, SCAN_FIELDS, "parallel_scan")
  if not ok then return nil, m, c end
  if bad_timeout(req) then return invalid(TIMEOUT_RULE) end
  local t, ix, code = self:_search_index(req.table, req.index)
  if not t then return nil, ix, code end
  arm(self, req)
  local secret, scope = self:_search_secret() or "", t.name .. "/" .. ix.name
  local now = now_ms(self)
  local sess
  if req.session_id ~= nil then
    sess = sort.open(secret, scope, req.session_id)
    if not sess or sess.kind ~= "session" then return nil, "session_id is not a session of this index", "OTSSessionNotExist" end
  end
  local size = sess and sess.extra.size or 1
  local maxp = req.max_parallel or 1
  local cur = req.current_parallel_id or 0
  if not is_count(maxp, 1, size) then return invalid(("max_parallel must be in 1..%d (splits_size)"):format(size)) end
  if not is_count(cur, 0, maxp - 1) then return invalid("current_parallel_id must be in 0..max_parallel-1") end
  local limit = req.limit or L.scan_default_limit
  if not is_count(limit, 1, L.scan_limit) then return invalid("limit must be in 1.." .. L.scan_limit) end
  local alive = req.alive_time or L.default_alive_time
  if not is_count(alive, 1, L.alive_time) then return invalid("alive_time must be in 1.." .. L.alive_time .. " seconds") end
  local cols, cm, cc = columns(ix, req.columns_to_get)
  if not cols then return nil, cm, cc end
  local ctx = query.ctx(ix.def, ix.p)
  local full, score, c2, from, cond = where(self, ctx, t, ix, { query = req.query })
  if not full then return nil, score, c2 end
  local after
  if req.token ~= nil then
    local p, pm, pc = sort.open(secret, scope, req.token)
    if not p or p.kind ~= "scan" then return nil, pm or "invalid token", pc or "OTSParameterInvalid" end
    local e = p.extra
    if e.cur ~= cur or e.maxp ~= maxp or e.session ~= (req.session_id and #req.session_id or 0) then
      return invalid("the token belongs to another parallel id, max_parallel or session")
    end
    if now > e.expires then return nil, "the scan's alive_time has passed", "OTSSessionExpired" end
    after = p.after
  end
  if maxp > 1 then cond = cond .. (" AND d.id %% %s = %s"):format(ctx:bind(maxp), ctx:bind(cur)) end
  if after then cond = cond .. " AND d.pk > CAST(" .. ctx:bind(after[1][2]) .. " AS BLOB)" end
  local text = ("SELECT d.pk FROM %s d WHERE %s ORDER BY d.pk"):format(from, cond)
  local res = { rows = {} }
  if cols.mode == "RETURN_NONE" then
    local vals, n, _, mark = docs.keys(self.h, text, ctx.binds, nparams(text), limit + 1, 0, false, key_types(t), limit)
    key_rows(t, vals, math.min(n, limit), res.rows)
    if n > limit then
      res.next_token = sort.token(secret, scope, { kind = "scan", after = { { "b", mark } },
        extra = { cur = cur, maxp = maxp, expires = now + alive * 1000,
          session = req.session_id and #req.session_id or 0 } })
    end
    return res
  end
  local rows = docs.run(self.h, text, ctx.binds, nparams(text), limit + 1)
  for i = 1, math.min(#rows, limit) do res.rows[i] = row_of(self, t, rows[i][1], cols) end
  if #rows > limit then
    res.next_token = sort.token(secret, scope, { kind = "scan", after = { { "b", rows[limit][1] } },
      extra = { cur = cur, maxp = maxp, expires = now + alive * 1000,
        session = req.session_id and #req.session_id or 0 } })
  end
  return res
end

--- db:parallel_scan{ table, index, session_id, query, limit = 100 (<=
-- 2000), alive_time = 60 (s), token, current_parallel_id = 0, max_parallel
-- = 1 (<= splits_size), columns_to_get, timeout_ms } -> { rows, next_token }. The
-- max_parallel scans (ids 0..max_parallel-1) together return every
-- matching row once, each in primary key order; next_token while more
-- remain; a token lives alive_time seconds. timeout_ms (both): past it the
-- request fails OTSTimeout (see timed).
function DB:parallel_scan(req)
  check_req(req, "parallel_scan")
  return self:_txn(false, function() return timed(scan, self, req) end)
end

return parallel
