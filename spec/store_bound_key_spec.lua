-- store.schema.bound_key (get_range's encoded bounds) against the
-- implementation it replaced (kept here): the same bytes for random keys
-- of 1 to 7 columns with INF_MIN / INF_MAX at random positions, on the
-- packer key.pack uses (LuaJIT: the FFI one) and the C API's.
local schema = require "otskit.store.schema"
local base = require "otskit.store.base"
local keycodec = require "otskit.key"

local INF_MIN, INF_MAX = base.INF_MIN, base.INF_MAX
local INF = { [INF_MIN] = true, [INF_MAX] = true }
local QUICK = os.getenv("OTSKIT_QUICK") == "1"

-- the bound_key of session 7 (the loop), on the C API's packer
local function old_bound_key(vals)
  local pre, inf = {}, nil
  for i = 1, #vals do
    local v = vals[i]
    if INF[v] then inf = v; break end
    pre[i] = v
  end
  local pack = keycodec._capi.pack
  if inf == INF_MAX then return pack(pre) .. "\255" end
  return pack(pre)
end

local function rand_value()
  local r = math.random(1, 6)
  if r == 1 then return math.random(-1000, 1000) end
  if r == 2 then return math.random(0, 2^31) * 4096 end
  if r == 3 then return "" end
  if r == 4 then
    local t = {}
    for i = 1, math.random(1, 12) do t[i] = string.char(math.random(0, 255)) end
    return table.concat(t)
  end
  if r == 5 then return INF_MIN end
  return INF_MAX
end

describe("store.schema.bound_key", function()
  it("encodes every key as the loop it replaced did", function()
    math.randomseed(30)
    local n = QUICK and 2000 or 20000
    for _ = 1, n do
      local w = math.random(1, 7)
      local vals = {}
      for i = 1, w do vals[i] = rand_value() end
      local got, want = schema.bound_key(vals), old_bound_key(vals)
      if got ~= want then
        local shown = {}
        for i, v in ipairs(vals) do shown[i] = v == INF_MIN and "INF_MIN" or v == INF_MAX and "INF_MAX" or ("%q"):format(v) end
        error(("bound_key{%s}: %q, the loop: %q"):format(table.concat(shown, ", "), got, want))
      end
    end
  end)

  it("puts INF_MAX above and INF_MIN below every key of the prefix", function()
    assert.equal(keycodec._capi.pack({ 1 }), schema.bound_key({ 1, INF_MIN, INF_MAX }))
    assert.equal(keycodec._capi.pack({ 1 }) .. "\255", schema.bound_key({ 1, INF_MAX, INF_MIN }))
    assert.equal(keycodec._capi.pack({}), schema.bound_key({ INF_MIN }))
    assert.equal(keycodec._capi.pack({}) .. "\255", schema.bound_key({ INF_MAX }))
  end)
end)
