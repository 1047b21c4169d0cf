-- The README's otskit.client and store-interface examples run as written
-- against `otskit serve` (its default credentials; the spec's free port
-- replaces 127.0.0.1:8800).
local helper = require "helper"
local serve = require "support.serve"

local srv
describe("otskit.client README examples", function()
  setup(function()
    srv = assert(serve.start{ instance = "otskit", access_key_id = "otskit", access_key_secret = "otskit-secret" })
  end)
  teardown(function() if srv then srv.stop() end end)
  helper.readme_examples(it, "otskit.client", 3, function(code)
    return (code:gsub("http://127%.0%.0%.1:8800", srv.url))
  end)
end)
