-- store_purge_spec.lua -- update_table lowering max_versions or changing
-- time_to_live: every read path answers as the new settings say, and
-- storage holds exactly what a model of the store holds (the hidden
-- versions are removed in the update_table call), so stored sizes,
-- partition sizes and split points match a table written with only the
-- surviving versions.
local helper = require "helper"
local store = require "otskit.store"
local core = require "otskit.core"
local keycodec = require "otskit.key"

local INF_MIN, INF_MAX = store.INF_MIN, store.INF_MAX
local DAY = 86400
local NAMES = { "x", "y", "z" }
local TTLS = { -1, DAY, 2 * DAY, 3 * DAY }

local function cell_less(a, b)
  if a[1] ~= b[1] then return a[1] < b[1] end
  return a[3] > b[3]
end

-- model row: list of cells {name, value, ts, type}
local function sorted(cells)
  local out = {}
  for i, c in ipairs(cells) do out[i] = c end
  table.sort(out, cell_less)
  return out
end

-- the cells kept by ts >= lo, ts < hi, at most maxv per name, names in want
local function select_cells(cells, lo, hi, maxv, want)
  local out, prev, nv = {}, nil, 0
  for _, c in ipairs(sorted(cells)) do
    if c[1] ~= prev then prev, nv = c[1], 0 end
    if (want == nil or want[c[1]]) and (lo == nil or c[3] >= lo) and (hi == nil or c[3] < hi) and nv < maxv then
      nv = nv + 1
      out[#out + 1] = c
    end
  end
  return out
end

local function cut_of(ttl, now_ms) return ttl ~= -1 and now_ms - ttl * 1000 or nil end

-- what the store holds, read raw: key text -> sorted cells; rows, bytes
local function stored(db)
  local out, rows, bytes = {}, 0, 0
  local cur = assert(db.h:scan("t_t"))
  while true do
    local k, v = cur:next()
    if not k then break end
    local _, _, _, _, cells = core.row.decode(v, nil, false, nil, nil, 2147483647, true)
    local pk = keycodec.unpack(k)
    out[pk[1] .. "/" .. pk[2]] = sorted(cells)
    rows, bytes = rows + 1, bytes + #k + #v
  end
  cur:close()
  return out, rows, bytes
end

-- responses without what two stores may differ in (none here: same clock)
local function norm(v)
  if type(v) ~= "table" or v == INF_MIN or v == INF_MAX then return v end
  local o = {}
  for k, x in pairs(v) do if k ~= "latency" then o[k] = norm(x) end end
  return o
end

describe("update_table lowering max_versions / changing time_to_live", function()
  it("every read path and the stored data match a model (property)", function()
    local r = helper.rng(77)
    local purged, deleted_rows, trimmed_cells = 0, 0, 0
    -- quick mode runs fewer trials, but keeps drawing (up to all 40) until
    -- the trials have trimmed cells and dropped whole rows
    local want = helper.trials(40)
    for trial = 1, 40 do
      local c = { now = 1700000000 }
      local clock = function() return c.now end
      local db = assert(store.open{ clock = clock })
      local maxv0, ttl0 = r.int(1, 5), TTLS[r.int(1, #TTLS)]
      local dev = 10 * DAY
      assert(db:create_table{ name = "t", primary_key = {{"p", "INTEGER"}, {"s", "STRING"}},
        options = { max_versions = maxv0, time_to_live = ttl0, max_time_deviation = dev } })
      local model = {} -- "p/s" -> cells
      local keys = {}
      for p = 1, 4 do for _, s in ipairs({ "a", "b", "c" }) do keys[#keys + 1] = { p, s } end end
      local function ks(k) return k[1] .. "/" .. k[2] end
      local function rand_cell(seen)
        local name = NAMES[r.int(1, 3)]
        local ts = c.now * 1000 - r.int(0, 30) * (DAY * 100) -- up to 3 days back
        if seen[name .. "@" .. ts] then return nil end
        seen[name .. "@" .. ts] = true
        local v = name == "z" and r.bytes(r.int(0, 40), "abcdef") or r.int(-9, 9)
        return { name, v, ts, name == "z" and "STRING" or "INTEGER" }
      end
      local function columns_of(cells)
        local cols = {}
        for i, cell in ipairs(cells) do cols[i] = { cell[1], cell[2], cell[3] } end
        return cols
      end
      -- random writes at a moving clock; the model does what the store does
      for _ = 1, 50 do
        c.now = c.now + r.int(0, 3600)
        local now = c.now * 1000
        local cut = cut_of(ttl0, now)
        local k = keys[r.int(1, #keys)]
        local old = model[ks(k)]
        local op = r.int(1, 10)
        if op <= 4 then -- put: versions the settings hide are not stored, unless all are
          local cells, seen = {}, {}
          for _ = 1, r.int(0, 5) do cells[#cells + 1] = rand_cell(seen) end
          assert(db:put_row{ table = "t", primary_key = k, columns = columns_of(cells) })
          local kept = select_cells(cells, cut, nil, maxv0)
          model[ks(k)] = (#kept == 0 and #cells > 0) and sorted(cells) or kept
        elseif op <= 8 then -- update PUT: merged into the visible cells
          local cells, seen = {}, {}
          for _ = 1, r.int(1, 2) do cells[#cells + 1] = rand_cell(seen) end
          assert(db:update_row{ table = "t", primary_key = k, update = { PUT = columns_of(cells) } })
          local merged = {}
          for _, cell in ipairs(old and select_cells(old, cut, nil, maxv0) or {}) do
            if not seen[cell[1] .. "@" .. cell[3]] then merged[#merged + 1] = cell end
          end
          for _, cell in ipairs(cells) do merged[#merged + 1] = cell end
          model[ks(k)] = select_cells(merged, nil, nil, maxv0)
        elseif op == 9 then -- DELETE_ALL of one column: an existing row may end up empty
          local name = NAMES[r.int(1, 3)]
          assert(db:update_row{ table = "t", primary_key = k, update = { DELETE_ALL = { name } } })
          local vis = old and select_cells(old, cut, nil, maxv0)
          if old and (#old == 0 or #vis > 0) then
            local keep = {}
            for _, cell in ipairs(vis) do if cell[1] ~= name then keep[#keep + 1] = cell end end
            model[ks(k)] = keep
          end
        else
          assert(db:delete_row{ table = "t", primary_key = k })
          model[ks(k)] = nil
        end
      end
      assert.same(model, (stored(db)))

      -- lower max_versions and/or change time_to_live
      c.now = c.now + r.int(0, DAY)
      local maxv1, ttl1 = r.int(1, maxv0), TTLS[r.int(1, #TTLS)]
      local opts = { max_versions = maxv1 }
      if r.int(1, 3) > 1 then opts.time_to_live = ttl1 else ttl1 = ttl0 end
      assert(db:update_table{ name = "t", options = opts })
      local now = c.now * 1000
      if maxv1 < maxv0 or ttl1 ~= ttl0 then
        purged = purged + 1
        local cut, c1 = cut_of(ttl0, now), cut_of(ttl1, now)
        if c1 and (cut == nil or c1 > cut) then cut = c1 end
        for key, cells in pairs(model) do
          local kept = select_cells(cells, cut, nil, maxv1)
          trimmed_cells = trimmed_cells + #cells - #kept
          if #kept == 0 and #cells > 0 then
            model[key] = nil
            deleted_rows = deleted_rows + 1
          else
            model[key] = kept
          end
        end
      end
      local raw, rows, bytes = stored(db)
      assert.same(model, raw, "trial " .. trial)
      local prows, pbytes = 0, 0
      for _, p in ipairs(db:partitions("t")) do prows, pbytes = prows + p.rows, pbytes + p.bytes end
      assert.same({ rows, bytes }, { prows, pbytes })

      -- a table written with only the surviving versions, at the same clock
      local ref = assert(store.open{ clock = clock })
      assert(ref:create_table{ name = "t", primary_key = {{"p", "INTEGER"}, {"s", "STRING"}},
        options = { max_versions = maxv1, time_to_live = ttl1, max_time_deviation = dev } })
      for key, cells in pairs(model) do
        local p, s = key:match("^(%d+)/(%a)$")
        assert(ref:put_row{ table = "t", primary_key = { tonumber(p), s }, columns = columns_of(cells) })
      end
      local same_storage = maxv1 < maxv0 or ttl1 ~= ttl0
      if same_storage then assert.same(raw, (stored(ref))) end
      for _, unit in ipairs({ 1, 64, 300 }) do
        local q = { table = "t", split_size = 1, split_size_unit_in_byte = unit }
        local a, b = assert(db:compute_split_points_by_size(q)), assert(ref:compute_split_points_by_size(q))
        if same_storage then assert.same(b, a) end
        -- every point is a stored partition-key value, in order
        for i, pt in ipairs(a.split_points) do
          assert.is_true(pt[1][2] >= 1 and pt[1][2] <= 4 and (i == 1 or pt[1][2] > a.split_points[i - 1][1][2]))
        end
      end

      -- reads, later, with random options: both stores agree, and the model
      c.now = c.now + r.int(0, 2 * DAY)
      now = c.now * 1000
      local cut_read = cut_of(ttl1, now)
      for _ = 1, 12 do
        local o = {}
        if r.int(1, 2) == 1 then o.max_versions = r.int(1, 6) end
        if r.int(1, 3) == 1 then
          local lo = now - r.int(0, 60) * (DAY * 100)
          o.time_range = { lo, lo + r.int(1, 60) * (DAY * 100) }
        end
        if r.int(1, 3) == 1 then o.columns = { NAMES[r.int(1, 3)], NAMES[r.int(1, 3)] } end
        local modelled = true
        local f = r.int(1, 6)
        if f == 1 then
          o.filter = { column = "x", comparator = "GREATER_THAN", value = r.int(-9, 9),
                       latest_version_only = r.int(0, 1) == 1 }
          modelled = false
        elseif f == 2 then
          o.filter = { pagination = { offset = r.int(0, 1), limit = r.int(1, 2) } }
          modelled = false
        elseif f == 3 then
          o.start_column, o.end_column = "x", "z"
          modelled = false
        end
        -- the model: what each key reads as
        local lo = o.time_range and o.time_range[1]
        if cut_read and (lo == nil or lo < cut_read) then lo = cut_read end
        local mv = math.min(o.max_versions or (o.time_range and maxv1) or 1, maxv1)
        local want
        if o.columns then want = {}; for _, n in ipairs(o.columns) do want[n] = true end end
        local function expect(key)
          local cells = model[key]
          if cells == nil then return nil end
          local sel = select_cells(cells, lo, o.time_range and o.time_range[2], mv, want)
          if #sel == 0 then
            if #cells == 0 and not o.time_range and not o.columns then return {} end
            return nil
          end
          return sel
        end
        local function check(key, row)
          if not modelled then return end
          local e = expect(key)
          if e == nil then assert.is_nil(row, key) else assert.same(e, sorted(row.cells), key) end
        end
        local function req(extra)
          local q = { table = "t" }
          for k2, v in pairs(o) do q[k2] = v end
          for k2, v in pairs(extra) do q[k2] = v end
          return q
        end
        local pks = {}
        for i, k in ipairs(keys) do
          local a = assert(db:get_row(req{ primary_key = k }))
          assert.same(norm(assert(ref:get_row(req{ primary_key = k }))), norm(a))
          check(ks(k), a.row)
          pks[i] = k
        end
        local a = assert(db:get_range(req{ start = { INF_MIN, INF_MIN }, stop = { INF_MAX, INF_MAX } }))
        assert.same(norm(assert(ref:get_range(req{ start = { INF_MIN, INF_MIN }, stop = { INF_MAX, INF_MAX } }))), norm(a))
        if modelled then
          local n = 0
          for _, k in ipairs(keys) do
            local e = expect(ks(k))
            if e then
              n = n + 1
              local row = a.rows[n]
              assert.same(k, { row.primary_key[1][2], row.primary_key[2][2] })
              check(ks(k), row)
            end
          end
          assert.equal(n, #a.rows)
        end
        local spec = req{ primary_keys = pks }
        local b = assert(db:batch_get_row{ tables = { spec } })
        assert.same(norm(assert(ref:batch_get_row{ tables = { spec } })), norm(b))
        for i, k in ipairs(keys) do check(ks(k), b.tables[1].rows[i].row) end
      end
      ref:close()
      db:close()
      if trial >= want and purged > 0 and trimmed_cells > 0 and deleted_rows > 0 then break end
    end
    -- the trials drew purges that trimmed cells and dropped whole rows
    assert.is_true(purged > 0 and trimmed_cells > 0 and deleted_rows > 0,
      ("purges %d, cells trimmed %d, rows deleted %d"):format(purged, trimmed_cells, deleted_rows))
  end)

  it("a raised setting does not bring hidden versions back", function()
    local c = { now = 1700000000 }
    local db = assert(store.open{ clock = function() return c.now end })
    assert(db:create_table{ name = "t", primary_key = {{"id", "INTEGER"}},
      options = { max_versions = 3, time_to_live = DAY } })
    local now = c.now * 1000
    assert(db:put_row{ table = "t", primary_key = {1}, columns = {{"a", 1, now - 2000}, {"a", 2, now - 1000}, {"a", 3, now}} })
    assert(db:put_row{ table = "t", primary_key = {2}, columns = {{"a", 9, now}} })
    assert(db:update_table{ name = "t", options = { max_versions = 1 } })
    assert(db:update_table{ name = "t", options = { max_versions = 3 } })
    local row = db:get_row{ table = "t", primary_key = {1}, max_versions = 3 }.row
    assert.same({{"a", 3, now, "INTEGER"}}, row.cells)
    -- row 2 expires; raising time_to_live after that keeps it gone
    c.now = c.now + DAY + 1
    assert.is_nil(db:get_row{ table = "t", primary_key = {2} }.row)
    assert(db:update_table{ name = "t", options = { time_to_live = -1 } })
    assert.is_nil(db:get_row{ table = "t", primary_key = {2} }.row)
    assert.same({}, assert(db:get_range{ table = "t", start = {INF_MIN}, stop = {INF_MAX} }).rows)
    assert.same({ { id = 1, rows = 0 } }, (function()
      local out = {}
      for i, p in ipairs(db:partitions("t")) do out[i] = { id = p.id, rows = p.rows } end
      return out
    end)())
    -- a put of versions beyond max_versions stores only the newest
    assert(db:update_table{ name = "t", options = { max_versions = 2 } })
    now = c.now * 1000
    assert(db:put_row{ table = "t", primary_key = {3}, columns = {{"b", 1, now}, {"b", 2, now + 1}, {"b", 3, now + 2}} })
    assert(db:update_table{ name = "t", options = { max_versions = 3 } })
    row = db:get_row{ table = "t", primary_key = {3}, max_versions = 3 }.row
    assert.same({{"b", 3, now + 2, "INTEGER"}, {"b", 2, now + 1, "INTEGER"}}, row.cells)
    db:close()
  end)
end)
