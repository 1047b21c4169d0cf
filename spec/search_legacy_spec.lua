-- spec/search_legacy_spec.lua -- a search index made before its value
-- tables (num, kw) held each value's row key: reopened, it answers and
-- follows writes exactly as an index made now over the same rows (random
-- rows, queries, sorts and pages on both).
local store = require "otskit.store"
local sql = require("otskit.core").sql

local FIELDS = {
  { field_name = "l", field_type = "LONG", enable_sort_and_agg = true },
  { field_name = "k", field_type = "KEYWORD", enable_sort_and_agg = true },
  { field_name = "ka", field_type = "KEYWORD", is_array = true },
  { field_name = "b", field_type = "BOOLEAN" },
}

local function rm(path) os.remove(path); os.remove(path .. "-wal"); os.remove(path .. "-shm") end

describe("otskit.store search index made before num/kw held the row key", function()
  it("answers and follows writes as a new index does", function()
    local path = os.tmpname()
    rm(path)
    local seed = 11
    local function rnd(n) seed = (seed * 48271) % 2147483647; return seed % n end
    local function row(i)
      return { l = rnd(50), k = "k" .. rnd(8), ka = ('["a%d","a%d"]'):format(rnd(5), rnd(5)), b = rnd(2) == 1 }
    end
    local db = assert(store.open{ path = path })
    assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
    for i = 1, 120 do assert(db:put_row{ table = "t", primary_key = { { "id", rnd(1000) } }, columns = row(i) }) end
    assert(db:create_search_index{ table = "t", index = "old", schema = { field_schemas = FIELDS } })
    -- the earlier layout: (f, v, doc), no pk
    local p = "s" .. sql.rows(db.h, "SELECT id FROM s_meta WHERE idx = 'old'")[1][1] .. "_"
    for _, k in ipairs({ "num", "kw" }) do
      assert(sql.exec(db.h, ([[BEGIN;
CREATE TABLE %s%s_x (f INTEGER, v, doc INTEGER, PRIMARY KEY (f, v, doc)) WITHOUT ROWID;
INSERT INTO %s%s_x SELECT f, v, doc FROM %s%s;
DROP TABLE %s%s;
ALTER TABLE %s%s_x RENAME TO %s%s;
CREATE INDEX %s%s_doc ON %s%s(doc, f, v);
COMMIT;]]):gsub("%%s%%s", p .. k)))
    end
    db:close()
    db = assert(store.open{ path = path })
    assert(db:create_search_index{ table = "t", index = "new", schema = { field_schemas = FIELDS } })
    local function same(what)
      for _ = 1, 25 do
        local qs = {
          { term = { field_name = "k", term = "k" .. rnd(8) } },
          { range = { field_name = "l", from = rnd(50), to = rnd(50) + 10, include_lower = true } },
          { terms = { field_name = "ka", terms = { "a" .. rnd(5), "a" .. rnd(5) } } },
          { bool = { must = { { term = { field_name = "k", term = "k" .. rnd(8) } } },
            must_not = { { term = { field_name = "b", term = true } } } } },
        }
        local q = qs[rnd(#qs) + 1]
        local sorts = { nil, { { field_sort = { field_name = "l", order = "DESC" } } }, { { pk_sort = { order = "DESC" } } } }
        local s = sorts[rnd(3) + 1]
        local pages = {}
        for _, ix in ipairs({ "old", "new" }) do
          local got, token = {}, nil
          repeat
            local req = { table = "t", index = ix, query = q, limit = 1 + rnd(7), get_total_count = true, token = token }
            if not token then req.sort = s end
            local res = assert(db:search(req))
            got.total = res.total_count
            for _, r in ipairs(res.rows) do got[#got + 1] = r.primary_key[1][2] end
            token = res.next_token
          until not token
          pages[ix] = got
        end
        assert.same(pages.new, pages.old, what)
        assert.is_true(pages.old.total == #pages.old)
      end
    end
    same("reopened")
    for i = 1, 60 do -- writes follow on both
      local id = rnd(1000)
      local op = rnd(3)
      if op == 0 then assert(db:delete_row{ table = "t", primary_key = { { "id", id } } })
      elseif op == 1 then assert(db:put_row{ table = "t", primary_key = { { "id", id } }, columns = row(i) })
      else assert(db:update_row{ table = "t", primary_key = { { "id", id } }, update = { PUT = { k = "k" .. rnd(8) } } }) end
    end
    same("after writes")
    db:close()
    rm(path)
  end)
end)
