--- otskit.store.indexes -- defined (predefined) columns, the allow_update
-- option and secondary indexes (global and local), as the service has them.
--
-- An index is a table of its own (kv table "t_<index name>", in the table
-- namespace) whose primary key is the index's key columns followed by every
-- base key column not already listed. A base row lacking an index key
-- column (or holding it with another type than declared) has no index
-- row; an index row holds the attribute columns the base row has, each
-- with its base cell's timestamp. Every write to the base table keeps its
-- indexes right in the same SQLite transaction (maintain.lua). Index tables
-- are read with get_row / get_range / batch_get_row under the index name;
-- writes to them are refused.
local base = require "otskit.store.base"
local txn = require "otskit.store.txn"
local maintain = require "otskit.store.maintain"
local DB, L = base.DB, base.LIMITS
local invalid, valid_name, check_req = base.invalid, base.valid_name, base.check_req
local dberr = txn.dberr

local indexes = {}

--- The service's limits on defined columns and indexes.
indexes.LIMITS = { defined_columns = 32, indexes = 5, index_keys = 4, index_attrs = 32 }
local IL = indexes.LIMITS

local DEF_TYPES = base.set{ "INTEGER", "DOUBLE", "BOOLEAN", "STRING", "BINARY" }
local KEY_TYPES = base.set{ "INTEGER", "STRING", "BINARY" }
local INDEX_TYPES = { GLOBAL = "G", LOCAL = "L" }
local INDEX_FIELDS = base.set{ "name", "primary_key", "defined_columns", "index_type", "index_update_mode" }

local function copy_list(l)
  local o = {}
  for i, v in ipairs(l) do o[i] = v end
  return o
end

local function new_ext() return { defined = {}, indexes = {}, local_txn = true } end

-- defined columns {{name, type}, ...} -> list of {name =, type =} | nil, msg, code
local function parse_defined(spec, pknames, have, what)
  if type(spec) ~= "table" then return invalid(what .. " must be a list of {name, type}") end
  local out, seen = {}, {}
  for _, d in ipairs(have or {}) do seen[d.name] = true end
  for i, c in ipairs(spec) do
    if type(c) ~= "table" then return invalid(what .. "[" .. i .. "] must be {name, type}") end
    local n, ty = c[1] or c.name, c[2] or c.type
    if not valid_name(n) then return invalid("Invalid defined column name: '" .. tostring(n) .. "'.") end
    if pknames[n] then return invalid("Duplicated defined column name with primary key column: '" .. n .. "'.") end
    if seen[n] then return invalid("Duplicated defined column name: '" .. n .. "'.") end
    if not DEF_TYPES[ty] then
      return invalid("defined column '" .. n .. "' type must be INTEGER, DOUBLE, BOOLEAN, STRING or BINARY, got " .. tostring(ty))
    end
    seen[n] = true
    out[#out + 1] = { name = n, type = ty }
  end
  return out
end

local function defmap(defined)
  local m = {}
  for _, d in ipairs(defined) do m[d.name] = d.type end
  return m
end

--- indexes.parse_index(t, defined, spec) -> { name, type = "GLOBAL" |
-- "LOCAL", keys = {...}, attrs = {...} } | nil, msg, code: one index
-- meta checked against the table (t.pk, its defined columns).
function indexes.parse_index(t, defined, spec)
  if type(spec) ~= "table" then return invalid("an index meta must be a table") end
  local ok, m, c = base.known(spec, INDEX_FIELDS, "index meta")
  if not ok then return nil, m, c end
  local name = spec.name
  if not valid_name(name) then return invalid("Invalid index name: '" .. tostring(name) .. "'.") end
  local ity = spec.index_type or "GLOBAL"
  if not INDEX_TYPES[ity] then return invalid("index_type must be GLOBAL or LOCAL, got " .. tostring(ity)) end
  local mode = spec.index_update_mode or (ity == "GLOBAL" and "ASYNC" or "SYNC")
  if mode ~= "ASYNC" and mode ~= "SYNC" then return invalid("index_update_mode must be ASYNC or SYNC, got " .. tostring(mode)) end
  if ity == "GLOBAL" and mode ~= "ASYNC" then return invalid("A global index supports only index_update_mode ASYNC.") end
  if ity == "LOCAL" and mode ~= "SYNC" then return invalid("A local index supports only index_update_mode SYNC.") end
  local keys, attrs = spec.primary_key, spec.defined_columns or {}
  if type(keys) ~= "table" or #keys < 1 or #keys > IL.index_keys then
    return invalid("The number of primary key columns must be in range: [1, 4] in index.")
  end
  if type(attrs) ~= "table" or #attrs > IL.index_attrs then
    return invalid("The number of attribute columns must be in range: [0, 32] in index.")
  end
  local dm, seen = defmap(defined), {}
  for _, k in ipairs(keys) do
    if type(k) ~= "string" then return invalid("an index key column must be a column name") end
    if seen[k] then return invalid("Duplicated column name in index: '" .. k .. "'.") end
    seen[k] = true
    if not t.pknames[k] then
      local ty = dm[k]
      if not ty then return invalid("Column '" .. k .. "' of index " .. name .. " is neither a primary key nor a defined column.") end
      if not KEY_TYPES[ty] then return invalid("Column '" .. k .. "' of type " .. ty .. " cannot be an index key column.") end
    end
  end
  for _, a in ipairs(attrs) do
    if type(a) ~= "string" then return invalid("an index attribute column must be a column name") end
    if seen[a] then return invalid("Duplicated column name in index: '" .. a .. "'.") end
    seen[a] = true
    if t.pknames[a] then return invalid("Primary key column '" .. a .. "' cannot be an attribute column of an index.") end
    if not dm[a] then return invalid("Attribute column '" .. a .. "' of index " .. name .. " is not a defined column.") end
  end
  if ity == "LOCAL" and keys[1] ~= t.pk[1].name then
    return invalid("The first primary key column of a local index must be the partition key '" .. t.pk[1].name .. "'.")
  end
  return { name = name, type = ity, keys = copy_list(keys), attrs = copy_list(attrs) }
end

-- a new index's first key column is not the table's AUTO_INCREMENT column
-- (not in parse_index: a file holding such an index still opens)
local function check_first_key(t, ix)
  for _, c in ipairs(t.pk) do
    if c.auto and c.name == ix.keys[1] then
      return invalid("The first primary key column of index " .. ix.name .. " cannot be the AUTO_INCREMENT column '"
        .. c.name .. "'.")
    end
  end
  return true
end

-- a table with indexes: one version per cell, and time_to_live only
-- when rows are never updated (allow_update = false)
local function check_options(nidx, options)
  if nidx == 0 then return true end
  if options.max_versions ~= 1 then return invalid("max_versions must be 1 on a table with indexes.") end
  if options.time_to_live ~= -1 and options.allow_update ~= false then
    return invalid("time_to_live on a table with indexes needs allow_update = false.")
  end
  return true
end

--- indexes.check_options(t, options) -> true | nil, msg, code (update_table)
function indexes.check_options(t, options) return check_options(#t.ext.indexes, options) end

-- an index or table name not in use (the namespace is shared)
local function name_free(db, name, also)
  if db.tables[name] or (also and also[name]) then
    return nil, "Requested table already exists.", "OTSObjectAlreadyExist"
  end
  return true
end

--- indexes.parse_create(db, t0, req, options) -> ext | nil, msg, code: the
-- defined columns, index metas and enable_local_txn of a create_table.
function indexes.parse_create(db, t0, req, options)
  local ext = new_ext()
  if req.defined_columns ~= nil then
    local d, m, c = parse_defined(req.defined_columns, t0.pknames, nil, "defined_columns")
    if not d then return nil, m, c end
    if #d > IL.defined_columns then return invalid("The number of defined columns must be in range: [0, 32].") end
    ext.defined = d
  end
  if req.enable_local_txn ~= nil then
    if type(req.enable_local_txn) ~= "boolean" then return invalid("enable_local_txn must be a boolean") end
    ext.local_txn = req.enable_local_txn
  end
  local metas = req.index_metas
  if metas ~= nil then
    if type(metas) ~= "table" then return invalid("index_metas must be a list") end
    if #metas > IL.indexes then return invalid("Number of index per table exceeds the quota:" .. IL.indexes .. ".") end
    local names = { [t0.name] = true }
    for _, spec in ipairs(metas) do
      local ix, m, c = indexes.parse_index(t0, ext.defined, spec)
      if not ix then return nil, m, c end
      local okk, mk, ck = check_first_key(t0, ix)
      if not okk then return nil, mk, ck end
      local ok, m2, c2 = name_free(db, ix.name, names)
      if not ok then return nil, m2, c2 end
      names[ix.name] = true
      ext.indexes[#ext.indexes + 1] = ix
    end
  end
  local ok, m, c = check_options(#ext.indexes, options)
  if not ok then return nil, m, c end
  return ext
end

--- indexes.meta_lines(t, out): the metadata lines of the extension:
-- "def <col> <TYPE>", "flag allow_update 0", "flag local_txn 0",
-- "idx <name> <GLOBAL|LOCAL>", "ikey <name> <col>", "iattr <name> <col>".
function indexes.meta_lines(t, out)
  local ext = t.ext or new_ext()
  for _, d in ipairs(ext.defined) do out[#out + 1] = "def " .. d.name .. " " .. d.type end
  if t.options.allow_update == false then out[#out + 1] = "flag allow_update 0" end
  if ext.local_txn == false then out[#out + 1] = "flag local_txn 0" end
  for _, ix in ipairs(ext.indexes) do
    out[#out + 1] = "idx " .. ix.name .. " " .. ix.type
    for _, k in ipairs(ix.keys) do out[#out + 1] = "ikey " .. ix.name .. " " .. k end
    for _, a in ipairs(ix.attrs) do out[#out + 1] = "iattr " .. ix.name .. " " .. a end
  end
end

-- txn.parse_meta's hook for those lines -> true when consumed
function txn.meta_ext(m, a, b, c)
  local ext = m.ext
  if not ext then ext = new_ext(); m.ext = ext end
  if a == "def" and valid_name(b) and DEF_TYPES[c] then
    ext.defined[#ext.defined + 1] = { name = b, type = c }
  elseif a == "flag" and (c == "0" or c == "1") and (b == "allow_update" or b == "local_txn") then
    if b == "allow_update" then m.options.allow_update = c == "1" else ext.local_txn = c == "1" end
  elseif a == "idx" and valid_name(b) and INDEX_TYPES[c] then
    ext.indexes[#ext.indexes + 1] = { name = b, type = c, keys = {}, attrs = {} }
  elseif (a == "ikey" or a == "iattr") and valid_name(c) then
    local ix = ext.indexes[#ext.indexes]
    if not ix or ix.name ~= b then return false end
    local l = a == "ikey" and ix.keys or ix.attrs
    l[#l + 1] = c
  else
    return false
  end
  return true
end

-- txn.parse_meta's check of the whole -> true | nil, why
function txn.meta_check(m)
  local ext = m.ext
  if not ext then m.ext = new_ext(); return true end
  local t = { pk = m.pk, pknames = {} }
  for _, c in ipairs(m.pk) do t.pknames[c.name] = true end
  for _, ix in ipairs(ext.indexes) do
    local ok, why = indexes.parse_index(t, ext.defined, { name = ix.name, index_type = ix.type,
      primary_key = ix.keys, defined_columns = ix.attrs })
    if not ok then return nil, "index " .. ix.name .. ": " .. why end
  end
  return true
end

-- the table object of index ix of base table t
local function index_table(t, ix)
  local dm = t.defmap
  local pk, pknames, src = {}, {}, {}
  for i, k in ipairs(ix.keys) do
    local pos
    for j, c in ipairs(t.pk) do if c.name == k then pos = j end end
    pk[i] = { name = k, type = pos and t.pk[pos].type or dm[k] }
    src[i] = pos and { pk = pos } or { col = k, type = dm[k] }
    pknames[k] = true
  end
  for j, c in ipairs(t.pk) do
    if not pknames[c.name] then
      pk[#pk + 1] = { name = c.name, type = c.type }
      src[#src + 1] = { pk = j }
      pknames[c.name] = true
    end
  end
  local attrs = {}
  for i, a in ipairs(ix.attrs) do attrs[i] = { name = a, type = dm[a] } end
  local o = { name = ix.name, kv = "t_" .. ix.name, pk = pk, npk = #pk, pknames = pknames, bounds = {},
    popts = t.popts, reserved = { read = 0, write = 0 }, base = t, index = ix, src = src, attrs = attrs,
    global = ix.type == "GLOBAL" }
  indexes.settle_one(t, o)
  return o
end

--- indexes.settle_one(t, o): an index table's options follow its base table
function indexes.settle_one(t, o)
  o.options = { time_to_live = t.options.time_to_live, max_versions = 1,
    max_time_deviation = t.options.max_time_deviation, allow_update = true }
  o.ttl_ms, o.maxv, o.dev_ms = t.ttl_ms, 1, t.dev_ms
end

--- indexes.settle(t): after update_table
function indexes.settle(t)
  for _, o in ipairs(t.indexes or {}) do indexes.settle_one(t, o) end
end

--- indexes.attach(db, t, ext): derived fields of table t (DB:_attach) and
-- its index tables in db.tables.
function indexes.attach(db, t, ext)
  ext = ext or new_ext()
  t.ext, t.defmap = ext, defmap(ext.defined)
  t.local_txn = ext.local_txn ~= false
  t.indexes, t.indexed, t.want = {}, nil, nil
  for i, ix in ipairs(ext.indexes) do
    local o = index_table(t, ix)
    t.indexes[i] = o
    db.tables[ix.name] = o
    t.indexed, t.want = t.indexed or {}, t.want or {}
    for _, s in ipairs(o.src) do
      if s.col then t.indexed[s.col], t.want[s.col] = { type = s.type, key = true }, true end
    end
    for _, a in ipairs(o.attrs) do
      if not (t.indexed[a.name] and t.indexed[a.name].key) then t.indexed[a.name] = { type = a.type } end
      t.want[a.name] = true
    end
  end
  if not t.indexes[1] then t.indexes = nil end
end

--- indexes.describe(t, res): defined columns and index metas of describe_table
function indexes.describe(t, res)
  local ext = t.ext or new_ext()
  local defs = {}
  for i, d in ipairs(ext.defined) do defs[i] = { d.name, d.type } end
  res.table_meta.defined_columns = defs
  local metas = {}
  for i, ix in ipairs(ext.indexes) do
    metas[i] = { name = ix.name, primary_key = copy_list(ix.keys), defined_columns = copy_list(ix.attrs),
      index_type = ix.type, index_update_mode = ix.type == "GLOBAL" and "ASYNC" or "SYNC", index_sync_phase = "INCR" }
  end
  res.index_metas = metas
  if t.base then res.index_of = t.base.name end
end

--- indexes.drop_all(db, t) -> true | nil, msg, code: drops t's index tables
function indexes.drop_all(db, t)
  for _, o in ipairs(t.indexes or {}) do
    local ok, err, code = db.h:drop(o.kv)
    if not ok then return nil, err, code end
  end
  return true
end

-- rewrites t's metadata after a change of t.ext -> true | nil, msg, code
local function save(db, t)
  local meta = db:_meta_text(t)
  local ok, err, code = db.h:put("meta", t.name, meta)
  if not ok then return dberr(err, code) end
  ok, err, code = db:_bump()
  if not ok then return nil, err, code end
  t.meta = meta
  return true
end

local CI_FIELDS = base.set{ "table", "main_table_name", "index_meta", "include_base_data" }

--- db:create_index{ table, index_meta = { name, primary_key = {cols},
-- defined_columns = {cols}, index_type = "GLOBAL" | "LOCAL",
-- index_update_mode }, include_base_data = false } -> {} | nil, msg, code.
-- include_base_data: the rows already in the table are indexed (in the same
-- transaction); otherwise only rows written afterwards appear.
function DB:create_index(req)
  check_req(req, "create_index")
  local ok, m, c = base.known(req, CI_FIELDS, "create_index")
  if not ok then return nil, m, c end
  local t, msg, code = self:_table(req.table or req.main_table_name)
  if not t then return nil, msg, code end
  if t.base then return invalid("Cannot create an index on an index table: '" .. t.name .. "'.") end
  -- delayed index changes are applied before any index comes or goes
  local okp, mp, cp = maintain.flush(self, true)
  if not okp then return nil, mp, cp end
  if req.include_base_data ~= nil and type(req.include_base_data) ~= "boolean" then
    return invalid("include_base_data must be a boolean")
  end
  local ix, m2, c2 = indexes.parse_index(t, t.ext.defined, req.index_meta)
  if not ix then return nil, m2, c2 end
  ok, m2, c2 = check_first_key(t, ix)
  if not ok then return nil, m2, c2 end
  if #t.ext.indexes >= IL.indexes then return invalid("Number of index per table exceeds the quota:" .. IL.indexes .. ".") end
  ok, m, c = name_free(self, ix.name)
  if not ok then return nil, m, c end
  ok, m, c = check_options(1, t.options)
  if not ok then return nil, m, c end
  local h = self.h
  local ok2, err, ecode = h:drop("t_" .. ix.name)
  if ok2 then ok2, err, ecode = h:create("t_" .. ix.name) end
  if not ok2 then return dberr(err, ecode) end
  local ext = t.ext
  local meta, gen = t.meta, self.gen
  ext.indexes[#ext.indexes + 1] = ix
  local sok, sm, sc = save(self, t)
  if not sok then table.remove(ext.indexes); t.meta, self.gen = meta, gen; return nil, sm, sc end
  indexes.attach(self, t, ext)
  if req.include_base_data then
    local o = self.tables[ix.name]
    local bok, bm, bc = maintain.backfill(self, t, o)
    if not bok then
      -- the transaction takes back the file's part; this, the memory's:
      -- no trace of the index
      table.remove(ext.indexes)
      self.tables[ix.name] = nil
      indexes.attach(self, t, ext)
      t.meta, self.gen = meta, gen
      return nil, bm, bc
    end
  end
  return {}
end

local DI_FIELDS = base.set{ "table", "main_table_name", "index_name", "name" }

--- db:drop_index{ table, index_name } -> {} | nil, msg, code
function DB:drop_index(req)
  check_req(req, "drop_index")
  local ok, m, c = base.known(req, DI_FIELDS, "drop_index")
  if not ok then return nil, m, c end
  local t, msg, code = self:_table(req.table or req.main_table_name)
  if not t then return nil, msg, code end
  if t.base then return invalid("Cannot drop an index of an index table: '" .. t.name .. "'.") end
  local name = req.index_name or req.name
  local okp, mp, cp = maintain.flush(self, true)
  if not okp then return nil, mp, cp end
  local pos
  for i, ix in ipairs(t.ext.indexes) do if ix.name == name then pos = i end end
  if not pos then return nil, "Requested index does not exist.", "OTSObjectNotExist" end
  local ok2, err, ecode = self.h:drop("t_" .. name)
  if not ok2 then return dberr(err, ecode) end
  local ix = table.remove(t.ext.indexes, pos)
  local sok, sm, sc = save(self, t)
  if not sok then table.insert(t.ext.indexes, pos, ix); return nil, sm, sc end
  self.tables[name] = nil
  indexes.attach(self, t, t.ext)
  return {}
end

local DC_FIELDS = base.set{ "table", "columns" }

--- db:add_defined_column{ table, columns = {{name, type}, ...} } -> {} | nil, msg, code
function DB:add_defined_column(req)
  check_req(req, "add_defined_column")
  local ok, m, c = base.known(req, DC_FIELDS, "add_defined_column")
  if not ok then return nil, m, c end
  local t, msg, code = self:_table(req.table)
  if not t then return nil, msg, code end
  if t.base then return invalid("Cannot add defined columns to an index table: '" .. t.name .. "'.") end
  local d, m2, c2 = parse_defined(req.columns, t.pknames, t.ext.defined, "columns")
  if not d then return nil, m2, c2 end
  if #d == 0 then return invalid("add_defined_column needs at least one column") end
  if #t.ext.defined + #d > IL.defined_columns then return invalid("The number of defined columns must be in range: [0, 32].") end
  local n0 = #t.ext.defined
  for _, x in ipairs(d) do t.ext.defined[#t.ext.defined + 1] = x end
  local sok, sm, sc = save(self, t)
  if not sok then
    for i = #t.ext.defined, n0 + 1, -1 do t.ext.defined[i] = nil end
    return nil, sm, sc
  end
  indexes.attach(self, t, t.ext)
  return {}
end

--- db:delete_defined_column{ table, columns = {names} } -> {} | nil, msg, code.
-- A column an index uses cannot be removed (drop the index first).
function DB:delete_defined_column(req)
  check_req(req, "delete_defined_column")
  local ok, m, c = base.known(req, DC_FIELDS, "delete_defined_column")
  if not ok then return nil, m, c end
  local t, msg, code = self:_table(req.table)
  if not t then return nil, msg, code end
  if t.base then return invalid("Cannot delete defined columns of an index table: '" .. t.name .. "'.") end
  if type(req.columns) ~= "table" or #req.columns == 0 then return invalid("columns must list defined column names") end
  local drop = {}
  for _, n in ipairs(req.columns) do
    if not t.defmap[n] then return invalid("Defined column '" .. tostring(n) .. "' does not exist.") end
    if t.want and t.want[n] then return invalid("Defined column '" .. n .. "' is used by an index.") end
    drop[n] = true
  end
  local old = t.ext.defined
  local keep = {}
  for _, d in ipairs(old) do if not drop[d.name] then keep[#keep + 1] = d end end
  t.ext.defined = keep
  local sok, sm, sc = save(self, t)
  if not sok then t.ext.defined = old; return nil, sm, sc end
  indexes.attach(self, t, t.ext)
  return {}
end

return indexes
