-- Property: every pattern constructor starts with the same checks
-- (patterns.common.preamble): it accepts a table name exactly when the
-- store accepts a table of that name (with the suffix the pattern appends
-- to make its tables), and refuses any option it does not read.
local store = require "otskit.store"
local names = require "otskit.names"
local helper = require "helper"

local SECRET = "spec secret, 16+ bytes"
local quiet = { sleep = function() end, budget = false }

-- name option, suffix the pattern appends, constructor(opts), valid options
local PATTERNS = {
  { "counter", "table", "", function(o) return require("otskit.patterns.counter").new(o) end, {} },
  { "timeseries", "table", "", function(o) return require("otskit.patterns.timeseries").new(o) end,
    { secret = SECRET, buckets = 4 } },
  { "hashprefix", "table", "", function(o) return require("otskit.patterns.hashprefix").new(o) end, { width = 8 } },
  { "chunked", "table", "", function(o) return require("otskit.patterns.chunked").new(o) end, { chunk_size = 1000 } },
  { "hotcold", "prefix", "_202601", function(o) return require("otskit.patterns.hotcold").new(o) end,
    { first = "2026-01", last = "2026-03" } },
  { "colsplit", "table", "_cold", function(o) return require("otskit.patterns.colsplit").new(o) end,
    { primary_key = { { "id", "STRING" } }, hot = { "a" } } },
  { "spliced", "table", "", function(o) return require("otskit.patterns.spliced").new(o) end,
    { secret = SECRET, splice = { sep = ",", { "D", "int", width = 6 }, { "S", "string", charset = "alnum" } } } },
  { "import", "table", "", function(o) return require("otskit.patterns.import").run(o) end, { rows = {} } },
}

local function opts_for(p, db, name, extra)
  local o = { store = db, retry = quiet }
  for k, v in pairs(p[5]) do o[k] = v end
  o[p[2]] = name
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

-- a random candidate name: often near the length limit, from an
-- alphabet of valid and invalid bytes
local function candidate(r)
  local alphabet = "aZ_09-. \0\255\195\169"
  local n = ({ 0, 1, 2, r.int(3, 20), r.int(240, 257), 255 - r.int(0, 8) })[r.int(1, 6)]
  local t = {}
  for i = 1, n do
    local j = r.int(1, #alphabet)
    -- mostly valid bytes, so long names are often valid
    if r.int(1, 8) > 1 then j = r.int(1, 5) end
    t[i] = alphabet:sub(j, j)
  end
  return table.concat(t)
end

describe("pattern constructors' preamble", function()
  it("accept a table name exactly when the store accepts its tables' names", function()
    local r = helper.rng(2301)
    local db = assert(store.open())
    local accepted, refused = 0, 0
    for _ = 1, helper.trials(150) do
      local name = candidate(r)
      for _, p in ipairs(PATTERNS) do
        local full = name .. p[3]
        local res = db:create_table { name = full, primary_key = { { "id", "STRING" } } }
        if res then assert(db:delete_table { name = full }) end
        local ok, err, _, code = pcall(p[4], opts_for(p, db, name))
        -- import reads the table first: a valid name of a table that does
        -- not exist (any more) is the store's nil, msg, code
        if p[1] == "import" and ok then assert.equal("OTSObjectNotExist", code) end
        assert.equal(res ~= nil, ok, ("%s %q: store %s, pattern %s"):format(p[1], name, tostring(res ~= nil), tostring(err)))
        assert.equal(res ~= nil, names.valid(full))
        if not ok then
          assert.matches("^[^\n]*otskit%.patterns%." .. p[1] .. ": " .. p[2] .. " must be a table name", tostring(err))
          assert.matches(names.RULE, tostring(err), 1, true)
          refused = refused + 1
        else
          accepted = accepted + 1
        end
      end
    end
    -- both sides were exercised
    assert.is_true(accepted > 0 and refused > 0, accepted .. " accepted, " .. refused .. " refused")
  end)

  it("the longest names: 255 bytes with the suffix, not one more", function()
    local db = assert(store.open())
    for _, p in ipairs(PATTERNS) do
      local max = names.MAX_BYTES - #p[3]
      assert.equal(255, names.MAX_BYTES)
      local full = ("a"):rep(max) .. p[3]
      assert(db:create_table { name = full, primary_key = { { "id", "STRING" } } })
      if p[1] ~= "import" then assert.truthy(p[4](opts_for(p, db, ("a"):rep(max)))) end
      assert.has_error(function() p[4](opts_for(p, db, ("a"):rep(max + 1))) end)
      assert.is_nil(db:create_table { name = ("a"):rep(max + 1) .. p[3], primary_key = { { "id", "STRING" } } })
      assert(db:delete_table { name = full })
    end
  end)

  it("refuse an option they do not read, a missing store and a non-table", function()
    local r = helper.rng(2302)
    local db = assert(store.open())
    for _, p in ipairs(PATTERNS) do
      -- the valid options are accepted
      if p[1] ~= "import" then assert.truthy(p[4](opts_for(p, db, "t1"))) end
      for _ = 1, helper.trials(20) do
        local k = r.bytes(r.int(1, 12), "abcdefghijklmnopqrstuvwxyz_")
        local o = opts_for(p, db, "t1")
        if o[k] == nil and k ~= "parallel" and k ~= "get_range" then
          o[k] = r.int(0, 1) == 1 and true or "x"
          assert.has_error(function() p[4](o) end, "otskit.patterns." .. p[1] .. ": unknown option '" .. k .. "'")
        end
      end
      local o = opts_for(p, db, "t1"); o.store = nil
      assert.has_error(function() p[4](o) end)
      assert.has_error(function() p[4]("t1") end)
      assert.has_error(function() p[4]() end)
    end
  end)
end)
