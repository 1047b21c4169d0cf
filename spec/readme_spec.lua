-- Every ```lua block of README.md runs as written on this VM, and what
-- its `-->` comments show is what it prints or returns (spec/helper.lua
-- says how they are read), so the documentation cannot drift from the code.
local helper = require "helper"

describe("README examples", function()
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
  local f = assert(io.open("README.md", "rb"))
  local text = f:read("*a")
  f:close()
  local _, fences = text:gsub("\n```lua\n", "")
  helper.readme_examples(it, nil, fences)

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
end)
