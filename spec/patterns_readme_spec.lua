-- The README's otskit.patterns examples run as written (their asserts are
-- the checks), so the documentation cannot drift from the code.
local helper = require "helper"

describe("otskit.patterns README examples", function()
  helper.readme_examples(it, "otskit.patterns", 1)
end)
