-- the search write hook is skipped for a table without search indexes
-- while the cached definitions are current (store/search/init.lua
-- DB:_apply); every change that gives the table an index, on this
-- handle or another one on the same file, still reaches the hook.
local store = require "otskit.store"

local function count(db, tbl)
  local res = assert(db:search{ table = tbl, index = "ix", query = { match_all = {} },
    limit = 1, get_total_count = true })
  return res.total_count
end
local FIELDS = { { field_name = "k", field_type = "KEYWORD" } }

describe("search write hook skip", function()
  it("indexes the writes after an index is created, on the same and on another handle", function()
    local path = os.tmpname()
    os.remove(path)
    local a = assert(store.open{ path = path })
    assert(a:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
    assert(a:create_table{ name = "u", primary_key = { { "id", "INTEGER" } } })
    for id = 1, 5 do assert(a:put_row{ table = "t", primary_key = { { "id", id } }, columns = { { "k", "x" } } }) end
    -- this handle: created here, then written
    assert(a:create_search_index{ table = "t", index = "ix", schema = { field_schemas = FIELDS } })
    for id = 6, 8 do assert(a:put_row{ table = "t", primary_key = { { "id", id } }, columns = { { "k", "x" } } }) end
    assert.equal(8, count(a, "t"))
    -- another handle creates an index on u while a holds current definitions without one
    for id = 1, 3 do assert(a:put_row{ table = "u", primary_key = { { "id", id } }, columns = { { "k", "y" } } }) end
    local b = assert(store.open{ path = path })
    assert(b:create_search_index{ table = "u", index = "ix", schema = { field_schemas = FIELDS } })
    for id = 4, 6 do assert(a:put_row{ table = "u", primary_key = { { "id", id } }, columns = { { "k", "y" } } }) end
    assert(a:delete_row{ table = "u", primary_key = { { "id", 1 } } })
    assert.equal(5, count(b, "u"))
    assert.equal(5, count(a, "u"))
    a:close(); b:close()
    os.remove(path)
  end)
end)
