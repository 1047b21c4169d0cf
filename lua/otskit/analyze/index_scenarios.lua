--- otskit.analyze.index_scenarios -- the demo's index choice: one query
-- answered by a filter scan, by global secondary indexes and by a search
-- index, on the same workload, with the advice the best practices give
-- (scenario.advice: checked against the measures by otskit.analyze).
local store = require "otskit.store"
local hash = require "otskit.hash"
local S = require "otskit.analyze.scenarios"

local INF_MIN, INF_MAX = store.INF_MIN, store.INF_MAX
local call = S.call

local out = {}

-- the row a query looks for, and whether a design sees it: a fresh file
-- is written, then the query is polled every 10 ms of simulated time;
-- returns the milliseconds until it was found (the index's visibility delay)
local function visibility(state, env, query, write)
  local item = { path = "/zz/fresh", md5 = hash.md5("fresh", true), xxh3 = hash.xxh3("fresh", true), size = 1 }
  assert(write(state, item, env))
  local t0 = env.now()
  for k = 0, 500 do
    env.set_time(t0 + k * 0.01)
    local rows = query(state, { by = "md5", value = item.md5 }, env)
    if rows and #rows > 0 then return k * 10 end
  end
  return "over 5000"
end

local FILES = 2000
local function path_splits()
  local t = {}
  for k = 1, 7 do t[k] = ("/d%02x"):format(k * 32) end
  return t
end

local function file_item(i)
  return { path = ("/d%02x/f%05d"):format((i * 37) % 256, i), md5 = hash.md5("file " .. i, true),
           xxh3 = hash.xxh3("file " .. i, true), size = 1000 + i }
end

local function base_table(env, defined)
  assert(env.store:create_table { name = "files", primary_key = { { "path", "STRING" } }, splits = path_splits(),
    defined_columns = defined })
  -- the service: a global index follows in milliseconds, a search index
  -- within seconds (simulated here: 20 ms and 1 s)
  if env.store.set_index_delay then env.store:set_index_delay(0.02) end
  if env.store.search_delay then env.store:search_delay(1) end
end

local function write_file(env, it)
  return call(env, "put_row", { table = "files", primary_key = { it.path },
    columns = { md5 = it.md5, xxh3 = it.xxh3, size = it.size } }, "PutRow", { idempotent = true })
end

local function files_design(name, label, setup, query)
  local d = { name = name, label = label, setup = setup, query = query,
    write = function(state, it) return write_file(state.env, it) end }
  d.report = function(state, env)
    return { ["ms until a write is visible"] = visibility(state, env, query, d.write) }
  end
  return d
end

out[#out + 1] = {
  name = "files",
  title = "Files looked up by digest (MD5 or xxh3): filter scan vs global indexes vs a search index",
  note = "2000 files keyed by path; each query finds one file by its MD5 or its xxh3 digest (the best practices' example uses SHA1).",
  ops = FILES, rate = 40, queries = 20,
  item = function(i) return file_item(i) end,
  query_item = function(q, r)
    local it = file_item(r.int(1, FILES))
    return q % 2 == 1 and { kind = "a file by MD5", by = "md5", value = it.md5 }
      or { kind = "a file by xxh3", by = "xxh3", value = it.xxh3 }
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
        local env, found, start = state.env, {}, { INF_MIN }
        repeat
          local page = call(env, "get_range", { table = "files", start = start, stop = { INF_MAX } }, "GetRange")
          if not page then return nil end
          for _, row in ipairs(page.rows) do if row.columns[q.by] == q.value then found[#found + 1] = row end end
          start = page.next_start_primary_key
        until start == nil
        return found
      end),
    files_design("global", "a global index per digest, covering size",
      function(env)
        base_table(env, { { "md5", "STRING" }, { "xxh3", "STRING" }, { "size", "INTEGER" } })
        for _, col in ipairs { "md5", "xxh3" } do
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
    files_design("search", "one search index on both digests",
      function(env)
        base_table(env)
        assert(env.store:create_search_index { table = "files", index = "files_search", schema = { field_schemas = {
          { field_name = "md5", field_type = "KEYWORD" }, { field_name = "xxh3", field_type = "KEYWORD" } } } })
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

---------------------------------------------------------------------------
-- Orders queried by any combination of seller, product type and price

local ORDERS, SELLERS, TYPES = 3000, 40, 8
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
  if env.store.set_index_delay then env.store:set_index_delay(0.02) end
  if env.store.search_delay then env.store:search_delay(1) end
end

local DEFINED = { { "seller", "STRING" }, { "type", "STRING" }, { "price", "INTEGER" } }

local function write_order(env, it)
  return call(env, "put_row", { table = "orders", primary_key = { it.id },
    columns = { seller = it.seller, type = it.type, price = it.price } }, "PutRow", { idempotent = true })
end

-- every row of [start, stop) of a table or index, page by page
local function range_all(env, name, start, stop, keep)
  local out = {}
  repeat
    local page = call(env, "get_range", { table = name, start = start, stop = stop }, "GetRange")
    if not page then return nil end
    for _, row in ipairs(page.rows) do if not keep or keep(row) then out[#out + 1] = row end end
    start = page.next_start_primary_key
  until start == nil
  return out
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

local function orders_design(name, label, setup, query)
  return { name = name, label = label, setup = setup, query = query,
    write = function(state, it) return write_order(state.env, it) end }
end

out[#out + 1] = {
  name = "combos",
  title = "Orders by any combination of seller, type and price: an index per combination vs one index + filter vs a search index",
  note = "3000 orders; each query names a seller, a product type, a price range of 50, or a combination of them.",
  ops = ORDERS, rate = 50, queries = 36,
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
        local rows, token = {}, nil
        repeat
          local res = call(state.env, "search", { table = "orders", index = "orders_search", limit = 1000, token = token,
            query = { bool = { filter = must } }, columns_to_get = { return_type = "RETURN_ALL_FROM_INDEX" } }, "Search")
          if not res then return nil end
          for _, row in ipairs(res.rows) do rows[#rows + 1] = row end
          token = res.next_token
        until not token
        return rows
      end),
  },
}

return out
