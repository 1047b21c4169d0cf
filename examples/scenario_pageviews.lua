-- examples/scenario_pageviews.lua -- a scenario of your own for
-- `otskit analyze` (the contract: docs/analyze.md):
--
--   lua5.4 bin/otskit analyze examples/scenario_pageviews.lua
--
-- Page views: the naive key puts the day first, so every write of a day
-- goes to one partition-key range; the other puts a 2-hex-digit hash of
-- the URL first. The file returns the scenario; each design gets a fresh
-- embedded store (env.store) and the same items.
local key = require "otskit.key"
local retry = require "otskit.retry"

local T0 = 1767225600 -- 2026-01-01
local URLS = 60
local hp = key.hash_prefix { algo = "md5", len = 2 }

-- one request, retried like the patterns retry theirs (env.retry: the
-- simulated clock, seeded backoff, the retry counter)
local function call(env, method, req, op)
  local opts = { op = op, idempotent = true }
  for k, v in pairs(env.retry) do opts[k] = v end
  -- the store's nil, message, code is what retry.call classifies
  return retry.call(function() return env.store[method](env.store, req) end, opts)
end

local function day(ts) return os.date("!%Y-%m-%d", ts) end

local function design(name, label, pk_of, splits)
  return {
    name = name, label = label,
    setup = function(env)
      assert(env.store:create_table { name = "views", splits = splits,
        primary_key = { { "pk", "STRING" }, { "ts", "INTEGER" } } })
      return env
    end,
    write = function(env, it)
      return call(env, "put_row", { table = "views", primary_key = { pk_of(it.url, it.ts), it.ts },
        columns = { ms = it.ms } }, "PutRow")
    end,
    query = function(env, q) -- the views of one URL on one day
      local pk = pk_of(q.url, q.ts)
      local lo, hi = T0 + math.floor((q.ts - T0) / 86400) * 86400, nil
      hi = lo + 86400
      local page = call(env, "get_range", { table = "views", start = { pk, lo }, stop = { pk, hi } }, "GetRange")
      return page and page.rows
    end,
  }
end

local hex_splits = {}
for k = 1, 15 do hex_splits[k] = ("%x"):format(k) end

return {
  name = "pageviews",
  title = "Page views: day first vs URL hash first",
  note = "Query: the views of one URL on one day.",
  ops = 2000, rate = 100, queries = 10, capacity = 25,
  item = function(i, rng)
    return { url = "/page/" .. rng.int(1, URLS), ts = T0 + i * 40, ms = rng.int(5, 900) }
  end,
  query_item = function(_, rng) return { url = "/page/" .. rng.int(1, URLS), ts = T0 + rng.int(0, 80000) } end,
  designs = {
    design("naive", "key (\"day,url\", ts): day first",
      function(url, ts) return day(ts) .. "," .. url end,
      { "2026-01-01,/page/3", "2026-01-01,/page/5", "2026-01-01,/page/7" }),
    design("recommended", "key (md5(url)[1..2] .. url, ts)",
      function(url) return hp:encode(url) end, hex_splits),
  },
}
