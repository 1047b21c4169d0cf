--- otskit.patterns.chunked -- large attribute values, compressed and
-- chunked over rows, with a manifest written last (best practices:
-- "compress large text attributes and store them as Binary"; "values are
-- limited to 2 MB: split them over several rows").
--
-- Table: primary key (key STRING, gen STRING, n INTEGER). A value is cut
-- into chunks (otskit.blob: each with its index, generation id and
-- checksum), each chunk compressed into a frame and stored in the row
-- (key, gen, n) (columns data, and size: the frame's bytes) -- gen is a
-- fresh generation id per write. The manifest
-- row (key, "", 0) names the live generation (column "live") and is written last, only
-- if it still names the generation read before the write (a conditional
-- update): it is the commit point. So a write that fails half-way leaves
-- the previous value readable (its chunks were never touched), and two
-- concurrent writers cannot interleave chunks. Chunks of the replaced
-- generation are deleted after the commit; leftovers of a failed cleanup
-- are removed by p:sweep(key). A delete is a commit too: it replaces the
-- manifest by a tombstone (a row naming a fresh generation and no value),
-- again only if the manifest still names the generation read. So every
-- commit names the one generation it replaces, no generation comes back
-- (ids are random), and an attempt that timed out and lands late -- after
-- later writes of the key -- fails its condition instead of undoing them:
-- the value is always the one of the last acknowledged put or delete, or
-- of a later one whose outcome was reported unknown (OTSOutcomeUnknown).
--
--   local chunked = require "otskit.patterns.chunked"
--   local p = chunked.new{ store = db, table = "docs", chunk_size = 1048576,
--                          max_value = 64 * 1048576, codec = "auto", retry = {...} }
--   p:create()                    -> true | nil, msg, code
--   p:put(key, value)             -> info | nil, msg, code  (info: gen, count, length, stored)
--   p:get(key)                    -> value | false (missing) | nil, msg, code
--   p:read_range(key, start, stop)-> bytes [start, stop) (0-based) | false | nil, msg, code
--   p:delete(key)                 -> true | nil, msg, code
--   p:sweep(key)                  -> number of stale chunk rows deleted | nil, msg, code
-- Codes: BadKey, BadValue, TooLarge (over max_value), BadRange, Conflict
-- (another writer committed first), the blob codes on corrupt data
-- (DigestMismatch, StaleGeneration, CorruptFrame, ...) and the store's.
local blob = require "otskit.blob"
local common = require "otskit.patterns.common"
local retry = require "otskit.retry"

local M = {}
local MOD = "otskit.patterns.chunked"
local MB = 1024 * 1024

local P = {}
P.__index = P

local function raise(msg) error(MOD .. ": " .. msg, 3) end

--- chunked.new(opts) -> pattern (see the header). Raises on bad options.
function M.new(opts)
  common.preamble(MOD, opts, { call = "new", options = { "chunk_size", "max_value", "codec", "level" } })
  local name = opts.table
  local cs = opts.chunk_size or MB
  if not (common.is_int(cs) and cs >= 1 and cs <= 2 * MB - 1024) then
    raise("chunk_size must be an integer 1..2 MiB - 1024 (a compressed chunk must fit a 2 MB cell)")
  end
  local maxv = opts.max_value or 64 * MB
  if not (common.is_int(maxv) and maxv >= 0) then raise("max_value must be a non-negative integer") end
  local codec = opts.codec or "auto"
  if codec ~= "auto" and codec ~= "zstd" and codec ~= "lz4" and codec ~= "zlib" and codec ~= "raw" then
    raise("codec must be auto, zstd, lz4, zlib or raw")
  end
  local self = setmetatable({ table = name, chunk_size = cs, max_value = maxv, codec = codec,
    level = opts.level, acc = common.access(opts, MOD) }, P)
  self.stats = self.acc.stats
  self.stats.bytes_in, self.stats.bytes_stored = 0, 0
  return self
end

function P:create(splits)
  local ok, msg, code = self.acc:store("create_table", { name = self.table, primary_key = {
    { "key", "STRING" }, { "gen", "STRING" }, { "n", "INTEGER" } }, splits = splits }, "CreateTable")
  if not ok then return nil, msg, code end
  return true
end

local function check_key(k)
  if type(k) ~= "string" or k == "" or #k > 1000 then
    return common.bad(MOD, "BadKey", "key must be a string of 1..1000 bytes, got %s",
      type(k) == "string" and (#k .. " bytes") or type(k))
  end
  return k
end

-- the manifest row: { manifest, gen } | false (no value), tombstone gen
-- (nil: no row) | nil, msg, code
function P:_manifest(k)
  local res, msg, code = self.acc:store("get_row", { table = self.table,
    primary_key = { { "key", k }, { "gen", "" }, { "n", 0 } } }, "GetRow")
  if not res then return nil, msg, code end
  if not res.row then return false end
  local c = res.row.columns
  if type(c.live) == "string" and c.manifest == nil and c.deleted == true then
    return false, c.live -- a tombstone: deleted
  end
  if type(c.manifest) ~= "string" or type(c.live) ~= "string" then
    return common.bad(MOD, "CorruptManifest", "manifest row of %q is incomplete", k)
  end
  return { manifest = c.manifest, gen = c.live }
end

-- the condition of a commit replacing generation gen (nil: no row yet)
local function commit_cond(gen)
  if gen == nil then return "EXPECT_NOT_EXIST" end
  return { row_existence = "EXPECT_EXIST",
    column_condition = { column = "live", comparator = "EQUAL", value = gen } }
end

-- a fresh generation id (random, as blob.split's)
local function fresh_gen(k)
  return assert(blob.split("", { chunk_size = 1, layout = "rows", name = "data", key = k })).generation
end

-- deletes chunk rows n = 0..count-1 of generation gen (best effort)
function P:_drop_gen(k, gen, count)
  local rows = {}
  for i = 0, count - 1 do
    rows[#rows + 1] = { table = self.table, row = { type = "DELETE",
      primary_key = { { "key", k }, { "gen", gen }, { "n", i } } } }
  end
  return common.write_batches(self.acc, rows, { idempotent = true })
end

-- The manifest commit is resent after an ambiguous failure: a repeat of
-- a commit that landed fails its condition, and the read-back after any
-- failure finds our generation; a lost race (the condition fails) is not.
local function commit_classify(err)
  local c = type(err) == "table" and err.code or err
  if c == "OTSConditionCheckFail" then return "fail" end
  if retry.ambiguous(err) then return "retry" end
  return retry.tablestore(err, "PutRow")
end

--- p:put(key, value) -> { gen, count, length, stored } | nil, msg, code
-- Replaces the value of key. Nothing is visible until the manifest is
-- committed; on any failure the previous value stays readable.
function P:put(k, value)
  local kk, msg, code = check_key(k)
  if not kk then return nil, msg, code end
  if type(value) ~= "string" then return common.bad(MOD, "BadValue", "value must be a string, got %s", type(value)) end
  if #value > self.max_value then
    return common.bad(MOD, "TooLarge", "value is %d bytes, over max_value %d", #value, self.max_value)
  end
  local values = require "otskit.values"
  local old, m0, c0 = self:_manifest(k)
  if old == nil then return nil, m0, c0 end
  local old_gen = old and old.gen or m0 -- the generation this commit replaces (nil: none)
  local parts, sm, sc = blob.split(value, { chunk_size = self.chunk_size, layout = "rows", name = "data", key = k })
  if not parts then return nil, MOD .. ": " .. sm, sc end
  local gen = parts.generation
  local rows, stored = {}, 0
  for i, c in ipairs(parts.chunks) do
    local frame = assert(blob.pack(c, { codec = self.codec, level = self.level }))
    stored = stored + #frame
    rows[i] = { table = self.table, row = { type = "PUT",
      primary_key = { { "key", k }, { "gen", gen }, { "n", i - 1 } },
      columns = { data = values.binary(frame), size = #frame } } }
  end
  local ok, m1, c1 = common.write_batches(self.acc, rows)
  if not ok then
    self:_drop_gen(k, gen, parts.count) -- orphans of this write; sweep() catches what remains
    return nil, m1, c1
  end
  -- commit: the manifest, only if no one else committed since we read it
  local cond = commit_cond(old_gen)
  local okm, m2, c2 = self.acc:store("put_row", { table = self.table,
    primary_key = { { "key", k }, { "gen", "" }, { "n", 0 } },
    columns = { manifest = values.binary(parts.manifest), live = gen, length = #value, count = parts.count },
    condition = cond }, "PutRow", { classify = commit_classify })
  if not okm then
    -- did an attempt land after all (a timeout after apply)? read back
    local now, m3, c3 = self:_manifest(k)
    if now == nil and m3 ~= nil then
      -- unknown: keep our chunks (the manifest may name them); sweep() later
      return nil, ("%s (and the manifest could not be read back: %s)"):format(m2, m3), c3 or c2
    end
    if not (now and now.gen == gen) then
      -- the manifest names another generation than the one read before:
      -- ours can never land now (its condition names the old one)
      local moved = (now and now.gen or m3) ~= old_gen
      if not moved and c2 == retry.OUTCOME_UNKNOWN then
        -- an attempt may still be on its way: keep our chunks (the manifest
        -- may yet name them); sweep() removes them if it never lands
        return nil, m2, c2
      end
      self:_drop_gen(k, gen, parts.count)
      if moved then
        return common.bad(MOD, "Conflict", "another writer replaced %q first", k)
      end
      return nil, m2, c2
    end
  end
  self.stats.rows_written = self.stats.rows_written + #rows + 1
  self.stats.bytes_in = self.stats.bytes_in + #value
  self.stats.bytes_stored = self.stats.bytes_stored + stored + #parts.manifest
  if old then
    local info = blob.manifest(old.manifest)
    if info then self:_drop_gen(k, old.gen, info.count) end
  end
  return { gen = gen, count = parts.count, length = #value, stored = stored + #parts.manifest }
end

-- chunk i of generation gen, decompressed | nil, msg, code
function P:_chunk(k, gen, i)
  local res, msg, code = self.acc:store("get_row", { table = self.table,
    primary_key = { { "key", k }, { "gen", gen }, { "n", i } } }, "GetRow")
  if not res then return nil, msg, code end
  if not res.row then return nil, ("%s: chunk %d of %q is missing"):format(MOD, i, k), "MissingChunk" end
  self.stats.rows_read = self.stats.rows_read + 1
  return blob.unpack(res.row.columns.data, { max_size = 2 * MB })
end

local function read_opts(o) return common.read_opts(MOD, o) end

--- p:get(key [, { deadline = t }]) -> value | false | nil, msg, code.
-- Checks every chunk and the digest of the whole; past the deadline
-- (absolute, otskit.backoff.now() scale) -> nil, msg, "RequestTimeout".
function P:get(k, o)
  local kk, msg, code = check_key(k)
  if not kk then return nil, msg, code end
  local ok, om, oc = read_opts(o)
  if not ok then return nil, om, oc end
  local dl = o and o.deadline
  local _, pm, pc = common.past(MOD, dl)
  if pc then return nil, pm, pc end
  local m, m0, c0 = self:_manifest(k)
  if m == nil then return nil, m0, c0 end
  if not m then return false end
  local info, mi, ci = blob.manifest(m.manifest)
  if not info then return nil, mi, ci end
  local values = require "otskit.values"
  local chunks, start, stalled = {}, { k, m.gen, values.INF_MIN }, 0
  repeat
    local _, dm, dc = common.past(MOD, dl)
    if dc then return nil, dm, dc end
    local page, m1, c1 = self.acc:store("get_range", { table = self.table, start = start,
      stop = { k, m.gen, values.INF_MAX }, direction = "FORWARD" }, "GetRange")
    if not page then return nil, m1, c1 end
    for _, r in ipairs(page.rows) do
      local c, m2, c2 = blob.unpack(r.columns.data, { max_size = 2 * MB })
      if not c then return nil, MOD .. ": chunk " .. r.primary_key[3][2] .. ": " .. m2, c2 end
      chunks[#chunks + 1] = c
    end
    self.stats.rows_read = self.stats.rows_read + #page.rows
    local nx, st, cx = common.next_start(MOD, start, page, stalled)
    if nx == false then return nil, st, cx end
    start, stalled = nx, st
  until start == nil
  local v, m3, c3 = blob.join(m.manifest, chunks, { max_size = math.max(self.max_value, 1) })
  if not v then return nil, MOD .. ": " .. m3, c3 end
  return v
end

--- p:read_range(key, start, stop [, { deadline = t }]) -> bytes
-- [start, stop) | false | nil, msg, code. Reads only the chunks that
-- cover the range (0-based, stop exclusive; BadRange unless 0 <= start <=
-- stop <= length); the deadline as in p:get.
function P:read_range(k, start, stop, o)
  local kk, msg, code = check_key(k)
  if not kk then return nil, msg, code end
  local ok, om, oc = read_opts(o)
  if not ok then return nil, om, oc end
  local dl = o and o.deadline
  local _, pm, pc = common.past(MOD, dl)
  if pc then return nil, pm, pc end
  local m, m0, c0 = self:_manifest(k)
  if m == nil then return nil, m0, c0 end
  if not m then return false end
  local info, mi, ci = blob.manifest(m.manifest)
  if not info then return nil, mi, ci end
  local len = tonumber(info.length)
  if not (common.is_int(start) and common.is_int(stop) and start >= 0 and start <= stop and stop <= len) then
    return common.bad(MOD, "BadRange", "range must satisfy 0 <= start <= stop <= %d", len)
  end
  return blob.read_range(m.manifest, function(i)
    local _, dm, dc = common.past(MOD, dl)
    if dc then return nil, dm, dc end
    return self:_chunk(k, m.gen, i)
  end, start, stop)
end

--- p:delete(key) -> true | nil, msg, code (Conflict: another writer
-- replaced the value first; OTSOutcomeUnknown: the delete may yet land).
-- The manifest is replaced by a tombstone first (the value is gone at
-- once; the small row stays: see the header), then its chunks go.
function P:delete(k)
  local kk, msg, code = check_key(k)
  if not kk then return nil, msg, code end
  local m, m0, c0 = self:_manifest(k)
  if m == nil then return nil, m0, c0 end
  if not m then return true end
  local tomb = fresh_gen(k)
  local ok, m1, c1 = self.acc:store("put_row", { table = self.table,
    primary_key = { { "key", k }, { "gen", "" }, { "n", 0 } }, columns = { live = tomb, deleted = true },
    condition = commit_cond(m.gen) }, "PutRow", { classify = commit_classify })
  if not ok then
    -- as for a put: read back, our tombstone there means it landed
    local now, m3, c3 = self:_manifest(k)
    if now == nil then
      return nil, ("%s (and the manifest could not be read back: %s)"):format(m1, m3), c3 or c1
    end
    if not (now == false and m3 == tomb) then
      if now and now.gen == m.gen then return nil, m1, c1 end -- not applied, or may yet be
      return common.bad(MOD, "Conflict", "another writer replaced %q first", k)
    end
  end
  local info = blob.manifest(m.manifest)
  if info then self:_drop_gen(k, m.gen, info.count) end
  return true
end

--- p:sweep(key) -> n: deletes chunk rows of key that the manifest does
-- not name (left by failed writes or cleanups) | nil, msg, code. Run it
-- when no write of that key is in flight (it would take that write's
-- chunks for leftovers).
function P:sweep(k)
  local kk, msg, code = check_key(k)
  if not kk then return nil, msg, code end
  local values = require "otskit.values"
  local m, m0, c0 = self:_manifest(k)
  if m == nil then return nil, m0, c0 end
  local live = m and m.gen or nil
  local stale, start, stalled = {}, { k, values.INF_MIN, values.INF_MIN }, 0
  repeat
    -- columns_to_get skips a row with none of them (as the service does):
    -- chunk rows carry the small "size" column so keys are read without data
    local page, m1, c1 = self.acc:store("get_range", { table = self.table, start = start,
      stop = { k, values.INF_MAX, values.INF_MAX }, direction = "FORWARD", columns = { "live", "size" } }, "GetRange")
    if not page then return nil, m1, c1 end
    for _, r in ipairs(page.rows) do
      local g = r.primary_key[2][2]
      if g ~= "" and g ~= live then
        stale[#stale + 1] = { table = self.table, row = { type = "DELETE", primary_key = r.primary_key } }
      end
    end
    local nx, st, cx = common.next_start(MOD, start, page, stalled)
    if nx == false then return nil, st, cx end
    start, stalled = nx, st
  until start == nil
  local ok, m2, c2 = common.write_batches(self.acc, stale, { idempotent = true })
  if not ok then return nil, m2, c2 end
  return #stale
end

return M
