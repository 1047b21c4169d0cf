--- otskit.server -- the request pipeline of `otskit serve` (nginx + the
-- lua module): POST /<Api> with a protobuf body, as the Tablestore service
-- (API 2015-12-31) answers it.
--
-- One request: the API is known (else 400 OTSParameterInvalid
-- "Unsupported operation"), the method is POST (else 405), the body fits
-- (else 413, from nginx's client_max_body_size), the signature and headers
-- check out (otskit.server.auth), injected faults apply
-- (otskit.server.faults), then otskit.server.dispatch runs it on this
-- worker's store and otskit.server.respond signs the answer. Nothing a
-- request carries can raise out of here: a db failure the store raised
-- (otskit.store.txn, txn.failure) is answered with its code, any other
-- Lua error in the pipeline is logged and answered 500
-- OTSInternalServerError.
--
-- Several workers share one SQLite file (WAL): table metadata is cached
-- per worker, so a table change bumps a generation counter in the shared
-- dict and every other worker reopens its store on its next request.
--
-- The request path a well-formed request takes reads the request line
-- and headers as one string (ngx.req.raw_header()) and checks them and
-- the body in one C call (core.wire.raw_verify), reads one number from
-- the shared dict (`gen`, bumped by every faults or table change), and
-- signs the answer in one C call (core.wire.answer). Anything that call
-- does not take exactly as nginx reads it (see csrc/core/sign.h), and
-- every request that fails a check, goes the general path (the headers
-- table, otskit.server.auth), which answers it as before.
local store = require "otskit.store"
local txn = require "otskit.store.txn"
local auth = require "otskit.server.auth"
local dispatch = require "otskit.server.dispatch"
local faults = require "otskit.server.faults"
local respond = require "otskit.server.respond"
local admin = require "otskit.server.admin"
local core = require "otskit.core"
local clock = require("otskit.clock").now -- (not ngx.now: see otskit.server.respond)
local raw_api, raw_verify = core.wire.raw_api, core.wire.raw_verify
local APIS = dispatch.APIS

local server = {}

-- gen: the schema generation the open store has seen; seen: the last
-- `gen` of the shared dict acted on; stale: `gen` moved and the store has
-- not been checked against schema_gen since (cleared only by get_db's
-- success, so a request that returns before get_db leaves it set); n:
-- requests not yet added to the shared dict's n_requests
local state = { cfg = nil, dict = nil, db = nil, gen = nil, faults = false, faults_gen = nil, seen = nil,
  stale = false, n = 0 }

local DICT = "otskit_serve"

--- server.init(cfg) in init_by_lua: cfg = { access_key_id, secret,
-- instance, path (":memory:" or the SQLite file), workers, faults (spec),
-- jit_log (a file for otskit.server.jitlog, or "") }. Raises on a bad
-- faults spec, or a jit_log on a lua module without LuaJIT (nginx then
-- refuses to start).
function server.init(cfg)
  local f, err = faults.parse(cfg.faults)
  if f == nil then error("otskit serve: " .. err) end
  if cfg.jit_log and cfg.jit_log ~= "" and type(jit) ~= "table" then
    error("otskit serve: --jit-log needs nginx's lua module built on LuaJIT; this nginx runs " .. _VERSION
      .. " (no jit module): start without --jit-log")
  end
  state.cfg = cfg
  local dict = ngx.shared[DICT]
  dict:set("faults", cfg.faults or "")
  dict:set("faults_gen", 0)
  dict:set("schema_gen", 0)
  dict:set("gen", 0)
end

-- this worker's count of requests into the shared dict (the admin
-- endpoint's counters.requests): at most FLUSH seconds late, not a
-- shared-dict call per request
local FLUSH = 0.1
local function flush_requests()
  local n = state.n
  if n > 0 then
    state.n = 0
    state.dict:incr("n_requests", n, 0)
  end
end
server.flush_requests = flush_requests

-- A worker whose master is gone (killed -9) exits within a second: its
-- parent is no longer the master it started under, and no one else would
-- stop it serving and holding the port.
local function ppid() -- getppid(), from /proc/self/stat (Linux); nil elsewhere
  local f = io.open("/proc/self/stat")
  if not f then return nil end
  local st = f:read("*a"); f:close()
  return st and st:match("^.*%)%s+%S+%s+(%d+)")
end

local function exit_with_master()
  local master = ppid()
  if not master then return end
  ngx.timer.every(1, function(premature)
    if premature then return end
    -- a failed read (no file descriptor left under load) says nothing
    local now = ppid()
    if now and now ~= master then os.exit(1) end
  end)
end

--- server.init_worker(): per-worker random seed (faults), store opened
-- lazily; the worker exits when its master is gone.
function server.init_worker()
  state.dict = ngx.shared[DICT]
  exit_with_master()
  ngx.timer.every(FLUSH, function(premature)
    if not premature then flush_requests() end
  end)
  local jl = state.cfg.jit_log
  if jl and jl ~= "" then
    local ok, err = require("otskit.server.jitlog").start(jl)
    if not ok then ngx.log(ngx.ERR, "otskit serve: ", err) end
  end
  local seed = ngx.worker.pid() * 1000003 + math.floor(ngx.now() * 1000)
  local fh = io.open("/dev/urandom", "rb")
  if fh then
    local b = fh:read(4); fh:close()
    if b and #b == 4 then seed = seed + b:byte(1) * 16777216 + b:byte(2) * 65536 + b:byte(3) * 256 + b:byte(4) end
  end
  math.randomseed(seed)
end

-- this worker's store: (re)opened when another worker changed a table
-- (state.stale: the shared dict's `gen` moved since it was last checked)
local function get_db()
  local cfg = state.cfg
  if cfg.path == ":memory:" then
    if not state.db then
      local db, msg, code = store.open{ path = ":memory:" }
      if not db then return nil, msg, code end
      state.db = db
    end
    state.stale = false
    return state.db
  end
  if state.db and not state.stale then return state.db end
  local gen = state.dict:get("schema_gen") or 0
  if not (state.db and state.gen == gen) then
    -- the old handle is not closed here: a request of this worker waiting
    -- for the write lock may still hold it; the GC closes it after
    local db, msg, code = store.open{ path = cfg.path }
    if not db then return nil, msg, code end -- (stale stays: tried again next time)
    state.db, state.gen = db, gen
  end
  state.stale = false
  return state.db
end

-- One writer at a time across workers (when several share a file): a
-- lock in the shared dict, waited for by yielding to nginx (ngx.sleep),
-- instead of SQLite's busy handler, which sleeps inside the worker and
-- stalls every other request it serves. Measured with 2 workers, 8
-- connections of PutRow: see bench/RESULTS.md. The lock expires after
-- LOCK_TTL seconds, so a worker killed while holding it cannot wedge the
-- others; the store's own transactions still keep the data consistent.
local LOCK_TTL = 10
local function with_write_lock(fn, db, api, body)
  local dict, token = state.dict, ngx.worker.pid() .. ":" .. ngx.now() .. ":" .. math.random()
  local waited = 0
  while not dict:add("write_lock", token, LOCK_TTL) do
    if waited > 5 then return nil, "Another write held the store for over 5 s.", "OTSServerBusy" end
    local d = waited < 0.002 and 0 or 0.001
    ngx.sleep(d)
    waited = waited + (d == 0 and 0.0001 or d)
  end
  local ok, a, b, c = pcall(fn, db, api, body)
  -- a raise: its transaction rolled back before the lock is let go
  if not ok and db._recover then db:_recover() end
  if dict:get("write_lock") == token then dict:delete("write_lock") end
  if not ok then
    local f, fm, fc = txn.failure(a) -- a db failure: its code (e.g. OTSServerBusy)
    if f == false then error(a, 0) end
    return f, fm, fc
  end
  return a, b, c
end

-- true when the shared dict's `gen` moved since this worker last looked
-- (a faults or table change: every writer of faults or schema_gen bumps
-- it after them), the faults then re-read: one shared-dict read per
-- request when nothing changed
local function changed()
  local dict = state.dict
  local g = dict:get("gen")
  if g == state.seen then return false end
  state.seen, state.stale = g, true
  local fg = dict:get("faults_gen")
  if fg ~= state.faults_gen then
    state.faults = faults.parse(dict:get("faults")) or false
    state.faults_gen = fg
  end
  return true
end

-- the request after its checks: faults, the store, the answer
local function run(api, body)
  local cfg = state.cfg
  local dict = state.dict
  state.n = state.n + 1
  changed()
  local delay, drop, fail, empty = faults.decide(state.faults, api, math.random)
  if delay > 0 then ngx.sleep(delay) end
  if drop then
    dict:incr("n_dropped", 1, 0)
    return ngx.exit(444) -- close the connection, no answer
  end
  if fail then
    dict:incr("n_failed", 1, 0)
    local f = state.faults
    return respond.error(cfg, api, f.code, f.message, f.status)
  end

  -- (no get_db call when nothing moved: a trace that starts in it and
  -- returns here aborted, "NYI: return to lower frame")
  local db = state.db
  if db == nil or state.stale then
    local m, c
    db, m, c = get_db()
    if not db then
      return respond.error(cfg, api, c == "OTSServerBusy" and c or "OTSInternalServerError", m)
    end
  end
  if db.search_delay then db:search_delay(state.faults and state.faults.search_delay or nil) end
  -- the index_delay fault: global index visibility (otskit.store.maintain)
  local idelay = (state.faults and state.faults.index_delay or 0) / 1000
  if db.index_delay ~= idelay and (idelay > 0 or db.index_pending) then db:set_index_delay(idelay) end
  local out, emsg, ecode
  state.running = db -- (server.handle rolls back what a raise leaves open)
  if cfg.workers > 1 and APIS[api].write and cfg.write_lock ~= false then
    out, emsg, ecode = with_write_lock(dispatch.call, db, api, body)
  else
    out, emsg, ecode = dispatch.call(db, api, body, empty)
  end
  if empty and out then dict:incr("n_empty", 1, 0) end
  if out and APIS[api].schema and cfg.path ~= ":memory:" then
    local g = dict:incr("schema_gen", 1, 0)
    if state.db == db and state.gen == g - 1 then state.gen = g end -- this worker already knows
    dict:incr("gen", 1, 0)
  end
  if out == nil then return respond.error(cfg, api, ecode, emsg) end
  return respond.send(cfg, api, 200, out)
end

-- the general path: the headers table and otskit.server.auth (every
-- request raw_verify does not take)
local function serve(api)
  local cfg = state.cfg
  ngx.req.read_body()
  local body = ngx.req.get_body_data()
  if body == nil then
    -- nginx spooled it to a file: client_body_buffer_size equals the
    -- limit, so this only happens past it
    if ngx.req.get_body_file() then
      return respond.error(cfg, api, "OTSRequestBodyTooLarge")
    end
    body = ""
  end
  local headers, herr = ngx.req.get_headers(64)
  if herr == "truncated" then
    return respond.error(cfg, api, "OTSParameterInvalid", "Too many headers.")
  end
  local ok, msg, code = auth.verify(cfg, api, headers, body, clock() * 1000)
  if not ok then return respond.error(cfg, api, code, msg) end
  return run(api, body)
end

-- a raise out of the pipeline: what it left open rolled back; a db
-- failure answered with its code, anything else logged and 500
local function raised(api, err)
  -- the transaction a raise left open (the store's hot paths run theirs
  -- without a pcall of their own: otskit.store.txn, DB:_txn_open)
  for _, db in ipairs({ state.running or false, state.db or false }) do
    if db and db._recover then pcall(db._recover, db) end
  end
  -- a db failure inside the store (txn.check): answered with its code
  local f, fm, fc = txn.failure(err)
  if f ~= false and not ngx.headers_sent then return respond.error(state.cfg, api, fc, fm) end
  ngx.log(ngx.ERR, "otskit serve: internal error on ", api, ": ", tostring(err))
  if ngx.headers_sent then return ngx.exit(ngx.ERROR) end
  return respond.error(state.cfg, api, "OTSInternalServerError")
end

--- server.handle(): content_by_lua of `location /`.
function server.handle()
  local cfg = state.cfg
  -- the fast path: "POST /<Api>" of a known API, its headers and body
  -- checked in one C call (the body read only then: any other request is
  -- refused before nginx reads its body)
  local raw = ngx.req.raw_header()
  local fast = raw_api(raw)
  if fast and APIS[fast] then
    ngx.req.read_body()
    local body = ngx.req.get_body_data()
    if body == nil and ngx.req.get_body_file() == nil then body = "" end
    if body and raw_verify(raw, body, cfg.secret, cfg.access_key_id, cfg.instance, clock() * 1000) then
      local ok, err = pcall(run, fast, body)
      if not ok then return raised(fast, err) end
      return
    end
  end
  local path = ngx.var.uri
  local api = path:match("^/(%w+)$")
  if not api or not APIS[api] then
    return respond.error(cfg, api, "OTSParameterInvalid", "Unsupported operation: '" .. path:sub(2, 200) .. "'.")
  end
  if ngx.req.get_method() ~= "POST" then
    return respond.error(cfg, api, "OTSMethodNotAllowed")
  end
  local ok, err = pcall(serve, api)
  if not ok then return raised(api, err) end
end

--- server.too_large(): the 413 error page (client_max_body_size).
function server.too_large()
  local api = ngx.var.uri:match("^/(%w+)$")
  return respond.error(state.cfg, api, "OTSRequestBodyTooLarge")
end

-- nginx's refusals -> the service's code and status
local HTTP_ERRORS = {
  [400] = { "OTSParameterInvalid", 400, "Malformed HTTP request." },
  [494] = { "OTSParameterInvalid", 400, "Request header too large." },
  [414] = { "OTSParameterInvalid", 400, "Request URI too long." },
  [505] = { "OTSParameterInvalid", 400, "HTTP version not supported." },
  [405] = { "OTSMethodNotAllowed", 405, "Only POST method is supported." },
  [501] = { "OTSMethodNotAllowed", 405, "Only POST method is supported." },
  [408] = { "OTSRequestTimeout", 408 },
}

--- server.http_error(status): nginx's own error pages (a malformed
-- request line, HTTP/0.9, an unknown method or version, a URI or header
-- too long) as the service's protobuf errors: 400 OTSParameterInvalid,
-- 405 OTSMethodNotAllowed, else 500 OTSInternalServerError. Never raises.
function server.http_error(status)
  local e = HTTP_ERRORS[status] or { "OTSInternalServerError", 500 }
  return respond.error(state.cfg, nil, e[1], e[3], e[2])
end

--- server.admin(): content_by_lua of `location /_otskit/`.
function server.admin()
  flush_requests() -- (this worker's count; the others' are at most FLUSH s late)
  return admin.handle(state)
end

return server
