-- spec/helper.lua -- shared by the specs: property-test trial counts and a
-- seeded random source, so a failing property can be replayed.
local helper = {}

-- Trials for a property test: n, or fewer under valgrind (OTSKIT_QUICK).
function helper.trials(n)
  if os.getenv("OTSKIT_QUICK") then return math.max(1, math.floor(n / 20)) end
  return n
end

-- A deterministic PRNG (Park-Miller, exact in doubles) so a property test
-- fails the same way on 5.4 and LuaJIT. OTSKIT_SEED overrides the seed.
function helper.rng(seed)
  local s = (seed or tonumber(os.getenv("OTSKIT_SEED") or "") or 12345) % 2147483647
  if s == 0 then s = 1 end
  local r = {}
  local function step()
    s = (s * 48271) % 2147483647
    return s
  end
  -- integer in [lo, hi]
  function r.int(lo, hi)
    local span = hi - lo + 1
    if span <= 2147483646 then return lo + step() % span end
    -- wide spans (int64 tests): two steps give ~62 bits of fraction
    local f = ((step() - 1) + (step() - 1) / 2147483646) / 2147483646
    return lo + math.floor(f * span)
  end
  -- float in [0, 1)
  function r.float() return (step() - 1) / 2147483646 end
  -- byte string of length n over the given alphabet (default: all bytes)
  function r.bytes(n, alphabet)
    local t = {}
    for i = 1, n do
      if alphabet then
        local k = r.int(1, #alphabet)
        t[i] = alphabet:sub(k, k)
      else
        t[i] = string.char(r.int(0, 255))
      end
    end
    return table.concat(t)
  end
  function r.shuffle(a)
    for i = #a, 2, -1 do
      local j = r.int(1, i)
      a[i], a[j] = a[j], a[i]
    end
    return a
  end
  return r
end

--- helper.readme_examples(it, heading, min): one busted test per ```lua block
-- of README.md's "### <heading>" section (up to the next heading), each run
-- as written (its asserts are the checks), plus one that the section has
-- at least min examples. Call inside a describe block, passing busted's
-- `it` (busted gives it to spec files only, not to modules they require).
-- prepare(code) -> code, optional, edits an example just before it runs
-- (e.g. the endpoint of a server the spec started).
function helper.readme_examples(it, heading, min, prepare)
  local f = assert(io.open("README.md", "rb"))
  local text = f:read("*a")
  f:close()
  local a = assert(text:find("### " .. heading .. "\n", 1, true), "README has no ### " .. heading)
  local b = math.min(text:find("\n## ", a, true) or #text, text:find("\n### ", a + 1, true) or #text)
  local n = 0
  for code in text:sub(a, b):gmatch("```lua\n(.-)```") do
    n = n + 1
    local name = "=README " .. heading .. " example " .. n
    it("example " .. n .. " runs", function()
      local env = setmetatable({ print = function() end }, { __index = _G })
      if prepare then code = prepare(code) end
      local chunk
      if setfenv then
        chunk = assert(loadstring(code, name))
        setfenv(chunk, env)
      else
        chunk = assert(load(code, name, "t", env))
      end
      chunk()
    end)
  end
  it("has at least " .. min .. " examples", function()
    assert(n >= min, ("README ### %s has %d examples"):format(heading, n))
  end)
end

return helper
