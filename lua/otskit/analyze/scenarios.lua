--- otskit.analyze.scenarios -- the workloads of `otskit demo`: each access
-- pattern of the best practices beside the design they warn against, on
-- the same synthetic data (see otskit.analyze for the scenario contract).
local values = require "otskit.values"
local timeseries = require "otskit.patterns.timeseries"
local hashprefix = require "otskit.patterns.hashprefix"
local spliced = require "otskit.patterns.spliced"
local chunked = require "otskit.patterns.chunked"
local hotcold = require "otskit.patterns.hotcold"
local import = require "otskit.patterns.import"
local counter = require "otskit.patterns.counter"
local colsplit = require "otskit.patterns.colsplit"

local INF_MIN, INF_MAX = values.INF_MIN, values.INF_MAX
local S = {}

-- one store request of a design, retried as the patterns retry theirs
local call = require("otskit.analyze.sim").call
S.call = call

local function create(env, req) return assert(env.store:create_table(req)) end

-- n - 1 split points f(1) .. f(n - 1): a table pre-split into n partitions
local function splits(n, f)
  local t = {}
  for k = 1, n - 1 do t[k] = f(k) end
  return t
end

---------------------------------------------------------------------------
local T0 = 1767225600 -- 2026-01-01T00:00:00Z

S[#S + 1] = {
  name = "timeseries",
  title = "Sensor readings: timestamp first vs 16 buckets (ts mod 16)",
  note = "A read of the newest 100 fans out to 16 buckets: more requests, no hot spot.",
  ops = 3000, rate = 100, queries = 10,
  item = function(i) return { ts = T0 + i, id = "sensor-" .. (i % 8), v = i % 97 } end,
  query_item = function(_, r) local a = r.int(100, 2000); return { from = T0 + a, to = T0 + a + 1000 } end,
  designs = {
    { name = "naive", label = "key (ts, id): timestamp first",
      setup = function(env)
        create(env, { name = "readings", primary_key = { { "ts", "INTEGER" }, { "id", "STRING" } },
          splits = splits(16, function(k) return T0 + math.floor(k * 3000 / 16) end) })
        return env
      end,
      write = function(env, it)
        return call(env, "put_row", { table = "readings", primary_key = { it.ts, it.id },
          columns = { v = it.v } }, "PutRow", { idempotent = true })
      end,
      query = function(env, q)
        local page = call(env, "get_range", { table = "readings", start = { q.to, INF_MIN },
          stop = { q.from, INF_MIN }, direction = "BACKWARD", limit = 100 }, "GetRange")
        return page and page.rows
      end },
    { name = "recommended", label = "key (ts mod 16, ts, id): bucketed",
      setup = function(env)
        local s = timeseries.new { store = env.store, table = "readings", buckets = 16,
                                   secret = env.secret, retry = env.retry }
        assert(s:create())
        return s
      end,
      write = function(s, it) return s:put(it.ts, it.id, { v = it.v }) end,
      query = function(s, q) return (s:read { from = q.from, to = q.to, limit = 100 }) end },
  },
}

---------------------------------------------------------------------------
S[#S + 1] = {
  name = "orders",
  title = "Order numbers: sequential vs md5 prefix (4 hex digits)",
  note = "Point reads cost the same; reading orders in number order is what the prefix gives up.",
  ops = 2400, rate = 80, queries = 20,
  item = function(i, r) return { n = 90000000 + i, total = r.int(1, 50000) } end,
  query_item = function(_, r) return 90000000 + r.int(1, 2400) end,
  designs = {
    { name = "naive", label = "key: order number, zero-padded",
      setup = function(env)
        create(env, { name = "orders", primary_key = { { "id", "STRING" } },
          splits = splits(16, function(k) return ("%010d"):format(90000000 + math.floor(k * 2400 / 16)) end) })
        return env
      end,
      write = function(env, it)
        return call(env, "put_row", { table = "orders", primary_key = { ("%010d"):format(it.n) },
          columns = { total = it.total } }, "PutRow", { idempotent = true })
      end,
      query = function(env, n)
        local res = call(env, "get_row", { table = "orders", primary_key = { ("%010d"):format(n) } }, "GetRow")
        if not res then return nil end
        return { res.row } -- empty when the order is missing
      end },
    { name = "recommended", label = "key: md5 prefix .. order number",
      setup = function(env)
        local p = hashprefix.new { store = env.store, table = "orders", retry = env.retry }
        assert(p:create(splits(16, function(k) return ("%x"):format(k) end)))
        return p
      end,
      write = function(p, it) return p:put(it.n, { total = it.total }) end,
      query = function(p, n)
        local c = p:get(n)
        if c == nil then return nil end
        return { c or nil }
      end },
  },
}

---------------------------------------------------------------------------
local SELLERS = { "a100", "a100", "a100", "a100", "a100", "a100", "a101", "a101", "a102", "a103" }

S[#S + 1] = {
  name = "purchases",
  title = "Card purchases: SellerID first vs spliced \"DeviceID,SellerID\"",
  note = "Query: every purchase with DeviceID in [15, 100). SellerID first must scan the table.",
  ops = 3000, rate = 100, queries = 5,
  item = function(i, r)
    return { device = r.int(0, 999), seller = r.pick(SELLERS), card = r.int(1, 99999), order = i,
             amount = r.int(1, 100000) }
  end,
  designs = {
    { name = "naive", label = "key (SellerID, OrderNumber)",
      setup = function(env)
        create(env, { name = "purchases", primary_key = { { "SellerID", "STRING" }, { "OrderNumber", "INTEGER" } },
          splits = { "a101", "a102", "a103" } })
        return env
      end,
      write = function(env, it)
        return call(env, "put_row", { table = "purchases", primary_key = { it.seller, it.order },
          columns = { DeviceID = it.device, CardID = it.card, Amount = it.amount } }, "PutRow", { idempotent = true })
      end,
      query = function(env)
        -- DeviceID is an attribute here: read everything, keep what matches
        local out, start = {}, { INF_MIN, INF_MIN }
        repeat
          local page = call(env, "get_range", { table = "purchases", start = start,
            stop = { INF_MAX, INF_MAX }, direction = "FORWARD" }, "GetRange")
          if not page then return nil end
          for _, row in ipairs(page.rows) do
            local d = row.columns.DeviceID
            if d >= 15 and d < 100 then out[#out + 1] = row end
          end
          start = page.next_start_primary_key
        until start == nil
        return out
      end },
    { name = "recommended", label = "key (\"DeviceID,SellerID\", CardID, OrderNumber)",
      setup = function(env)
        local p = spliced.new { store = env.store, table = "purchases", secret = env.secret, retry = env.retry,
          splice = { sep = ",", { "DeviceID", "int", width = 6 }, { "SellerID", "string", charset = "alnum" } },
          rest = { { "CardID", "INTEGER" }, { "OrderNumber", "INTEGER" } } }
        assert(p:create(splits(16, function(k) return ("%06d"):format(math.floor(k * 1000 / 16)) end)))
        return p
      end,
      write = function(p, it)
        return p:put({ it.device, it.seller }, { it.card, it.order }, { Amount = it.amount })
      end,
      query = function(p)
        local out, c = {}, nil
        repeat
          local rows, cur = p:range { from = { 15 }, to = { 100 }, limit = 5000, cursor = c }
          if not rows then return nil end
          for _, r in ipairs(rows) do out[#out + 1] = r end
          c = cur
        until not c
        return out
      end },
  },
}

---------------------------------------------------------------------------
local WORDS = { "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
                "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa" }

-- about n bytes of JSON-like records (compressible as real logs are)
local function document(n, r)
  local parts, size, i = {}, 0, 0
  while size < n do
    i = i + 1
    local s = ('{"id":%d,"user":"user-%d","score":%d,"tags":["%s","%s"],"note":"%s %s %s"}\n'):format(
      i, r.int(1, 99999), r.int(0, 1000), r.pick(WORDS), r.pick(WORDS), r.pick(WORDS), r.pick(WORDS), r.pick(WORDS))
    parts[#parts + 1] = s
    size = size + #s
  end
  return table.concat(parts):sub(1, n)
end

local MB = 1024 * 1024
S[#S + 1] = {
  name = "documents",
  title = "Documents of 3 MB: one uncompressed cell vs compressed chunks",
  note = "A cell holds at most 2 MB: the naive write is refused. Query: 1 KB at a random offset.",
  ops = 6, rate = 0.5, queries = 6, capacity = false, picture = false,
  item = function(i, r) return { key = "doc-" .. i, body = document(3 * MB, r) } end,
  query_item = function(_, r) return { key = "doc-" .. r.int(1, 6), at = r.int(0, 3 * MB - 1024) } end,
  designs = {
    { name = "naive", label = "the value in one cell, uncompressed",
      setup = function(env)
        create(env, { name = "docs", primary_key = { { "key", "STRING" } } })
        return env
      end,
      write = function(env, it)
        return call(env, "put_row", { table = "docs", primary_key = { it.key },
          columns = { body = it.body } }, "PutRow", { idempotent = true })
      end,
      query = function(env, q)
        local res = call(env, "get_row", { table = "docs", primary_key = { q.key } }, "GetRow")
        if not res or not res.row then return nil end
        return { res.row.columns.body:sub(q.at + 1, q.at + 1024) }
      end },
    { name = "recommended", label = "zstd chunks of 1 MiB, manifest last",
      setup = function(env)
        local p = chunked.new { store = env.store, table = "docs", retry = env.retry }
        assert(p:create())
        return p
      end,
      write = function(p, it) return p:put(it.key, it.body) end,
      query = function(p, q)
        local v = p:read_range(q.key, q.at, q.at + 1024)
        return v and { v } or nil
      end,
      report = function(p)
        return { ["stored / original bytes"] = ("%.3f"):format(p.stats.bytes_stored / math.max(1, p.stats.bytes_in)) }
      end },
  },
}

---------------------------------------------------------------------------
S[#S + 1] = {
  name = "months",
  title = "Events over 6 months: one table vs one table per month (hot/cold)",
  note = "Only the newest month's table takes writes; a read spanning months merges tables.",
  ops = 3000, rate = 100, queries = 10,
  item = function(i, r)
    return { dev = ("dev-%03d"):format(r.int(1, 200)), ts = T0 + math.floor((i - 1) * (181 * 86400) / 3000),
             id = tostring(i), v = r.int(0, 1000) }
  end,
  query_item = function(_, r) return ("dev-%03d"):format(r.int(1, 200)) end,
  designs = {
    { name = "naive", label = "one table, key (device, ts, id)",
      setup = function(env)
        create(env, { name = "events", primary_key = { { "key", "STRING" }, { "ts", "INTEGER" }, { "id", "STRING" } },
          splits = splits(8, function(k) return ("dev-%03d"):format(k * 25) end) })
        return env
      end,
      write = function(env, it)
        return call(env, "put_row", { table = "events", primary_key = { it.dev, it.ts, it.id },
          columns = { v = it.v } }, "PutRow", { idempotent = true })
      end,
      query = function(env, dev)
        local to = T0 + 181 * 86400
        local page = call(env, "get_range", { table = "events", start = { dev, to, INF_MIN },
          stop = { dev, to - 45 * 86400, INF_MIN }, direction = "BACKWARD", limit = 50 }, "GetRange")
        return page and page.rows
      end,
      report = function(env)
        local rows = 0
        for _, p in ipairs(env.store:partitions("events")) do rows = rows + p.rows end
        return { ["rows in the table taking writes"] = rows }
      end },
    { name = "recommended", label = "events_YYYYMM, key (device, ts, id)",
      setup = function(env)
        local p = hotcold.new { store = env.store, prefix = "events", first = "2026-01", last = "2026-06",
                                splits = splits(8, function(k) return ("dev-%03d"):format(k * 25) end), secret = env.secret, retry = env.retry }
        assert(p:create())
        return { p = p, env = env }
      end,
      write = function(s, it) return s.p:put(it.dev, it.ts, it.id, { v = it.v }) end,
      query = function(s, dev)
        local to = T0 + 181 * 86400
        return (s.p:read { key = dev, from = to - 45 * 86400, to = to, limit = 50 })
      end,
      report = function(s)
        local rows = 0
        for _, p in ipairs(s.env.store:partitions("events_202606")) do rows = rows + p.rows end
        return { ["rows in the table taking writes"] = rows }
      end },
  },
}

---------------------------------------------------------------------------
local USERS = 6000
local function user_splits()
  local s = {}
  for k = 1, 15 do s[k] = ("user-%06d"):format(math.floor(k * USERS / 16)) end
  return s
end

local function import_design(name, label, shuffle, workers)
  return { name = name, label = label,
    setup = function(env)
      create(env, { name = "users", primary_key = { { "id", "STRING" } }, splits = user_splits() })
      return env
    end,
    write = function(env, rows)
      local batch = 0
      local rep = import.run { store = env.store, table = "users", rows = rows, shuffle = shuffle,
        seed = 42, workers = workers, retry = env.retry,
        progress = function() batch = batch + 1; env.set_time(batch * 1.0) end }
      env.imported = rep and rep.written or 0
      return rep and rep.failed == 0
    end,
    query = function(env)
      local n, start = 0, { INF_MIN }
      repeat
        local page = call(env, "get_range", { table = "users", start = start, stop = { INF_MAX },
          direction = "FORWARD", columns = { "plan" } }, "GetRange")
        if not page then return nil end
        n = n + #page.rows
        start = page.next_start_primary_key
      until start == nil
      return n
    end,
    report = function(env) return { ["rows imported"] = env.imported } end }
end

S[#S + 1] = {
  name = "import",
  title = ("Bulk import of %d sorted rows: in key order vs shuffled batches"):format(USERS),
  note = "One operation: the whole import, one BatchWriteRow of 200 rows per second. Query: count the rows.",
  ops = 1, rate = 1, queries = 1,
  item = function()
    local rows = {}
    for i = 1, USERS do rows[i] = { { ("user-%06d"):format(i) }, { plan = i % 3 == 0 and "pro" or "free" } } end
    return rows
  end,
  designs = {
    import_design("naive", "sorted batches, one writer", false, 1),
    import_design("recommended", "shuffled batches, 4 workers", true, 4),
  },
}

---------------------------------------------------------------------------
local CLIENTS = 20
S[#S + 1] = {
  name = "counter",
  title = ("A counter, %d clients at once: read-then-write vs optimistic lock"):format(CLIENTS),
  note = "Each operation: every client increments once, interleaved at each request.",
  ops = 25, rate = 1, queries = 1, capacity = false, picture = false,
  designs = {
    { name = "naive", label = "get_row, then put_row value + 1",
      setup = function(env)
        create(env, { name = "counters", primary_key = { { "name", "STRING" } } })
        return env
      end,
      write = function(env)
        local ok = true
        local fns = {}
        local st = { store = env.yielding, retry = env.retry }
        for c = 1, CLIENTS do fns[c] = function()
          local res = call(st, "get_row", { table = "counters", primary_key = { "hits" } }, "GetRow")
          if not res then ok = false; return end
          local v = res.row and res.row.columns.value or 0
          if not call(st, "put_row", { table = "counters", primary_key = { "hits" }, columns = { value = v + 1 } },
            "PutRow", { idempotent = true }) then ok = false end
        end end
        env.concurrent(fns)
        return ok
      end,
      query = function(env)
        local res = call(env, "get_row", { table = "counters", primary_key = { "hits" } }, "GetRow")
        env.final = res and res.row and res.row.columns.value or 0
        return 1
      end,
      report = function(env) return { ["increments lost"] = 25 * CLIENTS - env.final } end },
    { name = "recommended", label = "update if ver is unchanged, else retry",
      setup = function(env)
        local c = counter.new { store = env.yielding, table = "counters",
          retry = env.retry_with { base = 0.005, cap = 0.2, max_attempts = 100, deadline = 30 } }
        assert(c:create())
        return { c = c, env = env }
      end,
      write = function(s)
        local ok = true
        local fns = {}
        for i = 1, CLIENTS do fns[i] = function() if not s.c:incr("hits") then ok = false end end end
        s.env.concurrent(fns)
        return ok
      end,
      query = function(s) s.final = s.c:get("hits"); return 1 end,
      report = function(s) return { ["increments lost"] = 25 * CLIENTS - s.final } end },
  },
}

---------------------------------------------------------------------------
local PROFILES = 1000
local function bio(r) return document(2048, r) end

S[#S + 1] = {
  name = "columns",
  title = "User profiles: one wide table vs hot and cold columns split",
  note = "1000 profiles (2 KB bio), then 2000 balance updates; query: status and balance.",
  ops = 3000, rate = 100, queries = 50, split_rows = 1e9, split_bytes = 256 * 1024, capacity = false,
  item = function(i, r)
    if i <= PROFILES then return { id = ("u%05d"):format(i), status = "active", balance = r.int(0, 1000), bio = bio(r) } end
    return { id = ("u%05d"):format(r.int(1, PROFILES)), balance = r.int(0, 1000) }
  end,
  query_item = function(_, r) return ("u%05d"):format(r.int(1, PROFILES)) end,
  designs = {
    { name = "naive", label = "one table: status, balance, bio",
      setup = function(env)
        create(env, { name = "users", primary_key = { { "id", "STRING" } }, splits = { "u00250", "u00500", "u00750" } })
        return env
      end,
      write = function(env, it)
        if it.bio then
          return call(env, "put_row", { table = "users", primary_key = { it.id },
            columns = { status = it.status, balance = it.balance, bio = it.bio } }, "PutRow", { idempotent = true })
        end
        return call(env, "update_row", { table = "users", primary_key = { it.id },
          update = { PUT = { balance = it.balance } } }, "UpdateRow", { idempotent = true })
      end,
      query = function(env, id)
        local res = call(env, "get_row", { table = "users", primary_key = { id }, columns = { "status", "balance" } }, "GetRow")
        if not res then return nil end
        return { res.row }
      end,
      report = function(env)
        local b, n = 0, 0
        for _, p in ipairs(env.store:partitions("users")) do b = b + p.bytes; n = n + 1 end
        return { ["bytes of the table hot reads use"] = b, ["partitions hot reads use"] = n }
      end },
    { name = "recommended", label = "users_hot (status, balance) + users_cold (bio)",
      setup = function(env)
        local p = colsplit.new { store = env.store, table = "users", primary_key = { { "id", "STRING" } },
                                 hot = { "status", "balance" }, retry = env.retry }
        assert(p:create { "u00250", "u00500", "u00750" })
        return { p = p, env = env }
      end,
      write = function(s, it)
        if it.bio then return s.p:put({ it.id }, { status = it.status, balance = it.balance, bio = it.bio }) end
        return s.p:update({ it.id }, { balance = it.balance })
      end,
      query = function(s, id)
        local c = s.p:get({ id }, { "status", "balance" })
        if c == nil then return nil end
        return { c or nil }
      end,
      report = function(s)
        local b, n = 0, 0
        for _, p in ipairs(s.env.store:partitions("users_hot")) do b = b + p.bytes; n = n + 1 end
        return { ["bytes of the table hot reads use"] = b, ["partitions hot reads use"] = n }
      end },
  },
}

-- the index choice
for _, sc in ipairs(require "otskit.analyze.index_scenarios") do S[#S + 1] = sc end

return S
