--- otskit.store.search.docs -- a search index's SQLite tables and how a
-- row becomes a document in them.
--
-- Per index (prefix p = "s<id>_"):
--   p.."doc"  (id INTEGER PRIMARY KEY, pk BLOB, parent, path, route, ts,
--             a<f>...): one document per row (pk: the row key, parent
--             NULL) and one per object of a NESTED field (parent: the
--             enclosing doc, path: the nested field's name); a<f>: the
--             value of each top-level single-valued LONG, DOUBLE, DATE,
--             BOOLEAN or KEYWORD field (def.colfields; NULL without one),
--             so aggregations read a document's values in one row;
--   p.."num"  (f, v, pk, doc): LONG, DOUBLE, BOOLEAN (0/1) and DATE (ms)
--             values, B-tree on (f, v, pk, doc) and (doc, f, v); pk: the
--             row key of a top-level document ("" in a nested one), so
--             the documents with one value come in primary key order;
--   p.."kw"   (f, v, pk, doc): KEYWORD values, the same two B-trees;
--   p.."has"  (f, doc): which TEXT, GEO_POINT, VECTOR and NESTED fields a
--             document has (exists; num and kw answer it for the others);
--   p.."gpt"  (doc, f, lat, lon) and p.."geo" (an R*Tree over the points);
--   p.."vec"  (id, doc, f, v): VECTOR values, v a BLOB of float32 (see
--             otskit.core.vec; the knn_vector query scores them in C);
--   p.."fts"  an FTS5 table, one column per TEXT field: each value's tokens
--             (analysed in Lua) hex-encoded, the values of an array
--             separated by "x" so a phrase never spans two values.
-- f is the field's id in the definition. Values a field's type does not
-- take (a STRING in a LONG field, a malformed "lat,lon") are not indexed:
-- the row stays in the index without that field.
local cjson = require "cjson.safe"
local analyzers = require "otskit.store.search.analyzers"
local dates = require "otskit.store.search.dates"
local sql = require("otskit.core").sql
local vec = require("otskit.core").vec

local docs = {}

local HEX = {}
for b = 0, 255 do HEX[string.char(b)] = ("%02x"):format(b) end
local function hex(s) return (s:gsub(".", HEX)) end
docs.hex = hex

--- docs.fts_text(tokens) -> the FTS5 column text of one value's tokens
function docs.fts_text(tokens)
  local t = {}
  for i, tok in ipairs(tokens) do t[i] = hex(tok) end
  return table.concat(t, " ")
end

-- the B-trees built over the tables' rows (docs.ddl_indexes)
local INDEXES = {
  "CREATE INDEX %sdoc_pk ON %sdoc(pk, parent)",
  "CREATE INDEX %sdoc_parent ON %sdoc(parent) WHERE parent IS NOT NULL",
  "CREATE INDEX %snum_doc ON %snum(doc, f, v)",
  "CREATE INDEX %skw_doc ON %skw(doc, f, v)",
  "CREATE INDEX %shas_doc ON %shas(doc)",
  "CREATE INDEX %sgpt_doc ON %sgpt(doc)",
  "CREATE INDEX %svec_doc ON %svec(doc, f)",
}

--- docs.ddl_indexes(p) -> SQL creating the index's secondary B-trees
-- (a build creates them after loading the rows: sorting once is faster
-- than inserting each entry)
function docs.ddl_indexes(p)
  local s = {}
  for i, f in ipairs(INDEXES) do s[i] = f:format(p, p) end
  return table.concat(s, ";\n") .. ";"
end

--- docs.ddl(p, def [, defer]) -> SQL creating the index's tables (and,
-- unless defer, their secondary B-trees: docs.ddl_indexes)
function docs.ddl(p, def, defer)
  local s = {
    ("CREATE TABLE %sdoc (id INTEGER PRIMARY KEY, pk BLOB, parent INTEGER, path TEXT, route BLOB, ts INTEGER%s)"):format(p,
      docs.col_ddl(def)),
    ("CREATE TABLE %snum (f INTEGER, v, pk BLOB, doc INTEGER, PRIMARY KEY (f, v, pk, doc)) WITHOUT ROWID"):format(p),
    ("CREATE TABLE %skw (f INTEGER, v TEXT, pk BLOB, doc INTEGER, PRIMARY KEY (f, v, pk, doc)) WITHOUT ROWID"):format(p),
    ("CREATE TABLE %shas (f INTEGER, doc INTEGER, PRIMARY KEY (f, doc)) WITHOUT ROWID"):format(p),
    ("CREATE TABLE %sgpt (id INTEGER PRIMARY KEY, doc INTEGER, f INTEGER, lat REAL, lon REAL)"):format(p),
    ("CREATE VIRTUAL TABLE %sgeo USING rtree(id, lat0, lat1, lon0, lon1)"):format(p),
    ("CREATE TABLE %svec (id INTEGER PRIMARY KEY, doc INTEGER, f INTEGER, v BLOB)"):format(p),
  }
  local cols = {}
  for _, d in ipairs(def.fields) do
    if d.type == "TEXT" then cols[#cols + 1] = "c" .. d.id end
  end
  if #cols > 0 then
    s[#s + 1] = ("CREATE VIRTUAL TABLE %sfts USING fts5(%s, tokenize = 'ascii')"):format(p, table.concat(cols, ", "))
  end
  return table.concat(s, ";\n") .. ";" .. (defer and "" or "\n" .. docs.ddl_indexes(p))
end

--- docs.drop(p, def) -> SQL dropping the index's tables
function docs.drop(p, def)
  local s = {}
  for _, n in ipairs({ "doc", "num", "kw", "has", "gpt", "geo", "vec" }) do s[#s + 1] = "DROP TABLE IF EXISTS " .. p .. n end
  s[#s + 1] = "DROP TABLE IF EXISTS " .. p .. "fts"
  return table.concat(s, ";\n") .. ";"
end

----------------------------------------------------------------------
-- values

local INT_MAX = 9223372036854775807

local is_typed = require("otskit.values").is_typed
local jsonint = require "otskit.store.search.jsonint"
local LUA54 = math.type ~= nil


-- an int64 cell value -> itself (5.4: an integer; LuaJIT: a number, or the
-- decimal text of one beyond 2^53, which the sink binds as an INTEGER) |
-- nil. Takes an integral number and a typed INTEGER value (store.integer,
-- as the store hands a LuaJIT INTEGER cell beyond 2^53 to the index).
local function as_long(v)
  if type(v) == "table" and is_typed(v) and v.type == "INTEGER" then
    v = v.value
    if type(v) == "string" then return v end -- integer() checked it: an int64
  end
  if type(v) == "number" and v == math.floor(v) and v >= -2^63 and v < 2^63 then
    return LUA54 and math.tointeger(v) or v
  end
  return nil
end
docs.as_long = as_long

--- "lat,lon" -> lat, lon | nil
function docs.geo(s)
  if type(s) ~= "string" then return nil end
  local a, b = s:match("^%s*([-+%d.eE]+)%s*,%s*([-+%d.eE]+)%s*$")
  local lat, lon = tonumber(a), tonumber(b)
  if not lat or not lon or lat < -90 or lat > 90 or lon < -180 or lon > 180 then return nil end
  return lat, lon
end

--- docs.date(s, formats) -> milliseconds since the epoch (UTC) | nil:
-- otskit.store.search.dates' parse
docs.date = dates.parse

--- docs.value(d, v) -> the value to index for field d (a number, a string,
-- {lat, lon}, a token list, a VECTOR's float32 BLOB) | nil when the value
-- does not fit the type
function docs.value(d, v)
  local ty = d.type
  if ty == "LONG" then return as_long(v)
  elseif ty == "DOUBLE" then
    if is_typed(v) and (v.type == "DOUBLE" or v.type == "INTEGER") then v = tonumber(v.value) end
    return type(v) == "number" and v + 0.0 or nil
  elseif ty == "BOOLEAN" then
    if type(v) == "boolean" then return v and 1 or 0 end
    return nil
  elseif ty == "DATE" then
    if type(v) == "string" then return docs.date(v, d.date_formats) end
    return as_long(v)
  elseif ty == "KEYWORD" then return type(v) == "string" and v or nil
  elseif ty == "TEXT" then
    if type(v) ~= "string" then return nil end
    return analyzers.tokens(d.analyzer, d.params, v)
  elseif ty == "GEO_POINT" then
    local lat, lon = docs.geo(v)
    return lat and { lat, lon } or nil
  elseif ty == "VECTOR" then
    if type(v) ~= "string" then return nil end
    local t = cjson.decode(v)
    if type(t) ~= "table" or #t ~= d.vector.dimension then return nil end
    return (vec.pack(t, d.vector.dimension)) -- nil: not numbers, or beyond float32
  end
  return nil
end

-- the values of field d in a cell or JSON value v: a list (is_array: a JSON
-- array string, or an already decoded list inside a nested object)
local function values_of(d, v)
  if d.array then
    local list = v
    if type(v) == "string" then list = jsonint.decode(v) end
    if type(list) ~= "table" then return {} end
    local out = {}
    for _, x in ipairs(list) do
      local y = docs.value(d, x)
      if y ~= nil then out[#out + 1] = y end
    end
    return out
  end
  local y = docs.value(d, v)
  return y ~= nil and { y } or {}
end

-- docs.run(h, text, binds, n, max, skip, count) -> rows[, total]: the
-- rows of a statement (otskit.core.sql.rows; count: also the number of
-- rows it produces in all); raises docs.FAIL when SQLite fails
local function run(h, text, binds, n, max, skip, count)
  local rows, err, code = sql.rows(h, text, binds, n, max, skip, count)
  if not rows then error(setmetatable({ msg = err, code = code }, docs.FAIL), 0) end
  return rows, code
end
docs.FAIL = {}
docs.run = run

--- docs.keys(h, text, binds, n, max, skip, count, types, mark [, names]) -> vals,
-- n, total, markkey: a statement whose first column is a row key, its
-- keys decoded flat in C (otskit.core.sql.keys; with the key columns'
-- names, the rows as a search returns them); raises docs.FAIL when
-- SQLite fails or a key is damaged
function docs.keys(h, text, binds, n, max, skip, count, types, mark, names)
  local vals, nr, total, mk = sql.keys(h, text, binds, n, max, skip, count, types, mark, names)
  if not vals then error(setmetatable({ msg = nr, code = total }, docs.FAIL), 0) end
  return vals, nr, total, mk
end

--- docs.top_keys(h, text, binds, n, max, types, names) -> rows, n:
-- otskit.core.sql.top_keys (text's rows (key, v) in the order v DESC, key
-- DESC; rows: the first max in the order v DESC, key ASC), raising
-- docs.FAIL on a SQLite error
function docs.top_keys(h, text, binds, n, max, types, names)
  local rows, nr, code = sql.top_keys(h, text, binds, n, max, types, names)
  if not rows then error(setmetatable({ msg = nr, code = code }, docs.FAIL), 0) end
  return rows, nr
end

--- docs.guarded(fn, ...) -> fn's results, a docs.FAIL raise turned into
-- nil, msg, code (other errors re-raised)
function docs.guarded(fn, ...)
  local ok, r1, r2, r3 = pcall(fn, ...)
  if ok then return r1, r2, r3 end
  if getmetatable(r1) == docs.FAIL then return require("otskit.store.txn").dberr(r1.msg, r1.code) end
  error(r1, 0)
end

----------------------------------------------------------------------
-- writing documents: every row an index gets goes into a sink (one list
-- of values per table), written as multi-row INSERTs; document and point
-- ids are assigned here (one past the largest), so nothing is read back

-- table -> { columns, one row's placeholders, verb }
local SHAPE = {
  doc = { "(id, pk, parent, path, route, ts)", { "?", "CAST(? AS BLOB)", "?", "?", "CAST(? AS BLOB)", "?" }, "INSERT" },
  num = { "(f, v, pk, doc)", { "?", "?", "CAST(? AS BLOB)", "?" }, "INSERT OR IGNORE" },
  -- LuaJIT: a LONG value beyond 2^53, bound as its decimal text
  numi = { "(f, v, pk, doc)", { "?", "CAST(? AS INTEGER)", "CAST(? AS BLOB)", "?" }, "INSERT OR IGNORE" },
  kw = { "(f, v, pk, doc)", { "?", "?", "CAST(? AS BLOB)", "?" }, "INSERT OR IGNORE" },
  has = { "(f, doc)", { "?", "?" }, "INSERT OR IGNORE" },
  gpt = { "(id, doc, f, lat, lon)", { "?", "?", "?", "?", "?" }, "INSERT" },
  geo = { "", { "?", "?", "?", "?", "?" }, "INSERT" },
  vec = { "(doc, f, v)", { "?", "?", "CAST(? AS BLOB)" }, "INSERT" },
}
local ORDER = { "doc", "num", "numi", "kw", "has", "gpt", "geo", "vec", "fts" }
local MAX_BINDS = 999 -- SQLite's smallest limit on ?N

-- the INSERT of `rows` rows into table `what` of index p (cached by its
-- columns too: another database's index of the same prefix may have others)
local MULTI = {}
local function multi(tbl, shape, rows)
  local k = tbl .. "/" .. rows .. shape[1] .. table.concat(shape[2]) -- (and placeholders: numi's, LONG columns' CAST)
  local text = MULTI[k]
  if text then return text end
  local n, vals = 0, {}
  for r = 1, rows do
    local one = {}
    for j, ph in ipairs(shape[2]) do
      n = n + 1
      one[j] = ph:gsub("%?", "?" .. n)
    end
    vals[r] = "(" .. table.concat(one, ", ") .. ")"
  end
  text = ("%s INTO %s %s VALUES %s"):format(shape[3], tbl, shape[1], table.concat(vals, ", "))
  MULTI[k] = text
  return text
end

-- writes the values gathered for table `what`
local function flush(sink, what)
  local l = sink[what]
  local n = l.n
  if n == 0 then return end
  local shape = sink.shape[what] or SHAPE[what]
  local w = #shape[2]
  local per = math.floor(MAX_BINDS / w)
  local i = 1
  while i <= n do
    local rows = math.min(per, math.floor((n - i + 1) / w))
    local b = {}
    for j = 1, rows * w do b[j] = l[i + j - 1] end
    run(sink.h, multi(sink.into[what], shape, rows), b, rows * w)
    i = i + rows * w
  end
  l.n = 0
end

-- adds one row to table `what` of the sink
local function add(sink, what, ...)
  local l = sink[what]
  local n = l.n
  for i = 1, select("#", ...) do l[n + i] = (select(i, ...)) end
  l.n = n + select("#", ...)
  sink.size = sink.size + 1
end

local function next_id(h, p, what)
  return run(h, ("SELECT coalesce(max(id), 0) + 1 FROM %s%s"):format(p, what))[1][1]
end

--- docs.sink(h, p, def [, build]) -> a sink for docs.put: the index's
-- rows are written by docs.flush(sink), or when it holds many (a build
-- keeps one sink for every row; a write makes one per row). build: the
-- values go to temporary tables first and docs.finish(sink) moves them
-- into the value indexes in their order (one sort, then appends, instead
-- of an insert at a random place of a large B-tree per value).
function docs.sink(h, p, def, build)
  local sink = { h = h, p = p, def = def, size = 0, doc_id = next_id(h, p, "doc"), gpt_id = next_id(h, p, "gpt"), into = {} }
  for _, k in ipairs(ORDER) do sink[k] = { n = 0 }; sink.into[k] = p .. k end
  if build then
    for _, k in ipairs({ "num", "kw" }) do
      local stage = "temp." .. p .. k .. "_stage"
      run(h, ("CREATE TABLE %s (f INTEGER, v, pk BLOB, doc INTEGER)"):format(stage))
      sink.into[k] = stage
    end
    sink.build = true
  end
  sink.into.numi = sink.into.num
  sink.shape = {}
  if not def.keyed then
    for _, k in ipairs({ "num", "kw" }) do sink.shape[k] = { "(f, v, doc)", { "?", "?", "?" }, "INSERT OR IGNORE" } end
    sink.shape.numi = { "(f, v, doc)", { "?", "CAST(? AS INTEGER)", "?" }, "INSERT OR IGNORE" }
  end
  if def.fts_cols then
    local q = { "?" }
    for i = 1, #def.fts_cols do q[i + 1] = "?" end
    sink.shape.fts = { "(rowid, " .. table.concat(def.fts_cols, ", ") .. ")", q, "INSERT" }
  end
  local cf = def.colfields
  if #cf > 0 then -- the documents' value columns
    local names, q = {}, {}
    for i, ph in ipairs(SHAPE.doc[2]) do q[i] = ph end
    for i, d in ipairs(cf) do -- (LuaJIT: a LONG beyond 2^53 is decimal text)
      names[i] = d.col
      q[#q + 1] = (d.type == "LONG" or d.type == "DATE") and "CAST(? AS INTEGER)" or "?"
    end
    sink.shape.doc = { SHAPE.doc[1]:sub(1, -2) .. ", " .. table.concat(names, ", ") .. ")", q, "INSERT" }
  end
  sink.ncol = #cf
  return sink
end

--- docs.flush(sink): writes what the sink holds
function docs.flush(sink)
  for _, k in ipairs(ORDER) do flush(sink, k) end
  sink.size = 0
end

--- docs.finish(sink): flushes a build's sink and moves its staged values
-- into the value indexes
function docs.finish(sink)
  docs.flush(sink)
  if not sink.build then return end
  -- a top-level single-valued field's values are its column of p.."doc"
  -- (index_fields staged none of them): one sort per field
  for _, d in ipairs(sink.def.colfields) do
    run(sink.h, ("INSERT OR IGNORE INTO %s%s (f, v, pk, doc) SELECT %d, %s, pk, id FROM %sdoc WHERE %s IS NOT NULL ORDER BY %s, pk, id")
      :format(sink.p, sink.def.store_of[d.type], d.id, d.col, sink.p, d.col, d.col))
  end
  for _, k in ipairs({ "num", "kw" }) do
    local stage = sink.into[k]
    run(sink.h, ("INSERT OR IGNORE INTO %s%s (f, v, pk, doc) SELECT f, v, pk, doc FROM %s ORDER BY f, v, pk, doc")
      :format(sink.p, k, stage))
    run(sink.h, "DROP TABLE " .. stage)
  end
end

-- a new document's id (its row goes into the sink)
local function new_doc(sink, pk, parent, path, route, ts, def, cols)
  local id = sink.doc_id
  sink.doc_id = id + 1
  add(sink, "doc", id, pk, parent, path, route, ts)
  if sink.ncol > 0 then -- the value columns (NULL in a nested document)
    local l, cf = sink.doc, def and def.colfields
    local n = l.n
    for i = 1, sink.ncol do
      local v = cols and cols[cf[i].name]
      if v ~= nil then v = docs.value(cf[i], v) end
      if v == nil then v = sql.NULL end
      l[n + i] = v
    end
    l.n = n + sink.ncol
  end
  return id
end

-- indexes the fields `fields` of one document `id` (row key pk, "" for a
-- nested document) from get(name) -> value into the sink; the TEXT
-- fields' column texts go into fts[doc id]
local function index_fields(sink, def, id, pk, fields, get, fts)
  for _, d in ipairs(fields) do
    -- (a build's top-level single-valued fields: docs.finish takes their
    -- values from p.."doc")
    local raw = nil
    if not (sink.build and d.col and def.keyed) then raw = get(d.name:match("([^.]+)$")) end
    if raw ~= nil and (d.index ~= false or d.type == "NESTED") then
      local ty = d.type
      if ty == "NESTED" then
        local list = raw
        if type(raw) == "string" then list = jsonint.decode(raw) end
        if type(list) == "table" and list[1] == nil and next(list) ~= nil then list = { list } end
        if type(list) == "table" then
          local any = false
          for _, obj in ipairs(list) do
            if type(obj) == "table" then
              any = true
              local kid = new_doc(sink, sql.NULL, id, d.name, sql.NULL, sql.NULL)
              index_fields(sink, def, kid, "", d.kids, function(n)
                local x = obj[n]
                if x == cjson.null then return nil end
                return x
              end, fts)
            end
          end
          if any then add(sink, "has", d.id, id) end
        end
      else
        local vals = values_of(d, raw)
        if #vals > 0 then
          local where = def.store_of[ty]
          if where == "num" or where == "kw" then
            for _, v in ipairs(vals) do
              local w = type(v) == "string" and where == "num" and "numi" or where -- LuaJIT int64 text
              if def.keyed then add(sink, w, d.id, v, pk, id)
              else add(sink, w, d.id, v, id) end -- an index made before num/kw held the row key
            end
          else
            -- exists for the other types: num and kw answer it themselves
            add(sink, "has", d.id, id)
            if where == "geo" then
              for _, v in ipairs(vals) do
                local gid = sink.gpt_id
                sink.gpt_id = gid + 1
                add(sink, "gpt", gid, id, d.id, v[1], v[2])
                add(sink, "geo", gid, v[1], v[1], v[2], v[2])
              end
            elseif where == "vec" then
              if def.vec then add(sink, "vec", id, d.id, vals[1]) end
            elseif where == "fts" then
              local parts = {}
              for i, toks in ipairs(vals) do parts[i] = docs.fts_text(toks) end
              local col = fts[id]
              if not col then col = {}; fts[id] = col end
              col["c" .. d.id] = table.concat(parts, " x ")
            end
          end
        end
      end
    end
  end
end

--- docs.put(h, p, def, key, route, ts, cols [, sink]): (re)indexes the
-- row with key `key` whose columns are cols (name -> value); ts: its
-- newest cell's timestamp (ms). sink (docs.sink): a build's, the row known
-- not to be in the index; its rows are written when the sink is full or
-- flushed. Without a sink the row is written before this returns.
-- Raises docs.FAIL on a SQLite failure.
function docs.put(h, p, def, key, route, ts, cols, sink)
  local own = sink == nil
  if own then
    docs.remove(h, p, def, key)
    sink = docs.sink(h, p, def)
  end
  local id = new_doc(sink, key, sql.NULL, sql.NULL, route or sql.NULL, ts, def, cols)
  local fts = {}
  index_fields(sink, def, id, key, def.top, function(n) return cols[n] end, fts)
  if def.fts_cols then
    for doc, col in pairs(fts) do
      local l = sink.fts
      local n = l.n + 1
      l[n] = doc
      for i, c in ipairs(def.fts_cols) do l[n + i] = col[c] or "" end
      l.n = n + #def.fts_cols
      sink.size = sink.size + 1
    end
  end
  if own or sink.size >= 20000 then docs.flush(sink) end
end

-- the ids of a document and all its nested documents
local function tree(h, p, id, out)
  out[#out + 1] = id
  local kids = run(h, ("SELECT id FROM %sdoc WHERE parent = ?1"):format(p), { id })
  for _, r in ipairs(kids) do tree(h, p, r[1], out) end
  return out
end

--- docs.remove(h, p, def, key): drops the row's document (and its nested
-- documents) from the index, if there
function docs.remove(h, p, def, key)
  local r = run(h, ("SELECT id FROM %sdoc WHERE pk = CAST(?1 AS BLOB) AND parent IS NULL"):format(p), { key })
  if not r[1] then return end
  for _, id in ipairs(tree(h, p, r[1][1], {})) do
    local b = { id }
    run(h, ("DELETE FROM %snum WHERE doc = ?1"):format(p), b)
    run(h, ("DELETE FROM %skw WHERE doc = ?1"):format(p), b)
    run(h, ("DELETE FROM %shas WHERE doc = ?1"):format(p), b)
    run(h, ("DELETE FROM %sgeo WHERE id IN (SELECT id FROM %sgpt WHERE doc = ?1)"):format(p, p), b)
    run(h, ("DELETE FROM %sgpt WHERE doc = ?1"):format(p), b)
    if def.fts_cols then run(h, ("DELETE FROM %sfts WHERE rowid = ?1"):format(p), b) end
    if def.vec then run(h, ("DELETE FROM %svec WHERE doc = ?1"):format(p), b) end
    run(h, ("DELETE FROM %sdoc WHERE id = ?1"):format(p), b)
  end
end

local COLTYPES = { LONG = true, DOUBLE = true, DATE = true, BOOLEAN = true, KEYWORD = true }

--- docs.col_ddl(def) -> ", a<f>, ..." the value columns of p.."doc"
function docs.col_ddl(def)
  local s = {}
  for i, d in ipairs(def.colfields) do s[i] = ", " .. d.col end
  return table.concat(s)
end

--- docs.prepare(def): adds what indexing needs to a checked definition
function docs.prepare(def)
  def.store_of = { LONG = "num", DOUBLE = "num", BOOLEAN = "num", DATE = "num", KEYWORD = "kw", TEXT = "fts",
    GEO_POINT = "geo", VECTOR = "vec" }
  -- an index made before the vec table existed has def.vec false (set by
  -- the loader): its knn reads the rows' vectors instead
  if def.vec == nil then def.vec = true end
  -- num and kw hold each value's row key (pk), except in an index made
  -- before they did (the loader sets def.keyed false): its searches read
  -- the matches from p.."doc" and sort them
  if def.keyed == nil then def.keyed = true end
  local cols = {}
  for _, d in ipairs(def.fields) do
    if d.type == "TEXT" then cols[#cols + 1] = "c" .. d.id end
  end
  def.fts_cols = #cols > 0 and cols or nil
  -- the value columns of p.."doc" (none in an index made before them: the
  -- loader sets def.cols false)
  if def.cols == nil then def.cols = true end
  def.colfields = {}
  for _, d in ipairs(def.top) do
    if def.cols and COLTYPES[d.type] and not d.array and d.index ~= false then
      d.col = "a" .. d.id
      def.colfields[#def.colfields + 1] = d
    end
  end
  return def
end

docs.INT_MAX = INT_MAX
return docs
