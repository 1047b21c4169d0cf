-- otskit.wire: PlainBuffer bytes, checksums, messages and signatures.
-- The byte vectors are the official Node.js SDK's output (trailing zero
-- padding removed), cross-checked with an independent implementation.
local wire = require "otskit.wire"
local store = require "otskit.store"

local function hex(s) return (s:gsub(".", function(c) return ("%02x"):format(c:byte()) end)) end
local function unhex(h) return (h:gsub("..", function(x) return string.char(tonumber(x, 16)) end)) end
local LUA54 = math.type ~= nil

local V = {
  pk = "7500000001030403000000706b3105060000000301000000610a19030403000000706b3205090000000001000000000000000ae80973",
  inf_min = "7500000001030403000000706b310501000000090ac80945",
  inf_max = "7500000001030403000000706b3105010000000a0ac109f8",
  put = "7500000001030403000000706b3105060000000301000000610a19020304010000007305060000000301000000760a0d0304010000006905090000000007000000000000000a3d03040100000064050900000001000000000000f83f0aba03040100000062050200000002010a3e030401000000780507000000070200000001020a47097f",
  put_ts = "7500000001030403000000706b3105060000000301000000610a1902030401000000730506000000030100000076070068e5cf8b0100000a5a0916",
  delete = "7500000001030403000000706b3105060000000301000000610a190809ed",
  update = "7500000001030403000000706b3105060000000301000000610a19020304010000007305060000000301000000760a0d030401000000730603070068e5cf8b0100000a9c0304010000007406010af10304010000006e050900000000010000000000000006040ae309c9",
}
local TS = 1700000000000

describe("otskit.wire PlainBuffer", function()
  it("encodes the SDK's bytes", function()
    assert.equal(V.pk, hex(wire.encode_pk({ { "pk1", "a" }, { "pk2", 1 } })))
    assert.equal(V.inf_min, hex(wire.encode_pk({ { "pk1", wire.INF_MIN } })))
    assert.equal(V.inf_max, hex(wire.encode_pk({ { "pk1", wire.INF_MAX } })))
    local cols = { { "s", "v" }, { "i", 7 }, { "d", 1.5 }, { "b", true }, { "x", wire.binary("\1\2") } }
    assert.equal(V.put, hex(wire.encode_put({ { "pk1", "a" } }, cols)))
    assert.equal(V.put_ts, hex(wire.encode_put({ { "pk1", "a" } }, { { "s", "v", TS } })))
    assert.equal(V.delete, hex(wire.encode_delete({ { "pk1", "a" } })))
    assert.equal(V.update, hex(wire.encode_update({ { "pk1", "a" } },
      { { "PUT", "s", "v" }, { "DELETE", "s", TS }, { "DELETE_ALL", "t" }, { "INCREMENT", "n", 1 } })))
  end)

  it("encodes the store's update map like the op list", function()
    local up = { PUT = { s = "v" }, DELETE = { { "s", TS } }, DELETE_ALL = { "t" }, INCREMENT = { n = 1 } }
    assert.equal(V.update, hex(wire.encode_update({ { "pk1", "a" } }, up)))
  end)

  it("shares the store's sentinels", function()
    assert.equal(store.INF_MIN, wire.INF_MIN)
    assert.equal(store.INF_MAX, wire.INF_MAX)
    assert.equal(store.AUTO_INCREMENT, wire.AUTO_INCREMENT)
  end)

  it("decodes the SDK's bytes, padded or not", function()
    local rows = assert(wire.decode_rows(unhex(V.put .. "000000")))
    assert.equal(1, #rows)
    local r = rows[1]
    assert.same({ { "pk1", "a" } }, r.primary_key)
    assert.equal("v", r.columns.s)
    assert.equal(7, r.columns.i)
    assert.equal(1.5, r.columns.d)
    assert.equal(true, r.columns.b)
    assert.equal("\1\2", r.columns.x)                 -- the store's read shape:
    assert.same({ "x", "\1\2", nil, "BINARY" }, r.cells[5]) -- the type in cells[i][4]
    local typed = assert(wire.decode_rows(unhex(V.put), { typed = true }))[1]
    assert.equal("BINARY", typed.columns.x.type)        -- what the store's writes take
    assert.equal("\1\2", typed.columns.x.value)
    assert.equal(V.put, hex(wire.encode_put(r.primary_key, r.cells)))
    assert.equal(V.put, hex(wire.encode_put(typed.primary_key, typed.cells)))
    local u = assert(wire.decode_rows(unhex(V.update .. "0000000000")))[1]
    assert.same({ "s", "v" }, { u.cells[1][1], u.cells[1][2] })
    assert.equal("DELETE", u.cells[2].op)
    assert.equal(TS, u.cells[2][3])
    assert.equal("DELETE_ALL", u.cells[3].op)
    assert.equal("INCREMENT", u.cells[4].op)
    assert.is_true(assert(wire.decode_rows(unhex(V.delete)))[1].deleted)
    assert.equal(wire.INF_MIN, assert(wire.decode_rows(unhex(V.inf_min .. "00")))[1].primary_key[1][2])
  end)

  it("encodes many rows into one buffer, as a GetRange response carries them", function()
    local core = require("otskit.core").wire
    local r1 = { primary_key = { { "pk1", "a" } }, cells = { { "s", "v", TS, "STRING" }, { "x", "\1", TS, "BINARY" } } }
    local r2 = { primary_key = { { "pk1", "b" } }, columns = { n = 1 } }
    local r3 = { primary_key = { { "pk1", "c" } } }
    local want = "\117\0\0\0" .. wire.encode_put(r1.primary_key, r1.cells):sub(5)
      .. wire.encode_put(r2.primary_key, r2.columns):sub(5) .. wire.encode_put(r3.primary_key, {}):sub(5)
    assert.equal(want, core.encode_rows({ r1, r2, r3 }))
    assert.equal("", core.encode_rows({}))
    local _, _, code = core.encode_rows({ { primary_key = { { "pk1", {} } } } })
    assert.equal("OTSParameterInvalid", code)
  end)

  it("measures rows up to the last checksum: zero padding after it is not rows", function()
    local core = require("otskit.core").wire
    local rows = core.encode_rows({ { primary_key = { { "pk1", "a" } }, columns = { n = 1 } },
                                    { primary_key = { { "pk1", "b" } } } })
    assert.same({ #rows }, { core.rows_length(rows) })
    assert.same({ #rows }, { core.rows_length(rows .. "\0\0\0") })
    assert.same({ 0 }, { core.rows_length("") })
    assert.same({ 4 }, { core.rows_length("\117\0\0\0") })
    assert.same({ nil, "PlainBuffer: not a PlainBuffer (bad header)", "CorruptPlainBuffer" }, { core.rows_length("abc") })
    assert.same({ nil, "PlainBuffer: trailing bytes after the last row at byte " .. #rows, "CorruptPlainBuffer" },
      { core.rows_length(rows .. "\0\7") })
  end)

  it("decodes nothing from an empty buffer or a bare header", function()
    assert.same({}, wire.decode_rows(""))
    assert.same({}, wire.decode_rows("\117\0\0\0"))
  end)

  it("refuses every corruption of a valid buffer with nil, msg, code", function()
    local good = unhex(V.put_ts)
    for i = 1, #good do
      for _, delta in ipairs({ 1, 0x80 }) do
        local b = good:sub(1, i - 1) .. string.char((good:byte(i) + delta) % 256) .. good:sub(i + 1)
        local rows, msg, code = wire.decode_rows(b)
        if rows then
          -- a flipped byte that still decodes must change nothing it reports
          error("byte " .. i .. " +" .. delta .. " decoded: " .. hex(b))
        end
        assert.equal("CorruptPlainBuffer", code)
        assert.is_string(msg)
      end
    end
    for n = 1, #good - 1 do -- (n = 4: the bare header, no rows)
      local rows, _, code = wire.decode_rows(good:sub(1, n))
      if n == 4 then assert.same({}, rows) else
        assert.is_nil(rows)
        assert.equal("CorruptPlainBuffer", code)
      end
    end
    local _, msg = wire.decode_rows(good .. "\0\1")
    assert.matches("trailing", msg)
  end)
end)

describe("otskit.wire signatures", function()
  it("signs a request like the SDKs (V2)", function()
    assert.equal("PhBdCW/P5qyzAODR18XYxH+Qhno=", wire.sign_request("SK", "GetRow", {
      ["x-ots-accesskeyid"] = "AK", ["x-ots-apiversion"] = "2015-12-31", ["x-ots-contentmd5"] = "MD5==",
      ["x-ots-date"] = "2024-01-02T03:04:05.678Z", ["X-OTS-InstanceName"] = " inst ",
      ["x-ots-signature"] = "ignored", host = "ignored",
    }))
  end)

  it("signs responses like the service", function()
    local h = { ["x-ots-contentmd5"] = "IjpgaUwGKkfuEgyLaDq1mg==", ["x-ots-contenttype"] = "protocol buffer",
                ["x-ots-date"] = "Sat, 01 Nov 2014 08:49:24 GMT", ["x-ots-requestid"] = "000506c8-30ac-5974-1388-990a05bf1034",
                authorization = "ignored" }
    assert.equal("LQ1pIcPfC9NHZWMR9vrydXG4U4A=", wire.sign_response("W8foPaZ53CB61C5H8JnTURsdXekWua", "ListTable", h))
  end)

  it("computes content MD5 and compares in constant time", function()
    assert.equal("1B2M2Y8AsgTpgAmY7PhCfg==", wire.content_md5(""))
    assert.is_true(wire.equal("abc", "abc"))
    assert.is_false(wire.equal("abc", "abd"))
    assert.is_false(wire.equal("abc", "ab"))
  end)

  it("formats and parses x-ots-date", function()
    assert.equal("2024-01-02T03:04:05.678Z", wire.date(1704164645678))
    assert.equal(1704164645678, wire.parse_date("2024-01-02T03:04:05.678Z"))
    assert.equal(1704164645000, wire.parse_date("2024-01-02T03:04:05Z"))
    assert.equal(1600250575384, wire.parse_date("2020-09-16T10:02:55.384181Z"))
    -- the Go SDK's layout prints month, day, hour where the fraction goes
    assert.equal(1795442709112, wire.parse_date("2026-11-23T14:05:09.11232Z"))
    for _, bad in ipairs({ "2024-01-02T03:04:05.Z", "2024-13-02T03:04:05Z", "2023-02-29T00:00:00Z",
                           "2024-01-02 03:04:05Z", "Sat, 01 Nov 2014 08:49:24 GMT", "" }) do
      assert.is_nil(wire.parse_date(bad), bad)
    end
    for _ = 1, 200 do
      local ms = math.random(0, 4102444800000)
      if LUA54 then ms = math.tointeger(ms) end
      assert.equal(ms, wire.parse_date(wire.date(ms)))
    end
  end)
end)
