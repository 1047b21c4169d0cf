--- otskit demo -- the key designs of the best practices on example data.
local hash = require "otskit.hash"

local demo = {}

function demo.run()
  print("Hash-prefixed order numbers (md5, 4 hex digits): sequential ids scatter")
  for n = 1, 8 do
    local id = ("%010d"):format(n)
    print(("  %s  ->  %s%s"):format(id, hash.hex_prefix("md5", id, 4), id))
  end
  return 0
end

return demo
