-- Fuzz of the store's metadata rows (the table definitions it reads at
-- open and whenever another connection changes the schema): mutated and
-- random rows must give nil, message, OTSInternalServerError at open, or
-- a store whose every operation answers without raising.
local store = require "otskit.store"
local kv = require("otskit.core").kv
local helper = require "spec.helper"

local VALID = {
  "pk id INTEGER\nopt split_bytes 67108864\nopt window 60\nopt history 120",
  "pk a STRING\npk b INTEGER\nbound 0161000000\nbound 016d00\nopt window 5",
  "pk g BINARY\npk n INTEGER\npk s STRING\npk x INTEGER",
  "pk id INTEGER\nbound 15\nbound 1503e8",
}
local TOKENS = { "pk", "bound", "opt", " ", "\n", "INTEGER", "STRING", "BINARY", "DOUBLE", "id", "0", "ff",
  "15", "01", "00", "-1", "1e999", "nan", "split_rows", "window", "\0", "é" }

local function mutate(r, s)
  local n = r.int(1, 4)
  for _ = 1, n do
    local op = r.int(1, 5)
    local i = r.int(1, #s + 1)
    if op == 1 and #s > 0 then -- flip a byte
      s = s:sub(1, i - 1) .. string.char(r.int(0, 255)) .. s:sub(i + 1)
    elseif op == 2 then -- insert a token
      s = s:sub(1, i - 1) .. TOKENS[r.int(1, #TOKENS)] .. s:sub(i)
    elseif op == 3 and #s > 0 then -- delete a span
      s = s:sub(1, i - 1) .. s:sub(i + r.int(1, 8))
    elseif op == 4 then -- duplicate a line
      local line = s:match("[^\n]+") or ""
      s = s .. "\n" .. line
    else -- random bytes
      s = r.bytes(r.int(0, 40))
    end
  end
  return s
end

describe("otskit.store metadata rows, fuzzed", function()
  it("open and every operation answer nil, message, code or work: never a raise", function()
    local r = helper.rng(77)
    local path = os.tmpname()
    local opened, refused = 0, 0
    for trial = 1, 60 do -- not fewer in quick mode: both outcomes must be drawn
      for _, s in ipairs({ "", "-wal", "-shm" }) do os.remove(path .. s) end
      local db = assert(store.open { path = path })
      assert(db:create_table { name = "t", primary_key = { { "id", "INTEGER" } } })
      assert(db:put_row { table = "t", primary_key = { 5 }, columns = { v = 1 } })
      db:close()
      local text = mutate(r, VALID[r.int(1, #VALID)])
      local h = assert(kv.open(path))
      assert(h:put("meta", "t", text))
      h:close()
      local ok, d, msg, code = pcall(store.open, { path = path, partitions = trial % 2 == 0 })
      assert.is_true(ok, ("open raised on %q: %s"):format(text, tostring(d)))
      if d then
        opened = opened + 1
        local calls = {
          function() return d:describe_table { name = "t" } end,
          function() return d:list_table() end,
          function() return d:get_row { table = "t", primary_key = { 5 } } end,
          function() return d:get_row { table = "t", primary_key = { "x" } } end,
          function() return d:put_row { table = "t", primary_key = { 7 }, columns = { v = 2 } } end,
          function() return d:get_range { table = "t", start = { store.INF_MIN }, stop = { store.INF_MAX } } end,
          function() return d:partitions("t") end,
          function() return d:check() end,
        }
        for i, f in ipairs(calls) do
          local ok2, res, m2, c2 = pcall(f)
          assert.is_true(ok2, ("call %d raised on %q: %s"):format(i, text, tostring(res)))
          if res == nil then assert.is_string(m2); assert.is_string(c2) end
        end
        d:close()
      else
        refused = refused + 1
        assert.equal("OTSInternalServerError", code, text)
        assert.is_string(msg)
      end
    end
    for _, s in ipairs({ "", "-wal", "-shm" }) do os.remove(path .. s) end
    assert.is_true(opened > 0 and refused > 0, opened .. " opened, " .. refused .. " refused")
  end)
end)
