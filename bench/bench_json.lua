--- bench_json -- JSON of the bench run documents: otskit.json with an
-- empty table written as [] and 9 significant digits (the files are
-- diffed and compared across runs; see lua/otskit/json.lua).
-- encode(v [, indent]) -> text; decode(text) -> value | nil, message.
local json = require "otskit.json"

return {
  null = json.null,
  decode = json.decode,
  encode = function(v, indent)
    return json.encode(v, { indent = indent, digits = 9, empty_array = true })
  end,
}
