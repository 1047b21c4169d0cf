-- spec/search_decay_spec.lua -- functions_score decay on DATE fields (a
-- DATE param: origin in ms or a date string, scale and offset in fixed
-- units) and on GEO_POINT fields (a GEO param: origin "lat,lon", metres)
-- against a Lua model over random documents (arrays, multi-value modes,
-- GAUSS / EXP / LINEAR), in the store and through the wire; bad params
-- refused.
local store = require "otskit.store"
local wire = require "otskit.wire"
local cjson = require "cjson.safe"
local helper = require "helper"

local UNIT = { MILLISECOND = 1, SECOND = 1000, MINUTE = 60000, HOUR = 3600000, DAY = 86400000, WEEK = 604800000 }
-- date strings and their milliseconds since the epoch (UTC)
local ORIGINS = { { "2017-05-10 00:00:01", 1494374401000 }, { "1970-01-02 00:00:00", 86400000 },
  { "2024-02-29 12:30:00", 1709209800000 } }

local function haversine(lat1, lon1, lat2, lon2)
  local r, rad = 6371008.8, math.pi / 180
  local dlat, dlon = (lat2 - lat1) * rad, (lon2 - lon1) * rad
  local a = math.sin(dlat / 2) ^ 2 + math.cos(lat1 * rad) * math.cos(lat2 * rad) * math.sin(dlon / 2) ^ 2
  if a > 1 then a = 1 end
  return 2 * r * math.asin(math.sqrt(a))
end

local function curve(fn, dist, scale, decay)
  if fn == "LINEAR" then local s2 = scale / (1 - decay); return math.max(0, (s2 - dist) / s2)
  elseif fn == "EXP" then return math.exp(math.log(decay) / scale * dist) end
  local sig2 = -scale * scale / (2 * math.log(decay))
  return math.exp(-dist * dist / (2 * sig2))
end

local function pick(dists, mode)
  local v
  for _, x in ipairs(dists) do
    if mode == "MAX" then v = math.max(v or x, x)
    elseif mode == "MIN" then v = math.min(v or x, x)
    else v = (v or 0) + x end
  end
  if mode == "AVG" then v = v / #dists end
  return v
end

local function fresh()
  local db = assert(store.open{})
  assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
  assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = {
    { field_name = "d", field_type = "DATE", is_array = true, date_formats = { "yyyy-MM-dd HH:mm:ss" } },
    { field_name = "g", field_type = "GEO_POINT", is_array = true },
    { field_name = "x", field_type = "DOUBLE" } } } })
  return db
end

describe("functions_score decay on DATE and GEO_POINT vs a Lua model", function()
  it("scores each row as the model does", function()
    local r = helper.rng(4242)
    for round = 1, helper.trials(40) do
      local db = fresh()
      local docs = {}
      local base = ORIGINS[r.int(1, #ORIGINS)][2]
      for id = 1, r.int(1, 25) do
        local doc = {}
        if r.int(1, 5) > 1 then
          doc.d = {}
          for j = 1, r.int(1, 3) do doc.d[j] = base + r.int(-30, 30) * 3600000 + r.int(0, 999) end
        end
        if r.int(1, 5) > 1 then
          doc.g = {}
          for j = 1, r.int(1, 3) do doc.g[j] = { r.int(-8000, 8000) / 100, r.int(-17000, 17000) / 100 } end
        end
        docs[id] = doc
        local gs
        if doc.g then
          gs = {}
          for j, p in ipairs(doc.g) do gs[j] = ("%s,%s"):format(p[1], p[2]) end
        end
        assert(db:put_row{ table = "t", primary_key = { { "id", id } }, columns = { x = 1.0,
          d = doc.d and cjson.encode(doc.d) or nil, g = gs and cjson.encode(gs) or nil } })
      end
      local fn = ({ "GAUSS", "EXP", "LINEAR" })[r.int(1, 3)]
      local mode = ({ "MIN", "MAX", "AVG", "SUM" })[r.int(1, 4)]
      local decay = r.int(1, 9) / 10
      local f, model
      if round % 2 == 1 then
        local unit = ({ "HOUR", "DAY", "MINUTE", "WEEK", "SECOND" })[r.int(1, 5)]
        local sv, ov = r.int(1, 20), r.int(0, 3)
        local o = ORIGINS[r.int(1, #ORIGINS)]
        local origin = r.int(1, 2) == 1 and o[1] or o[2]
        if o[2] ~= base and r.int(1, 2) == 1 then origin = base end
        local oms = type(origin) == "string" and o[2] or origin
        f = { decay = { field_name = "d", math_function = fn, multi_value_mode = mode, decay = decay,
          param = { origin = origin, scale = { value = sv, unit = unit }, offset = ov > 0 and { value = ov, unit = unit } or nil } } }
        model = function(doc)
          if not doc.d then return 1 end
          local ds = {}
          for j, v in ipairs(doc.d) do ds[j] = math.abs(v - oms) end
          return curve(fn, math.max(0, pick(ds, mode) - ov * UNIT[unit]), sv * UNIT[unit], decay)
        end
      else
        local lat, lon = r.int(-6000, 6000) / 100, r.int(-15000, 15000) / 100
        local scale, off = r.int(1, 5000) * 1000, r.int(0, 3) * 100000
        f = { decay = { field_name = "g", math_function = fn, multi_value_mode = mode, decay = decay,
          param_type = r.int(1, 2) == 1 and "GEO" or nil, param = { origin = ("%s,%s"):format(lat, lon), scale = scale, offset = off } } }
        model = function(doc)
          if not doc.g then return 1 end
          local ds = {}
          for j, p in ipairs(doc.g) do ds[j] = haversine(p[1], p[2], lat, lon) end
          return curve(fn, math.max(0, pick(ds, mode) - off), scale, decay)
        end
      end
      local req = { table = "t", index = "ix", limit = 100, query = { functions_score = { query = { match_all = {} },
        functions = { f }, combine_mode = "REPLACE" } }, sort = { { score_sort = { order = "DESC" } } } }
      if round % 4 < 2 then
        req = assert(wire.decode_request("Search", assert(wire.encode_request("Search", req))))
      end
      local res = assert(db:search(req))
      assert.equal(#docs, #res.rows)
      for i, row in ipairs(res.rows) do
        local id = row.primary_key[1][2]
        local want, got = model(docs[id]), res.search_hits[i].score
        assert(math.abs(got - want) <= 1e-6 * math.max(1, math.abs(want)),
          ("row %d: %s, the model %s (%s; %s)"):format(id, got, want, cjson.encode(f), cjson.encode(docs[id])))
      end
      db:close()
    end
  end)

  it("refuses a param that does not fit the field", function()
    local db = fresh()
    local function s(decay)
      decay.math_function = decay.math_function or "GAUSS"
      return db:search{ table = "t", index = "ix", query = { functions_score = { query = { match_all = {} },
        functions = { { decay = decay } } } } }
    end
    local function fails(what, res, msg, code)
      assert.is_nil(res)
      assert.equal("OTSParameterInvalid", code)
      assert.is_truthy(msg:find(what, 1, true), msg)
    end
    fails("fixed length", s{ field_name = "d", param = { origin = 0, scale = { value = 1, unit = "MONTH" } } })
    fails("value must be > 0", s{ field_name = "d", param = { origin = 0, scale = { value = 0, unit = "DAY" } } })
    fails("date_formats", s{ field_name = "d", param = { origin = "10/05/2017", scale = { value = 1, unit = "DAY" } } })
    fails("DATE field", s{ field_name = "x", param_type = "DATE", param = { origin = 0, scale = { value = 1, unit = "DAY" } } })
    fails("GEO_POINT field", s{ field_name = "x", param_type = "GEO", param = { origin = "0,0", scale = 1 } })
    fails("lat,lon", s{ field_name = "g", param = { origin = "91,0", scale = 1 } })
    fails("metres > 0", s{ field_name = "g", param = { origin = "1,2", scale = 0 } })
    fails("metres >= 0", s{ field_name = "g", param = { origin = "1,2", scale = 10, offset = -1 } })
    fails("param_type", s{ field_name = "x", param_type = "TEXT", param = { origin = 1, scale = 1 } })
    -- a numeric param on a DATE field: milliseconds
    assert(s{ field_name = "d", param = { origin = 0, scale = 86400000 } })
    db:close()
  end)
end)
