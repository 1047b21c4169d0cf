-- The spliced and hot/cold patterns page exactly through pages with 0
-- rows and a next key, as the service may answer (and `otskit serve
-- --faults empty=F` does): every page sequence read through such a store
-- equals the one read through the plain store (random data and limits).
local store = require "otskit.store"
local helper = require "helper"
local spliced = require "otskit.patterns.spliced"
local hotcold = require "otskit.patterns.hotcold"

local SECRET = "at least 16 bytes of secret"

-- every row of a paged read: read(cursor) -> rows, cursor
local function all_pages(read)
  local out, cursor, pages = {}, nil, 0
  repeat
    local rows, c, code = read(cursor)
    assert(rows, tostring(c) .. " " .. tostring(code))
    for _, row in ipairs(rows) do out[#out + 1] = row end
    cursor = c
    pages = pages + 1
    assert(pages < 10000, "the pager does not end")
  until not cursor
  return out
end

describe("patterns through pages with 0 rows and a next key", function()
  it("spliced: range reads equal the plain store's (random)", function()
    local r = helper.rng(41)
    local empties = 0
    -- quick mode: fewer trials, but drawn until some page came back empty
    for trial = 1, 10 do
      local db = assert(store.open{})
      local proxy, count = helper.empty_store(db, r)
      local function new(s)
        return spliced.new{ store = s, table = "p", secret = SECRET,
          splice = { sep = ",", { "DeviceID", "int", width = 6 }, { "SellerID", "string", charset = "alnum" } },
          rest = { { "Seq", "INTEGER" } } }
      end
      local plain, faulty = new(db), new(proxy)
      assert(plain:create())
      local rows = {}
      for i = 1, r.int(1, 300) do
        rows[#rows + 1] = { { r.int(0, 99), "s" .. r.int(0, 3) }, { i }, { v = i } }
      end
      assert(plain:put_many(rows))
      local lo = r.int(0, 60)
      local q = { from = { lo }, to = { lo + r.int(1, 60) }, limit = r.int(1, 40) }
      local function reader(p)
        return function(cursor)
          return p:range{ from = q.from, to = q.to, limit = q.limit, cursor = cursor }
        end
      end
      local want, got = all_pages(reader(plain)), all_pages(reader(faulty))
      assert.same(want, got)
      empties = empties + count()
      if trial >= helper.trials(10) and empties > 0 then break end
    end
    assert.is_true(empties > 0)
  end)

  it("hotcold: reads across month tables equal the plain store's (random)", function()
    local r = helper.rng(43)
    local empties = 0
    -- quick mode: fewer trials, but drawn until some page came back empty
    for trial = 1, 6 do
      local db = assert(store.open{})
      local proxy, count = helper.empty_store(db, r)
      local function new(s)
        return hotcold.new{ store = s, prefix = "ev", first = "2026-01", last = "2026-04", secret = SECRET }
      end
      local plain, faulty = new(db), new(proxy)
      assert(plain:create())
      local t0, t1 = hotcold.month_start("2026-01"), hotcold.month_start("2026-05")
      for i = 1, r.int(1, 200) do
        assert(plain:put("dev-" .. r.int(1, 2), r.int(t0, t1 - 1), tostring(i), { v = i }))
      end
      local from = r.int(t0, t1 - 1)
      local q = { key = "dev-1", from = from, to = r.int(from + 1, t1), limit = r.int(1, 30) }
      local function reader(p)
        return function(cursor)
          return p:read{ key = q.key, from = q.from, to = q.to, limit = q.limit, cursor = cursor }
        end
      end
      local want, got = all_pages(reader(plain)), all_pages(reader(faulty))
      assert.same(want, got)
      empties = empties + count()
      if trial >= helper.trials(6) and empties > 0 then break end
    end
    assert.is_true(empties > 0)
  end)
end)
