--- otskit.store.search.geohash -- geohash cells (the base-32 alphabet,
-- longitude bits first) and group_by_geo_grid.
local geohash = {}

local B32 = "0123456789bcdefghjkmnpqrstuvwxyz"

--- geohash.encode(lat, lon, precision) -> the cell's hash (precision chars)
function geohash.encode(lat, lon, precision)
  local lat0, lat1, lon0, lon1 = -90.0, 90.0, -180.0, 180.0
  local out, bit, ch, even = {}, 0, 0, true
  while #out < precision do
    if even then
      local mid = (lon0 + lon1) / 2
      if lon >= mid then ch = ch * 2 + 1; lon0 = mid else ch = ch * 2; lon1 = mid end
    else
      local mid = (lat0 + lat1) / 2
      if lat >= mid then ch = ch * 2 + 1; lat0 = mid else ch = ch * 2; lat1 = mid end
    end
    even = not even
    bit = bit + 1
    if bit == 5 then
      out[#out + 1] = B32:sub(ch + 1, ch + 1)
      bit, ch = 0, 0
    end
  end
  return table.concat(out)
end

--- geohash.box(hash) -> lat0, lat1, lon0, lon1 (the cell's bounds)
function geohash.box(hash)
  local lat0, lat1, lon0, lon1 = -90.0, 90.0, -180.0, 180.0
  local even = true
  for i = 1, #hash do
    local v = B32:find(hash:sub(i, i), 1, true) - 1
    for b = 4, 0, -1 do
      local on = math.floor(v / 2 ^ b) % 2 == 1
      if even then
        local mid = (lon0 + lon1) / 2
        if on then lon0 = mid else lon1 = mid end
      else
        local mid = (lat0 + lat1) / 2
        if on then lat0 = mid else lat1 = mid end
      end
      even = not even
    end
  end
  return lat0, lat1, lon0, lon1
end

--- geohash.group_by(env, g, scope, depth, what, h) -> group_by_geo_grid's
-- result (otskit.store.search.groupby's K.geo_grid; h: its agg, size_of,
-- sort_items and children) | nil, msg, code
function geohash.group_by(env, g, scope, depth, what, h)
  local agg, size_of, sort_items, children = h.agg, h.size_of, h.sort_items, h.children
  local bad = agg.bad
  local p = g.precision
  if type(p) ~= "number" or p ~= math.floor(p) or p < 1 or p > 12 then return bad(what .. ": precision must be 1..12") end
  local size, m, c = size_of(g, what)
  if not size then return nil, m, c end
  local d, m2, c2 = agg.field(env, g.field_name, what, { GEO_POINT = true })
  if d == nil then return nil, m2, c2 end
  local items = {}
  if d then
    local ctx = env.ctx
    local f = ctx:bind(d.id)
    -- the cells numbered in SQL (geohash(), csrc/core/bucket.c); SQL
    -- picks the top `size` under the default sort
    local n = agg.multi(d) and "count(DISTINCT g.doc)" or "count(*)"
    local gt = agg.vt(env, d, "gpt")
    local src = scope == agg.ALL and ("FROM %s g WHERE g.f = %s"):format(gt, f)
      or ("FROM %sdoc d JOIN %s g ON g.doc = d.id AND g.f = %s WHERE %s"):format(ctx.p, gt, f, scope)
    local tail = g.sort == nil and (" ORDER BY 2 DESC, 1 ASC LIMIT " .. ctx:bind(size)) or ""
    for _, r in ipairs(agg.query(env, ("SELECT geohash(g.lat, g.lon, %s) AS h, %s %s GROUP BY h%s"):format(ctx:bind(p), n, src, tail))) do
      items[#items + 1] = { key = r[1], row_count = r[2] }
    end
    local r, m3, c3 = sort_items(env, g, items, function(it) return it.key end,
      { { row_count_sort = { order = "DESC" } }, { group_key_sort = { order = "ASC" } } }, what)
    if not r then return nil, m3, c3 end
    for i = size + 1, #items do items[i] = nil end
    for _, it in ipairs(items) do
      local lat0, lat1, lon0, lon1 = geohash.box(it.key)
      it.top_left, it.bottom_right = { lat = lat1, lon = lon0 }, { lat = lat0, lon = lon1 }
      local s = ("%s AND d.id IN (SELECT doc FROM %s WHERE f = %s AND lat >= %s AND lat < %s AND lon >= %s AND lon < %s)")
        :format(scope, agg.vt(env, d, "gpt"), f, ctx:bind(lat0), ctx:bind(lat1), ctx:bind(lon0), ctx:bind(lon1))
      local ok, m4, c4 = children(env, g, it, s, depth, what)
      if not ok then return nil, m4, c4 end
    end
  end
  return { items = items }
end

return geohash
