--- otskit.client.keys -- primary keys given by position ({v1, v2}, as the
-- store accepts them) named for the wire ({{name, v1}, {name, v2}}): the
-- wire format carries column names, so the client learns each table's key
-- columns once (DescribeTable) and keeps them. The caller's request is
-- never modified: a copy is made when something is renamed.
local pager = require "otskit.client.pager"

local keys = {}

local INF_MIN, INF_MAX, AUTO = pager.sentinels()
local SENTINEL = { [INF_MIN] = true, [INF_MAX] = true }
if AUTO then SENTINEL[AUTO] = true end

-- whether pk is given by position: a list whose entries are not {name, value}
local function positional(pk)
  if type(pk) ~= "table" or pk[1] == nil then return false end
  for _, e in ipairs(pk) do
    if type(e) ~= "table" or SENTINEL[e] or type(e[1]) ~= "string" then return true end
  end
  return false
end

local function name_pk(pk, names)
  local out = {}
  for i, v in ipairs(pk) do
    if type(v) == "table" and not SENTINEL[v] and type(v[1]) == "string" then
      out[i] = v
    elseif names[i] then
      out[i] = { names[i], v }
    else
      return pk  -- more values than key columns: the codec/service says so
    end
  end
  return out
end

local function shallow(t)
  local o = {}
  for k, v in pairs(t) do o[k] = v end
  return o
end

-- The key column names of table t: cached, else DescribeTable.
local function names_of(client, t)
  local c = client._keynames
  if c[t] then return c[t] end
  local d, msg, code, rid, status = client:describe_table{ name = t }
  if not d then return nil, msg, code, rid, status end
  local names = {}
  for i, col in ipairs(d.table_meta and d.table_meta.primary_key or {}) do
    names[i] = type(col) == "table" and (col[1] or col.name) or col
  end
  c[t] = names
  return names
end

--- keys.forget(client, t): drops what is known of table t (after the
-- client created or deleted it).
function keys.forget(client, t)
  if t ~= nil then client._keynames[t] = nil end
end

--- keys.name(client, api, req) -> req (maybe a renamed copy) | nil, msg, code, ...
function keys.name(client, api, req)
  if api == "PutRow" or api == "GetRow" or api == "UpdateRow" or api == "DeleteRow" then
    if not positional(req.primary_key) or type(req.table) ~= "string" then return req end
    local names, m, c, r, s = names_of(client, req.table)
    if not names then return nil, m, c, r, s end
    local o = shallow(req)
    o.primary_key = name_pk(req.primary_key, names)
    return o
  elseif api == "GetRange" then
    if not (positional(req.start) or positional(req.stop)) or type(req.table) ~= "string" then return req end
    local names, m, c, r, s = names_of(client, req.table)
    if not names then return nil, m, c, r, s end
    local o = shallow(req)
    if positional(req.start) then o.start = name_pk(req.start, names) end
    if positional(req.stop) then o.stop = name_pk(req.stop, names) end
    return o
  elseif api == "StartLocalTransaction" then
    if not positional(req.key) or type(req.table) ~= "string" then return req end
    local names, m, c, r, s = names_of(client, req.table)
    if not names then return nil, m, c, r, s end
    local o = shallow(req)
    o.key = name_pk(req.key, names)
    return o
  elseif api == "BatchGetRow" or api == "BatchWriteRow" then
    if type(req.tables) ~= "table" then return req end
    local o
    for i, spec in ipairs(req.tables) do
      if type(spec) == "table" and type(spec.table) == "string" then
        local list = api == "BatchGetRow" and spec.primary_keys or spec.rows
        if type(list) == "table" then
          local newlist
          for j, e in ipairs(list) do
            local pk = api == "BatchGetRow" and e or (type(e) == "table" and e.primary_key)
            if positional(pk) then
              local names, m, c, r, s = names_of(client, spec.table)
              if not names then return nil, m, c, r, s end
              newlist = newlist or shallow(list)
              if api == "BatchGetRow" then
                newlist[j] = name_pk(pk, names)
              else
                local row = shallow(e)
                row.primary_key = name_pk(pk, names)
                newlist[j] = row
              end
            end
          end
          if newlist then
            o = o or shallow(req)
            if o.tables == req.tables then o.tables = shallow(req.tables) end
            local s2 = shallow(spec)
            if api == "BatchGetRow" then s2.primary_keys = newlist else s2.rows = newlist end
            o.tables[i] = s2
          end
        end
      end
    end
    return o or req
  end
  return req
end

return keys
