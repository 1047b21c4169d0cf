-- spec/search_crash_spec.lua -- `otskit serve --data --workers 2` killed
-- with SIGKILL while a client writes (puts, updates, deletes, batches)
-- to a table with a search index: the file reopened afterwards has an
-- index that agrees with the table row for row (every write and its
-- index entries share one SQLite transaction).
local serve = require "support.serve"
local store = require "otskit.store"

describe("search index after kill -9 of otskit serve", function()
  it("agrees with the table", function()
    local srv = assert(serve.start{ workers = 2, data = true })
    local cl = serve.client(srv, { retry = false })
    assert(cl:create_table{ name = "c", primary_key = { { "p", "INTEGER" } } })
    assert(cl:create_search_index{ table = "c", index = "ix", schema = { field_schemas = {
      { field_name = "n", field_type = "LONG", enable_sort_and_agg = true }, { field_name = "t", field_type = "TEXT" } } } })
    -- a writer in another process, killed with the server
    local script = srv.tmp .. "/writer.lua"
    local f = assert(io.open(script, "w"))
    f:write(([[
      package.path = "spec/?.lua;" .. package.path
      local serve = require "support.serve"
      local cl = serve.client({ url = %q }, { retry = false })
      local i = 0
      while true do
        i = i + 1
        local p = i %% 500
        if i %% 7 == 0 then cl:delete_row{ table = "c", primary_key = { { "p", p } } }
        elseif i %% 5 == 0 then
          local rows = {}
          for j = 1, 20 do rows[j] = { type = "PUT", primary_key = { { "p", (p + j) %% 500 } }, columns = { n = i, t = "word" .. j } } end
          cl:batch_write_row{ tables = { { table = "c", rows = rows } } }
        elseif i %% 3 == 0 then cl:update_row{ table = "c", primary_key = { { "p", p } }, update = { PUT = { n = -i } } }
        else cl:put_row{ table = "c", primary_key = { { "p", p } }, columns = { n = i, t = "hello " .. i } } end
      end
    ]]):format(srv.url))
    f:close()
    -- the writer is a LuaJIT process on the plain build, whatever runs this spec
    local env = 'LUA_PATH="lua/?.lua;lua/?/init.lua;spec/?.lua;;" LUA_CPATH="build/jit/?.so;;"'
    local wpid = serve.sh(("env -u LD_PRELOAD %s luajit %s >/dev/null 2>&1 & echo $!"):format(env, script))
    os.execute("sleep 1.5")
    -- SIGKILL every nginx process of this server, then the writer
    local m = serve.sh("cat " .. srv.tmp .. "/ng/logs/nginx.pid")
    os.execute(("kill -KILL %s $(%s -P %s) 2>/dev/null"):format(m, serve.PGREP, m))
    os.execute("kill -KILL " .. wpid .. " 2>/dev/null")
    local db = assert(store.open{ path = srv.tmp .. "/data/otskit.db", integrity_check = true })
    local rows, start = {}, { store.INF_MIN }
    repeat
      local r = assert(db:get_range{ table = "c", start = start, stop = { store.INF_MAX } })
      for _, row in ipairs(r.rows) do rows[#rows + 1] = row end
      start = r.next_start_primary_key and { r.next_start_primary_key[1][2] } or nil
    until not start
    assert.is_true(#rows > 20, "the writer wrote too little: " .. #rows)
    local all = assert(db:search{ table = "c", index = "ix", get_total_count = true, limit = 0 })
    assert.equal(#rows, all.total_count)
    for _, row in ipairs(rows) do
      local n = row.columns.n
      local hit = assert(db:search{ table = "c", index = "ix", get_total_count = true, limit = 0,
        query = { bool = { must = { { term = { field_name = "n", term = n } } } } } })
      local want = 0
      for _, r2 in ipairs(rows) do if r2.columns.n == n then want = want + 1 end end
      assert.equal(want, hit.total_count)
    end
    db:close()
    srv.stop()
  end)
end)
