--- otskit.client -- Tablestore over HTTP with the store's interface.
--
-- client.new{...} returns an object with the methods of otskit.store
-- (create_table ... get_range, compute_split_points_by_size), taking the
-- same request tables and returning the same response tables, or nil,
-- message, code, request_id, http_status. Requests are encoded by
-- otskit.wire, signed (V2, a fresh x-ots-date on every attempt), sent by a
-- transport (libcurl multi, nginx subrequests or a function) and retried
-- through otskit.retry with Tablestore's classification.
local errors = require "otskit.errors"
local retry = require "otskit.retry"
local backoff = require "otskit.backoff"
local transport = require "otskit.client.transport"
local parallel = require "otskit.client.parallel"
local batch = require "otskit.client.batch"
local pager = require "otskit.client.pager"
local keys = require "otskit.client.keys"
local verify = require "otskit.client.verify"

local client = {}

local C = {}
C.__index = C
client.Client = C

local function fail(fmt, ...) error("otskit.client: " .. fmt:format(...), 3) end

-- The store's methods and the Tablestore API behind each.
client.APIS = {
  create_table = "CreateTable", describe_table = "DescribeTable",
  list_table = "ListTable", update_table = "UpdateTable",
  delete_table = "DeleteTable", put_row = "PutRow", get_row = "GetRow",
  update_row = "UpdateRow", delete_row = "DeleteRow",
  batch_get_row = "BatchGetRow", batch_write_row = "BatchWriteRow",
  get_range = "GetRange",
  compute_split_points_by_size = "ComputeSplitPointsBySize",
  create_search_index = "CreateSearchIndex", describe_search_index = "DescribeSearchIndex",
  list_search_index = "ListSearchIndex", update_search_index = "UpdateSearchIndex",
  delete_search_index = "DeleteSearchIndex", search = "Search", compute_splits = "ComputeSplits",
  parallel_scan = "ParallelScan",
  create_index = "CreateIndex", drop_index = "DropIndex",
  add_defined_column = "AddDefinedColumn", delete_defined_column = "DeleteDefinedColumn",
  start_local_transaction = "StartLocalTransaction", commit_transaction = "CommitTransaction",
  abort_transaction = "AbortTransaction",
  sql_query = "SQLQuery",
}

local NEW_KEYS = {
  endpoint = true, instance = true, access_key_id = true,
  access_key_secret = true, sts_token = true, timeout = true,
  connect_timeout = true, retry = true, budget = true, transport = true,
  location = true, verify = true, ca_file = true, wire = true,
  unsigned = true, skew = true,
}

local function in_nginx()
  local ngx = rawget(_G, "ngx")
  return type(ngx) == "table" and type(ngx.location) == "table" and ngx.get_phase ~= nil
end

local function wall_ms()
  local ngx = rawget(_G, "ngx")
  if type(ngx) == "table" and ngx.now then
    ngx.update_time()
    return math.floor(ngx.now() * 1000 + 0.5)
  end
  return math.floor(require("otskit.core").http.time() * 1000 + 0.5)
end

local function default_sleep(d)
  local ngx = rawget(_G, "ngx")
  if type(ngx) == "table" and ngx.sleep and ngx.get_phase then
    local ph = ngx.get_phase()
    if ph == "rewrite" or ph == "access" or ph == "content" or ph == "timer" then
      return ngx.sleep(d < 0.001 and 0.001 or d)
    end
  end
  return backoff.sleep(d)
end

--- client.MAX_SECONDS: the longest timeout, connect_timeout and skew
-- client.new takes (one day; the retry options' base, cap and deadline
-- have the same bound in otskit.backoff). A longer one is refused: it is
-- a mistake (a size or a timestamp passed as a duration), and bounded
-- durations stay exact when the transport turns them into milliseconds.
client.MAX_SECONDS = 86400

local function seconds(v)
  return type(v) == "number" and v > 0 and v <= client.MAX_SECONDS
end

--- client.new{ endpoint, instance, access_key_id, access_key_secret,
-- sts_token, timeout = 10, connect_timeout, retry, budget, transport,
-- location = "/_otskit", verify = true, ca_file, unsigned = false,
-- skew = 900 } -> client.
-- endpoint: "https://<instance>.<region>.ots.aliyuncs.com" (any path is
-- ignored: requests go to /<Api>). timeout: seconds per attempt (curl and
-- function transports; nginx takes its proxy timeouts from nginx.conf);
-- timeout, connect_timeout and skew are at most client.MAX_SECONDS.
-- retry: options for backoff.new (max_attempts, deadline, base, ...; the
-- deadline bounds a whole call, retries included), or false: one attempt.
-- budget: a backoff.budget (in OpenResty backoff.budget{ dict =
-- ngx.shared.NAME }: one budget for all workers), false for none, nil
-- for retry.budget (per process). transport: "curl" (default outside
-- nginx), "nginx" (default inside; location names the internal location)
-- or a function(req) -> { status, headers, body } | nil, message,
-- failure. Every answer is verified (docs/reliability.md): its
-- x-ots-contentmd5 and signature are required and checked (unsigned =
-- true: a server that does not sign; headers present are still checked),
-- its x-ots-date must be within skew seconds (default 900, false: not
-- checked) of this clock, and rows must belong to the key or range asked;
-- a failed check is OTSResponseSignatureMismatch, OTSResponseCorrupted or
-- OTSResponseInvalid. Raises "otskit.client: ..." on a bad option.
function client.new(opts)
  if type(opts) ~= "table" then fail("new expects a table of options") end
  for k in pairs(opts) do
    if not NEW_KEYS[k] then fail("new: unknown option '%s'", tostring(k)) end
  end
  local ep = opts.endpoint
  if type(ep) ~= "string" then fail("new: endpoint must be a URL string") end
  local scheme, hostport = ep:match("^(https?)://([^/?#]+)")
  if not scheme then fail("new: endpoint must be http(s)://host[:port], got '%s'", ep) end
  for _, k in ipairs({ "instance", "access_key_id", "access_key_secret" }) do
    if type(opts[k]) ~= "string" or opts[k] == "" then fail("new: %s must be a non-empty string", k) end
  end
  if opts.sts_token ~= nil and type(opts.sts_token) ~= "string" then fail("new: sts_token must be a string") end
  local timeout = opts.timeout
  if timeout ~= nil and not seconds(timeout) then
    fail("new: timeout must be a number of seconds in (0, %d]", client.MAX_SECONDS)
  end
  local ct = opts.connect_timeout
  if ct ~= nil and not seconds(ct) then
    fail("new: connect_timeout must be a number of seconds in (0, %d]", client.MAX_SECONDS)
  end
  if opts.unsigned ~= nil and type(opts.unsigned) ~= "boolean" then fail("new: unsigned must be a boolean") end
  local skew = opts.skew
  if skew ~= nil and skew ~= false and not seconds(skew) then
    fail("new: skew must be a number of seconds in (0, %d] or false", client.MAX_SECONDS)
  end
  if skew == nil then skew = verify.SKEW end
  local self = setmetatable({
    unsigned = opts.unsigned == true, skew = skew or nil, now_ms = wall_ms,
    base = scheme .. "://" .. hostport, instance = opts.instance,
    ak = opts.access_key_id, secret = opts.access_key_secret, sts = opts.sts_token,
    timeout = timeout or 10, budget = opts.budget, _jobs = setmetatable({}, { __mode = "k" }),
    _keynames = {},
    stats = { calls = 0, attempts = 0, requests = 0 },
  }, C)
  -- retry options: checked now (backoff.new raises on a bad one)
  if opts.retry == false then
    self.backoff = { max_attempts = 1 }
  elseif opts.retry == nil or type(opts.retry) == "table" then
    self.backoff = opts.retry
    backoff.new(opts.retry)
  else
    fail("new: retry must be a table of backoff options or false")
  end
  if self.budget ~= nil and self.budget ~= false and type(self.budget) ~= "table" and type(self.budget) ~= "userdata" then
    fail("new: budget must be a backoff.budget, false or nil")
  end
  self.wire = opts.wire or require "otskit.wire"
  local t = opts.transport
  if t == nil then t = in_nginx() and "nginx" or "curl" end
  if t == "curl" then
    if opts.location ~= nil then fail("new: location is for the nginx transport") end
    self.transport = transport.curl{ verify = opts.verify, ca_file = opts.ca_file, connect_timeout = ct }
  elseif t == "nginx" then
    for _, k in ipairs({ "timeout", "connect_timeout", "verify", "ca_file" }) do
      if opts[k] ~= nil then
        fail("new: %s does not apply to the nginx transport (set proxy_*_timeout / proxy_ssl_* in its location)", k)
      end
    end
    local loc = opts.location or "/_otskit"
    if type(loc) ~= "string" or loc:sub(1, 1) ~= "/" then fail("new: location must be a path") end
    for _, k in ipairs({ "instance", "access_key_id", "sts_token" }) do
      if opts[k] ~= nil and not transport.safe_arg(opts[k]) then
        fail("new: %s has characters the nginx transport cannot pass", k)
      end
    end
    self.timeout = nil
    self.transport = transport.nginx(loc)
  elseif type(t) == "function" then
    if opts.location ~= nil or opts.verify ~= nil or opts.ca_file ~= nil then
      fail("new: location, verify and ca_file do not apply to a transport function")
    end
    self.transport = transport.func(t)
  else
    fail("new: transport must be \"curl\", \"nginx\" or a function")
  end
  self.kind = type(t) == "function" and "function" or t
  return self
end

--- client:close(): closes the transport's connections.
function C:close()
  if self.transport and self.transport.close then self.transport:close() end
end

--- client:connects() -> TCP connections opened so far (curl transport), or nil.
function C:connects()
  if self.transport.connects then return self.transport:connects() end
  return nil
end

---------------------------------------------------------------------------
-- One HTTP exchange

-- The signed headers of one attempt (x-ots-date fresh each time).
function C:_headers(api, md5)
  local w = self.wire
  local h = {
    ["x-ots-date"] = w.date(wall_ms()),
    ["x-ots-apiversion"] = "2015-12-31",
    ["x-ots-accesskeyid"] = self.ak,
    ["x-ots-instancename"] = self.instance,
    ["x-ots-contentmd5"] = md5,
    ["x-ots-ststoken"] = self.sts,
  }
  h["x-ots-signature"] = w.sign_request(self.secret, api, h)
  return h
end

-- The network round trip: yields to the parallel driver inside a job.
function C:_perform(req)
  self.stats.requests = self.stats.requests + 1
  if parallel.in_job(self._jobs) then return parallel.request(req) end
  return self.transport:request(req)
end

function C:_sleep(d)
  if parallel.in_job(self._jobs) then return parallel.sleep(d) end
  return default_sleep(d)
end

-- Checks the response's MD5, signature and date (otskit.client.verify).
function C:_verify(api, res, code)
  return verify.headers(self, api, res, code)
end

local FAILURE_CODE = { timeout = "RequestTimeout" }

--- C:_exchange(api, body, deadline) -> response table | nil, err table
-- (code, message, http_status, request_id, network, not_sent, timeout).
-- One attempt: sign, send, check, decode.
function C:_exchange(api, body, t_end, req)
  local w = self.wire
  local timeout = self.timeout
  if timeout and t_end then
    local left = t_end - backoff.now()
    if left < timeout then timeout = math.max(0.001, left) end
  end
  local headers = self:_headers(api, w.content_md5(body))
  self.stats.attempts = self.stats.attempts + 1
  local r = self:_perform{ url = self.base .. "/" .. api, api = api, headers = headers,
                           body = body, timeout = timeout }
  if r.failure then
    return nil, { code = FAILURE_CODE[r.failure] or "NetworkError", message = r.error or r.failure,
                  network = true, not_sent = r.failure == "connect" or r.failure == "tls",
                  timeout = r.failure == "timeout" }
  end
  local h = r.headers or {}
  local rid = h["x-ots-requestid"] or h["x-ots-request-id"]
  if r.status < 200 or r.status >= 300 then
    local code, msg = w.decode_error(r.body or "")
    if code == nil then msg = nil end
    local bad = self:_verify(api, r, code)
    if bad then bad.http_status, bad.request_id = r.status, rid; return nil, bad end
    local err = { code = code, message = msg or ("HTTP status " .. r.status), http_status = r.status, request_id = rid }
    if code == nil then err.bare = true end
    return nil, err
  end
  local bad = self:_verify(api, r)
  if bad then bad.http_status, bad.request_id = r.status, rid; return nil, bad end
  local out, msg, code = w.decode_response(api, r.body or "", req)
  if out == nil then
    return nil, { code = code or "OTSResponseInvalid", message = "cannot decode the " .. api .. " response: " .. tostring(msg),
                  http_status = r.status, request_id = rid, network = true }
  end
  bad = verify.rows(api, req, out, w.rows_order and w.rows_order(out.rows))
  if bad then bad.http_status, bad.request_id = r.status, rid; return nil, bad end
  out.request_id = rid
  return out
end

---------------------------------------------------------------------------
-- Retries

--- client.classify(err, api, idempotent) -> "retry" | "throttle" | "fail".
-- Never sent (refused connection, TLS handshake): retry for any API.
-- An HTTP error without a Tablestore code: by status (5xx ambiguous,
-- 429 throttle). Otherwise retry.tablestore's rules: a write is retried
-- after an ambiguous failure only when it is idempotent
-- (client.is_idempotent).
function client.classify(err, api, idempotent)
  if type(err) ~= "table" then return retry.tablestore(err, api) end
  if err.not_sent then return "retry" end
  local opts = idempotent and { idempotent = true } or nil
  if err.bare then
    return retry.tablestore({ http_status = err.http_status, network = err.network }, api, opts)
  end
  return retry.tablestore(err, api, opts)
end

function C:_retry_opts(api, idempotent, classify)
  local me = self
  return {
    op = api, backoff = self.backoff, budget = self.budget,
    sleep = function(d) return me:_sleep(d) end,
    classify = classify or function(err) return client.classify(err, api, idempotent) end,
  }
end

-- The deadline (backoff.now() scale) of a call, or nil.
function C:_deadline()
  local d = (self.backoff and self.backoff.deadline)
  if d == nil then d = retry.defaults.deadline end
  if d == 0 or d == math.huge then return nil end
  return backoff.now() + d
end

-- The public error of a final failure: nil, message, code, request_id, http_status.
local function failure(msg, code, err)
  if type(err) ~= "table" then return nil, msg, code end
  if code == nil and err.bare then code = "HTTP" .. tostring(err.http_status) end
  return nil, msg, code, err.request_id, err.http_status
end
client.failure = failure

-- IGNORE, or no condition at all
local function unconditional(c)
  if c == nil or c == "IGNORE" then return true end
  if type(c) ~= "table" then return false end
  return (c.row_existence == nil or c.row_existence == "IGNORE") and c.column_condition == nil
end

local function has_auto_increment(pk)
  if type(pk) ~= "table" then return false end
  local auto = require("otskit.values").AUTO_INCREMENT
  for k, v in pairs(pk) do
    if v == auto or (type(v) == "table" and (v[2] == auto or v.value == auto)) or k == auto then return true end
  end
  return false
end

local function has_increment(up)
  if type(up) ~= "table" then return false end
  if up.INCREMENT ~= nil then return true end
  for _, op in ipairs(up) do
    if type(op) == "table" and op[1] == "INCREMENT" then return true end
  end
  return false
end

--- client.is_idempotent(api, req) -> true when sending the row write
-- again after it was applied gives the same row and the same answer:
-- PutRow, UpdateRow and DeleteRow (req, or a BatchWriteRow row with its
-- type) with no condition or IGNORE (a row_existence or column condition
-- may no longer hold once the write applied: EXPECT_NOT_EXIST then fails
-- with OTSConditionCheckFail, a version check with the version it wrote),
-- no INCREMENT and no AUTO_INCREMENT key column (each repeat would add
-- again / create another row). Table operations are not (CreateTable
-- repeated answers OTSObjectAlreadyExist). Only these are retried after
-- an ambiguous failure; the others end with OTSOutcomeUnknown.
function client.is_idempotent(api, req)
  if type(req) ~= "table" then return false end
  if api == "BatchWriteRow" then
    api = ({ PUT = "PutRow", UPDATE = "UpdateRow", DELETE = "DeleteRow" })[req.type]
  end
  if api ~= "PutRow" and api ~= "UpdateRow" and api ~= "DeleteRow" then return false end
  if not unconditional(req.condition) or has_auto_increment(req.primary_key) then return false end
  if api == "UpdateRow" and has_increment(req.update) then return false end
  return true
end

--- C:_call(api, req [, t_end]): encode once, then attempts under
-- retry.call; t_end (backoff.now() scale) cuts the call's deadline.
function C:_call(api, req, until_)
  if api == "CreateTable" or api == "DeleteTable" then keys.forget(self, req.name) end
  local named, m0, c0, r0, s0 = keys.name(self, api, req)
  if not named then return nil, m0, c0, r0, s0 end
  req = named
  local body, msg, code = self.wire.encode_request(api, req)
  if body == nil then return nil, msg, code or "OTSParameterInvalid" end
  self.stats.calls = self.stats.calls + 1
  local t_end = self:_deadline()
  if until_ and (t_end == nil or until_ < t_end) then t_end = until_ end
  local me = self
  local res, m, c, _, last = retry.call(function()
    return me:_exchange(api, body, t_end, req)
  end, self:_retry_opts(api, client.is_idempotent(api, req)))
  if res == nil then return failure(m, c, last) end
  return res
end

---------------------------------------------------------------------------
-- The store interface

local function method(name, api)
  return function(self, req)
    if req == nil and name == "list_table" then req = {} end
    if type(req) ~= "table" then fail("%s expects a request table", name) end
    return self:_call(api, req)
  end
end

for name, api in pairs(client.APIS) do C[name] = method(name, api) end

--- batch_write_row / batch_get_row: rows that fail with a retryable code
-- are sent again (only those), under one schedule and budget.
function C:batch_write_row(req)
  if type(req) ~= "table" then fail("batch_write_row expects a request table") end
  local named, m, c, r, s = keys.name(self, "BatchWriteRow", req)
  if not named then return nil, m, c, r, s end
  return batch.run(self, "BatchWriteRow", named)
end

function C:batch_get_row(req)
  if type(req) ~= "table" then fail("batch_get_row expects a request table") end
  local named, m, c, r, s = keys.name(self, "BatchGetRow", req)
  if not named then return nil, m, c, r, s end
  return batch.run(self, "BatchGetRow", named)
end

--- client:sql(query) -> { type, columns = {{name, type}}, rows, consumed }
-- | nil, msg, code: the SQLQuery API, answered as otskit.store's db:sql
-- answers (the rows arrive as a FlatBuffers result set). The store's
-- options (quotas, time limit) are the server's to set.
function C:sql(query, opts)
  if opts ~= nil and (type(opts) ~= "table" or next(opts) ~= nil) then
    return nil, "sql: the client takes no options (the server sets quotas)", "OTSParameterInvalid"
  end
  if type(query) ~= "string" then return nil, "query must be a string", "OTSParameterInvalid" end
  return self:sql_query({ query = query })
end

--- client:parallel(jobs): runs the functions so that the requests they
-- make through this client are in flight together; returns when all have
-- returned (merge.read's `parallel`). An error raised by a job is raised.
function C:parallel(jobs)
  local me = self
  return parallel.run(self._jobs, self.transport, jobs, function(d) default_sleep(d); return me end)
end

--- client:range(req) -> iterator over the rows of get_range(req), page
-- after page (following next_start_primary_key through empty pages);
-- on failure the iterator returns nil, message, code: a next key that
-- does not advance is "NoProgress", and the client's retry deadline
-- (retry.deadline, default retry.defaults.deadline) bounds the whole
-- read ("RequestTimeout"), not only each page.
function C:range(req)
  -- (any store works too: client.Client.range(db, req))
  local t_end = type(self) == "table" and getmetatable(self) == C and self:_deadline() or nil
  return pager.range(self, req, { t_end = t_end })
end

client.INF_MIN, client.INF_MAX = pager.sentinels()

return client
