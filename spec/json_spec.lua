-- otskit.json: stable JSON text (sorted keys, exact integers, arrays kept
-- as arrays) that reads back to the value written.
local json = require "otskit.json"

local function random_value(depth)
  local k = math.random(depth > 3 and 4 or 7)
  if k == 1 then return math.random(-2 ^ 40, 2 ^ 40)
  elseif k == 2 then return (math.random() - 0.5) * 10 ^ math.random(-5, 15)
  elseif k == 3 then
    local b = {}
    for i = 1, math.random(0, 12) do b[i] = string.char(math.random(0, 255)) end
    return (table.concat(b):gsub("[\128-\255]", "e"))
  elseif k == 4 then return math.random(2) == 1
  elseif k == 5 then
    local t = json.array()
    for i = 1, math.random(1, 4) do t[i] = random_value(depth + 1) end
    return t
  else
    local t = {}
    for _ = 1, math.random(1, 4) do t["k" .. math.random(100)] = random_value(depth + 1) end
    return t
  end
end

local function same(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) ~= "table" then return a == b end
  for k, v in pairs(a) do if not same(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

describe("otskit.json", function()
  it("reads back every value it writes, integers as integers, on any indent", function()
    math.randomseed(7)
    for trial = 1, 300 do
      local v = random_value(0)
      for _, opts in ipairs { {}, { indent = "  " } } do
        local text = json.encode(v, opts)
        local back, err = json.decode(text)
        assert.is_nil(err, text)
        assert.is_true(same(v, back), text)
        if math.type then
          local function ints(x, y)
            if type(x) == "table" then for key, e in pairs(x) do ints(e, y[key]) end
            elseif math.type(x) == "integer" then assert.equal("integer", math.type(y), text) end
          end
          ints(v, back)
        end
        assert.equal(text, json.encode(back, opts), "trial " .. trial)
      end
    end
  end)

  it("writes keys sorted, integers exactly and empty lists as marked", function()
    assert.equal('{"a":[],"b":{},"c":3,"d":[1,2.5]}',
      json.encode { d = { 1, 2.5 }, c = 3.0, b = {}, a = json.array() })
    assert.equal('{"b":[]}', json.encode({ b = {} }, { empty_array = true }))
    assert.equal("[null,null,0.333]", json.encode({ 0 / 0, math.huge, 1 / 3 }, { digits = 3 }))
    assert.equal('"a\\n\\u0001\\"/"', json.encode("a\n\1\"/"))
  end)

  it("refuses what JSON cannot hold and options it does not know", function()
    assert.has_error(function() json.encode({ f = print }) end, "otskit.json: cannot encode a function")
    assert.has_error(function() json.encode({ [true] = 1 }) end)
    local t = {}; t.t = t
    assert.has_error(function() json.encode(t) end, "otskit.json: nesting deeper than 64 (a cycle?)")
    assert.has_error(function() json.encode(1, { pretty = true }) end)
    assert.has_error(function() json.encode(1, { digits = 40 }) end)
    local v, err = json.decode("{bad")
    assert.is_nil(v); assert.matches("^invalid JSON", err)
    assert.is_nil((json.decode("NaN")))
    assert.is_nil((json.decode(nil)))
  end)
end)
