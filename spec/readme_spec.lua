-- The documentation cannot drift from the code:
-- - every ```lua block of README.md and of every docs/*.md (found when the
--   spec runs: a page added later is covered without editing this file)
--   runs as written on this VM, and what its `-->` comments show is what it
--   prints or returns (spec/helper.lua says how they are read); Lua that
--   is not meant to run is fenced ```lua norun;
-- - every output of `otskit demo` a page quotes (the block after a line
--   `<!-- otskit demo output -->`) is what bin/otskit demo prints now;
-- - every relative link of those pages names a file of the repository, and
--   every #anchor a heading of the page it points to.
local helper = require "helper"

local function read(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("*a")
  f:close()
  return text
end

-- README.md, then docs/*.md in name order
local function pages()
  local list = { "README.md" }
  local p = assert(io.popen("ls docs/*.md 2>/dev/null"))
  for file in p:lines() do list[#list + 1] = file end
  p:close()
  return list
end

local PAGES = pages()

describe("doc examples", function()
  -- the otskit.client examples talk to `otskit serve` at 127.0.0.1:8800 with
  -- its default credentials: one is started on a free port instead
  local srv
  setup(function()
    srv = assert(require("support.serve").start{ instance = "otskit", access_key_id = "otskit",
      access_key_secret = "otskit-secret" })
    helper.readme_subst = function(code) return (code:gsub("http://127%.0%.0%.1:8800", srv.url)) end
  end)
  teardown(function()
    helper.readme_subst = nil
    if srv then srv.stop() end
  end)

  for _, path in ipairs(PAGES) do
    describe(path, function()
      local text = read(path)
      -- the parser's count must equal the plain count of ```lua fences
      local _, fences = ("\n" .. text):gsub("\n```lua[ \t]*\n", "")
      helper.readme_examples(it, nil, fences, path)
      it("has no ```lua block the parser missed", function()
        local blocks = helper.readme_blocks(path)
        assert.are.equal(fences, #blocks)
      end)
    end)
  end

  it("the checker refuses what it cannot check, and catches wrong output", function()
    assert.has_error(function() helper.run_readme_block("local x = 1 --> one\n", "t") end)
    assert.has_error(function() helper.run_readme_block("print(1.5) --> 2\n", "t") end)
    assert.has_error(function() helper.run_readme_block("print(1, 2) --> 1  3\n", "t") end)
    assert.has_error(function() helper.run_readme_block("local x = math.max(1, 2)  --> 3\n", "t") end)
    assert.has_error(function() helper.run_readme_block("local t = {}\nprint(t)\n--> {}\n", "t") end)
    assert.has_error(function() helper.run_readme_block("for i = 1, 2 do print(i) end --> 1\n", "t") end)
    helper.run_readme_block("print(1, 'a b')  --> 1  a b\nlocal y = math.max(1, 2)  --> 2\nprint(y)\n--> 2\n", "t")
    helper.run_readme_block("string.find('abc', 'b')  --> 2, 2 -- a note\n", "t")
  end)

  it("a block is ```lua (run), ```lua norun (marked), or of another language; a Lua-ish typo fails", function()
    local path = os.tmpname()
    local function blocks(text)
      local f = assert(io.open(path, "wb"))
      f:write(text)
      f:close()
      return helper.readme_blocks(path)
    end
    local b, norun = blocks("# t\n```lua\nx = 1\n```\n```lua norun\ny(\n```\n```sh\nls\n```\n")
    assert.are.equal(1, #b)
    assert.are.equal("x = 1\n", b[1].code)
    assert.are.equal(1, norun)
    for _, bad in ipairs { "```Lua\n", "```lua5.4\n", "```luajit\n", "```lua  skip\n" } do
      assert.has_error(function() blocks("# t\n" .. bad .. "x = 1\n```\n") end)
    end
    assert.has_error(function() blocks("# t\n```lua\nx = 1\n") end)   -- never closed
    os.remove(path)
  end)
end)

-- the nearest ```lua block that ends above line i: its code, or nil
local function lua_block_above(lines, i)
  local stop = i - 1
  while stop > 0 and not lines[stop]:match("^```%s*$") do stop = stop - 1 end
  local start = stop - 1
  while start > 0 and not lines[start]:match("^```") do start = start - 1 end
  if start < 1 or not lines[start]:match("^```lua%s*$") then return nil end
  return table.concat(lines, "\n", start + 1, stop - 1) .. "\n"
end

-- each quoted output: { path, line, lines, kind = "demo" | "analyze",
-- code (analyze: the scenario file it is the output of) }. A quote is the
-- ``` block after a line `<!-- otskit demo output -->` or `<!-- otskit
-- analyze output of the lua block above -->`.
local function output_quotes(path)
  local quotes, lines = {}, {}
  for line in (read(path) .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
  local i = 1
  while i <= #lines do
    local kind = lines[i]:match("^<!%-%- otskit demo output %-%->%s*$") and "demo"
      or lines[i]:match("^<!%-%- otskit analyze output of the lua block above %-%->%s*$") and "analyze"
    if kind then
      assert(lines[i + 1] and lines[i + 1]:match("^```"), ("%s:%d: no ``` block after the marker"):format(path, i))
      local q = { path = path, line = i + 2, lines = {}, kind = kind }
      if kind == "analyze" then
        q.code = assert(lua_block_above(lines, i), ("%s:%d: no ```lua block above the marker"):format(path, i))
      end
      local j = i + 2
      while lines[j] and not lines[j]:match("^```%s*$") do
        q.lines[#q.lines + 1] = lines[j]
        j = j + 1
      end
      quotes[#quotes + 1] = q
      i = j
    end
    i = i + 1
  end
  return quotes
end

-- what `otskit analyze` prints for a scenario file's code (this VM)
local function analyze_output(code)
  local lua = rawget(_G, "jit") and "luajit" or "lua5.4"
  local file = os.tmpname() .. ".lua"
  local f = assert(io.open(file, "wb"))
  f:write(code)
  f:close()
  local p = assert(io.popen(lua .. " bin/otskit analyze " .. file .. " -q --svg - 2>&1; echo \"rc=$?\""))
  local out = p:read("*a")
  p:close()
  os.remove(file)
  assert(out:match("rc=0%s*$"), out)
  return out
end

local function out_lines(out)
  local lines = {}
  for line in out:gmatch("([^\n]*)\n") do lines[#lines + 1] = (line:gsub("%s+$", "")) end
  return lines
end

describe("doc figures", function()
  local quotes = {}
  for _, path in ipairs(PAGES) do
    for _, q in ipairs(output_quotes(path)) do quotes[#quotes + 1] = q end
  end

  it("README.md quotes the demo", function()
    assert.is_true(#quotes >= 1 and quotes[1].path == "README.md" and quotes[1].kind == "demo" and #quotes[1].lines >= 10)
  end)

  local function run_demo()
    -- this VM's interpreter, the build under test; simulated time and
    -- seeded data: the output is the same on every run and on both VMs
    local lua = rawget(_G, "jit") and "luajit" or "lua5.4"
    local p = assert(io.popen(lua .. " bin/otskit demo -q --svg - 2>&1; echo \"rc=$?\""))
    local out = p:read("*a")
    p:close()
    assert(out:match("rc=0%s*$"), out)
    return out_lines(out)
  end

  it("every quoted line of otskit demo's and otskit analyze's output is printed, in that order", function()
    local demo = run_demo()
    for _, q in ipairs(quotes) do
      local out = q.kind == "demo" and demo or out_lines(analyze_output(q.code))
      local at = 1
      for k, want in ipairs(q.lines) do
        want = want:gsub("%s+$", "")
        if want ~= "" then
          local found
          for j = at, #out do
            if out[j] == want then found = j break end
          end
          assert(found, ("%s:%d: otskit %s does not print this line (now, after the lines quoted before it):\n%s\n"
            .. "update the quote from `bin/otskit %s`")
            :format(q.path, q.line + k - 1, q.kind, want, q.kind))
          at = found + 1
        end
      end
    end
  end)

  -- the numbers of a text standing alone (not the 5 of md5)
  local function numbers(text)
    local t = {}
    for n in text:gmatch("%f[%w]%d+%f[%W]") do t[#t + 1] = n end
    return t
  end

  -- prose after `<!-- figures: ... -->`: every number it states is in
  -- the output it describes -- the demo output quoted above it, or what
  -- `otskit analyze` prints for the ```lua block above it
  it("every figure a paragraph marked as figures states is in the output it describes", function()
    local n = 0
    for _, path in ipairs(PAGES) do
      local lines = {}
      for line in (read(path) .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
      for i, line in ipairs(lines) do
        local what = line:match("^<!%-%- figures: (.-) %-%->%s*$")
        if what then
          n = n + 1
          local para = {}
          for j = i + 1, #lines do
            if lines[j]:match("^%s*$") then break end
            para[#para + 1] = lines[j]
          end
          para = table.concat(para, "\n")
          local out
          if what == "the demo output above" then
            local quote
            for _, q in ipairs(output_quotes(path)) do
              if q.line < i then quote = q end
            end
            assert(quote and quote.kind == "demo", ("%s:%d: no quoted demo output above"):format(path, i))
            out = table.concat(quote.lines, "\n")
          elseif what == "otskit analyze of the block above" then
            out = analyze_output(assert(lua_block_above(lines, i), ("%s:%d: no ```lua block above"):format(path, i)))
          else
            error(("%s:%d: figures of what? (the demo output above | otskit analyze of the block above)"):format(path, i))
          end
          local have = {}
          for _, x in ipairs(numbers(out)) do have[x] = true end
          local nums = numbers(para)
          assert(#nums > 0, ("%s:%d: a figures paragraph with no figure"):format(path, i))
          for _, x in ipairs(nums) do
            assert(have[x], ("%s:%d: %s is not in the output it describes:\n%s"):format(path, i, x, para))
          end
        end
      end
    end
    assert(n >= 2, "README.md states the demo's and analyze's figures")
  end)

  it("the checker fails on a figure the demo does not print", function()
    local out = run_demo()
    local line
    for _, l in ipairs(out) do if l:match("retries%s+%d") then line = l break end end
    assert.is_string(line)
    local changed = line:gsub("(retries%s+)(%d+)", function(a, d) return a .. tostring(tonumber(d) + 1) end)
    local seen = false
    for _, l in ipairs(out) do if l == changed then seen = true end end
    assert.is_false(seen)
  end)
end)

-- GitHub's anchor of a heading: lower case, punctuation but - and _
-- dropped, spaces as -
local function anchor(h)
  return (h:lower():gsub("[^%w%-_ ]", ""):gsub(" ", "-"))
end

local function anchors(path)
  local set, fence = {}, false
  for line in (read(path) .. "\n"):gmatch("([^\n]*)\n") do
    if line:match("^```") then
      fence = not fence
    elseif not fence then
      local h = line:match("^#+ (.-)%s*$")
      if h then
        local a = anchor(h)
        local k = 0
        while set[a .. (k > 0 and ("-" .. k) or "")] do k = k + 1 end
        set[a .. (k > 0 and ("-" .. k) or "")] = true
      end
    end
  end
  return set
end

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() return true end
  return false
end

describe("doc links", function()
  for _, path in ipairs(PAGES) do
    it(path .. ": every relative link and anchor resolves", function()
      local dir = path:match("^(.*)/") or "."
      local text, fence = {}, false
      for line in (read(path) .. "\n"):gmatch("([^\n]*)\n") do
        if line:match("^```") then fence = not fence elseif not fence then text[#text + 1] = line end
      end
      text = table.concat(text, "\n")
      local bad = {}
      for target in text:gmatch("%]%(([^)%s]+)%)") do
        if not target:match("^%a[%w+.-]*:") then   -- not http:, mailto:, ...
          local file, frag = target:match("^([^#]*)#?(.*)$")
          local full = file == "" and path or (dir == "." and file or dir .. "/" .. file)
          -- a/../b -> b
          full = full:gsub("[^/]+/%.%./", "")
          if not exists(full) and not exists(full .. "/.") then
            bad[#bad + 1] = target .. " (no file " .. full .. ")"
          elseif frag ~= "" and full:match("%.md$") and not anchors(full)[frag] then
            bad[#bad + 1] = target .. " (no heading #" .. frag .. " in " .. full .. ")"
          end
        end
      end
      assert(#bad == 0, path .. ": " .. table.concat(bad, "; "))
    end)
  end
end)

describe("docs/serve.md", function()
  it("names every API otskit serve answers, in its 'What it serves' section", function()
    local text = read("docs/serve.md")
    local section = assert(text:match("\n## What it serves\n(.-)\n## "), "docs/serve.md has no ## What it serves")
    local missing = {}
    for api in pairs(require("otskit.server.dispatch").APIS) do
      if not section:find("%f[%w]" .. api .. "%f[^%w]") then missing[#missing + 1] = api end
    end
    table.sort(missing)
    assert(#missing == 0, "docs/serve.md does not name " .. table.concat(missing, ", "))
  end)
end)
