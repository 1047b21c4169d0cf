-- The tree's shape rules: one concern a file, so no Lua module in lua/
-- grows past 600 lines (split it by concern instead).
describe("layout", function()
  it("no Lua file in lua/ is over 600 lines", function()
    local p = assert(io.popen("find -L lua -name '*.lua' | sort"))
    local over, seen = {}, 0
    for path in p:lines() do
      seen = seen + 1
      local n = 0
      for _ in io.lines(path) do n = n + 1 end
      if n > 600 then over[#over + 1] = ("%s (%d lines)"):format(path, n) end
    end
    p:close()
    assert.is_true(seen > 50, "found the Lua modules")
    assert.are.same({}, over)
  end)
end)
