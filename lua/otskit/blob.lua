--- otskit.blob -- attribute values that are large: compression frames
-- (zstd, lz4, zlib, raw) with checksums and dictionaries, and chunking of
-- values over several columns or rows with a manifest written last.
-- Expected failures return nil, message, code; mistakes raise
-- "otskit.blob: ...".
local core = require "otskit.core"
local F, K = core.frame, core.chunk

local blob = {}

local MB = 1024 * 1024
blob.HEADER_SIZE = F.header_size          -- bytes a frame adds to its payload
blob.CHUNK_HEADER_SIZE = K.header_size    -- bytes a chunk adds to its data
blob.MANIFEST_SIZE = K.manifest_size
blob.DEFAULT_MAX_SIZE = 64 * MB

local LEVELS = { -- default, min, max per codec
  zstd = { 3, -131072, 22 }, lz4 = { 1, 1, 65537 }, zlib = { 6, 0, 9 }, raw = { 0, 0, 0 },
}

local function raise(fmt, ...) error("otskit.blob: " .. fmt:format(...), 3) end

local NO_OPTS = setmetatable({}, { __newindex = function() error("otskit.blob: internal: options are read-only", 2) end })
local function opts_of(opts)
  if opts == nil then return NO_OPTS end
  if type(opts) ~= "table" then raise("options must be a table (got %s)", type(opts)) end
  return opts
end

local function int_opt(o, name, def, lo, hi)
  local v = o[name]
  if v == nil then return def end
  if type(v) ~= "number" or v ~= math.floor(v) or v < lo or v > hi then
    raise("%s must be an integer in %d..%d", name, lo, hi)
  end
  return v
end

-- the C classes of contexts and dictionaries, to refuse anything else
-- with an otskit.blob error (not the C API's "bad argument")
local REG = debug.getregistry()
local function is_a(v, class) return type(v) == "userdata" and getmetatable(v) == REG[class] end
local function check_dicts(d)
  if type(d) == "nil" or is_a(d, "otskit.frame.dict") then return end
  if type(d) == "table" and getmetatable(d) == nil then
    for i, x in ipairs(d) do
      if not is_a(x, "otskit.frame.dict") then raise("dict[%d] must be a dictionary (blob.dictionary)", i) end
    end
    return
  end
  raise("dict must be a dictionary (blob.dictionary) or a list of them")
end

local default_ctx
local function ctx_of(o)
  if type(o.context) ~= "nil" then
    if not is_a(o.context, "otskit.frame.ctx") then raise("context must be a blob.context()") end
    return o.context
  end
  if not default_ctx then default_ctx = F.ctx_new() end
  return default_ctx
end

local function check_string(v, what)
  if type(v) ~= "string" then raise("%s must be a string (got %s)", what, type(v)) end
end

--- blob.context() -> a compression context (zstd/lz4/zlib state and a
-- scratch buffer), reused by every call given it as opts.context. Without
-- one, calls share a module-wide context. ctx:close() frees it at once.
function blob.context() return F.ctx_new() end

--- blob.pack(value, opts) -> frame | nil, message, code
-- opts.codec: "auto" (default: zstd, or raw when compression does not
-- shrink the value), "zstd", "lz4", "zlib", "raw"; opts.level (zstd 3,
-- zlib 6, lz4 acceleration 1); opts.dict (a dictionary, zstd only);
-- opts.checksum "xxh3" (default) or "xxh64". The frame is the payload
-- after a 36-byte header (blob.HEADER_SIZE); with "auto" it is never longer than
-- #value + blob.HEADER_SIZE.
function blob.pack(value, opts)
  check_string(value, "value")
  if opts == nil then -- the common call: "auto" at zstd's default level, xxh3
    return F.pack(default_ctx or ctx_of(NO_OPTS), value, "zstd", LEVELS.zstd[1], true, "xxh3")
  end
  local o = opts_of(opts)
  local codec = o.codec or "auto"
  local auto = codec == "auto"
  if auto then codec = "zstd" end
  local lv = LEVELS[codec]
  if not lv then raise("unknown codec %q", tostring(codec)) end
  local level = int_opt(o, "level", lv[1], lv[2], lv[3])
  local sum = o.checksum or "xxh3"
  if sum ~= "xxh3" and sum ~= "xxh64" then raise("checksum must be \"xxh3\" or \"xxh64\"") end
  -- type(), not ~= nil: a NULL cdata equals nil on LuaJIT
  if type(o.dict) ~= "nil" and codec ~= "zstd" then raise("dictionaries work with zstd only") end
  if type(o.dict) ~= "nil" and not is_a(o.dict, "otskit.frame.dict") then raise("dict must be a dictionary (blob.dictionary)") end
  return F.pack(ctx_of(o), value, codec, level, auto, sum, o.dict)
end

--- blob.unpack(frame, opts) -> value | nil, message, code
-- Verifies the header and the checksum of the original bytes; never
-- produces more than opts.max_size bytes (default 64 MB) whatever the
-- header claims. opts.dict: the dictionary (or a list of them) the frame
-- may need. Codes: TruncatedFrame, CorruptFrame, UnknownCodec,
-- UnknownVersion, UnknownDictionary, TooLarge.
function blob.unpack(frame, opts)
  check_string(frame, "frame")
  if opts == nil then -- the common call, without the option walk
    return F.unpack(default_ctx or ctx_of(NO_OPTS), frame, blob.DEFAULT_MAX_SIZE)
  end
  local o = opts_of(opts)
  local max = int_opt(o, "max_size", blob.DEFAULT_MAX_SIZE, 0, 4294967295)
  check_dicts(o.dict)
  return F.unpack(ctx_of(o), frame, max, o.dict)
end

--- blob.info(frame) -> {codec, checksum, dict_id, length, payload_length}
-- | nil, message, code: the header and the payload check verified, nothing
-- decompressed (only unpack verifies the checksum of the original).
function blob.info(frame)
  check_string(frame, "frame")
  return F.info(frame)
end

--- blob.train(samples, opts) -> dictionary | nil, message, "TrainingFailed"
-- Trains a zstd dictionary (ZDICT) of at most opts.size bytes (default
-- 100 KB) on an array of sample strings (aim for ~100x its size).
function blob.train(samples, opts)
  if type(samples) ~= "table" then raise("samples must be an array of strings") end
  local o = opts_of(opts)
  local size = int_opt(o, "size", 100 * 1024, 256, 64 * MB)
  local bytes, msg, code = F.train(samples, size)
  if not bytes then return nil, msg, code end
  return F.dict_new(bytes)
end

--- blob.dictionary(bytes) -> dictionary, from blob.train(...):bytes() or
-- any raw content | nil, message, "CorruptDictionary". d:id() is the id
-- frames carry; d:bytes(); d:close().
function blob.dictionary(bytes)
  check_string(bytes, "dictionary bytes")
  return F.dict_new(bytes)
end

-- ---- chunking -----------------------------------------------------------

-- Chunk columns must be valid Tablestore column names ([A-Za-z0-9_],
-- 1..255 bytes, first a letter or _), so the index joins with "_".
local function chunk_name(name, i) return name .. "_" .. i end

--- blob.chunk_column(name, i) -> the column holding chunk i (0-based) of
-- attribute name in the column layout: "body_0", "body_1", ...
blob.chunk_column = chunk_name

local function split_opts(o)
  local max_cell = int_opt(o, "max_cell", 2 * MB, K.header_size + 1, 2147483647)
  local cs = int_opt(o, "chunk_size", math.min(MB, max_cell - K.header_size), 1, 2147483647)
  if cs + K.header_size > max_cell then
    raise("chunk_size + %d must fit max_cell (%d)", K.header_size, max_cell)
  end
  local layout = o.layout or "columns"
  if layout ~= "columns" and layout ~= "rows" then raise("layout must be \"columns\" or \"rows\"") end
  local name = o.name or "value"
  check_string(name, "name")
  -- the manifest column is name, chunk columns name_<i>: both must be valid
  -- column names (a 10-digit index leaves 244 bytes for the name)
  if not name:match("^[A-Za-z_][A-Za-z0-9_]*$") or #name > 244 then
    raise("name must be a Tablestore column name ([A-Za-z_][A-Za-z0-9_]*, at most 244 bytes): %q", name)
  end
  if type(o.generation) ~= "nil" and (type(o.generation) ~= "string" or #o.generation ~= 16) then
    raise("generation must be a 16-byte string")
  end
  return cs, layout, name
end

-- The row writes of a split value: chunks first, the manifest last.
local function rows_of(p)
  local rows = {}
  if p.layout == "columns" then
    local cols = {}
    for i, c in ipairs(p.chunks) do cols[i] = { chunk_name(p.name, i - 1), c } end
    if #cols > 0 then rows[1] = { key = p.key, columns = cols } end
  else
    for i, c in ipairs(p.chunks) do
      rows[i] = { key = p.key, suffix = i - 1, columns = { { p.name, c } } }
    end
  end
  rows[#rows + 1] = { key = p.key, columns = { { p.name, p.manifest } }, commit = true }
  return rows
end

local function parts_of(manifest, chunks, o, layout, name)
  local info = assert(K.manifest_info(manifest))
  local p = {
    manifest = manifest, chunks = chunks, key = o.key, name = name, layout = layout,
    generation = info.generation, length = info.length, chunk_size = info.chunk_size,
    count = info.count,
  }
  p.rows = rows_of(p)
  return p
end

--- blob.split(bytes, opts) -> parts
-- Cuts bytes into chunks of opts.chunk_size (default 1 MiB, and chunk +
-- 40-byte header <= opts.max_cell, default 2 MiB) under a fresh random
-- generation id. opts.layout "columns" (default: chunk i in column
-- "<name>_i" of the same row) or "rows" (chunk i in column <name> of the
-- row whose key is opts.key plus suffix i). opts.name: the attribute
-- (default "value"). parts = {manifest, chunks = {chunk 0, ...},
-- generation (hex), length, chunk_size, count, layout, name, key,
-- rows = the row writes for blob.plan, manifest last}. A split into more
-- than blob.MAX_CHUNKS (1,000,000) chunks is refused before anything is
-- cut: nil, message, "TooLarge" (stream it with blob.splitter instead).
blob.MAX_CHUNKS = 1000000
function blob.split(bytes, opts)
  check_string(bytes, "value")
  local o = opts_of(opts)
  local cs, layout, name = split_opts(o)
  local n = math.ceil(#bytes / cs)
  if n > blob.MAX_CHUNKS then
    return nil, ("otskit.blob: %d bytes in chunks of %d is %d chunks, over blob.MAX_CHUNKS (%d)"):format(
      #bytes, cs, n, blob.MAX_CHUNKS), "TooLarge"
  end
  local manifest, chunks = K.split(bytes, cs, layout, o.generation)
  return parts_of(manifest, chunks, o, layout, name)
end

--- blob.manifest(manifest) -> {generation, length, chunk_size, count,
-- layout, digest} | nil, message, code (CorruptManifest, ...).
function blob.manifest(manifest)
  check_string(manifest, "manifest")
  return K.manifest_info(manifest)
end

--- blob.join(manifest, chunks, opts) -> bytes | nil, message, code
-- chunks: an array of chunk strings in any order. Checks every chunk
-- (generation, index, length, checksum), that each index is there once,
-- and the digest of the whole. Codes: MissingChunk, DuplicateChunk,
-- StaleGeneration, CorruptChunk, TruncatedChunk, CorruptManifest,
-- TruncatedManifest, DigestMismatch, TooLarge (over opts.max_size,
-- default 64 MB).
function blob.join(manifest, chunks, opts)
  check_string(manifest, "manifest")
  if type(chunks) ~= "table" then raise("chunks must be an array of strings") end
  local o = opts_of(opts)
  return K.join(manifest, chunks, int_opt(o, "max_size", blob.DEFAULT_MAX_SIZE, 0, 2^53))
end

--- blob.from_columns(row, name) -> manifest, chunks | nil, message, code
-- For the column layout: the manifest (row[name]) and the chunks
-- (row["<name>_i"]) of a row's attributes, ready for blob.join.
function blob.from_columns(row, name)
  if type(row) ~= "table" then raise("row must be a table of attributes") end
  check_string(name, "name")
  local m = row[name]
  if m == nil then return nil, "no manifest column " .. name, "MissingManifest" end
  if type(m) ~= "string" then return nil, "manifest column is not binary", "CorruptManifest" end
  local info, msg, code = K.manifest_info(m)
  if not info then return nil, msg, code end
  -- walk the row, not the manifest's claim (a forged count of 2^31 would
  -- loop 2^31 times): join reports what is missing
  local chunks, prefix = {}, name .. "_"
  for col, c in pairs(row) do
    if type(col) == "string" and type(c) == "string" and col:sub(1, #prefix) == prefix then
      local i = col:match("^%d+$", #prefix + 1)
      if i and #i < 11 and tonumber(i) < info.count then chunks[#chunks + 1] = c end
    end
  end
  return m, chunks
end

--- blob.read_range(manifest, fetch, start, stop) -> bytes [start, stop)
-- (0-based, stop exclusive) | nil, message, code. Calls fetch(i) only for
-- the chunks i that cover the range; fetch returns the chunk string, or
-- nil[, message, code]. Each chunk is checked (generation, index,
-- length, checksum); the digest of the whole needs blob.join.
function blob.read_range(manifest, fetch, start, stop)
  check_string(manifest, "manifest")
  if type(fetch) ~= "function" then raise("fetch must be a function") end
  local info, msg, code = K.manifest_info(manifest)
  if not info then return nil, msg, code end
  local len = tonumber(info.length)
  if type(start) ~= "number" or type(stop) ~= "number" or start ~= math.floor(start)
      or stop ~= math.floor(stop) or start < 0 or start > stop or stop > len then
    raise("range must satisfy 0 <= start <= stop <= %d", len)
  end
  if start == stop then return "" end
  local cs = info.chunk_size
  local first, last = math.floor(start / cs), math.floor((stop - 1) / cs)
  local out = {}
  for i = first, last do
    local c, e1, e2 = fetch(i)
    if c == nil and e1 ~= nil then return nil, e1, e2 or "FetchFailed" end
    if c ~= nil and type(c) ~= "string" then raise("fetch must return a chunk string or nil") end
    local data, m2, c2 = K.chunk_data(manifest, c, i)
    if not data then return nil, ("chunk %d: %s"):format(i, m2), c2 end
    local base = i * cs
    local a = (i == first) and (start - base) or 0
    local b = (i == last) and (stop - base) or #data
    out[#out + 1] = (a == 0 and b == #data) and data or data:sub(a + 1, b)
  end
  return table.concat(out)
end

-- ---- streaming ----------------------------------------------------------

local Splitter = {}
Splitter.__index = Splitter
Splitter.__close = function(s) s:close() end

--- blob.splitter(opts, emit) -> splitter: s:write(piece) hands every full
-- chunk to emit(chunk, index) at once; s:finish() emits the last one and
-- returns the manifest. Holds one chunk of buffer, so memory stays within
-- two chunks for a value of any size. Options as blob.split.
function blob.splitter(opts, emit)
  local o = opts_of(opts)
  if type(emit) ~= "function" then raise("emit must be a function") end
  local cs, layout = split_opts(o)
  return setmetatable({ s = K.splitter(cs, layout, o.generation), emit = emit, n = 0 }, Splitter)
end

function Splitter:write(piece)
  check_string(piece, "piece")
  local s, off, n = self.s, 1, #piece
  while true do
    local chunk
    chunk, off = s:feed(piece, off)
    if chunk then
      self.emit(chunk, self.n)
      self.n = self.n + 1
    end
    if off > n then return end
  end
end

function Splitter:finish()
  local chunk, manifest = self.s:finish()
  if chunk then
    self.emit(chunk, self.n)
    self.n = self.n + 1
  end
  self.s:close()
  return manifest
end

function Splitter:close() self.s:close() end

local Joiner = {}
Joiner.__index = Joiner
Joiner.__close = function(j) j:close() end

--- blob.joiner(manifest, opts) -> joiner | nil, message, code
-- j:write(chunk) takes chunks in index order and returns each one's data
-- (checked: generation, index, length, checksum) | nil, message, code;
-- j:finish() -> true once every chunk came and the digest of the whole
-- matches | nil, message, code. Treat data as provisional until finish.
function blob.joiner(manifest, opts)
  check_string(manifest, "manifest")
  local o = opts_of(opts)
  local j, msg, code = K.joiner(manifest, int_opt(o, "max_size", 2^53, 0, 2^53))
  if not j then return nil, msg, code end
  return setmetatable({ j = j }, Joiner)
end

function Joiner:write(chunk)
  check_string(chunk, "chunk")
  return self.j:feed(chunk)
end
function Joiner:finish() return self.j:finish() end
function Joiner:close() self.j:close() end

-- ---- write planning -----------------------------------------------------

local function key_bytes(k)
  if type(k) == "string" then return #k end
  if type(k) == "table" then
    local n = 0
    for _, v in pairs(k) do n = n + (type(v) == "string" and #v or 8) end
    return n
  end
  return 8
end

-- rows: a parts table, a list of parts, or a list of row writes.
local function rows_arg(rows)
  if type(rows) ~= "table" then raise("rows must be a table") end
  if rows.rows then return rows.rows, rows end
  local out = {}
  for _, r in ipairs(rows) do
    if type(r) ~= "table" then raise("rows must hold tables") end
    if r.rows then
      for _, x in ipairs(r.rows) do out[#out + 1] = x end
    else
      out[#out + 1] = r
    end
  end
  return out, nil
end

local function stale_cleanup(parts, previous, max)
  local old, msg, code = K.manifest_info(previous)
  if not old then return nil, "previous manifest: " .. msg, code end
  local out = {}
  if old.generation == parts.generation then return out end
  -- one cleanup row per stale chunk: bounded, whatever the manifest claims
  if old.count - ((old.layout == parts.layout) and parts.count or 0) > max then
    return nil, ("previous manifest claims %.0f chunks, more than max_cleanup %d"):format(old.count, max), "TooLarge"
  end
  local from = (old.layout == parts.layout) and parts.count or 0
  for i = from, old.count - 1 do
    if old.layout == "columns" then
      out[#out + 1] = { key = parts.key, column = chunk_name(parts.name, i) }
    else
      out[#out + 1] = { key = parts.key, suffix = i }
    end
  end
  return out
end

--- blob.plan(rows, opts) -> {requests = {...}, cleanup = {...}} | nil, msg, code
-- Groups row writes (a blob.split result, a list of them, or rows
-- {key, suffix, columns = {{name, bytes}, ...}, commit}) into requests
-- of <= opts.max_rows (200) rows, <= opts.max_bytes (4 MB: keys, names
-- and values) and <= opts.max_columns (1024) columns per row; a row never
-- appears twice in one request. Commit rows (manifests) come in the last
-- requests, after every chunk: run the requests in order, each only after
-- the previous one fully succeeded. opts.previous: the manifest this
-- write replaces; cleanup then lists its stale chunks ({key, column} or
-- {key, suffix} rows) to delete after the new manifest is written; more
-- than opts.max_cleanup (65536) of them is nil, msg, "TooLarge".
function blob.plan(rows, opts)
  local o = opts_of(opts)
  local max_rows = int_opt(o, "max_rows", 200, 1, 2147483647)
  local max_bytes = int_opt(o, "max_bytes", 4 * MB, 1, 2^53)
  local max_cols = int_opt(o, "max_columns", 1024, 1, 2147483647)
  local max_cleanup = int_opt(o, "max_cleanup", 65536, 0, 2147483647)
  local list, parts = rows_arg(rows)
  local requests, cur = {}, nil
  local function flush(commit)
    if cur and #cur.rows > 0 then requests[#requests + 1] = cur end
    cur = { rows = {}, bytes = 0, commit = commit }
  end
  for phase = 1, 2 do
    local commit = phase == 2
    flush(commit)
    for _, row in ipairs(list) do
      if (row.commit and true or false) == commit then
        if type(row.columns) ~= "table" then raise("a row write needs columns") end
        local kb = key_bytes(row.key) + (row.suffix ~= nil and 8 or 0)
        local piece
        for _, col in ipairs(row.columns) do
          if type(col) ~= "table" or type(col[1]) ~= "string" or type(col[2]) ~= "string" then
            raise("a column write must be {name, bytes}")
          end
          local sz = #col[1] + #col[2]
          if kb + sz > max_bytes then
            raise("a cell of %d bytes does not fit max_bytes %d: use smaller chunks", sz, max_bytes)
          end
          if piece == nil or #piece.columns >= max_cols or cur.bytes + sz > max_bytes then
            if piece ~= nil or #cur.rows >= max_rows or cur.bytes + kb + sz > max_bytes then
              flush(commit)
            end
            piece = { key = row.key, suffix = row.suffix, columns = {} }
            cur.rows[#cur.rows + 1] = piece
            cur.bytes = cur.bytes + kb
          end
          piece.columns[#piece.columns + 1] = col
          cur.bytes = cur.bytes + sz
        end
      end
    end
    flush(commit)
  end
  local cleanup = {}
  if o.previous ~= nil then
    check_string(o.previous, "previous")
    if not parts then raise("previous needs the rows of one blob.split result") end
    local c, msg, code = stale_cleanup(parts, o.previous, max_cleanup)
    if not c then return nil, msg, code end
    cleanup = c
  end
  return { requests = requests, cleanup = cleanup }
end

return blob
