-- spec/search_date_histogram_spec.lua -- date_histogram and histogram
-- group-bys against a Lua model over random dates: intervals of months,
-- days and hours, time zones, offsets, missing values, a filter; a
-- single-valued DATE field (the index's value column) and an array one
-- (the value table), each document counted once per bucket. Bucket
-- numbers come from the C functions floor_div and ym_index; the model
-- uses os.date for calendar months.
local store = require "otskit.store"
local cjson = require "cjson.safe"

local ROUNDS = os.getenv("OTSKIT_QUICK") and 6 or 25
local DAY, HOUR = 86400000, 3600000
local function idiv(a, b) return math.floor(a / b) end

local function zone(ms)
  local s = ms < 0 and "-" or "+"
  ms = math.abs(ms)
  return ("%s%02d:%02d"):format(s, idiv(ms, HOUR), idiv(ms % HOUR, 60000))
end

describe("date_histogram vs a model", function()
  it("buckets random dates by months, days and hours in a time zone", function()
    for round = 1, ROUNDS do
      math.randomseed(round * 4243)
      local db = assert(store.open{})
      assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
      assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = {
        { field_name = "t", field_type = "DATE", enable_sort_and_agg = true },
        { field_name = "ta", field_type = "DATE", enable_sort_and_agg = true, is_array = true },
        { field_name = "n", field_type = "LONG", enable_sort_and_agg = true } } } })
      local docs = {}
      local base = 631152000000 + math.random(0, 40) * 365 * DAY -- 1990 .. 2030
      for i = 1, math.random(0, 80) do
        local d = { n = math.random(-50, 50) }
        if math.random() < 0.8 then d.t = base + math.random(0, idiv(800 * DAY, 1000)) * 1000 - 400 * DAY end
        if math.random() < 0.7 then
          d.ta = {}
          for j = 1, math.random(1, 3) do d.ta[j] = base + math.random(-100, 100) * (HOUR + 7) end
        end
        docs[i] = d
        assert(db:put_row{ table = "t", primary_key = { { "id", i } }, columns = { t = d.t, n = d.n,
          ta = d.ta and cjson.encode(d.ta) or nil } })
      end
      local unit = ({ "MONTH", "DAY", "HOUR" })[math.random(3)]
      local n = unit == "MONTH" and math.random(1, 3) or math.random(1, 5)
      local ivms = unit == "DAY" and n * DAY or n * HOUR
      local tz = (math.random(-12, 12) * 60 + ({ 0, 30 })[math.random(2)]) * 60000
      local off = unit == "MONTH" and 0 or math.random(0, 3) * HOUR
      local field = math.random() < 0.5 and "t" or "ta"
      local miss = field == "t" and math.random() < 0.4 and base or nil
      local lo = math.random() < 0.5 and math.random(-50, 50) or nil
      local g = { name = "h", type = "date_histogram", field_name = field, interval = { value = n, unit = unit },
        time_zone = zone(tz), min_doc_count = 1, missing = miss }
      if off ~= 0 then g.offset = { value = idiv(off, HOUR), unit = "HOUR" } end
      local res = assert(db:search{ table = "t", index = "ix", limit = 0, group_bys = { g },
        query = lo and { range = { field_name = "n", from = lo, include_lower = true } } or nil })
      -- the model
      local shift = tz - off
      local function bucket(ms)
        if unit ~= "MONTH" then return idiv(ms + shift, ivms) end
        local c = os.date("!*t", idiv(ms + shift, 1000))
        return idiv(c.year * 12 + c.month - 1, n)
      end
      local count = {}
      for _, d in ipairs(docs) do
        if not lo or d.n >= lo then
          local vs = field == "t" and { d.t or miss } or (d.ta or {})
          local seen = {}
          for _, v in ipairs(vs) do
            local b = bucket(v)
            if not seen[b] then seen[b] = true; count[b] = (count[b] or 0) + 1 end
          end
        end
      end
      local keys = {}
      for b in pairs(count) do keys[#keys + 1] = b end
      table.sort(keys)
      local items = res.group_bys[1].items
      assert.are.equal(#keys, #items, ("round %d %s x%d tz %s field %s"):format(round, unit, n, zone(tz), field))
      for i, b in ipairs(keys) do
        local it = items[i]
        assert.are.equal(count[b], it.row_count)
        -- the key: the bucket's first millisecond
        assert.are.equal(b, bucket(it.timestamp))
        if unit == "MONTH" then
          local c = os.date("!*t", idiv(it.timestamp + shift, 1000))
          assert(c.day == 1 and c.hour == 0 and c.min == 0 and c.sec == 0 and (it.timestamp + shift) % 1000 == 0)
        else
          assert.are.equal(0, (it.timestamp + shift) % ivms)
        end
      end
      db:close()
    end
  end)
end)
