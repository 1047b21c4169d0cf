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

-- the MySQL operators SQLite spells otherwise: && AND, || OR, ! NOT, and
-- / on integers divides exactly (a DOUBLE, as MySQL's), which SQLite does
-- when one side is REAL. DIV, MOD and % become calls of div(a, b) and
-- mod(a, b) (csrc/core/sqlvt.c: MySQL's integer division and remainder;
-- SQLite's / and % truncate decimals first), their operands found by
-- MySQL's precedence: the operator binds as * does, unary - + ~ ! tighter.

-- words after which an expression starts (so MOD( there is the function)
local STARTS = {}
for w in ([[select where and or not on when then else by having in is like glob regexp between case distinct
  all limit offset xor div mod exists from union except intersect escape as]]):gmatch("%S+") do STARTS[w] = true end

-- the position after a number literal at i (0x1F, 12, 1.5, .5, 1e-3), or nil
local function number_end(s, i)
  local j = s:match("^0[xX]%x+()", i)
  if j then return j end
  j = s:match("^%d+%.?%d*()", i) or s:match("^%.%d+()", i)
  if not j then return nil end
  return s:match("^[eE][+-]?%d+()", j) or j
end

-- pieces: { text, from, to, kind }; kinds: ws, str (a literal or quoted
-- name), word, num, dot, open, close, mul (* or /), fop (DIV MOD %: fn
-- names the function), unary (the ! rewritten), op (anything else)
local OPERAND = { str = true, word = true, num = true, term = true }

local function sig_before(P, k)
  k = k - 1
  while k >= 1 and P[k].kind == "ws" do k = k - 1 end
  return k >= 1 and k or nil
end

local function sig_after(P, k)
  k = k + 1
  while P[k] and P[k].kind == "ws" do k = k + 1 end
  return P[k] and k or nil
end

local function word_is(p, w) return p and p.kind == "word" and p.text:lower() == w end
local function callee(p) return p and p.kind == "word" and not STARTS[p.text:lower()] and p.text:lower() ~= "over" end

-- a - + ~ ! at k is a sign (the piece before it ends no operand)
local function is_sign(P, k)
  local p = P[k]
  if p.kind == "unary" then return true end
  if p.kind ~= "op" or not (p.text == "-" or p.text == "+" or p.text == "~") then return false end
  local b = sig_before(P, k)
  if not b then return true end
  local q = P[b]
  return not (q.kind == "close" or q.kind == "num" or q.kind == "str" or q.kind == "term"
    or (q.kind == "word" and not STARTS[q.text:lower()] and q.text:lower() ~= "end"))
end

-- the first piece of the operand ending at piece j, or nil
local function operand_start(P, j)
  local p = P[j]
  local a
  if p.kind == "close" then
    local depth = 0
    for k = j, 1, -1 do
      if P[k].kind == "close" then depth = depth + 1 elseif P[k].kind == "open" then depth = depth - 1 end
      if depth == 0 then a = k; break end
    end
    if not a then return nil end
    local b = sig_before(P, a)
    if b and word_is(P[b], "over") then -- f(x) OVER (w)
      local c = sig_before(P, b)
      a = c and operand_start(P, c)
      if not a then return nil end
    elseif b and callee(P[b]) then
      a = b
    end
  elseif word_is(p, "end") then
    local depth = 0
    for k = j, 1, -1 do
      if word_is(P[k], "end") then depth = depth + 1 elseif word_is(P[k], "case") then depth = depth - 1 end
      if depth == 0 then a = k; break end
    end
    if not a then return nil end
  elseif OPERAND[p.kind] and not (p.kind == "word" and STARTS[p.text:lower()]) then
    a = j
    while true do -- a qualified name: t.a
      local d = sig_before(P, a)
      local n = d and sig_before(P, d)
      if not (d and P[d].kind == "dot" and n and (P[n].kind == "word" or P[n].kind == "str")) then break end
      a = n
    end
  else
    return nil
  end
  while true do -- signs bind tighter
    local b = sig_before(P, a)
    if not (b and is_sign(P, b)) then break end
    a = b
  end
  return a
end

-- the matching close of the open at k, or nil
local function close_of(P, k)
  local depth = 0
  for i = k, #P do
    if P[i].kind == "open" then depth = depth + 1 elseif P[i].kind == "close" then depth = depth - 1 end
    if depth == 0 then return i end
  end
end

-- the last piece of the operand starting at piece j, or nil
local function operand_end(P, j)
  while P[j] and is_sign(P, j) do j = sig_after(P, j) end
  local p = P[j]
  if not p then return nil end
  if p.kind == "open" then return close_of(P, j) end
  if word_is(p, "case") then
    local depth = 0
    for k = j, #P do
      if word_is(P[k], "case") then depth = depth + 1 elseif word_is(P[k], "end") then depth = depth - 1 end
      if depth == 0 then return k end
    end
    return nil
  end
  if not OPERAND[p.kind] or (p.kind == "word" and STARTS[p.text:lower()]) then return nil end
  local n = sig_after(P, j)
  if p.kind == "word" and n and P[n].kind == "open" then -- a call, maybe windowed
    local e = close_of(P, n)
    if not e then return nil end
    local o = sig_after(P, e)
    if o and word_is(P[o], "over") then
      local w = sig_after(P, o)
      if w and P[w].kind == "open" then return close_of(P, w) end
      if w and P[w].kind == "word" then return w end
    end
    return e
  end
  while n and P[n].kind == "dot" do -- a qualified name
    local m = sig_after(P, n)
    if not (m and (P[m].kind == "word" or P[m].kind == "str")) then break end
    j, n = m, sig_after(P, m)
  end
  return j
end

-- DIV MOD % as calls, left to right (each call is an operand of the next)
local function calls(P)
  local k, nc = 1, 0
  while k <= #P do
    local p = P[k]
    if p.kind == "fop" then
      local lb, ra = sig_before(P, k), sig_after(P, k)
      local a = lb and operand_start(P, lb)
      while a do -- a * b DIV c is (a * b) DIV c
        local m = sig_before(P, a)
        if not (m and P[m].kind == "mul") then break end
        local b = sig_before(P, m)
        a = b and operand_start(P, b)
      end
      local z = ra and operand_end(P, ra)
      if a and z then
        local l, r = {}, {}
        for i = a, k - 1 do l[#l + 1] = P[i].text end
        for i = k + 1, z do r[#r + 1] = P[i].text end
        -- (the comment keeps two calls with the same operands apart: each
        -- is one span of the text for original())
        nc = nc + 1
        local piece = { text = ("%s(%s,%s/*%d*/)"):format(p.fn, table.concat(l), table.concat(r), nc),
          from = P[a].from, to = P[z].to, kind = "term" }
        for _ = a, z do table.remove(P, a) end
        table.insert(P, a, piece)
        k = a
      else
        p.text, p.kind = p.fn == "div" and " / " or " % ", "op" -- SQLite reports the syntax
      end
    end
    k = k + 1
  end
end

--- lex.mysql(s) -> s with the service's operators in SQLite's syntax
-- (string literals, quoted names and comments untouched), and
-- original(name) -> the text of s that a span of the rewritten text came
-- from (SQLite names an unaliased result column by its expression's text:
-- `a/2` must stay "a/2", not "a*1.0/2"); a name that is no such span
-- comes back unchanged.
function lex.mysql(s)
  local P, i, n = {}, 1, #s
  -- after_operand: the last token ended an operand (a name, a number, a
  -- literal, a closing parenthesis): MOD next is the operator, even
  -- before a parenthesis ("a MOD (b)"); otherwise MOD( is the function
  local after_operand = false
  local function emit(text, j, kind, fn)
    P[#P + 1] = { text = text, from = i, to = j - 1, kind = kind, fn = fn }
    local src = s:sub(i, j - 1)
    if src:find("%S") and kind ~= "ws" then -- (a comment leaves it as it was)
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
      emit(s:sub(i, j), j + 1, "str")
    elseif (c == "x" or c == "X") and s:sub(i + 1, i + 1) == "'" then -- a hex literal x'..': one operand
      local j = s:find("'", i + 2, true) or n
      emit(s:sub(i, j), j + 1, "str")
    elseif two == "--" or c == "#" then
      local e = s:find("\n", i, true) or n
      emit(" ", e + 1, "ws")
    elseif two == "/*" then
      local e = s:find("*/", i + 2, true)
      emit(" ", e and e + 2 or n + 1, "ws")
    elseif c:find("%s") then
      local e = s:match("^%s+()", i)
      emit(s:sub(i, e - 1), e, "ws")
    elseif two == "&&" then emit(" AND ", i + 2, "op")
    elseif two == "||" then emit(" OR ", i + 2, "op")
    elseif two == "!=" then emit("!=", i + 2, "op")
    elseif c == "!" then emit(" NOT ", i + 1, "unary")
    elseif c == "/" then emit("*1.0/", i + 1, "mul")
    elseif c == "*" then emit("*", i + 1, "mul")
    elseif c == "%" then emit(" % ", i + 1, "fop", "mod")
    elseif c == "(" then emit(c, i + 1, "open")
    elseif c == ")" then emit(c, i + 1, "close")
    elseif c:find("[%d.]") and number_end(s, i) then
      local e = number_end(s, i)
      emit(s:sub(i, e - 1), e, "num")
    elseif c == "." then emit(c, i + 1, "dot")
    elseif c:find("[A-Za-z_]") then
      local w = s:match("^[A-Za-z0-9_]+", i)
      local lw = w:lower()
      if lw == "div" then emit(" / ", i + #w, "fop", "div")
      elseif lw == "mod" and (after_operand or not s:find("^%s*%(", i + #w)) then emit(" % ", i + #w, "fop", "mod")
      else emit(w, i + #w, "word") end
    else
      emit(c, i + 1, "op")
    end
  end
  calls(P)
  local out, from, to = {}, {}, {} -- out[k] was s:sub(from[k], to[k])
  for k, p in ipairs(P) do out[k], from[k], to[k] = p.text, p.from, p.to end
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
