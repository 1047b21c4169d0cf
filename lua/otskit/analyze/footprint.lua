--- otskit.analyze.footprint -- what a metered design's indexes keep.
--
-- footprint(m, row_bytes, value_bytes) -> { rows, bytes, global, search }: the rows
-- and bytes the tables' indexes keep. Global and local secondary indexes
-- are read whole (their rows, keys and values as row_bytes counts them);
-- a search index keeps, per row it indexes, the primary key and the
-- fields of its schema (bytes as row_bytes counts them: the service's own
-- overhead is not modelled). global / search: how many indexes; list:
-- { name, kind ("global index", "local index", "search index"), table, rows }
-- per index, in table order.
return function(self, row_bytes, value_bytes)
  local out = { rows = 0, bytes = 0, global = 0, search = 0, list = {} }
  local db = self.db
  local INF_MIN, INF_MAX = require("otskit.store").INF_MIN, require("otskit.store").INF_MAX
  local function scan(name, width, each)
    local lo, hi = {}, {}
    for i = 1, width do lo[i], hi[i] = INF_MIN, INF_MAX end
    local start = lo
    repeat
      local page = db:get_range { table = name, start = start, stop = hi }
      if not page then return end
      for _, row in ipairs(page.rows) do each(row) end
      start = page.next_start_primary_key
    until start == nil
  end
  local names = {}
  for name in pairs(self.tables) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    local d = db:describe_table { name = name }
    local width = d and #d.table_meta.primary_key or 0
    for _, ix in ipairs(d and d.index_metas or {}) do
      out.global = out.global + 1
      local rows0 = out.rows
      local iw = #(ix.primary_key or {})
      local iwidth = iw
      for _, c in ipairs(d.table_meta.primary_key) do
        local cn = type(c) == "table" and (c[1] or c.name) or c
        local listed = false
        for _, k in ipairs(ix.primary_key or {}) do if k == cn then listed = true end end
        if not listed then iwidth = iwidth + 1 end
      end
      scan(ix.name or ix.index_name, iwidth, function(row) out.rows = out.rows + 1; out.bytes = out.bytes + row_bytes(row) end)
      out.list[#out.list + 1] = { name = ix.name or ix.index_name, table = name, rows = out.rows - rows0,
        kind = (ix.index_type == "LOCAL" and "local" or "global") .. " index" }
    end
    local l = db.list_search_index and db:list_search_index { table = name }
    for _, si in ipairs(l and l.indices or {}) do
      out.search = out.search + 1
      local rows0 = out.rows
      local sd = db:describe_search_index { table = name, index = si.index_name }
      local fields = {}
      for _, f in ipairs(sd and sd.schema.field_schemas or {}) do fields[f.field_name] = true end
      scan(name, width, function(row)
        out.rows = out.rows + 1
        local n = 0
        for _, c in ipairs(row.primary_key or {}) do n = n + value_bytes(c[2]) end
        for k, v in pairs(row.columns or {}) do if fields[k] then n = n + value_bytes(v) end end
        out.bytes = out.bytes + n
      end)
      out.list[#out.list + 1] = { name = si.index_name, table = name, rows = out.rows - rows0, kind = "search index" }
    end
  end
  return out
end
