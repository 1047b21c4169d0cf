--- otskit.store.sql.lex -- what kind of statement a query is, and the
-- service's (MySQL) operators written the way SQLite reads them. Only the
-- statement's first words are looked at here; SQLite parses the rest.
local lex = {}

-- skips blanks and comments from i -> the next position
local function skip(s, i)
  while true do
    local j = s:find("[^ \t\r\n\f\v]", i)
    if not j then return #s + 1 end
    i = j
    if s:sub(i, i + 1) == "--" or s:sub(i, i) == "#" then
      local e = s:find("\n", i, true)
      if not e then return #s + 1 end
      i = e + 1
    elseif s:sub(i, i + 1) == "/*" then
      local e = s:find("*/", i + 2, true)
      if not e then return #s + 1 end
      i = e + 2
    else
      return i
    end
  end
end

--- lex.words(s, n) -> up to n leading words (lowercase; a `quoted` or
-- "quoted" name keeps its case and loses its quotes), the position after
-- the last one. A word is [A-Za-z0-9_]+; anything else ends the list.
function lex.words(s, n)
  local out, i = {}, 1
  while #out < n do
    i = skip(s, i)
    local q = s:sub(i, i)
    if q == "`" or q == '"' then
      local e = s:find(q, i + 1, true)
      if not e then break end
      out[#out + 1] = { s:sub(i + 1, e - 1), quoted = true }
      i = e + 1
    else
      local w = s:match("^[A-Za-z0-9_]+", i)
      if not w then break end
      out[#out + 1] = { w:lower(), raw = w }
      i = i + #w
    end
  end
  return out, i
end

--- lex.rest_empty(s, i) -> true when only blanks, comments and semicolons
-- follow position i
function lex.rest_empty(s, i)
  while true do
    i = skip(s, i)
    if i > #s then return true end
    if s:sub(i, i) ~= ";" then return false end
    i = i + 1
  end
end

-- first words of statements SQL knows but the service does not run
local STATEMENTS = {}
for w in ([[insert update delete replace alter drop create show truncate grant revoke set use explain
  pragma attach detach begin commit rollback analyze vacuum reindex call load lock unlock rename
  savepoint release start end handler do prepare execute deallocate flush kill reset optimize
  repair check checksum install uninstall]]):gmatch("%S+") do STATEMENTS[w] = true end
lex.STATEMENTS = STATEMENTS

--- lex.kind(s) -> "SELECT" | "CREATE_TABLE" | "DROP_TABLE" | "SHOW_TABLE"
-- | "DESCRIBE_TABLE" | nil, the first word, known (an unsupported
-- statement: true) or not (a syntax error: false)
function lex.kind(s)
  local w = lex.words(s, 3)
  local a, b, c = w[1] and w[1][1], w[2] and w[2][1], w[3] and w[3][1]
  if a == nil then
    local i = skip(s, 1)
    if s:sub(i, i) == "(" then return "SELECT" end
    return nil, s:sub(i, i + 15), false
  end
  if w[1].quoted then return nil, a, false end
  if a == "select" or a == "with" or a == "values" then return "SELECT" end
  if a == "create" and b == "table" then return "CREATE_TABLE" end
  if a == "drop" and b == "mapping" and c == "table" then return "DROP_TABLE" end
  if a == "show" and b == "tables" then return "SHOW_TABLE" end
  if a == "describe" or a == "desc" then return "DESCRIBE_TABLE" end
  return nil, a, STATEMENTS[a] == true
end

-- the MySQL operators SQLite spells otherwise: && AND, || OR, ! NOT,
-- DIV (integer division), MOD (%), and / on integers divides exactly
-- (a DOUBLE, as MySQL's), which SQLite does when one side is REAL.
local REWRITE_WORD = { div = " / ", mod = " % " }

--- lex.mysql(s) -> s with the service's operators in SQLite's syntax
-- (string literals, quoted names and comments untouched)
function lex.mysql(s)
  local out, i, n = {}, 1, #s
  while i <= n do
    local c = s:sub(i, i)
    local two = s:sub(i, i + 1)
    if c == "'" or c == '"' or c == "`" then
      local j = i + 1
      while j <= n do
        if s:sub(j, j) == c then
          if s:sub(j + 1, j + 1) == c then j = j + 2 else break end
        else
          j = j + 1
        end
      end
      out[#out + 1] = s:sub(i, j)
      i = j + 1
    elseif two == "--" or c == "#" then
      local e = s:find("\n", i, true) or n
      out[#out + 1] = " "
      i = e + 1
    elseif two == "/*" then
      local e = s:find("*/", i + 2, true)
      out[#out + 1] = " "
      i = e and e + 2 or n + 1
    elseif two == "&&" then out[#out + 1] = " AND "; i = i + 2
    elseif two == "||" then out[#out + 1] = " OR "; i = i + 2
    elseif two == "!=" then out[#out + 1] = "!="; i = i + 2
    elseif c == "!" then out[#out + 1] = " NOT "; i = i + 1
    elseif c == "/" then out[#out + 1] = "*1.0/"; i = i + 1
    elseif c:find("[A-Za-z_]") then
      local w = s:match("^[A-Za-z0-9_]+", i)
      local r = REWRITE_WORD[w:lower()]
      if r == " / " then out[#out + 1] = " / "
      elseif r and not s:find("^%s*%(", i + #w) then out[#out + 1] = r
      else out[#out + 1] = w end
      i = i + #w
    else
      out[#out + 1] = c
      i = i + 1
    end
  end
  return table.concat(out)
end

return lex
