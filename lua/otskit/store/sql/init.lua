--- otskit.store.sql -- SQL over the store's tables (the SQLQuery API):
-- db:sql(query [, opts]).
--
-- A mapping table (CREATE TABLE) names an existing data table's primary
-- key and the attribute columns to read, with SQL types; it is kept in the
-- store file (kv table "sqlmap"), so it survives reopening and every
-- connection (serve's workers) sees it. SELECT runs in SQLite over the
-- otskit_map virtual table (csrc/core/sqlvt.c): a primary-key prefix and
-- range become one range read of the data table, the store stays the
-- source of truth, and the rows it reads count against a quota.
local core = require "otskit.core"
local base = require "otskit.store.base"
local names = require "otskit.names"
local lex = require "otskit.store.sql.lex"
local txn = require "otskit.store.txn"

local sqlq, sqlexec, sqlrows = core.sqlq, core.sql.exec, core.sql.rows
local DB = base.DB
local dberr = txn.dberr

local sql = {}

-- a & b for the small bit sets here (no bitwise operators on LuaJIT)
local function band(a, b)
  local r, bitv = 0, 1
  while a > 0 and b > 0 do
    if a % 2 == 1 and b % 2 == 1 then r = r + bitv end
    a, b, bitv = (a - a % 2) / 2, (b - b % 2) / 2, bitv * 2
  end
  return r
end

--- The service's statement types (SQLStatementType) by name.
sql.STATEMENT = { SELECT = 1, CREATE_TABLE = 2, SHOW_TABLE = 3, DESCRIBE_TABLE = 4, DROP_TABLE = 5, ALTER_TABLE = 6 }

--- Rows a statement may read from the store, by default (the service's
-- "scanned rows of kv" quota); rows it may return; time it may run (ms).
sql.DEFAULT_QUOTA, sql.DEFAULT_MAX_ROWS, sql.DEFAULT_TIMEOUT_MS = 100000, 100000, 30000

local MAP = "sqlmap"
local function invalid(msg) return nil, msg, "OTSParameterInvalid" end

-- SQL type -> store type, for key columns and for attribute columns
local PK_TYPES = { BIGINT = "INTEGER", VARCHAR = "STRING", VARBINARY = "BINARY" }
local ATTR_TYPES = { BIGINT = "INTEGER", MEDIUMTEXT = "STRING", MEDIUMBLOB = "BINARY", DOUBLE = "DOUBLE",
  BOOL = "BOOLEAN", BOOLEAN = "BOOLEAN" }
-- store type -> the virtual table's kind (sqlvt.h)
local KIND = { INTEGER = "i", STRING = "s", BINARY = "b", DOUBLE = "d", BOOLEAN = "t" }
-- the virtual table's declared types -> the service's result types
local RESULT_TYPE = { BIGINT = "LONG", TEXT = "STRING", BLOB = "BINARY", DOUBLE = "DOUBLE", BOOL = "BOOLEAN" }
-- the storage classes a declared type returns (bits: 1 int, 2 real, 4 text, 8 blob)
local CLASSES = { BIGINT = 1, TEXT = 4, BLOB = 8, DOUBLE = 2, BOOL = 1 }

-- SQL keywords a mapping or column name may not be
local KEYWORDS = {}
for w in ([[select from where group by order limit offset having and or not null table create drop
  show describe desc insert update delete into values set as on join inner left right outer cross union
  all distinct case when then else end in is like between exists primary key mapping index with asc
  true false div mod xor]]):gmatch("%S+") do KEYWORDS[w] = true end

local function valid_sql_name(n) return names.valid(n) and not KEYWORDS[n:lower()] end

-- mapping definition text: "table NAME" then "col NAME SQLTYPE PKPOS DECL" lines
local function def_text(m)
  local out = { "table " .. m.table }
  for _, c in ipairs(m.cols) do out[#out + 1] = ("col %s %s %d %s"):format(c.name, c.type, c.pk, c.decl) end
  return table.concat(out, "\n")
end

local function def_parse(name, text)
  local m = { name = name, cols = {} }
  for line in text:gmatch("[^\n]+") do
    local t = line:match("^table (%S+)$")
    if t then
      m.table = t
    else
      local cn, ct, pk, decl = line:match("^col (%S+) (%S+) (%d+) (.*)$")
      if not cn then return nil end
      m.cols[#m.cols + 1] = { name = cn, type = ct, pk = tonumber(pk), decl = decl }
    end
  end
  if not m.table or #m.cols == 0 then return nil end
  return m
end

-- every mapping in the file -> list sorted by name | nil, msg, code
local function mappings(db)
  local h = db.h
  if not h:has(MAP) then return {} end
  local cur, err, code = h:scan(MAP, nil, nil, false)
  if not cur then return dberr(err, code) end
  local out = {}
  while true do
    local k, v, c2 = cur:next()
    if k == nil then
      if v ~= nil then return dberr(v, c2) end
      break
    end
    local m = def_parse(k, v)
    if not m then return txn.damaged("an SQL mapping row: " .. k) end
    out[#out + 1] = m
  end
  return out
end

local function hex(s) return (s:gsub(".", function(c) return ("%02x"):format(c:byte()) end)) end

-- the virtual table's arguments for mapping m over table t
local function vt_args(m, t)
  local ttl = t.ttl_ms or -1
  local args = { "k" .. hex(t.kv), ("t%d"):format(ttl) }
  for _, c in ipairs(m.cols) do
    local st = c.pk > 0 and PK_TYPES[c.type] or ATTR_TYPES[c.type]
    args[#args + 1] = ("%s %s %d"):format(c.name, KIND[st], c.pk)
  end
  return table.concat(args, ", ")
end

-- brings this connection's temp virtual tables up to the file's mappings.
-- What exists is read from SQLite each time (a rolled-back transaction
-- takes back the temp tables it created: no Lua-side cache to go stale).
local function reconcile(db, maps)
  local h = db.h
  if not db._sqlst or db._sqlh ~= h then
    local st, m, c = sqlq.attach(h)
    if not st then return nil, m, c end
    db._sqlst, db._sqlh = st, h
  end
  local want = {}
  for _, m in ipairs(maps) do
    local t = db.tables[m.table]
    if t then
      want[m.name] = ('CREATE VIRTUAL TABLE "%s" USING otskit_map(%s)'):format(m.name, vt_args(m, t))
    end
  end
  local rows, e0, c0 = sqlrows(h, "SELECT name, sql FROM sqlite_temp_master WHERE type = 'table'")
  if not rows then return dberr(e0, c0) end
  local have = {}
  for _, r in ipairs(rows) do
    if want[r[1]] ~= r[2] then
      local ok, e, c = sqlexec(h, ('DROP TABLE temp."%s"'):format(r[1]))
      if not ok then return dberr(e, c) end
    else
      have[r[1]] = true
    end
  end
  for name, text in pairs(want) do
    if not have[name] then
      local ok, e, c = sqlexec(h, (text:gsub("^CREATE VIRTUAL TABLE ", "CREATE VIRTUAL TABLE temp.")))
      if not ok then return dberr(e, c) end
    end
  end
  return true
end

-- a result set: columns {{name, type}}, rows (lists; nil for NULL)
local function result(kind, columns, rows, extra)
  local r = { type = kind, columns = columns, rows = rows }
  for k, v in pairs(extra or {}) do r[k] = v end
  r.consumed = r.consumed or base.consumed(0, 0)
  return r
end

local function int_text(v)
  if math.type and math.type(v) == "integer" then return ("%d"):format(v) end
  if type(v) == "number" then return ("%.0f"):format(v) end
  return tostring(v)
end

-- the shortest text that reads back as the double v, as MySQL and the
-- service print a double: 0.1, 1e-7, 1e20, 3
local function double_text(v)
  local s
  for p = 15, 17 do
    s = ("%." .. p .. "g"):format(v)
    if tonumber(s) == v then break end
  end
  return (s:gsub("e([+-])0*(%d)", function(sign, d) return "e" .. (sign == "-" and "-" or "") .. d end))
end

-- the service's type of result column i, and its values made that type
local function settle_column(res, i)
  local decl, cls = res.decltypes[i], res.classes[i]
  local want = CLASSES[decl]
  if want and band(cls, 15 - want) == 0 then return RESULT_TYPE[decl], decl == "BOOL" end
  local ty, conv
  if cls == 0 then ty = "STRING"
  elseif band(cls, 8) ~= 0 then ty = "BINARY"
  elseif band(cls, 4) ~= 0 then ty = "STRING"
  elseif band(cls, 2) ~= 0 then ty = "DOUBLE"
  else ty = "LONG" end
  if ty == "DOUBLE" then conv = function(v) return type(v) == "number" and v + 0.0 or tonumber(v) end
  elseif ty == "STRING" or ty == "BINARY" then
    conv = function(v)
      if type(v) == "string" then return v end
      if math.type and math.type(v) == "integer" then return int_text(v) end
      if v == math.floor(v) and v > -2 ^ 53 and v < 2 ^ 53 and not (math.type and math.type(v) == "float") then
        return int_text(v)
      end
      return double_text(v)
    end
  end
  return ty, false, conv
end

local function run_select(db, query, o)
  local maps, m, c = mappings(db)
  if not maps then return nil, m, c end
  local ok, m2, c2 = reconcile(db, maps)
  if not ok then return nil, m2, c2 end
  local text, original = lex.mysql(query)
  local res, msg, code = sqlq.select(db.h, db._sqlst, text, {
    quota = o.max_scan_rows or sql.DEFAULT_QUOTA, now_ms = base.now_ms(db),
    timeout_ms = o.timeout_ms or sql.DEFAULT_TIMEOUT_MS, max_rows = o.max_rows or sql.DEFAULT_MAX_ROWS })
  if not res then return nil, msg, code end
  local columns, rows = {}, res.rows
  for i, name in ipairs(res.names) do
    local ty, bool, conv = settle_column(res, i)
    columns[i] = { name = original(name), type = ty }
    if bool or conv then
      for r = 1, res.n do
        local row = rows[r]
        local v = row[i]
        if v ~= nil then
          if bool then row[i] = v ~= 0 else row[i] = conv(v) end
        end
      end
    end
  end
  return result("SELECT", columns, rows, {
    scanned = res.scanned, range_reads = res.range_reads, full_scans = res.full_scans,
    consumed = base.consumed(res.scanned, 0) })
end

local function get_map(db, name)
  local h = db.h
  if not h:has(MAP) then return nil end
  local v, err, code = h:get(MAP, name)
  if v == nil and err then return false, err, code end
  return v and def_parse(name, v)
end

local function norm_type(decl)
  return (decl:upper():gsub("%s*%b()", ""):gsub("%s+UNSIGNED$", ""):gsub("^%s+", ""):gsub("%s+$", ""))
end

local function create_mapping(db, query)
  local name, cols = sqlq.parse_create(query)
  if not name then return nil, cols, "OTSParameterInvalid" end
  if not valid_sql_name(name) then return invalid("Invalid mapping table name: '" .. name .. "'") end
  local existing, e1, c1 = get_map(db, name)
  if existing == false then return dberr(e1, c1) end
  if existing then return invalid("Table '" .. name .. "' already exists") end
  local t = db.tables[name]
  if not t then return invalid("Table '" .. name .. "' does not exist in the instance: a mapping names an existing data table") end
  local m = { name = name, table = name, cols = {} }
  local npk = 0
  local defined = {}
  for _, d in ipairs(t.ext and t.ext.defined or {}) do defined[d.name] = d.type end
  for i, c in ipairs(cols) do
    local cn, decl, pk = c[1], c[2], c[3]
    if not valid_sql_name(cn) then return invalid("Invalid column name: '" .. cn .. "'") end
    local ty = norm_type(decl)
    if pk > 0 then
      npk = npk + 1
      local want = t.pk[pk]
      if not PK_TYPES[ty] then
        return invalid(("Primary key column '%s' has type %s: key columns may be BIGINT, VARCHAR or VARBINARY"):format(cn, decl))
      end
      if not want or want.name ~= cn then
        return invalid(("Primary key column %d of the mapping is '%s', the table's is '%s'"):format(pk, cn, want and want.name or "none"))
      end
      if PK_TYPES[ty] ~= want.type then
        return invalid(("Primary key column '%s' is %s in the table: %s does not map to it"):format(cn, want.type, decl))
      end
    else
      if t.pknames[cn] then return invalid("Column '" .. cn .. "' is a primary-key column of the table: list it in PRIMARY KEY") end
      local st = ATTR_TYPES[ty]
      if not st then
        return invalid(("Column '%s' has type %s: attribute columns may be BIGINT, MEDIUMTEXT, MEDIUMBLOB, DOUBLE or BOOL"):format(cn, decl))
      end
      if defined[cn] and defined[cn] ~= st then
        return invalid(("Column '%s' is a defined column of type %s: %s does not map to it"):format(cn, defined[cn], decl))
      end
    end
    m.cols[i] = { name = cn, type = ty, pk = pk, decl = decl:lower() }
  end
  if npk ~= t.npk then
    return invalid(("The mapping's primary key has %d columns, the table's %d"):format(npk, t.npk))
  end
  local h = db.h
  local ok, err, code = h:create(MAP)
  if ok then ok, err, code = h:put(MAP, name, def_text(m)) end
  if not ok then return dberr(err, code) end
  return result("CREATE_TABLE", {}, {})
end

local function name_after(query, nwords)
  local w, i = lex.words(query, nwords + 1)
  local n = w[nwords + 1]
  if not n or not lex.rest_empty(query, i) then return nil end
  return n.quoted and n[1] or n.raw
end

local function drop_mapping(db, query)
  local w = lex.words(query, 5)
  local nw = 3
  if w[4] and not w[4].quoted and w[4][1] == "if" and w[5] and w[5][1] == "exists" then nw = 5 end
  local name = name_after(query, nw)
  if not name then return invalid("expected DROP MAPPING TABLE [IF EXISTS] name") end
  local m, e, c = get_map(db, name)
  if m == false then return dberr(e, c) end
  -- dropping a mapping that is not there succeeds, as the service
  -- answers the SDKs' tests (they drop before they create)
  if not m then return result("DROP_TABLE", {}, {}) end
  local ok, err, code = db.h:delete(MAP, name)
  if not ok then return dberr(err, code) end
  return result("DROP_TABLE", {}, {})
end

local function show_tables(db, o)
  local maps, m, c = mappings(db)
  if not maps then return nil, m, c end
  local rows = {}
  for k, mp in ipairs(maps) do rows[k] = { mp.name } end
  return result("SHOW_TABLE", { { name = "Tables_in_" .. (o.instance or "otskit"), type = "STRING" } }, rows)
end

local function describe(db, query)
  local name = name_after(query, 1)
  if not name then return invalid("expected DESCRIBE name") end
  local m, e, c = get_map(db, name)
  if m == false then return dberr(e, c) end
  if not m then return invalid("Table '" .. name .. "' doesn't exist") end
  local rows = {}
  for k, col in ipairs(m.cols) do
    rows[k] = { col.name, col.decl, col.pk > 0 and "NO" or "YES", col.pk > 0 and "PRI" or "", nil, "" }
  end
  local cols = {}
  for k, n in ipairs({ "Field", "Type", "Null", "Key", "Default", "Extra" }) do cols[k] = { name = n, type = "STRING" } end
  return result("DESCRIBE_TABLE", cols, rows)
end

local OPTS = { max_scan_rows = "number", max_rows = "number", timeout_ms = "number", instance = "string" }

--- db:sql(query [, opts]) -> result | nil, msg, code. One statement:
-- CREATE TABLE (a mapping of the existing table of that name), DROP
-- MAPPING TABLE [IF EXISTS] (no error when there is none), SHOW TABLES, DESCRIBE, or a SELECT over the
-- mappings. result = { type = "SELECT" | "CREATE_TABLE" | "DROP_TABLE" |
-- "SHOW_TABLE" | "DESCRIBE_TABLE", columns = { {name =, type = "LONG" |
-- "BOOLEAN" | "DOUBLE" | "STRING" | "BINARY"}, ... }, rows = { {v1, v2,
-- ...}, ... } (column order; nil for NULL), consumed, and for SELECT
-- scanned (rows read from the store), range_reads, full_scans }.
-- opts: max_scan_rows (sql.DEFAULT_QUOTA), max_rows, timeout_ms, instance
-- (the name SHOW TABLES puts in its column). Errors: OTSUnsupportOperation
-- (INSERT, UPDATE, any other statement; a denied function),
-- OTSParameterInvalid (syntax, unknown table or column, type mapping),
-- OTSQuotaExhausted (the scan or result quota), OTSRequestTimeout.
function DB:sql(query, opts)
  if self.h == nil then error("otskit.store: db is closed", 2) end
  if type(query) ~= "string" then return invalid("query must be a string") end
  opts = opts or {}
  if type(opts) ~= "table" then error("otskit.store: sql: opts must be a table", 2) end
  for k, v in pairs(opts) do
    if OPTS[k] == nil then return invalid("sql: unknown option " .. tostring(k)) end
    if type(v) ~= OPTS[k] then return invalid("sql: option " .. k .. " must be a " .. OPTS[k]) end
  end
  if #query == 0 then return invalid("an empty SQL statement") end
  if #query > 1048576 then return invalid("the SQL statement is longer than 1 MiB") end
  local kind, word, known = lex.kind(query)
  if not kind and not known then
    return invalid(("You have an error in your SQL syntax near '%s'"):format(tostring(word)))
  end
  if not kind then
    return nil, ("Operation not supported: '%s' (SQL runs SELECT, CREATE TABLE, DROP MAPPING TABLE, SHOW TABLES and DESCRIBE)")
      :format(tostring(word)), "OTSUnsupportOperation"
  end
  local write = kind == "CREATE_TABLE" or kind == "DROP_TABLE"
  return self:_txn(write, function(db)
    if kind == "SELECT" then return run_select(db, query, opts) end
    if kind == "CREATE_TABLE" then return create_mapping(db, query) end
    if kind == "DROP_TABLE" then return drop_mapping(db, query) end
    if kind == "SHOW_TABLE" then return show_tables(db, opts) end
    return describe(db, query)
  end)
end

--- db:sql_query{ query } -> db:sql(query): the SQLQuery API's request
-- form (what otskit serve decodes from the wire).
function DB:sql_query(req)
  if type(req) ~= "table" then error("otskit.store: sql_query takes a request table", 2) end
  for k in pairs(req) do
    if k ~= "query" then return invalid("sql_query: unknown field " .. tostring(k)) end
  end
  return self:sql(req.query)
end

return sql
