--- otskit.server.faults -- failures `otskit serve` injects for tests.
--
-- A spec is "key=value" pairs separated by commas:
--   rate=0.1            fraction of requests answered with an error
--   code=OTSServerBusy  that error's code (default OTSServerBusy); a code
--                       otskit.errors does not know needs a status
--   status=503          its HTTP status (default: the code's status)
--   message=...         its message (default: the code's own message)
--   latency=20 | 5-50   milliseconds added to every matching request
--   drop=0.01           fraction of requests whose connection is closed
--                       without an answer
--   apis=GetRow+PutRow  only these APIs (default: all)
--   empty=0.3           fraction of GetRange answers that carry no rows and
--                       a next_start_primary_key at the first row the page
--                       would have held (the service may end a page early,
--                       e.g. after rows a filter dropped): readers must
--                       follow it. Must be below 1 (at 1 no read would
--                       ever end: refused)
--   search_delay=2      seconds before a write is searchable through a
--                       search index (the service's near-real-time sync;
--                       applies to writes made while it is set)
--   index_delay=500     milliseconds before a write shows in global
--                       secondary indexes (the service's are eventually
--                       consistent; db:set_index_delay); local indexes
--                       stay synchronous
-- "" or "off" turns faults off. Every worker reads the spec from a shared
-- dict, so the admin endpoint changes all of them at once.
local errors = require "otskit.errors"

local faults = {}

local NUM = { rate = true, drop = true, status = true, empty = true, search_delay = true, index_delay = true }

--- faults.parse(spec) -> cfg | nil, message. cfg = false when off.
function faults.parse(spec)
  if spec == nil or spec == "" or spec == "off" then return false end
  if type(spec) ~= "string" then return nil, "faults spec must be a string" end
  local cfg = { rate = 0, drop = 0, empty = 0, code = "OTSServerBusy", lat = { 0, 0 } }
  for item in spec:gmatch("[^,]+") do
    local k, v = item:match("^%s*([%a_]+)%s*=%s*(.-)%s*$")
    if not k then return nil, "faults: expected key=value, got " .. item end
    if NUM[k] then
      local n = tonumber(v)
      if not n then return nil, "faults: " .. k .. " must be a number, got " .. v end
      if (k == "rate" or k == "drop") and not (n >= 0 and n <= 1) then return nil, "faults: " .. k .. " must be in [0, 1]" end
      -- at 1 no range read would ever end: below 1, as documented
      if k == "empty" and not (n >= 0 and n < 1) then return nil, "faults: empty must be in [0, 1) (below 1)" end
      if k == "search_delay" and not (n >= 0 and n <= 3600) then return nil, "faults: search_delay must be 0..3600 seconds" end
      if k == "status" and (n < 200 or n > 599 or n % 1 ~= 0) then return nil, "faults: status must be 200-599" end
      if k == "index_delay" and not (n >= 0 and n <= 3600000) then return nil, "faults: index_delay must be 0-3600000 (ms)" end
      cfg[k] = n
    elseif k == "code" then
      if not v:match("^[%w_]+$") then return nil, "faults: bad code " .. v end
      cfg.code = v
    elseif k == "message" then
      cfg.message = v
    elseif k == "latency" then
      local a, b = v:match("^(%d+%.?%d*)%-(%d+%.?%d*)$")
      a, b = tonumber(a or v), tonumber(b or v)
      if not a or not b or a < 0 or b < a or b > 60000 then
        return nil, "faults: latency must be MS or MIN-MAX (ms, up to 60000), got " .. v
      end
      cfg.lat = { a / 1000, b / 1000 }
    elseif k == "apis" then
      cfg.apis = {}
      for a in v:gmatch("[^+%s]+") do cfg.apis[a] = true end
    else
      return nil, "faults: unknown key " .. k
    end
  end
  if cfg.status == nil and errors.status(cfg.code) == nil then
    return nil, "faults: " .. cfg.code .. " is not a code the service answers: give its status (status=...)"
  end
  cfg.message = cfg.message or errors.message(cfg.code) or cfg.code
  return cfg
end

--- faults.describe(cfg) -> a table for the admin endpoint's JSON.
function faults.describe(cfg)
  if not cfg then return { enabled = false } end
  local apis
  if cfg.apis then
    apis = {}
    for a in pairs(cfg.apis) do apis[#apis + 1] = a end
    table.sort(apis)
  end
  return { enabled = true, rate = cfg.rate, drop = cfg.drop, empty = cfg.empty, code = cfg.code, status = cfg.status,
           message = cfg.message, latency_ms = { cfg.lat[1] * 1000, cfg.lat[2] * 1000 }, apis = apis,
           search_delay = cfg.search_delay, index_delay_ms = cfg.index_delay }
end

--- faults.decide(cfg, api, random) -> delay_s, drop, fail, empty: what
-- happens to one request (empty: a GetRange answered with an empty page).
-- random() -> [0, 1).
function faults.decide(cfg, api, random)
  if not cfg or (cfg.apis and not cfg.apis[api]) then return 0, false, false, false end
  local lo, hi = cfg.lat[1], cfg.lat[2]
  local delay = lo + (hi - lo) * random()
  if cfg.drop > 0 and random() < cfg.drop then return delay, true, false, false end
  if cfg.rate > 0 and random() < cfg.rate then return delay, false, true, false end
  return delay, false, false, api == "GetRange" and cfg.empty > 0 and random() < cfg.empty
end

return faults
