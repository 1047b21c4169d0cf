-- spec/helper.lua -- shared by the specs: property-test trial counts and a
-- seeded random source, so a failing property can be replayed.
local helper = {}

-- Trials for a property test: n, or n/20 when OTSKIT_QUICK is set (not
-- empty, not "0"): valgrind and make check.
function helper.quick()
  local q = os.getenv("OTSKIT_QUICK")
  return q ~= nil and q ~= "" and q ~= "0"
end

function helper.trials(n)
  if helper.quick() then return math.max(1, math.floor(n / 20)) end
  return n
end

-- A deterministic PRNG (Park-Miller, exact in doubles) so a property test
-- fails the same way on 5.4 and LuaJIT. OTSKIT_SEED overrides the seed.
function helper.rng(seed)
  local s = (seed or tonumber(os.getenv("OTSKIT_SEED") or "") or 12345) % 2147483647
  if s == 0 then s = 1 end
  local r = {}
  local function step()
    s = (s * 48271) % 2147483647
    return s
  end
  -- integer in [lo, hi]
  function r.int(lo, hi)
    local span = hi - lo + 1
    if span <= 2147483646 then return lo + step() % span end
    -- wide spans (int64 tests): two steps give ~62 bits of fraction
    local f = ((step() - 1) + (step() - 1) / 2147483646) / 2147483646
    return lo + math.floor(f * span)
  end
  -- float in [0, 1)
  function r.float() return (step() - 1) / 2147483646 end
  -- byte string of length n over the given alphabet (default: all bytes)
  function r.bytes(n, alphabet)
    local t = {}
    for i = 1, n do
      if alphabet then
        local k = r.int(1, #alphabet)
        t[i] = alphabet:sub(k, k)
      else
        t[i] = string.char(r.int(0, 255))
      end
    end
    return table.concat(t)
  end
  function r.shuffle(a)
    for i = #a, 2, -1 do
      local j = r.int(1, i)
      a[i], a[j] = a[j], a[i]
    end
    return a
  end
  return r
end

--- helper.tmpdb() -> a path for a store file that does not exist yet;
-- helper.remove_db(path) removes it with its -wal and -shm files.
function helper.tmpdb()
  local p = os.tmpname()
  os.remove(p)
  return p
end

function helper.remove_db(p)
  for _, s in ipairs({ "", "-wal", "-shm" }) do os.remove(p .. s) end
end

--- helper.keys_of(t) -> t's keys as text, sorted, joined by commas
function helper.keys_of(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = tostring(k) end
  table.sort(ks)
  return table.concat(ks, ",")
end

--- helper.deep_same(a, b, path [, metatables]): raises (naming path)
-- unless a and b are equal all the way down: the same keys (b's read with
-- rawget), numbers of the same subtype (Lua 5.4) and sign of zero, NaN
-- equal to NaN, LuaJIT int64 cdata by value and type; metatables: and
-- every table's metatable the same.
function helper.deep_same(a, b, path, metatables)
  if type(a) == "cdata" or type(b) == "cdata" then
    assert(tostring(a) == tostring(b), path .. ": " .. tostring(a) .. " ~= " .. tostring(b))
    return
  end
  if type(a) ~= "table" or type(b) ~= "table" then
    assert(a == b or (a ~= a and b ~= b), path .. ": " .. tostring(a) .. " ~= " .. tostring(b))
    if type(a) == "number" and type(b) == "number" then -- same subtype, same sign of zero
      assert(math.type == nil or math.type(a) == math.type(b), path .. ": " .. tostring(a) .. " vs " .. tostring(b))
      assert(a ~= 0 or 1 / a == 1 / b, path .. ": -0.0 vs 0.0")
    end
    return
  end
  if metatables then assert(getmetatable(a) == getmetatable(b), path .. ": metatables differ") end
  local ka, kb = helper.keys_of(a), helper.keys_of(b)
  assert(ka == kb, path .. ": keys " .. ka .. " ~= " .. kb)
  for k, v in pairs(a) do helper.deep_same(v, rawget(b, k), path .. "." .. tostring(k), metatables) end
end

--- helper.empty_pages(db, r) -> get_range(req), count(): db:get_range,
-- except that about one page in two comes back with no rows and
-- next_start_primary_key at the first row it would have held, as the
-- service may answer (and `otskit serve --faults empty=F` does); count()
-- says how many such pages it gave.
function helper.empty_pages(db, r)
  local n = 0
  local function get_range(req)
    if r.int(1, 2) == 1 then
      local one = {}
      for k, v in pairs(req) do one[k] = v end
      one.limit = 1
      local page = assert(db:get_range(one))
      if page.rows[1] then
        n = n + 1
        return { rows = {}, next_start_primary_key = page.rows[1].primary_key }
      end
    end
    return db:get_range(req)
  end
  return get_range, function() return n end
end

--- helper.empty_store(db, r) -> store, count(): db with its get_range
-- replaced by helper.empty_pages (every other method is db's).
function helper.empty_store(db, r)
  local get_range, count = helper.empty_pages(db, r)
  return setmetatable({ get_range = function(_, req) return get_range(req) end }, {
    __index = function(_, name)
      local f = db[name]
      if type(f) == "function" then return function(_, ...) return f(db, ...) end end
      return f
    end }), count
end

---------------------------------------------------------------------------
-- README examples: every ```lua block runs as written, on both VMs, and
-- what its `-->` comments show is checked:
-- - `print(...)  --> OUT` (or a print statement followed by a line
--   `--> OUT`): that print ran once and wrote OUT; fields of OUT are
--   separated by two or more spaces, printed ones by print's tabs;
-- - `EXPR  --> VALUES` or `local x = EXPR  --> VALUES` on one line:
--   EXPR's results equal VALUES (Lua expressions, compared deeply).
-- Text after " -- " in an annotation is commentary. An annotation that
-- fits neither form fails the block: none can go unchecked. A block that
-- returns a scenario (a table with `designs`) is run by otskit.analyze.

local pack = table.pack or function(...) return { n = select("#", ...), ... } end

-- the ```lua blocks of a markdown file (default README.md): { heading,
-- code, line } (heading: the ### or ## section it is in; line: its first
-- line in the file). A Lua block that is not meant to run is fenced
-- ```lua norun; any other fence whose language starts with "lua" (```Lua,
-- ```lua5.4, ...) raises, so no block is skipped by a typo. Returns the
-- blocks and the number of norun blocks.
function helper.readme_blocks(path)
  path = path or "README.md"
  local f = assert(io.open(path, "rb"))
  local text = f:read("*a")
  f:close()
  local blocks, heading, inblock, code, start, n, norun = {}, "", nil, nil, 0, 0, 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    if inblock then
      if line:match("^```%s*$") then
        if inblock == "lua" then
          blocks[#blocks + 1] = { heading = heading, code = table.concat(code, "\n") .. "\n", line = start }
        end
        inblock = nil
      elseif inblock == "lua" then
        code[#code + 1] = line
      end
    elseif line:match("^```") then
      local lang = line:match("^```%s*(.-)%s*$")
      if lang == "lua" then
        inblock, code, start = "lua", {}, n + 1
      elseif lang == "lua norun" then
        inblock, norun = "other", norun + 1
      elseif lang:lower():match("^lua") then
        error(("%s:%d: a fence ```%s: Lua blocks are ```lua (run by the specs) or ```lua norun"):format(path, n, lang), 0)
      else
        inblock = "other"   -- sh, nginx, text, ...: skipped to their end
      end
    else
      local h = line:match("^##+ (.-)%s*$")
      if h then heading = h end
    end
  end
  assert(not inblock, path .. ": a ``` block is not closed")
  return blocks, norun
end

local function deep_equal(a, b)
  if a == b then return true end
  if type(a) ~= "table" or type(b) ~= "table" then
    return type(a) == "number" and type(b) == "number" and a ~= a and b ~= b
  end
  for k, v in pairs(a) do if not deep_equal(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

local function show(v, depth)
  depth = depth or 0
  if type(v) == "string" then return ("%q"):format(v) end
  if type(v) ~= "table" or depth > 3 then return tostring(v) end
  local parts = {}
  for k, x in pairs(v) do
    parts[#parts + 1] = (type(k) == "number" and "" or (tostring(k) .. " = ")) .. show(x, depth + 1)
  end
  return "{ " .. table.concat(parts, ", ") .. " }"
end

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

-- splits code and annotation: "code  --> out -- note" -> code, out
local function annotation(line)
  local i = line:find("%-%->")
  if not i then return nil end
  -- not inside a string literal: an even number of quotes before it
  local before = line:sub(1, i - 1)
  local _, dq = before:gsub('"', "")
  local _, sq = before:gsub("'", "")
  if dq % 2 == 1 or sq % 2 == 1 then return nil end
  local out = line:sub(i + 3)
  local c = out:find(" %-%- ")
  if c then out = out:sub(1, c - 1) end
  return before, trim(out)
end

local function fields(s)
  local t = {}
  for f in (s .. "  "):gmatch("(.-)%s%s+") do t[#t + 1] = f end
  if #t == 0 then t[1] = "" end
  return t
end

--- helper.prepare_readme_block(code, name) -> source, checks, prints
-- The block with its value annotations turned into checks; prints: the
-- print annotations { from, to, want } to compare after the run.
function helper.prepare_readme_block(code, name)
  local lines = {}
  for l in (code):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
  local prints, last_print = {}, nil
  for i, line in ipairs(lines) do
    local before, out = annotation(line)
    if line:match("^%s*print%(") then last_print = i end
    if before then
      local codepart = trim((before:gsub("%-%-.*$", "")))
      if codepart == "" then
        -- a line of its own: the output of the print statement above
        if not last_print then error(name .. ":" .. i .. ": `-->` line follows no print", 0) end
        prints[#prints + 1] = { from = last_print, to = i, want = out, line = i }
        last_print = nil
      elseif codepart:match("^print%(") then
        prints[#prints + 1] = { from = i, to = i, want = out, line = i }
        last_print = nil
      else
        local lhs, expr = codepart:match("^(local%s+[%w_,%s]+=)%s*(.+)$")
        if not lhs then lhs, expr = codepart:match("^([%w_.]+%s*,?[%w_,%s]*=)%s*([^=].*)$") end
        if not lhs then lhs, expr = "", codepart end
        local vals, verr = (loadstring or load)("return " .. out)
        if not vals then
          error(("%s:%d: the annotation `--> %s` is not a Lua value to check (%s)"):format(name, i, out, verr), 0)
        end
        lines[i] = ("%s __readme_expect(%d, function() return %s end, %s)"):format(lhs, i, out, expr)
        local ok, err = (loadstring or load)(lines[i])
        if not ok then
          error(("%s:%d: `%s` is not a one-line statement to check (%s)"):format(name, i, codepart, err), 0)
        end
      end
    end
  end
  return table.concat(lines, "\n") .. "\n", prints
end

--- helper.run_readme_block(code, name): runs it; raises on a failed
-- check, naming the README line.
-- helper.readme_subst: nil, or function(code) -> code applied to every
-- block before it runs (readme_spec points the otskit.client examples at
-- the `otskit serve` it started).
function helper.run_readme_block(code, name, first_line, path)
  first_line = first_line or 1
  path = path or "README.md"
  if helper.readme_subst then code = helper.readme_subst(code) end
  local src, prints = helper.prepare_readme_block(code, name)
  local printed = {}
  local function where(i) return ("%s:%d"):format(path, first_line + i - 1) end
  local env = setmetatable({}, { __index = _G })
  env.print = function(...)
    local info = debug.getinfo(2, "Sl")
    local t = pack(...)
    for j = 1, t.n do t[j] = tostring(t[j]) end
    if info and info.source == "=" .. name then
      printed[#printed + 1] = { line = info.currentline, text = table.concat(t, "\t", 1, t.n) }
    end
  end
  env.__readme_expect = function(i, want_fn, ...)
    local got, want = pack(...), pack(want_fn())
    if got.n ~= want.n and not (got.n > want.n and want.n >= 1) then
      error(("%s: got %d values (%s), the doc shows %d"):format(where(i), got.n, show(got), want.n), 0)
    end
    for j = 1, want.n do
      if not deep_equal(got[j], want[j]) then
        error(("%s: value %d is %s, the doc shows %s"):format(where(i), j, show(got[j]), show(want[j])), 0)
      end
    end
    return ...
  end
  local chunk
  if setfenv then
    chunk = assert(loadstring(src, "=" .. name))
    setfenv(chunk, env)
  else
    chunk = assert(load(src, "=" .. name, "t", env))
  end
  local ret = chunk()
  if type(ret) == "table" and ret.designs then
    require("otskit.analyze").run(ret)
  end
  for _, p in ipairs(prints) do
    local hits = {}
    for _, o in ipairs(printed) do
      if o.line >= p.from and o.line <= p.to then hits[#hits + 1] = o.text end
    end
    if #hits ~= 1 then
      error(("%s: the print shown as `--> %s` ran %d times"):format(where(p.line), p.want, #hits), 0)
    end
    local got, want = {}, fields(p.want)
    for f in (hits[1] .. "\t"):gmatch("([^\t]*)\t") do got[#got + 1] = f end
    if not deep_equal(got, want) then
      error(("%s: printed %q, the doc shows %q"):format(where(p.line), hits[1], p.want), 0)
    end
  end
end

--- helper.readme_examples(it, heading, min [, path]): one busted test per
-- ```lua block of the markdown file path (default README.md) in its
-- "### <heading>" section (every section when heading is nil), each run
-- and checked as above, plus one that at least min blocks were found.
-- Pass busted's `it` (busted gives it to spec files only, not to modules
-- they require).
function helper.readme_examples(it, heading, min, path)
  path = path or "README.md"
  local n = 0
  for _, b in ipairs((helper.readme_blocks(path))) do
    if heading == nil or b.heading == heading then
      n = n + 1
      local name = ("%s %s example %d"):format(path, b.heading, n)
      it(("%s (%s:%d) runs and prints what it shows"):format(b.heading, path, b.line), function()
        helper.run_readme_block(b.code, name, b.line, path)
      end)
    end
  end
  it("has at least " .. min .. " examples", function()
    assert(n >= min, ("%s %s has %d examples"):format(path, heading or "", n))
  end)
end

return helper
