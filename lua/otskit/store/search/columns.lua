--- otskit.store.search.columns -- a search's or parallel scan's
-- columns_to_get { return_type = RETURN_NONE (the default: primary key
-- only) | RETURN_ALL | RETURN_SPECIFIED (with column_names) |
-- RETURN_ALL_FROM_INDEX } checked into what a returned row carries.
local base = require "otskit.store.base"

local invalid = base.invalid

local columns = {}

local RETURN = { RETURN_ALL = true, RETURN_SPECIFIED = true, RETURN_NONE = true, RETURN_ALL_FROM_INDEX = true }
local COLUMNS_KEYS = base.set{ "return_type", "column_names" }

local NONE = { mode = "RETURN_NONE" } -- (read only)

--- columns.check(ix, ctg) -> { mode, set } | nil, msg, code; index_only:
-- whether every column asked for is stored in the index ix (its
-- definition: ix.def)
function columns.check(ix, ctg)
  if ctg == nil then return NONE, true end
  if type(ctg) ~= "table" then return invalid("columns_to_get must be a table { return_type, column_names }") end
  local ok, km, kc = base.known(ctg, COLUMNS_KEYS, "columns_to_get")
  if not ok then return nil, km, kc end
  local mode = ctg.return_type or "RETURN_NONE"
  if not RETURN[mode] then
    return invalid("columns_to_get.return_type must be RETURN_ALL, RETURN_SPECIFIED, RETURN_NONE or RETURN_ALL_FROM_INDEX")
  end
  local out = { mode = mode }
  if mode ~= "RETURN_SPECIFIED" and ctg.column_names ~= nil
    and (type(ctg.column_names) ~= "table" or next(ctg.column_names) ~= nil) then
    return invalid("columns_to_get: column_names is for RETURN_SPECIFIED, not " .. mode)
  end
  if mode == "RETURN_SPECIFIED" then
    local names = ctg.column_names
    if type(names) ~= "table" or #names == 0 then return invalid("RETURN_SPECIFIED needs column_names") end
    local lok, lm, lc = base.list(names, "columns_to_get.column_names")
    if not lok then return nil, lm, lc end
    out.set = {}
    local all_stored = true
    for _, n in ipairs(names) do
      if type(n) ~= "string" then return invalid("column_names must be strings") end
      out.set[n] = true
      local d = ix.def.byname[n]
      if not (d and d.store and not d.parent) then all_stored = false end
    end
    return out, all_stored
  elseif mode == "RETURN_ALL_FROM_INDEX" then
    out.set = {}
    for _, d in ipairs(ix.def.top) do if d.store then out.set[d.name] = true end end
    return out, true
  end
  return out, mode == "RETURN_NONE"
end

return columns
