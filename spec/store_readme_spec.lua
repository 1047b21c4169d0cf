-- The README's otskit.store examples run as written (their asserts are
-- the checks), so the documentation cannot drift from the code.
local helper = require "helper"

describe("otskit.store README examples", function()
  helper.readme_examples(it, "otskit.store", 3)
end)
