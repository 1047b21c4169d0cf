-- The README's otskit.wire examples run as written (their asserts are the
-- checks).
local helper = require "helper"

describe("otskit.wire README examples", function()
  helper.readme_examples(it, "otskit.wire", 3)
end)
