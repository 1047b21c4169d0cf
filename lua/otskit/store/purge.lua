--- otskit.store.purge -- removes the stored versions a table's settings
-- hide: update_table lowering max_versions or changing time_to_live
-- rewrites every row that keeps more than the settings show, in
-- update_table's transaction, so storage (partition sizes, split points, a
-- later raise of the setting) never holds a version reads no longer return.
local values = require "otskit.store.values"
local txn = require "otskit.store.txn"
local dberr, damaged = txn.dberr, txn.damaged

local purge = {}

local HUGE = 2147483647 -- "every version" for the decoder
local BATCH = 256       -- rows read before they are rewritten (no write under an open cursor)

local function encode(cells)
  local names, tys, vs, tss = {}, {}, {}, {}
  for i, c in ipairs(cells) do names[i], vs[i], tss[i], tys[i] = c[1], c[2], c[3], c[4] end
  return values.encode(names, tys, vs, tss)
end

--- purge.trim(blob, maxv, cut) -> the row without the versions beyond
-- maxv per column or older than cut (ms, nil: none): new bytes, nil when
-- nothing is removed, false when every cell is (| nil, msg: damaged)
local function trimmed(blob, maxv, cut)
  local all, why, _, total = values.decode(blob, nil, false, nil, nil, HUGE)
  if not all then return nil, why end
  local _, _, _, kept, cells = values.decode(blob, nil, false, cut, nil, maxv, true)
  if kept == total then return nil end
  if kept == 0 then return false end -- a row whose every cell expired is gone (write.visible)
  return encode(cells)
end

purge.trim = trimmed

--- purge.table(db, t, maxv, cut) -> sizes | nil, msg, code: inside db's
-- write transaction, keeps at most maxv versions per column and no cell
-- older than cut (ms; nil: no cut) in every row of t; a row whose cells
-- all expire is deleted (a row stored without cells stays). Reads a batch
-- of rows, closes the cursor, rewrites the batch: the time grows with the
-- table's size, the memory with the rows changed. sizes: the changes of
-- the partition sizes, {{key, drows, dbytes}, ...}, for purge.account
-- once the transaction's work succeeded.
function purge.table(db, t, maxv, cut)
  local h, lo = db.h, nil
  local sizes = {}
  while true do
    local cur, err, code = h:scan(t.kv, lo, nil, false, BATCH)
    if not cur then return dberr(err, code) end
    local ks, vs, n = cur:fetch(BATCH)
    cur:close()
    if ks == nil then return dberr(vs, n) end
    if n == 0 then break end
    for i = 1, n do
      local k, old = ks[i], vs[i]
      local new, why = trimmed(old, maxv, cut)
      if new == nil and why then return damaged("a row of table " .. t.name .. ": " .. tostring(why)) end
      local ok, e2, c2 = true, nil, nil
      if new == false then
        ok, e2, c2 = h:delete(t.kv, k)
        sizes[#sizes + 1] = { k, -1, -(#k + #old) }
      elseif new then
        ok, e2, c2 = h:put(t.kv, k, new)
        sizes[#sizes + 1] = { k, 0, #new - #old }
      end
      if ok == nil then return dberr(e2, c2) end
    end
    if n < BATCH then break end
    lo = ks[n] .. "\0" -- the next key in byte order
  end
  return sizes
end

--- purge.account(t, sizes): applies purge.table's size changes to t's
-- partition model (sizes only: no write is counted, readers saw no change).
function purge.account(t, sizes)
  if not t.parts then return end
  for _, s in ipairs(sizes) do t.parts:resize(s[1], s[2], s[3]) end
end

return purge
