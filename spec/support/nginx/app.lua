-- spec/support/nginx/app.lua -- the test location of client.conf.in:
-- GET /t?case=NAME&upstream=URL runs one scenario with otskit.client
-- (transport "nginx") and answers JSON.
local cjson = require "cjson.safe"
local client = require "otskit.client"
local merge = require "otskit.merge"
local backoff = require "otskit.backoff"
local store = require "otskit.store"

local INF_MIN, INF_MAX = store.INF_MIN, store.INF_MAX
local app = {}

local function new_client()
  return client.new{ endpoint = "http://tablestore", instance = "inst", access_key_id = "ak-test",
    access_key_secret = "sk-test", budget = backoff.budget{ dict = ngx.shared.otskit_budget } }
end

local function fetcher(c, t)
  return function(b, after, n)
    local start = after or {{"b", b}, {"ts", INF_MIN}}
    local page, msg, code = c:get_range{ table = t, start = start, stop = {{"b", b}, {"ts", INF_MAX}}, limit = n }
    if not page then return nil, msg, code end
    return page.rows, page.next_start_primary_key
  end
end

local cases = {}

function cases.basic(args)
  local c = new_client()
  local t = args.t
  local out = {}
  out.kind = c.kind
  out.create = select(3, c:create_table{ name = t, primary_key = {{"id", "INTEGER"}} }) or "ok"
  out.put = select(3, c:put_row{ table = t, primary_key = { 1 }, columns = { v = "one" } }) or "ok"
  out.get = assert(c:get_row{ table = t, primary_key = { 1 } }).row.columns.v
  local _, msg, code, rid, status = c:put_row{ table = t, primary_key = { 1 }, condition = "EXPECT_NOT_EXIST" }
  out.cond = { code = code, status = status, rid = type(rid) == "string", msg = type(msg) == "string" }
  local rows = {}
  for i = 2, 50 do rows[#rows + 1] = { type = "PUT", primary_key = { i }, columns = { v = "n" .. i } } end
  out.batch_failed = assert(c:batch_write_row{ tables = {{ table = t, rows = rows }} }).failed
  local n = 0
  for _ in c:range{ table = t, start = { INF_MIN }, stop = { INF_MAX }, limit = 7 } do n = n + 1 end
  out.range = n
  return out
end

-- 16 buckets; one page merged with client:parallel (capture_multi)
function cases.fanout(args)
  local c = new_client()
  local t = args.t
  if args.fill == "1" then
    assert(c:create_table{ name = t, primary_key = {{"b", "INTEGER"}, {"ts", "INTEGER"}} })
    local rows = {}
    for ts = 1, 1600 do
      rows[#rows + 1] = { type = "PUT", primary_key = {{"b", ts % 16}, {"ts", ts}} }
      if #rows == 200 then assert(c:batch_write_row{ tables = {{ table = t, rows = rows }} }); rows = {} end
    end
  end
  local fetch = fetcher(c, t)
  local function page(parallel)
    local got = assert(merge.read{ sources = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 },
      fetch = fetch, key = { 2 }, limit = 100, parallel = parallel })
    local ts = {}
    for i, r in ipairs(got) do ts[i] = r.primary_key[2][2] end
    return ts
  end
  local out = { ts = page(c), requests = c.stats.requests }
  local reps = tonumber(args.reps or "0")
  if reps > 0 then
    local function wall(fn)
      local xs = {}
      for r = 1, reps do
        ngx.update_time()
        local t0 = ngx.now()
        fn()
        ngx.update_time()
        xs[r] = ngx.now() - t0
      end
      table.sort(xs)
      return { median = xs[math.floor((reps + 1) / 2)], min = xs[1], max = xs[reps] }
    end
    out.one = wall(function() fetch(3, nil, 100) end)
    out.parallel = wall(function() page(c) end)
    out.sequential = wall(function() page(false) end)
  end
  return out
end

function app.run()
  local args = ngx.req.get_uri_args()
  local f = cases[args.case]
  if not f then ngx.status = 404; ngx.say('{"error":"no such case"}'); return end
  local ok, res = pcall(f, args)
  if not ok then ngx.status = 500; ngx.say(cjson.encode({ error = tostring(res) })); return end
  ngx.say(cjson.encode(res))
end

return app
