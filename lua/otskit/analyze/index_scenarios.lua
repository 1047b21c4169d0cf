--- otskit.analyze.index_scenarios -- the demo's index choice: one query
-- answered by a filter scan, by global secondary indexes and by a search
-- index, on the same workload, with the advice the best practices give
-- (scenario.advice: checked against the measures by otskit.analyze).
local store = require "otskit.store"
local hash = require "otskit.hash"
local timeseries = require "otskit.patterns.timeseries"

local INF_MIN, INF_MAX = store.INF_MIN, store.INF_MAX

-- one store request of a design, retried as the patterns retry theirs
local call = require("otskit.analyze.sim").call

-- every row (those keep(row) keeps, if given) of a read page by page:
-- read(cursor) -> a page (rows; in page[field] the next page's cursor, nil
-- after the last) or nil; first: the first page's cursor
local function paged(read, field, first, keep)
  local out, cursor = {}, first
  repeat
    local page = read(cursor)
    if not page then return nil end
    for _, row in ipairs(page.rows) do if not keep or keep(row) then out[#out + 1] = row end end
    cursor = page[field]
  until cursor == nil
  return out
end

-- every row of [start, stop) of a table or index, page by page
local function range_all(env, name, start, stop, keep)
  return paged(function(s)
    return call(env, "get_range", { table = name, start = s, stop = stop }, "GetRange")
  end, "next_start_primary_key", start, keep)
end

-- The service's indexes follow a write with a delay: a global index
-- within milliseconds, a search index within seconds. The embedded store
-- models them with these delays (scenario fields index_delay_ms and
-- search_delay_ms); a server has its own.
local INDEX_DELAY_MS, SEARCH_DELAY_MS = 20, 1000

local VIS = "ms until a write is visible"

-- d with a report measuring its visibility delay: a fresh item
-- (fresh(env)) is written through the design's write, then the design's
-- own query for it (probe(item)) is run until seen(rows, item) says the
-- item is there, timed from before the write was sent (env.visible:
-- simulated time on the embedded store, real time against a server). The
-- delay is what was measured, never a setting.
local function with_visibility(d, fresh, probe, seen)
  d.report = function(state, env)
    local it = fresh(env)
    local since = env.clock()
    local ok, msg, code = d.write(state, it, env)
    if not ok then return { [VIS] = ("not measured: the write failed (%s)"):format(tostring(code or msg)) } end
    return { [VIS] = env.visible(function()
      local rows = d.query(state, probe(it), env)
      return rows ~= nil and seen(rows, it)
    end, nil, since) }
  end
  return d
end

local function any(rows) return #rows > 0 end

local function path_splits()
  local t = {}
  for k = 1, 7 do t[k] = ("/d%02x"):format(k * 32) end
  return t
end

-- a file: its path, and the MD5 and SHA1 digests of its content
local function file_of(path, content)
  return { path = path, md5 = hash.md5(content, true), sha1 = hash.sha1(content, true), size = #content }
end

local function file_item(i)
  return file_of(("/d%02x/f%05d"):format((i * 37) % 256, i), ("content of file %d "):format(i):rep(1 + i % 7))
end

local function base_table(env, defined)
  assert(env.store:create_table { name = "files", primary_key = { { "path", "STRING" } }, splits = path_splits(),
    defined_columns = defined })
end

local function write_file(env, it)
  return call(env, "put_row", { table = "files", primary_key = { it.path },
    columns = { md5 = it.md5, sha1 = it.sha1, size = it.size } }, "PutRow", { idempotent = true })
end

local function files_design(name, label, setup, query)
  return with_visibility({ name = name, label = label, setup = setup, query = query,
      write = function(state, it) return write_file(state.env, it) end },
    function() return file_of("/zz/fresh", "a file written after the others") end,
    function(it) return { by = "md5", value = it.md5 } end, any)
end

local function files_scenario(N)
  return {
    name = "files",
    title = "Files looked up by digest (MD5 or SHA1): filter scan vs SQL vs global indexes vs a search index",
    note = N .. " files keyed by path; each query finds one file by the MD5 or the SHA1 digest of its content.",
    ops = N, rate = 40, queries = 20, index_delay_ms = INDEX_DELAY_MS, search_delay_ms = SEARCH_DELAY_MS,
    item = function(i) return file_item(i) end,
    query_item = function(q, r)
      local it = file_item(r.int(1, N))
      return q % 2 == 1 and { kind = "a file by MD5", by = "md5", value = it.md5 }
        or { kind = "a file by SHA1", by = "sha1", value = it.sha1 }
    end,
    advice = {
      { query = "one file by its MD5 or its SHA1", design = "global",
        why = "an exact match on a column known in advance: a global secondary index covering the columns read answers it with one index row, visible within milliseconds; a search index is for conditions that combine freely",
        by = { "rows_per_query", "requests_per_query" } },
    },
    designs = {
      files_design("filter", "no index: scan the table, keep the matching row",
        function(env) base_table(env); return { env = env } end,
        function(state, q)
          return range_all(state.env, "files", { INF_MIN }, { INF_MAX }, function(row) return row.columns[q.by] == q.value end)
        end),
      files_design("global", "a global index per digest, covering size",
        function(env)
          base_table(env, { { "md5", "STRING" }, { "sha1", "STRING" }, { "size", "INTEGER" } })
          for _, col in ipairs { "md5", "sha1" } do
            assert(env.store:create_index { table = "files", index_meta = { name = "files_by_" .. col,
              primary_key = { col }, defined_columns = { "size" } } })
          end
          return { env = env }
        end,
        function(state, q)
          local page = call(state.env, "get_range", { table = "files_by_" .. q.by, start = { q.value, INF_MIN },
            stop = { q.value, INF_MAX } }, "GetRange")
          return page and page.rows
        end),
      files_design("sql", "SQL: SELECT ... WHERE md5 = ... over a mapping of the table",
        function(env)
          base_table(env)
          assert(env.store:sql("CREATE TABLE files (path VARCHAR(1024), md5 MEDIUMTEXT, sha1 MEDIUMTEXT, "
            .. "size BIGINT, PRIMARY KEY (path))"))
          return { env = env }
        end,
        function(state, q)
          local res = state.env.store:sql(("SELECT path, size FROM files WHERE %s = '%s'"):format(q.by, q.value))
          return res and res.rows
        end),
      files_design("search", "one search index on both digests",
        function(env)
          base_table(env)
          assert(env.store:create_search_index { table = "files", index = "files_search", schema = { field_schemas = {
            { field_name = "md5", field_type = "KEYWORD" }, { field_name = "sha1", field_type = "KEYWORD" } } } })
          return { env = env }
        end,
        function(state, q)
          local res = call(state.env, "search", { table = "files", index = "files_search",
            query = { term = { field_name = q.by, term = q.value } }, columns_to_get = { return_type = "RETURN_ALL" } },
            "Search")
          return res and res.rows
        end),
    },
  }
end

---------------------------------------------------------------------------
-- Orders queried by any combination of seller, product type and price

local SELLERS, TYPES = 40, 8
local COMBOS = { { "seller" }, { "type" }, { "seller", "type" }, { "seller", "price" }, { "type", "price" },
                 { "seller", "type", "price" } }

local function order_item(i, r)
  return { id = hash.md5("order " .. i, true):sub(1, 6) .. ("-%05d"):format(i),
           seller = ("s%02d"):format(r.int(1, SELLERS)), type = ("t%d"):format(r.int(1, TYPES)), price = r.int(1, 1000) }
end

local function order_splits()
  local t = {}
  for k = 1, 7 do t[k] = ("%x"):format(k * 2) end
  return t
end

local function orders_table(env, defined)
  assert(env.store:create_table { name = "orders", primary_key = { { "id", "STRING" } }, splits = order_splits(),
    defined_columns = defined })
end

local DEFINED = { { "seller", "STRING" }, { "type", "STRING" }, { "price", "INTEGER" } }

local function write_order(env, it)
  return call(env, "put_row", { table = "orders", primary_key = { it.id },
    columns = { seller = it.seller, type = it.type, price = it.price } }, "PutRow", { idempotent = true })
end

-- does a row (columns, or the index key) match the query?
local function matches(q, get)
  if q.seller and get("seller") ~= q.seller then return false end
  if q.type and get("type") ~= q.type then return false end
  if q.lo then local p = get("price"); if not p or p < q.lo or p > q.hi then return false end end
  return true
end

local function cell(row, name)
  if row.columns and row.columns[name] ~= nil then return row.columns[name] end
  for _, c in ipairs(row.primary_key or {}) do if c[1] == name then return c[2] end end
end

local function scan_orders(env, q)
  return range_all(env, "orders", { INF_MIN }, { INF_MAX }, function(row)
    return matches(q, function(n) return cell(row, n) end)
  end)
end

-- the bounds of an index (its key columns, then the base id) for q
local function bounds(cols, q)
  local lo, hi = {}, {}
  local open, stop_at = false, false   -- stop_at: hi ends at a value (price hi + 1): the rest INF_MIN
  for i, c in ipairs(cols) do
    if open then lo[i], hi[i] = INF_MIN, stop_at and INF_MIN or INF_MAX
    elseif c == "price" and q.lo then lo[i], hi[i] = q.lo, q.hi + 1; open, stop_at = true, true
    elseif q[c] then lo[i], hi[i] = q[c], q[c]
    else lo[i], hi[i] = INF_MIN, INF_MAX; open = true end
  end
  lo[#cols + 1], hi[#cols + 1] = INF_MIN, stop_at and INF_MIN or INF_MAX
  return lo, hi
end

-- visibility: an order of a seller no other order has, then the query by seller
local function orders_design(name, label, setup, query)
  return with_visibility({ name = name, label = label, setup = setup, query = query,
      write = function(state, it) return write_order(state.env, it) end },
    function() return { id = "ffffff-fresh", seller = "s-fresh", type = "t1", price = 500 } end,
    function(it) return { kind = "seller", seller = it.seller } end, any)
end

local function combos_scenario(N)
  return {
    name = "combos",
    title = "Orders by any combination of seller, type and price: an index per combination vs one index + filter vs a search index",
    note = N .. " orders; each query names a seller, a product type, a price range of 50, or a combination of them.",
    ops = N, rate = 50, queries = 36, index_delay_ms = INDEX_DELAY_MS, search_delay_ms = SEARCH_DELAY_MS,
    item = function(i, r) return order_item(i, r) end,
    query_item = function(q, r)
      local combo = COMBOS[(q - 1) % #COMBOS + 1]
      local it = { kind = table.concat(combo, " + ") }
      for _, c in ipairs(combo) do
        if c == "seller" then it.seller = ("s%02d"):format(r.int(1, SELLERS))
        elseif c == "type" then it.type = ("t%d"):format(r.int(1, TYPES))
        else it.lo = r.int(1, 950); it.hi = it.lo + 49 end
      end
      return it
    end,
    advice = {
      { query = "orders by any combination of seller, type and price", design = "search",
        why = "one search index answers every combination of conditions; secondary indexes need one per combination (at most 5 per table), each a copy of every row",
        by = { "rows_per_query", "rows_kept_per_row" } },
    },
    designs = {
      orders_design("percombo", "global indexes (seller, type, price), (type, price), (seller, price)",
        function(env)
          orders_table(env, DEFINED)
          for _, cols in ipairs { { "seller", "type", "price" }, { "type", "price" }, { "seller", "price" } } do
            assert(env.store:create_index { table = "orders", index_meta = { name = "orders_by_" .. table.concat(cols, "_"),
              primary_key = cols } })
          end
          return { env = env }
        end,
        function(state, q)
          local cols
          if q.seller and q.lo and not q.type then cols = { "seller", "price" }
          elseif q.seller then cols = { "seller", "type", "price" }
          else cols = { "type", "price" } end
          local lo, hi = bounds(cols, q)
          return range_all(state.env, "orders_by_" .. table.concat(cols, "_"), lo, hi, function(row)
            return matches(q, function(n) return cell(row, n) end)
          end)
        end),
      orders_design("onefilter", "global index (seller) + filter; no seller: scan with filter",
        function(env)
          orders_table(env, DEFINED)
          assert(env.store:create_index { table = "orders", index_meta = { name = "orders_by_seller",
            primary_key = { "seller" }, defined_columns = { "type", "price" } } })
          return { env = env }
        end,
        function(state, q)
          if not q.seller then return scan_orders(state.env, q) end
          return range_all(state.env, "orders_by_seller", { q.seller, INF_MIN }, { q.seller, INF_MAX }, function(row)
            return matches(q, function(n) return cell(row, n) end)
          end)
        end),
      orders_design("search", "one search index on seller, type, price",
        function(env)
          orders_table(env)
          assert(env.store:create_search_index { table = "orders", index = "orders_search", schema = { field_schemas = {
            { field_name = "seller", field_type = "KEYWORD" }, { field_name = "type", field_type = "KEYWORD" },
            { field_name = "price", field_type = "LONG" } } } })
          return { env = env }
        end,
        function(state, q)
          local must = {}
          if q.seller then must[#must + 1] = { term = { field_name = "seller", term = q.seller } } end
          if q.type then must[#must + 1] = { term = { field_name = "type", term = q.type } } end
          if q.lo then
            must[#must + 1] = { range = { field_name = "price", from = q.lo, to = q.hi, include_lower = true, include_upper = true } }
          end
          return paged(function(token)
            return call(state.env, "search", { table = "orders", index = "orders_search", limit = 1000, token = token,
              query = { bool = { filter = must } }, columns_to_get = { return_type = "RETURN_ALL_FROM_INDEX" } }, "Search")
          end, "next_token")
        end),
    },
  }
end

---------------------------------------------------------------------------
-- Newest-first readings: timestamp first vs 16 buckets merged vs even
-- writes plus a search index sorted by time

local T0 = 1767225600
local SENSORS = 50

local function reading(i) return { ts = T0 * 1000 + i * 10, id = ("sensor-%02d"):format(i % SENSORS), v = i % 97 } end

local function even_key(id) return hash.md5(id, true):sub(1, 2) end

local function hex_splits()
  local t = {}
  for k = 1, 15 do t[k] = ("%02x"):format(k * 16) end
  return t
end

-- the newest of a result is the fresh item (rows: { ts } newest first)
local function newest_is(rows, it) return rows[1] ~= nil and rows[1].ts == it.ts end

-- visibility: a reading newer than every other, then the newest one read
local function newest_design(name, label, setup, write, query)
  return with_visibility({ name = name, label = label, setup = setup, write = write, query = query },
    function(env) return { ts = math.floor(env.now() * 1000) + T0 * 1000 + 1000000000, id = "sensor-new", v = 1 } end,
    function() return { kind = "the newest 100 readings", limit = 1 } end, newest_is)
end

local function newest_scenario(N)
  return {
    name = "newest",
    title = "Newest readings first: timestamp first vs 16 buckets merged vs even writes + a search index sorted by time",
    note = N .. " readings of 50 sensors at 100 per second; each query reads the newest 100 of all sensors.",
    ops = N, rate = 100, queries = 10, index_delay_ms = INDEX_DELAY_MS, search_delay_ms = SEARCH_DELAY_MS,
    item = function(i) return reading(i) end,
    query_item = function() return { kind = "the newest 100 readings", limit = 100 } end,
    advice = {
      { query = "the newest readings of all sensors", design = "search",
        why = "keys spread for the writes (hash first), a search index sorted by time for newest-first reads: no hot partition and one request per query, at the price of an index and its delay",
        by = { "rows_per_query", "requests_per_query", "failed_ops" } },
    },
    designs = {
      newest_design("tsfirst", "key (ts, id): newest first is one backward range",
        function(env)
          assert(env.store:create_table { name = "readings", primary_key = { { "ts", "INTEGER" }, { "id", "STRING" } } })
          return { env = env }
        end,
        function(state, it)
          return call(state.env, "put_row", { table = "readings", primary_key = { it.ts, it.id }, columns = { v = it.v } },
            "PutRow", { idempotent = true })
        end,
        function(state, q)
          local page = call(state.env, "get_range", { table = "readings", start = { INF_MAX, INF_MAX },
            stop = { INF_MIN, INF_MIN }, direction = "BACKWARD", limit = q.limit }, "GetRange")
          if not page then return nil end
          local rows = {}
          for i, row in ipairs(page.rows) do rows[i] = { ts = cell(row, "ts") } end
          return rows
        end),
      newest_design("buckets", "key (ts mod 16, ts, id): 16 backward ranges merged",
        function(env)
          local ts = timeseries.new { store = env.store, table = "readings", buckets = 16, secret = env.secret, retry = env.retry }
          assert(ts:create())
          return { env = env, ts = ts }
        end,
        function(state, it) return state.ts:put(it.ts, it.id, { v = it.v }) end,
        function(state, q)
          local rows = state.ts:read { limit = q.limit }
          if not rows then return nil end
          local out2 = {}
          for i, r in ipairs(rows) do out2[i] = { ts = r.ts } end
          return out2
        end),
      newest_design("search", "key (md5(id)[1..2], id, ts) pre-split; search index on ts, sorted newest first",
        function(env)
          assert(env.store:create_table { name = "readings", splits = hex_splits(),
            primary_key = { { "h", "STRING" }, { "id", "STRING" }, { "ts", "INTEGER" } } })
          assert(env.store:create_search_index { table = "readings", index = "readings_by_ts", schema = { field_schemas = {
            { field_name = "at", field_type = "LONG", enable_sort_and_agg = true } } } })
          return { env = env }
        end,
        function(state, it)
          return call(state.env, "put_row", { table = "readings", primary_key = { even_key(it.id), it.id, it.ts },
            columns = { v = it.v, at = it.ts } }, "PutRow", { idempotent = true })
        end,
        function(state, q)
          local res = call(state.env, "search", { table = "readings", index = "readings_by_ts", limit = q.limit,
            query = { match_all = {} }, sort = { { field_sort = { field_name = "at", order = "DESC" } } } }, "Search")
          if not res then return nil end
          local rows = {}
          for i, row in ipairs(res.rows) do rows[i] = { ts = cell(row, "ts") } end
          return rows
        end),
    },
  }
end

---------------------------------------------------------------------------
-- Devices: a metadata table with a search index beside an unindexed data
-- table vs a search index over all the data

local DEVICES, TYPES2, REGIONS = 200, 4, 5
local function device(n) return ("dev-%03d"):format(n) end
local function dev_type(n) return ("type-%d"):format(n % TYPES2) end
local function dev_region(n) return ("region-%d"):format(math.floor(n / TYPES2) % REGIONS) end

local function device_item(i)
  if i <= DEVICES then -- the devices in a scattered order (not a growing key)
    local n = (i * 37) % DEVICES + 1
    return { meta = true, n = n, dev = device(n), type = dev_type(n), region = dev_region(n) }
  end
  local n = (i * 7) % DEVICES + 1
  return { n = n, dev = device(n), ts = T0 * 1000 + i * 10, v = i % 101, type = dev_type(n), region = dev_region(n) }
end

local function readings_table(env)
  assert(env.store:create_table { name = "readings", splits = hex_splits(),
    primary_key = { { "h", "STRING" }, { "dev", "STRING" }, { "ts", "INTEGER" } } })
end

local function devices_table(env)
  local splits = {}
  for k = 1, 7 do splits[k] = device(k * 25) end
  assert(env.store:create_table { name = "devices", primary_key = { { "dev", "STRING" } }, splits = splits })
end

local function put(env, tbl, pk, cols)
  return call(env, "put_row", { table = tbl, primary_key = pk, columns = cols }, "PutRow", { idempotent = true })
end

local function newest(rows, n)
  table.sort(rows, function(a, b) return a.ts > b.ts end)
  for j = #rows, n + 1, -1 do rows[j] = nil end
  return rows
end

-- visibility: a reading of device 1 newer than every other, then the
-- newest readings of its type and region
local function devices_design(d)
  return with_visibility(d,
    function(env)
      return { n = 1, dev = device(1), ts = math.floor(env.now() * 1000) + T0 * 1000 + 1000000000, v = 1,
               type = dev_type(1), region = dev_region(1) }
    end,
    function(it) return { kind = "newest 20 readings of a type in a region", type = it.type, region = it.region } end,
    newest_is)
end

local function devices_scenario(N)
  return {
    name = "devices",
    title = "Devices: metadata with a search index beside unindexed readings vs a search index over all readings",
    note = DEVICES .. " devices (type, region), then " .. N .. " readings; each query: the newest 20 readings of the devices of one type in one region.",
    ops = DEVICES + N, rate = 100, queries = 10, index_delay_ms = INDEX_DELAY_MS, search_delay_ms = SEARCH_DELAY_MS,
    item = function(i) return device_item(i) end,
    query_item = function(_, r)
      return { kind = "newest 20 readings of a type in a region", type = ("type-%d"):format(r.int(0, TYPES2 - 1)),
               region = ("region-%d"):format(r.int(0, REGIONS - 1)) }
    end,
    advice = {
      { query = "readings of the devices matching metadata conditions", design = "metadata",
        why = "index the small metadata table and keep the big data table unindexed: the index stays small and writes of data cost no index row",
        by = { "rows_kept_per_row", "index_bytes" } },
    },
    designs = {
      devices_design { name = "metadata", label = "devices + search index (type, region); readings unindexed",
        setup = function(env)
          devices_table(env)
          readings_table(env)
          assert(env.store:create_search_index { table = "devices", index = "devices_search", schema = { field_schemas = {
            { field_name = "type", field_type = "KEYWORD" }, { field_name = "region", field_type = "KEYWORD" } } } })
          return { env = env }
        end,
        write = function(state, it)
          if it.meta then return put(state.env, "devices", { it.dev }, { type = it.type, region = it.region }) end
          return put(state.env, "readings", { even_key(it.dev), it.dev, it.ts }, { v = it.v })
        end,
        query = function(state, q)
          local env = state.env
          local res = call(env, "search", { table = "devices", index = "devices_search", limit = 100,
            query = { bool = { filter = { { term = { field_name = "type", term = q.type } },
                                           { term = { field_name = "region", term = q.region } } } } } }, "Search")
          if not res then return nil end
          local rows = {}
          for _, drow in ipairs(res.rows) do
            local dev = cell(drow, "dev")
            local page = call(env, "get_range", { table = "readings", start = { even_key(dev), dev, INF_MAX },
              stop = { even_key(dev), dev, INF_MIN }, direction = "BACKWARD", limit = 20 }, "GetRange")
            if not page then return nil end
            for _, row in ipairs(page.rows) do rows[#rows + 1] = { ts = cell(row, "ts") } end
          end
          return newest(rows, 20)
        end },
      devices_design { name = "alldata", label = "readings carry type and region; one search index over all readings",
        setup = function(env)
          devices_table(env)
          readings_table(env)
          assert(env.store:create_search_index { table = "readings", index = "readings_search", schema = { field_schemas = {
            { field_name = "type", field_type = "KEYWORD" }, { field_name = "region", field_type = "KEYWORD" },
            { field_name = "at", field_type = "LONG", enable_sort_and_agg = true } } } })
          return { env = env }
        end,
        write = function(state, it)
          if it.meta then return put(state.env, "devices", { it.dev }, { type = it.type, region = it.region }) end
          return put(state.env, "readings", { even_key(it.dev), it.dev, it.ts },
            { v = it.v, type = it.type, region = it.region, at = it.ts })
        end,
        query = function(state, q)
          local res = call(state.env, "search", { table = "readings", index = "readings_search", limit = 20,
            query = { bool = { filter = { { term = { field_name = "type", term = q.type } },
                                           { term = { field_name = "region", term = q.region } } } } },
            sort = { { field_sort = { field_name = "at", order = "DESC" } } } }, "Search")
          if not res then return nil end
          local rows = {}
          for i, row in ipairs(res.rows) do rows[i] = { ts = cell(row, "ts") } end
          return rows
        end },
    },
  }
end

--- the four scenarios; build(scale) sizes their workloads by scale (the
-- demo's: 1): files, orders and readings written are scale times the
-- demo's (at least 10 each; devices stay 200)
local function build(scale)
  if type(scale) ~= "number" or not (scale > 0 and scale <= 100) then
    error("otskit.analyze.index_scenarios: build(scale) needs a number in (0, 100]", 2)
  end
  local function n(x) return math.max(10, math.floor(x * scale + 0.5)) end
  return { files_scenario(n(2000)), combos_scenario(n(3000)), newest_scenario(n(3000)), devices_scenario(n(3000)) }
end

local out = build(1)
out.build = build
return out
