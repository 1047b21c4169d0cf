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

-- words after which an expression starts (so MOD( there is the function)
local STARTS = {}
for w in ([[select where and or not on when then else by having in is like glob regexp between case distinct
  all limit offset xor div mod exists from union except intersect escape]]):gmatch("%S+") do STARTS[w] = true end

--- lex.mysql(s) -> s with the service's operators in SQLite's syntax
-- (string literals, quoted names and comments untouched), and
-- original(name) -> the text of s that a span of the rewritten text came
-- from (SQLite names an unaliased result column by its expression's text:
-- `a/2` must stay "a/2", not "a*1.0/2"); a name that is no such span
-- comes back unchanged.
function lex.mysql(s)
  local out, i, n = {}, 1, #s
  local from, to = {}, {} -- out[k] was s:sub(from[k], to[k])
  -- after_operand: the last token ended an operand (a name, a number, a
  -- literal, a closing parenthesis): MOD next is the operator, even
  -- before a parenthesis ("a MOD (b)"); otherwise MOD( is the function
  local after_operand = false
  local function emit(text, j)
    out[#out + 1] = text
    from[#out], to[#out] = i, j - 1
    local src = s:sub(i, j - 1)
    if src:find("%S") and text ~= " " then -- (a comment leaves it as it was)
      local w = src:match("^[A-Za-z_][A-Za-z0-9_]*$")
      after_operand = (w and not STARTS[w:lower()]) or src:find("^[%d.]") ~= nil or src:find("[%)'\"`]$") ~= nil
    end
    i = j
  end
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
      emit(s:sub(i, j), j + 1)
    elseif two == "--" or c == "#" then
      local e = s:find("\n", i, true) or n
      emit(" ", e + 1)
    elseif two == "/*" then
      local e = s:find("*/", i + 2, true)
      emit(" ", e and e + 2 or n + 1)
    elseif two == "&&" then emit(" AND ", i + 2)
    elseif two == "||" then emit(" OR ", i + 2)
    elseif two == "!=" then emit("!=", i + 2)
    elseif c == "!" then emit(" NOT ", i + 1)
    elseif c == "/" then emit("*1.0/", i + 1)
    elseif c:find("[A-Za-z_]") then
      local w = s:match("^[A-Za-z0-9_]+", i)
      local r = REWRITE_WORD[w:lower()]
      if r == " / " then emit(" / ", i + #w)
      elseif r and (after_operand or not s:find("^%s*%(", i + #w)) then emit(r, i + #w)
      else emit(w, i + #w) end
    else
      emit(c, i + 1)
    end
  end
  local text = table.concat(out)
  local starts, ends, pos = {}, {}, 1 -- out[k] is text:sub(starts[k], ends[k])
  for k, piece in ipairs(out) do starts[k], ends[k], pos = pos, pos + #piece - 1, pos + #piece end
  local function original(name)
    if type(name) ~= "string" or name == "" or text == s or s:find(name, 1, true) then return name end
    local a = text:find(name, 1, true)
    if not a then return name end
    local b = a + #name - 1
    local ka, kb
    -- the pieces holding the span's ends (a rewritten operator's padding
    -- may lie outside the span)
    for k = 1, #out do
      if not ka and starts[k] <= a and a <= ends[k] and not out[k]:sub(1, a - starts[k]):find("%S") then ka = k end
      if ka and starts[k] <= b and b <= ends[k] then
        if not out[k]:sub(b - starts[k] + 2):find("%S") then kb = k end
        break
      end
    end
    if not ka or not kb or ka > kb then return name end
    return (s:sub(from[ka], to[kb]):gsub("^%s+", ""):gsub("%s+$", ""))
  end
  return text, original
end

return lex
