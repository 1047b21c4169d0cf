--- otskit.patterns.import -- a parallel import that writes out of key
-- order (best practices: "write in parallel and out of key order: shuffle,
-- or many workers each taking random small sub-batches").
--
-- A data set sorted by primary key, written in order, hits one partition
-- at a time: the tail of what was written so far. This shuffles the rows
-- (a seeded Fisher-Yates: the same seed, the same order), cuts them into
-- BatchWriteRow requests within the limits (200 rows, 4 MB), and lets
-- `workers` workers take the batches from one queue. Failed rows are
-- retried alone through otskit.retry.
--
--   local import = require "otskit.patterns.import"
--   local rep = import.run{ store = db, table = "orders",
--     rows = { { pk, columns }, ... },     -- pk: {v1, ...} or {{name, v}, ...}
--     shuffle = true, seed = 42, workers = 4, max_rows = 200,
--     max_bytes = 4 MB - 64 KB, retry = {...}, parallel = nil | false | "ngx" | fn(jobs),
--     progress = function(done_rows, total_rows) end }
--   -> { rows, batches, written, failed, requests, retries } | nil, msg, code
-- Every row is checked against the table's primary key (describe_table)
-- before anything is written: a wrong shape is BadKey and writes nothing.
-- A report with failed > 0 also carries the first failure (msg, code).
local common = require "otskit.patterns.common"
local key = require "otskit.key"

local M = {}
local MOD = "otskit.patterns.import"

local function raise(msg) error(MOD .. ": " .. msg, 3) end

--- import.shuffle(list, seed) -> list, shuffled in place (Park-Miller
-- PRNG, exact in doubles: the same order on Lua 5.4 and LuaJIT).
function M.shuffle(list, seed)
  local s = math.floor(seed or 1) % 2147483647
  if s <= 0 then s = s + 2147483646 end
  for i = #list, 2, -1 do
    s = (s * 48271) % 2147483647
    local j = s % i + 1
    list[i], list[j] = list[j], list[i]
  end
  return list
end

-- one row's primary key in the SDK form, checked against the schema
local function norm_pk(pk, schema, i)
  if type(pk) ~= "table" then return common.bad(MOD, "BadKey", "row %d: primary key must be a list", i) end
  if schema and #pk ~= #schema then
    return common.bad(MOD, "BadKey", "row %d: primary key has %d columns, the table %d", i, #pk, #schema)
  end
  local out = {}
  for j = 1, #pk do
    local c = pk[j]
    local v = type(c) == "table" and c[2] or c
    local name = type(c) == "table" and c[1] or (schema and schema[j][1]) or ("pk" .. j)
    if schema then
      local want = schema[j][2]
      local ok = (want == "INTEGER" and common.is_int(v)) or (want ~= "INTEGER" and type(v) == "string")
      if not ok then
        return common.bad(MOD, "BadKey", "row %d: column %s must be %s, got %s", i, schema[j][1], want, type(v))
      end
      if name ~= schema[j][1] then
        return common.bad(MOD, "BadKey", "row %d: column %d is %s, the table's is %s", i, j, tostring(name), schema[j][1])
      end
    end
    out[j] = { name, v }
  end
  local ok, msg, code = key.check_pk(out)
  if not ok then return nil, ("%s: row %d: %s"):format(MOD, i, msg), code == "BadPrimaryKey" and "BadKey" or code end
  return out
end

--- import.run(opts) -> report | nil, msg, code (see the header)
function M.run(opts)
  common.preamble(MOD, opts, { call = "run", parallel = true,
    options = { "rows", "workers", "shuffle", "seed", "max_rows", "max_bytes", "progress" } })
  local tname = opts.table
  if type(opts.rows) ~= "table" then raise("rows must be a list of {pk, columns}") end
  local workers = opts.workers or 4
  if not (common.is_int(workers) and workers >= 1 and workers <= 256) then raise("workers must be 1..256") end
  local acc = common.access(opts, MOD)
  local db = acc.db
  local schema
  if db.describe_table then
    local d, msg, code = acc:store("describe_table", { name = tname }, "DescribeTable")
    if not d then return nil, msg, code end
    schema = d.table_meta.primary_key
  end
  local rows = {}
  for i, r in ipairs(opts.rows) do
    if type(r) ~= "table" then return common.bad(MOD, "BadKey", "row %d is not a table", i) end
    local pk, msg, code = norm_pk(r[1], schema, i)
    if not pk then return nil, msg, code end
    local cols = r[2] or {}
    if type(cols) ~= "table" then return common.bad(MOD, "BadValue", "row %d: columns must be a table", i) end
    rows[i] = { table = tname, row = { type = "PUT", primary_key = pk, columns = cols } }
  end
  if opts.shuffle ~= false then M.shuffle(rows, opts.seed or 1) end
  local max_rows = opts.max_rows or common.MAX_ROWS
  if not (common.is_int(max_rows) and max_rows >= 1 and max_rows <= 200) then raise("max_rows must be 1..200") end
  local batches = common.batches(rows, max_rows, opts.max_bytes)
  local rep = { rows = #rows, batches = #batches, written = 0, failed = 0 }
  local next_batch, first_err = 1, nil
  local progress = opts.progress
  local function worker()
    while next_batch <= #batches do
      local b = batches[next_batch]
      next_batch = next_batch + 1
      local nf, results = acc:batch_write(b, { idempotent = true })
      rep.written = rep.written + #b - nf
      rep.failed = rep.failed + nf
      if nf > 0 and not first_err then
        for _, r in ipairs(results) do if r ~= true then first_err = r; break end end
      end
      if progress then progress(rep.written + rep.failed, #rows) end
    end
  end
  local jobs = {}
  for w = 1, math.min(workers, math.max(1, #batches)) do jobs[w] = worker end
  common.run_jobs(jobs, common.parallel_of(opts))
  rep.requests, rep.retries = acc.stats.requests, acc.stats.retries
  if first_err then
    rep.message = type(first_err) == "table" and (first_err.message or first_err.code) or tostring(first_err)
    rep.code = type(first_err) == "table" and first_err.code or tostring(first_err)
  end
  return rep
end

return M
