-- spec/support/pbgen.lua -- random tables, keys and values for the
-- properties that compare a PlainBuffer fast path of otskit.store
-- (put_row_pb, get_row_pb, get_range_pb) with the general one
-- (spec/store_put_pb_spec.lua, spec/store_stream_spec.lua). r is a
-- helper.rng source; the draws are made in a fixed order so a seed replays.
local assert = require "luassert"
local store = require "otskit.store"
local wire = require "otskit.wire"

local gen = {}

local LUA54 = math.type ~= nil
gen.ASCII = "abcxyz\0\1 -~"
gen.NOW = 1700000000 -- the stores' clock (s)
gen.PKT = { "INTEGER", "STRING", "BINARY" }
local ASCII, NOW, PKT = gen.ASCII, gen.NOW, gen.PKT

function gen.int(v) return LUA54 and math.tointeger(v) or v end
local int = gen.int

-- an int64 past 2^53
function gen.big(r)
  local s = r.int(0, 1) == 1 and "-" or ""
  return wire.integer(s .. "46116860184273879" .. r.int(10, 99))
end
local big = gen.big

--- gen.value(r[, loose]): a column value of every type; loose adds
-- strings that are not UTF-8 (now and then) and a two-byte UTF-8 one.
function gen.value(r, loose)
  local k = r.int(1, loose and 10 or 8)
  if k == 1 then return r.bytes(r.int(0, 30), ASCII) end
  if k == 2 then return int(r.int(-2147483647, 2147483647) * r.int(1, 4000)) end
  if k == 3 then return (r.int(-1e6, 1e6) + 0.5) * 2 ^ r.int(-20, 20) end
  if k == 4 then return r.int(0, 1) == 1 end
  if k == 5 then return wire.binary(r.bytes(r.int(0, 20))) end
  if k == 6 then return wire.double(r.int(-1000, 1000) + 0.0) end
  if k == 7 then return big(r) end
  if loose and k == 8 then
    return r.int(1, 4) == 1 and "\255\254" .. r.bytes(r.int(0, 3), ASCII) or r.bytes(r.int(0, 3), ASCII)
  end
  if loose and k == 9 then return "h\195\169" end
  return -0.0
end

--- gen.key_value(r, ty[, loose]): a primary key value of type ty; loose
-- adds STRING keys that are not UTF-8 and BINARY keys given as strings.
function gen.key_value(r, ty, loose)
  if ty == "INTEGER" then
    if r.int(1, 8) == 1 then return big(r) end
    return int(r.int(-20, 20))
  end
  local s = r.bytes(r.int(0, 4), ty == "STRING" and ASCII or nil)
  if loose then
    if r.int(1, 30) == 1 then s = "\255" .. s end
    if ty == "BINARY" and r.int(1, 3) > 1 then return wire.binary(s) end
    return s
  end
  if ty == "BINARY" then return wire.binary(s) end
  return s
end

--- gen.columns(r, names): 0-5 columns of random values named from
-- names[1..4], some with a timestamp of the last seconds before NOW or
-- about a day before (a time to live's edge).
function gen.columns(r, names)
  local cols = {}
  for _ = 1, r.int(0, 5) do
    local c = { names[r.int(1, 4)], gen.value(r) }
    local age = r.int(1, 4) == 1 and 86400 + r.int(-3, 3) or r.int(0, 8)
    if r.int(1, 2) == 1 then c[3] = (NOW - age) * 1000 end
    cols[#cols + 1] = c
  end
  return cols
end

--- gen.table(r[, auto]) -> t, create: 1-4 key columns k1.. of random
-- types (t[i] = { name, type, auto }), max_versions 1-4, sometimes a time
-- to live of a day, split_rows / split_load / one partition; auto: the
-- second key column is sometimes AUTO_INCREMENT.
function gen.table(r, auto)
  local t = {}
  for i = 1, r.int(1, 4) do t[i] = { name = "k" .. i, type = PKT[r.int(1, 3)] } end
  if auto and #t > 1 and r.int(1, 4) == 1 then t[2].type, t[2].auto = "INTEGER", true end
  local create = { name = "t", primary_key = {}, options = { max_versions = r.int(1, 4), max_time_deviation = 200000 } }
  for i, c in ipairs(t) do create.primary_key[i] = { c.name, c.type, c.auto and "AUTO_INCREMENT" or nil } end
  if r.int(1, 3) == 1 then create.options.time_to_live = 86400 end
  local part = r.int(1, 3)
  if part == 1 then create.partition = { split_rows = r.int(3, 12) }
  elseif part == 2 then create.partition = { split_load = r.int(5, 40) } end
  return t, create
end

--- gen.stores(create[, page]) -> A, B: two in-memory stores on the
-- clock NOW, each with the table created.
function gen.stores(create, page)
  local function open()
    local db = assert(store.open{ path = ":memory:", clock = function() return NOW end, page = page })
    assert(db:create_table(create))
    return db
  end
  return open(), open()
end

--- gen.same(api, a, am, ac, b, bm, bc, what): the same answer (the
-- response bytes otskit.wire encodes for api), or the same failure triple.
function gen.same(api, a, am, ac, b, bm, bc, what)
  if a == nil or b == nil then
    assert.are.same({ tostring(a), am, ac }, { tostring(b), bm, bc }, what)
    return
  end
  local ea = assert(wire.encode_response(api, a))
  local eb = assert(wire.encode_response(api, b))
  if ea ~= eb then
    local i = 1
    while ea:byte(i) == eb:byte(i) do i = i + 1 end
    error(("%s: answer bytes differ (%d vs %d bytes, first at %d)"):format(what, #ea, #eb, i))
  end
end

return gen
