--- otskit.wire.indexes -- secondary indexes and defined columns on the
-- wire: CreateIndex, DropIndex, AddDefinedColumn, DeleteDefinedColumn
-- (the Java SDK's), and what CreateTable (defined_columns, index_metas,
-- enable_local_txn, options.allow_update, a disabled stream_spec),
-- DescribeTable (defined_columns, index_metas, options.allow_update, always
-- present) and UpdateTable (options.allow_update) carry beyond
-- otskit.wire.tables. Operations have the shape of otskit.wire.rows's;
-- EXTEND wraps the table operations (otskit.wire's entry points apply it).
local common = require "otskit.wire.common"

local invalid, check_keys, set, refuse = common.invalid, common.check_keys, common.set, common.refuse

local OPS, EXTEND = {}, {}

local DCT = { INTEGER = "DCT_INTEGER", DOUBLE = "DCT_DOUBLE", BOOLEAN = "DCT_BOOLEAN", STRING = "DCT_STRING",
  BINARY = "DCT_BLOB" }
local FROM_DCT = {}
for k, v in pairs(DCT) do FROM_DCT[v] = k end
local ITYPE = { GLOBAL = "IT_GLOBAL_INDEX", LOCAL = "IT_LOCAL_INDEX" }
local IMODE = { ASYNC = "IUM_ASYNC_INDEX", SYNC = "IUM_SYNC_INDEX" }
local FROM_ITYPE, FROM_IMODE = { IT_GLOBAL_INDEX = "GLOBAL", IT_LOCAL_INDEX = "LOCAL" },
  { IUM_ASYNC_INDEX = "ASYNC", IUM_SYNC_INDEX = "SYNC" }
local PHASE = { FULL = "ISP_FULL", INCR = "ISP_INCR" }

local function copy(t)
  local o = {}
  for k, v in pairs(t) do o[k] = v end
  return o
end

-- {{name, type}, ...} -> DefinedColumnSchema list
local function enc_defined(list, what)
  if list == nil then return nil end
  if type(list) ~= "table" then return invalid(what .. " must be a list of {name, type}") end
  local out = {}
  for i, c in ipairs(list) do
    if type(c) ~= "table" then return invalid(what .. "[" .. i .. "] must be {name, type}") end
    local ty = DCT[c[2] or c.type]
    if not ty then return invalid(what .. "[" .. i .. "] type must be INTEGER, DOUBLE, BOOLEAN, STRING or BINARY") end
    out[i] = { name = c[1] or c.name, type = ty }
  end
  return out
end

local function dec_defined(list)
  local out = {}
  for i, c in ipairs(list or {}) do
    local ty = FROM_DCT[c.type]
    if not ty then return invalid("defined column " .. tostring(c.name) .. ": unsupported type " .. tostring(c.type)) end
    out[i] = { c.name, ty }
  end
  return out
end

local META_KEYS = set("name", "primary_key", "defined_columns", "index_type", "index_update_mode", "index_sync_phase")

local function enc_meta(ix)
  if type(ix) ~= "table" then return invalid("an index meta must be a table") end
  local ok, msg, code = check_keys(ix, META_KEYS, "index meta")
  if not ok then return nil, msg, code end
  local ity = ix.index_type or "GLOBAL"
  if not ITYPE[ity] then return invalid("index_type must be GLOBAL or LOCAL") end
  local mode = ix.index_update_mode or (ity == "GLOBAL" and "ASYNC" or "SYNC")
  if not IMODE[mode] then return invalid("index_update_mode must be ASYNC or SYNC") end
  if ix.index_sync_phase ~= nil and not PHASE[ix.index_sync_phase] then return invalid("index_sync_phase must be FULL or INCR") end
  return { name = ix.name, primary_key = ix.primary_key or {}, defined_column = ix.defined_columns or {},
    index_type = ITYPE[ity], index_update_mode = IMODE[mode], index_sync_phase = PHASE[ix.index_sync_phase] }
end

-- what describe answers carry: the sync phase too
local function dec_meta(m, with_phase)
  local ix = { name = m.name, primary_key = m.primary_key or {}, defined_columns = m.defined_column or {},
    index_type = FROM_ITYPE[m.index_type], index_update_mode = FROM_IMODE[m.index_update_mode] }
  if not ix.index_type or not ix.index_update_mode then
    return invalid("index " .. tostring(m.name) .. ": unsupported index_type or index_update_mode")
  end
  if with_phase then ix.index_sync_phase = m.index_sync_phase == "ISP_INCR" and "INCR" or "FULL"
  elseif m.index_sync_phase ~= nil then return invalid("index meta: unsupported field 'index_sync_phase'") end
  return ix
end

local function enc_metas(list)
  if list == nil then return nil end
  if type(list) ~= "table" then return invalid("index_metas must be a list") end
  local out = {}
  for i, ix in ipairs(list) do
    local m, msg, code = enc_meta(ix)
    if not m then return nil, msg, code end
    out[i] = m
  end
  return out
end

local function dec_metas(list, with_phase)
  local out = {}
  for i, m in ipairs(list or {}) do
    local ix, msg, code = dec_meta(m, with_phase)
    if not ix then return nil, msg, code end
    out[i] = ix
  end
  return out
end

-- a stream the request asks to keep disabled is what otskit does
local function drop_disabled_stream(m, what)
  if m.stream_spec and m.stream_spec.enable_stream == false then m.stream_spec = nil end
  return refuse(m, what, "stream_spec")
end

-- options.allow_update out of an options table -> options without it, value
local function split_allow(o)
  if type(o) ~= "table" or o.allow_update == nil then return o, nil end
  local c = copy(o)
  c.allow_update = nil
  return c, o.allow_update
end

EXTEND.CreateTable = function(op)
  return {
    req = function(req)
      if type(req) ~= "table" then return op.req(req) end
      local plain = copy(req)
      plain.defined_columns, plain.index_metas, plain.enable_local_txn = nil, nil, nil
      local allow
      plain.options, allow = split_allow(req.options)
      if allow ~= nil and type(allow) ~= "boolean" then return invalid("options.allow_update must be a boolean") end
      local m, msg, code = op.req(plain)
      if not m then return nil, msg, code end
      local d, m1, c1 = enc_defined(req.defined_columns, "defined_columns")
      if m1 then return nil, m1, c1 end
      local ix, m2, c2 = enc_metas(req.index_metas)
      if m2 then return nil, m2, c2 end
      m.table_meta.defined_column, m.index_metas, m.enable_local_txn = d, ix, req.enable_local_txn
      if allow ~= nil then
        m.table_options = m.table_options or {}
        m.table_options.allow_update = allow
      end
      return m
    end,
    from_req = function(m)
      local ok, msg, code = drop_disabled_stream(m, "CreateTable")
      if not ok then return nil, msg, code end
      local d, m1, c1 = dec_defined(m.table_meta.defined_column)
      if not d then return nil, m1, c1 end
      local ix, m2, c2 = dec_metas(m.index_metas, false)
      if not ix then return nil, m2, c2 end
      local allow = m.table_options and m.table_options.allow_update
      local txn = m.enable_local_txn
      m.table_meta.defined_column, m.index_metas, m.enable_local_txn = nil, nil, nil
      if m.table_options then m.table_options.allow_update = nil end
      local req, m3, c3 = op.from_req(m)
      if not req then return nil, m3, c3 end
      if #d > 0 then req.defined_columns = d end
      if #ix > 0 then req.index_metas = ix end
      req.enable_local_txn = txn
      if allow ~= nil then
        req.options = req.options or {}
        req.options.allow_update = allow
      end
      return req
    end,
    res = op.res, from_res = op.from_res,
  }
end

EXTEND.DescribeTable = function(op)
  return {
    req = op.req, from_req = op.from_req,
    res = function(res)
      local plain = copy(res)
      local allow
      plain.options, allow = split_allow(res.options)
      local m, msg, code = op.res(plain)
      if not m then return nil, msg, code end
      m.table_options.allow_update = allow ~= false
      local meta = res.table_meta or {}
      local d, m1, c1 = enc_defined(meta.defined_columns or {}, "defined_columns")
      if not d then return nil, m1, c1 end
      local ix, m2, c2 = enc_metas(res.index_metas or {})
      if not ix then return nil, m2, c2 end
      m.table_meta.defined_column, m.index_metas = d, ix
      return m
    end,
    from_res = function(m, req)
      local res, msg, code = op.from_res(m, req)
      if not res then return nil, msg, code end
      local d, m1, c1 = dec_defined(m.table_meta.defined_column)
      if not d then return nil, m1, c1 end
      local ix, m2, c2 = dec_metas(m.index_metas, true)
      if not ix then return nil, m2, c2 end
      res.table_meta.defined_columns, res.index_metas = d, ix
      if res.options and m.table_options then res.options.allow_update = m.table_options.allow_update end
      return res
    end,
  }
end

EXTEND.UpdateTable = function(op)
  return {
    req = function(req)
      if type(req) ~= "table" then return op.req(req) end
      local plain = copy(req)
      local allow
      plain.options, allow = split_allow(req.options)
      if allow ~= nil and type(allow) ~= "boolean" then return invalid("options.allow_update must be a boolean") end
      local m, msg, code = op.req(plain)
      if not m then return nil, msg, code end
      if allow ~= nil then
        m.table_options = m.table_options or {}
        m.table_options.allow_update = allow
      end
      return m
    end,
    from_req = function(m)
      local ok, msg, code = drop_disabled_stream(m, "UpdateTable")
      if not ok then return nil, msg, code end
      local allow = m.table_options and m.table_options.allow_update
      if m.table_options then m.table_options.allow_update = nil end
      local req, m1, c1 = op.from_req(m)
      if not req then return nil, m1, c1 end
      if allow ~= nil then
        req.options = req.options or {}
        req.options.allow_update = allow
      end
      return req
    end,
    res = function(res)
      local plain = copy(res)
      local allow
      plain.options, allow = split_allow(res.options)
      local m, msg, code = op.res(plain)
      if not m then return nil, msg, code end
      m.table_options.allow_update = allow ~= false
      return m
    end,
    from_res = function(m, req)
      local res, msg, code = op.from_res(m, req)
      if not res then return nil, msg, code end
      if res.options and m.table_options then res.options.allow_update = m.table_options.allow_update end
      return res
    end,
  }
end

local function empty() return {} end

OPS.CreateIndex = {
  req = function(req)
    local ok, msg, code = check_keys(req, set("table", "main_table_name", "index_meta", "include_base_data"), "CreateIndexRequest")
    if not ok then return nil, msg, code end
    local m, m1, c1 = enc_meta(req.index_meta)
    if not m then return nil, m1, c1 end
    return { main_table_name = req.table or req.main_table_name, index_meta = m,
      include_base_data = req.include_base_data == true }
  end,
  from_req = function(m)
    local ix, msg, code = dec_meta(m.index_meta, false)
    if not ix then return nil, msg, code end
    return { table = m.main_table_name, index_meta = ix, include_base_data = m.include_base_data }
  end,
  res = empty, from_res = empty,
}

OPS.DropIndex = {
  req = function(req)
    local ok, msg, code = check_keys(req, set("table", "main_table_name", "index_name", "name"), "DropIndexRequest")
    if not ok then return nil, msg, code end
    return { main_table_name = req.table or req.main_table_name, index_name = req.index_name or req.name }
  end,
  from_req = function(m) return { table = m.main_table_name, index_name = m.index_name } end,
  res = empty, from_res = empty,
}

OPS.AddDefinedColumn = {
  req = function(req)
    local ok, msg, code = check_keys(req, set("table", "columns"), "AddDefinedColumnRequest")
    if not ok then return nil, msg, code end
    local d, m1, c1 = enc_defined(req.columns or {}, "columns")
    if not d then return nil, m1, c1 end
    return { table_name = req.table, columns = d }
  end,
  from_req = function(m)
    local d, msg, code = dec_defined(m.columns)
    if not d then return nil, msg, code end
    return { table = m.table_name, columns = d }
  end,
  res = empty, from_res = empty,
}

OPS.DeleteDefinedColumn = {
  req = function(req)
    local ok, msg, code = check_keys(req, set("table", "columns"), "DeleteDefinedColumnRequest")
    if not ok then return nil, msg, code end
    return { table_name = req.table, columns = req.columns }
  end,
  from_req = function(m) return { table = m.table_name, columns = m.columns or {} } end,
  res = empty, from_res = empty,
}

--- indexes.OPS: api name -> operation; EXTEND: api name -> function(op) -> op.
return { OPS = OPS, EXTEND = EXTEND }
