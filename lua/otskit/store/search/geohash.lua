--- otskit.store.search.geohash -- geohash cells (the base-32 alphabet,
-- longitude bits first) for group_by_geo_grid.
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

return geohash
