--- otskit.analyze.columns -- the attribute columns a read request
-- conditions on or sorts by, read from the request itself: a read filter
-- (get_row, get_range, batch_get_row: a column condition or a logical
-- one over several), an SQL SELECT's WHERE and ORDER BY clauses, a search
-- request's query and sort fields. What otskit.analyze names when a
-- query kind misses an index (index_missing): the columns to index.
local columns = {}

-- the columns of a read filter ({ column, comparator, value } or
-- { logical, conditions = { ... } }), in order, into add
local function filter_cols(f, add, depth)
  if type(f) ~= "table" or depth > 32 then return end
  if type(f.column) == "string" then add(f.column) end
  if type(f.conditions) == "table" then
    for _, c in ipairs(f.conditions) do filter_cols(c, add, depth + 1) end
  end
end

-- every field_name in a search request's query or sort tree, in order
local function field_names(t, add, depth)
  if type(t) ~= "table" or depth > 32 then return end
  if type(t.field_name) == "string" then add(t.field_name) end
  local keys = {}
  for k in pairs(t) do if k ~= "field_name" then keys[#keys + 1] = k end end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(keys) do field_names(t[k], add, depth + 1) end
end

-- words of SQL that are not column names
local KEYWORDS = {}
for w in ([[and or not in is null like between true false asc desc by order group having limit offset
  case when then else end as distinct exists all any escape collate regexp rlike div mod xor interval
  select from where match against]]):gmatch("%S+") do KEYWORDS[w] = true end

-- the identifiers of SQL text s outside string literals: bare words that
-- are not keywords, numbers or function names, and `quoted` ones
local function sql_idents(s, add)
  local i, n = 1, #s
  while i <= n do
    local c = s:sub(i, i)
    if c == "'" or c == '"' then
      local j = i + 1
      while j <= n and s:sub(j, j) ~= c do
        if s:sub(j, j) == "\\" then j = j + 1 end
        j = j + 1
      end
      i = j + 1
    elseif c == "`" then
      local j = s:find("`", i + 1, true) or n + 1
      add(s:sub(i + 1, j - 1))
      i = j + 1
    elseif c:match("[%a_]") then
      local w = s:match("^[%w_]+", i)
      local after = s:match("^%s*(.?)", i + #w)
      if not KEYWORDS[w:lower()] and after ~= "(" and after ~= "." then add(w) end
      i = i + #w
    elseif c:match("%d") then
      i = i + #s:match("^[%w_.]+", i)
    else
      i = i + 1
    end
  end
end

-- the clauses of a SELECT that condition or sort: WHERE ... and ORDER BY ...
local function sql_clauses(q)
  local low = q:lower():gsub("'[^']*'", function(x) return ("x"):rep(#x) end)
  local out = {}
  local w = low:find("%f[%w_]where%f[^%w_]")
  if w then
    local stop = #q + 1
    for _, kw in ipairs { "%f[%w_]group%s+by%f[^%w_]", "%f[%w_]order%s+by%f[^%w_]", "%f[%w_]having%f[^%w_]",
                          "%f[%w_]limit%f[^%w_]" } do
      local p = low:find(kw, w)
      if p and p < stop then stop = p end
    end
    out[#out + 1] = q:sub(w + 5, stop - 1)
  end
  local o, oe = low:find("%f[%w_]order%s+by%f[^%w_]")
  if o then
    local p = low:find("%f[%w_]limit%f[^%w_]", oe) or #q + 1
    out[#out + 1] = q:sub(oe + 1, p - 1)
  end
  return out
end

--- columns.of(method, req) -> list of column names (distinct, in the
-- order they appear; empty when the request conditions on none). method:
-- "get_row", "get_range", "batch_get_row" (req.filter, or each table's),
-- "search", "parallel_scan" (query and sort fields), "sql" (req: the text;
-- only a SELECT's WHERE and ORDER BY), "sql_query" (req.query).
function columns.of(method, req)
  local out, seen = {}, {}
  local function add(name)
    if type(name) == "string" and name ~= "" and not seen[name] then seen[name] = true; out[#out + 1] = name end
  end
  if method == "get_row" or method == "get_range" then
    if type(req) == "table" then filter_cols(req.filter, add, 0) end
  elseif method == "batch_get_row" then
    if type(req) == "table" and type(req.tables) == "table" then
      for _, t in ipairs(req.tables) do if type(t) == "table" then filter_cols(t.filter, add, 0) end end
    end
  elseif method == "search" or method == "parallel_scan" then
    if type(req) == "table" then
      field_names(req.query, add, 0)
      field_names(req.sort, add, 0)
    end
  elseif method == "sql" or method == "sql_query" then
    local q = method == "sql" and req or (type(req) == "table" and req.query)
    if type(q) == "string" and q:match("^%s*[Ss][Ee][Ll][Ee][Cc][Tt]%f[^%w_]") then
      for _, clause in ipairs(sql_clauses(q)) do sql_idents(clause, add) end
    end
  end
  return out
end

return columns
