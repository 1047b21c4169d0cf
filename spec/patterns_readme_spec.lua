-- The README's otskit.patterns examples run as written (their asserts are
-- the checks), so the documentation cannot drift from the code.
describe("otskit.patterns README examples", function()
  local f = assert(io.open("README.md", "rb"))
  local text = f:read("*a")
  f:close()
  local a = assert(text:find("### otskit.patterns", 1, true))
  local b = math.min(text:find("\n## ", a, true) or #text, text:find("\n### ", a + 1, true) or #text)
  local section = text:sub(a, b)
  local n = 0
  for code in section:gmatch("```lua\n(.-)```") do
    n = n + 1
    local i = n
    it("example " .. i .. " runs", function()
      local env = setmetatable({ print = function() end }, { __index = _G })
      local chunk = assert((loadstring or load)(code, "=README example " .. i))
      if setfenv then setfenv(chunk, env) else chunk = assert(load(code, "=README example " .. i, "t", env)) end
      chunk()
    end)
  end
  it("has examples", function() assert.is_true(n >= 1) end)
end)
