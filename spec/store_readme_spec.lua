-- The README's otskit.store examples run as written (their asserts are
-- the checks), so the documentation cannot drift from the code.
describe("otskit.store README examples", function()
  local f = assert(io.open("README.md", "rb"))
  local text = f:read("*a")
  f:close()
  local a = assert(text:find("### otskit.store", 1, true))
  local b = math.min(text:find("\n## ", a, true) or #text, text:find("\n### ", a + 1, true) or #text)
  local section = text:sub(a, b)
  local n = 0
  for code in section:gmatch("```lua\n(.-)```") do
    n = n + 1
    it("example " .. n .. " runs", function()
      local env = setmetatable({ print = function() end }, { __index = _G })
      local chunk = assert((loadstring or load)(code, "=README example " .. n))
      if setfenv then setfenv(chunk, env) else chunk = assert(load(code, "=README example " .. n, "t", env)) end
      chunk()
    end)
  end
  it("has examples", function() assert.is_true(n >= 3) end)
end)
