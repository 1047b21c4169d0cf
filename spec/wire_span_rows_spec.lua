-- A GetRange answer's rows are decoded where they are in the body
-- (core.proto_decode_span, pb.decode_rows_at: no copy of the rows field),
-- and the decoder says whether every row's key is after (or before) the
-- one before it (wire.rows_order), which otskit.client.verify then does
-- not check again. Properties, both VMs (LuaJIT: the FFI rows and the Lua
-- C API's):
--   * on random bodies -- valid, truncated, bytes changed, fields added,
--     repeated or of another wire type -- wire.decode_response answers
--     what it answers with the rows field copied out first (the path
--     before), rows equal field by field before and after cells is read;
--     proto_decode_span's message is proto_decode's but for that field;
--   * the order flag agrees with verify.compare on every pair of
--     consecutive keys (whenever the flag says ordered, compare says so;
--     for keys of INTEGER / STRING / BINARY columns, the converse too);
--   * verify.rows with the flag answers what it answers without it.
local wire = require "otskit.wire"
local core = require("otskit.core").wire
local pb = require "otskit.wire.plainbuffer"
local verify = require "otskit.client.verify"
local rows_ffi = require "otskit.wire.rows_ffi"
local helper = require "helper"

local LUA54 = math.type ~= nil
local N = helper.trials(300)
local INF_MIN, INF_MAX = wire.INF_MIN, wire.INF_MAX

local function int(v) return LUA54 and math.tointeger(v) or v end
local BIGS = LUA54 and { math.maxinteger, math.mininteger, 9007199254740993, -9007199254740993 }
  or { "9223372036854775807", "-9223372036854775808", "9007199254740993", "-9007199254740993" }
local STRS = { "", "a", "ab", "a\0", "b", "\255", "ab\0c" }

-- a key value of column i: kinds per column fixed by `kinds` (so that most
-- keys compare), now and then another
local function key_value(r, kind)
  if r.int(1, 40) == 1 then kind = r.int(1, 3) end
  if kind == 1 then return STRS[r.int(1, #STRS)] end
  if kind == 2 then
    if r.int(1, 4) == 1 then local b = BIGS[r.int(1, #BIGS)]; return LUA54 and b or wire.integer(b) end
    return int(r.int(-3, 3))
  end
  return wire.binary(STRS[r.int(1, #STRS)])
end

local function random_keys(r)
  local ncol, kinds = r.int(1, 3), {}
  for i = 1, ncol do kinds[i] = r.int(1, 3) end
  local keys = {}
  for j = 1, r.int(0, 12) do
    local pk, n = {}, ncol
    if r.int(1, 30) == 1 then n = r.int(1, 3) end -- another length
    for i = 1, n do pk[i] = { (r.int(1, 40) == 1 and "x" or "k") .. i, key_value(r, kinds[i] or 1) } end
    keys[j] = pk
  end
  return keys
end

-- the keys as decoded (BINARY / big INTEGER values tagged), for sorting
local function decoded_key(pk)
  local rows = assert(wire.decode_rows(assert(wire.encode_pk(pk))))
  return rows[1].primary_key
end

local function arrange(r, keys)
  local k = r.int(1, 4)
  if k == 4 then return keys end -- as generated
  local dk = {}
  for i, pk in ipairs(keys) do dk[i] = { pk = pk, d = decoded_key(pk) } end
  local ok = pcall(table.sort, dk, function(a, b)
    local c = verify.compare(a.d, b.d)
    if c == nil then error("incomparable") end
    if k == 2 then return c == 1 end
    return c == -1
  end)
  if not ok then return keys end
  local out = {}
  for i, e in ipairs(dk) do out[i] = e.pk end
  if k == 3 and #out > 1 then -- one pair swapped
    local i = r.int(1, #out - 1)
    out[i], out[i + 1] = out[i + 1], out[i]
  end
  return out
end

local function random_rows(r, keys)
  local rows = {}
  for i, pk in ipairs(keys) do
    local cells = {}
    for j = 1, r.int(0, 3) do cells[j] = { "c" .. r.int(1, 3), r.int(0, 1) == 1 and r.bytes(r.int(0, 8)) or int(r.int(-9, 9)), int(1000 * j) } end
    rows[i] = { primary_key = pk, cells = cells }
  end
  return rows
end

-- protobuf pieces for odd bodies
local function varint(n)
  local t = {}
  repeat
    local b = n % 128
    n = (n - b) / 128
    t[#t + 1] = string.char(n > 0 and b + 128 or b)
  until n == 0
  return table.concat(t)
end
local function field(no, wt, payload)
  if wt == 2 then return varint(no * 8 + 2) .. varint(#payload) .. payload end
  return varint(no * 8 + wt) .. payload
end

local function random_body(r)
  local keys = arrange(r, random_keys(r))
  local res = { rows = random_rows(r, keys), consumed = { capacity_unit = { read = int(r.int(0, 9)), write = int(0) } } }
  if r.int(1, 3) == 1 then res.next_start_primary_key = { { "k1", int(r.int(-3, 3)) } } end
  local body = wire.encode_response("GetRange", res)
  if not body then return "" end
  local k = r.int(1, 12)
  if k == 1 then return body:sub(1, r.int(0, #body - 1)) end
  if k == 2 and #body > 0 then
    local at = r.int(1, #body)
    return body:sub(1, at - 1) .. string.char(r.int(0, 255)) .. body:sub(at + 1)
  end
  if k == 3 then return body .. field(r.int(7, 40), 0, varint(r.int(0, 300))) end -- an unknown field
  if k == 4 then return body .. field(2, 2, "") end -- rows twice
  if k == 5 then return body .. field(2, 0, varint(5)) end -- rows as a varint
  if k == 6 then return body .. field(4, 2, r.bytes(r.int(0, 5))) end -- next_token
  if k == 7 then return field(5, 0, varint(r.int(0, 3))) .. body end -- an enum first
  if k == 8 then return body .. varint(3 * 8 + 3) end -- a group
  if k == 9 then -- the rows field's length in 5 varint bytes: proto_decode's word
    return body .. field(9, 2, "") .. string.char(2 * 8 + 2, 0x80, 0x80, 0x80, 0x80, 0x00)
  end
  return body
end

local same = helper.deep_same

-- decode_response the way before: the rows field copied out of the body
local function decode_copied(body)
  local span = core.proto_decode_span
  core.proto_decode_span = function() return nil end
  local out = { pcall(wire.decode_response, "GetRange", body) }
  core.proto_decode_span = span
  return out
end

describe("otskit.wire GetRange rows read in the body (property)", function()
  it("decode_response answers what it answers with the rows copied out first", function()
    local r = helper.rng(5101)
    for trial = 1, N do
      local body = random_body(r)
      local a = { pcall(wire.decode_response, "GetRange", body) }
      local b = decode_copied(body)
      local where = ("trial %d"):format(trial)
      assert.equal(b[1], a[1], where .. ": raised")
      assert.equal(b[2] == nil, a[2] == nil, where .. ": " .. tostring(b[3] or a[3]))
      if a[2] == nil then
        assert.same({ b[3], b[4] }, { a[3], a[4] })
      else
        local x, y = a[2], b[2]
        assert.equal(#y.rows, #x.rows)
        for i = 1, #x.rows do
          local rx, ry = x.rows[i], y.rows[i]
          same(ry.primary_key, rx.primary_key, where .. " pk " .. i)
          same(ry.columns, rx.columns, where .. " columns " .. i)
          assert.equal(ry.deleted, rx.deleted)
          if trial % 5 == 0 then body = nil; collectgarbage() end -- the rows keep what they need
          same(ry.cells, rx.cells, where .. " cells " .. i)
        end
        x.rows, y.rows = nil, nil
        same(y, x, where)
      end
      -- the message, but for the rows field
      if body then
        local m, unknown, off, len = core.proto_decode_span("GetRangeResponse", body, 2)
        if m then
          local m2, unknown2 = core.proto_decode("GetRangeResponse", body)
          assert.truthy(m2, where .. ": span decoded what proto_decode refuses")
          assert.equal(m2.rows, body:sub(off + 1, off + len))
          assert.equal(unknown2 or false, unknown)
          assert.equal("", m.rows)
          m.rows, m2.rows = nil, nil
          same(m2, m, where .. " message")
        end
      end
    end
  end)

  it("the rows' order flag agrees with verify.compare", function()
    local r = helper.rng(5102)
    local seen = {}
    for trial = 1, N * 2 do
      local keys = arrange(r, random_keys(r))
      local bytes = assert(pb.encode_rows(random_rows(r, keys)))
      local pad = r.bytes(r.int(0, 6))
      local body = pad .. bytes .. r.bytes(r.int(0, 6), "\0\1\26")
      local rows = assert(pb.decode_rows_at(body, #pad, #bytes))
      local flag = wire.rows_order(rows)
      local flags = { flag }
      flags[#flags + 1] = select(2, core.decode_rows(body, 0, false, false, #pad, #bytes))
      if rows_ffi.decode_rows then flags[#flags + 1] = select(2, rows_ffi.decode_rows(body, 0, #pad, #bytes)) end
      for _, f in ipairs(flags) do assert.equal(flag, f, "trial " .. trial .. ": the decoders' flags") end
      local asc, desc = true, true
      for i, row in ipairs(rows) do
        if i > 1 then
          local c = verify.compare(row.primary_key, rows[i - 1].primary_key)
          if c ~= 1 then asc = false end
          if c ~= -1 then desc = false end
        end
      end
      if #rows < 2 then assert.equal(3, flag) end
      if flag == 1 or flag == 3 then assert.is_true(asc, "trial " .. trial .. ": flag says ascending") end
      if flag == 2 or flag == 3 then assert.is_true(desc, "trial " .. trial .. ": flag says descending") end
      -- keys of INTEGER / STRING / BINARY values (all the generator makes): the converse
      if asc then assert.is_true(flag == 1 or flag == 3, "trial " .. trial .. ": ascending, flag " .. flag) end
      if desc then assert.is_true(flag == 2 or flag == 3, "trial " .. trial .. ": descending, flag " .. flag) end
      seen[flag] = true
    end
    assert.truthy(seen[0] and seen[1] and seen[2] and seen[3], "every flag seen")
  end)

  it("verify.rows with the flag answers what it answers without it", function()
    local r = helper.rng(5103)
    local bound_vals = { INF_MIN, INF_MAX }
    local function bound(r2, ncol)
      local pk = {}
      for i = 1, ncol do
        local k = r2.int(1, 4)
        pk[i] = { "k" .. i, k <= 2 and bound_vals[k] or key_value(r2, r2.int(1, 3)) }
      end
      return pk
    end
    local passed, failed = 0, 0
    for trial = 1, N * 2 do
      local keys = arrange(r, random_keys(r))
      local res = { rows = random_rows(r, keys), consumed = { capacity_unit = { read = int(1), write = int(0) } } }
      if r.int(1, 3) == 1 and #keys > 0 then res.next_start_primary_key = keys[r.int(1, #keys)] end
      local body = wire.encode_response("GetRange", res)
      if body then
        local out = assert(wire.decode_response("GetRange", body))
        local flag = wire.rows_order(out.rows)
        assert.truthy(flag)
        local ncol = keys[1] and #keys[1] or 1
        local req = { table = "t", start = bound(r, ncol), stop = bound(r, ncol),
                      direction = r.int(1, 2) == 1 and "BACKWARD" or nil }
        local with = verify.rows("GetRange", req, out, flag)
        local without = verify.rows("GetRange", req, out)
        assert.same(without, with, "trial " .. trial)
        if with then failed = failed + 1 else passed = passed + 1 end
      end
    end
    assert.truthy(passed > 0 and failed > 0, ("answers passed %d, failed %d"):format(passed, failed))
  end)
end)
