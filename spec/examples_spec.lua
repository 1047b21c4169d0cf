-- Every examples/*.lua runs to the end (its asserts are the checks).
describe("examples", function()
  local p = assert(io.popen("ls examples/*.lua 2>/dev/null"))
  for file in p:lines() do
    it(file .. " runs", function()
      local real = print
      _G.print = function() end
      local ok, err = pcall(dofile, file)
      _G.print = real
      assert(ok, err)
    end)
  end
  p:close()
end)
