-- docs/reliability.md: every ```lua block runs as written and prints
-- what its `-->` annotations show (helper.run_readme_block), on both VMs.
local helper = require "helper"

describe("docs/reliability.md", function()
  local f = assert(io.open("docs/reliability.md", "rb"))
  local text = f:read("*a")
  f:close()
  local n, line_no, block, start = 0, 0, nil, nil
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    line_no = line_no + 1
    if block then
      if line:match("^```%s*$") then
        n = n + 1
        local code, first, k = table.concat(block, "\n") .. "\n", start, n
        it(("example %d (docs/reliability.md:%d) runs and prints what it shows"):format(k, first), function()
          helper.run_readme_block(code, "docs/reliability.md example " .. k, first)
        end)
        block = nil
      else
        block[#block + 1] = line
      end
    elseif line:match("^```lua%s*$") then
      block, start = {}, line_no + 1
    end
  end
  it("has its examples", function() assert.is_true(n >= 3, n .. " examples") end)
end)
