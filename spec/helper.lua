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

return helper
