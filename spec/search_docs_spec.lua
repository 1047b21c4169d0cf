-- spec/search_docs_spec.lua -- every Lua block of docs/search.md runs.
describe("docs/search.md", function()
  local f = assert(io.open("docs/search.md", "rb"))
  local text = f:read("*a")
  f:close()
  local n = 0
  for code in text:gmatch("```lua\n(.-)```") do
    n = n + 1
    it("block " .. n .. " runs", function()
      local chunk = assert((loadstring or load)(code, "=docs/search.md block " .. n))
      chunk()
    end)
  end
  it("has blocks", function() assert.is_true(n >= 4) end)
end)
