--- otskit.client.transport -- how a signed request reaches Tablestore.
--
-- A transport object has
--   t:submit(req) -> id | nil, message     start a request
--   t:wait(secs)  -> list of results         those finished meanwhile (may be
--                                            empty); returns early on one
--   t:request(req) -> result                 one request, start to finish
--   t:cancel(id)
-- req = { url, api, headers = {name = value}, body, timeout = secs }.
-- A result: { id, status, headers = {lowercased name = value}, body } or,
-- when no response arrived, { id, failure = "connect" (never sent) |
-- "timeout" | "network" | "tls" | "too_large" | "other", error = text }.
--
-- "curl": otskit.core.http (libcurl multi): requests really run
-- concurrently, wait returns as each one finishes.
-- "nginx": ngx.location.capture_multi to an internal location that
-- proxy_passes to the service; wait runs everything submitted as one
-- capture_multi. A function(req) -> response | nil, message, failure: the
-- same, one request after the other.
local transport = {}

---------------------------------------------------------------------------
-- curl

local Curl = {}
Curl.__index = Curl

function transport.curl(opts)
  local http = require("otskit.core").http
  local s, msg = http.new{ verify = opts.verify, ca_file = opts.ca_file }
  if not s then error("otskit.client: " .. tostring(msg), 3) end
  return setmetatable({ s = s, connect_timeout = opts.connect_timeout }, Curl)
end

local function curl_req(self, req)
  return { url = req.url, headers = req.headers, body = req.body,
           timeout = req.timeout, connect_timeout = self.connect_timeout }
end

function Curl:submit(req) return self.s:submit(curl_req(self, req)) end
function Curl:wait(secs) return assert(self.s:wait(secs)) end
function Curl:cancel(id) return self.s:cancel(id) end
function Curl:connects() return self.s:connects() end
function Curl:close() return self.s:close() end

function Curl:request(req)
  local r, msg = self.s:request(curl_req(self, req))
  if not r then return { failure = "other", error = tostring(msg) } end
  return r
end

---------------------------------------------------------------------------
-- batch transports: submit queues, wait runs the queue

local Batch = {}
Batch.__index = Batch

local function new_batch(run_all)
  return setmetatable({ run_all = run_all, queue = {}, n = 0 }, Batch)
end

function Batch:submit(req)
  self.n = self.n + 1
  self.queue[#self.queue + 1] = { id = self.n, req = req }
  return self.n
end

function Batch:wait()
  local q = self.queue
  if #q == 0 then return {} end
  self.queue = {}
  local out = self.run_all(q)
  for i = 1, #q do out[i].id = q[i].id end
  return out
end

function Batch:cancel(id)
  for i, it in ipairs(self.queue) do
    if it.id == id then table.remove(self.queue, i); return true end
  end
  return false
end

function Batch:request(req) return self.run_all({ { req = req } })[1] end
function Batch:close() self.queue = {} end

local function lower_headers(h)
  local out = {}
  for k, v in pairs(h or {}) do
    if type(v) == "table" then v = table.concat(v, ", ") end
    out[tostring(k):lower()] = tostring(v)
  end
  return out
end

--- A user function(req) -> { status, headers, body } | nil, message, failure.
function transport.func(fn)
  return new_batch(function(q)
    local out = {}
    for i, it in ipairs(q) do
      local ok, res, msg, failure = pcall(fn, it.req)
      if not ok then error(res, 0) end
      if res == nil then
        out[i] = { failure = failure or "other", error = tostring(msg) }
      elseif type(res) ~= "table" or type(res.status) ~= "number" then
        error("otskit.client: the transport function must return { status, headers, body } or nil, message, failure", 0)
      else
        out[i] = { status = res.status, headers = lower_headers(res.headers), body = res.body or "" }
      end
    end
    return out
  end)
end

---------------------------------------------------------------------------
-- nginx

-- Values travel to the internal location in the subrequest's query
-- string and come out as $arg_x, which nginx does not unescape: only
-- characters that need no escaping are allowed.
local SAFE = "^[%w%+/=:%.%-_]*$"

function transport.safe_arg(v) return type(v) == "string" and v:find(SAFE) ~= nil end

--- The nginx transport. location: the internal location (see
-- docs/client.md "Transports" for its nginx.conf lines); args d, i, k, m, s, t carry
-- x-ots-date, -instancename, -accesskeyid, -contentmd5, -signature and
-- -ststoken, api the API name.
function transport.nginx(location)
  local ngx = rawget(_G, "ngx")
  if type(ngx) ~= "table" or not ngx.location then
    error("otskit.client: transport \"nginx\" needs OpenResty (ngx.location.capture_multi)", 3)
  end
  local ARGS = { d = "x-ots-date", i = "x-ots-instancename", k = "x-ots-accesskeyid",
                 m = "x-ots-contentmd5", s = "x-ots-signature", t = "x-ots-ststoken" }
  return new_batch(function(q)
    local specs = {}
    for i, it in ipairs(q) do
      local h = it.req.headers
      local parts = { "api=" .. it.req.api }
      for a, name in pairs(ARGS) do
        local v = h[name]
        if v ~= nil then
          if not transport.safe_arg(v) then
            error("otskit.client: header " .. name .. " holds characters the nginx transport cannot pass", 0)
          end
          parts[#parts + 1] = a .. "=" .. v
        end
      end
      specs[i] = { location, { method = ngx.HTTP_POST, body = it.req.body, args = table.concat(parts, "&") } }
    end
    local res = { ngx.location.capture_multi(specs) }
    local out = {}
    for i = 1, #q do
      local r = res[i]
      if r == nil then
        out[i] = { failure = "other", error = "no subrequest result" }
      elseif r.truncated then
        out[i] = { failure = "network", error = "upstream response truncated" }
      else
        out[i] = { status = r.status, headers = lower_headers(r.header), body = r.body or "" }
      end
    end
    return out
  end)
end

return transport
