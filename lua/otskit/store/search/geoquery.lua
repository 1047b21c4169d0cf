--- otskit.store.search.geoquery -- the geo query kinds of
-- otskit.store.search.query: geo_distance { field_name, center_point =
-- "lat,lon", distance (m) }, geo_bounding_box { field_name, top_left,
-- bottom_right }, geo_polygon { field_name, points = { "lat,lon", ... } }
-- (>= 3, at most query.LIMITS.polygon_points), each over the index's
-- R*Tree of points (p.."geo") and its point table (p.."gpt"). Called by
-- query.lua with its compile context class and kind table.
local base = require "otskit.store.base"
local docs = require "otskit.store.search.docs"

local function bad(msg) return nil, msg, "OTSParameterInvalid" end

return function(query, Ctx, K)
  local L = query.LIMITS

  -- the points of geo field d matching cond (on alias g) inside a box
  function Ctx:geo(a, d, box, cond)
    if not self.drive then
      return ("EXISTS (SELECT 1 FROM %sgpt g WHERE g.doc = %s.id AND g.f = %s AND %s)"):format(self.p, a, self:bind(d.id), cond)
    end
    return ("%s.id IN (SELECT g.doc FROM %sgpt g WHERE g.f = %s AND g.id IN (SELECT id FROM %sgeo WHERE lat0 <= %s AND lat1 >= %s AND lon0 <= %s AND lon1 >= %s) AND %s)")
      :format(a, self.p, self:bind(d.id), self.p, self:bind(box[2] + 1e-6), self:bind(box[1] - 1e-6),
        self:bind(box[4] + 1e-6), self:bind(box[3] - 1e-6), cond)
  end

  local function geo_field(self, q, path, what)
    local d, m, c = self:field(q.field_name, path, what)
    if not d then return nil, m, c end
    if d.type ~= "GEO_POINT" then return bad(("%s: field [%s] is %s, not GEO_POINT"):format(what, d.name, d.type)) end
    return d
  end

  local function point(s, what)
    local lat, lon = docs.geo(s)
    if not lat then return bad(what .. ": a point must be \"lat,lon\" with lat in [-90, 90] and lon in [-180, 180], got " .. tostring(s)) end
    return lat, lon
  end

  K.geo_distance = function(self, q, a, path)
    local d, m, c = geo_field(self, q, path, "geo_distance")
    if not d then return nil, m, c end
    local lat, lon = point(q.center_point, "geo_distance.center_point")
    if not lat then return nil, lon, "OTSParameterInvalid" end
    local dist = q.distance
    if type(dist) ~= "number" or dist < 0 or dist ~= dist then return bad("geo_distance: distance must be a number of metres >= 0") end
    local dlat = dist / 111194.9 + 1e-6
    local box = { math.max(-90, lat - dlat), math.min(90, lat + dlat), -180, 180 }
    local cl = math.cos(math.rad(math.max(math.abs(lat - dlat), math.abs(lat + dlat))))
    if lat + dlat < 90 and lat - dlat > -90 and cl > 1e-9 then
      local dlon = dlat / cl
      if lon - dlon > -180 and lon + dlon < 180 then box[3], box[4] = lon - dlon, lon + dlon end
    end
    return self:geo(a, d, box, ("geo_dist(g.lat, g.lon, %s, %s) <= %s"):format(self:bind(lat), self:bind(lon), self:bind(dist))), "1"
  end

  K.geo_bounding_box = function(self, q, a, path)
    local d, m, c = geo_field(self, q, path, "geo_bounding_box")
    if not d then return nil, m, c end
    local top, left = point(q.top_left, "geo_bounding_box.top_left")
    if not top then return nil, left, "OTSParameterInvalid" end
    local bottom, right = point(q.bottom_right, "geo_bounding_box.bottom_right")
    if not bottom then return nil, right, "OTSParameterInvalid" end
    if bottom > top then return bad("geo_bounding_box: top_left must not lie below bottom_right") end
    local cond = ("g.lat >= %s AND g.lat <= %s"):format(self:bind(bottom), self:bind(top))
    if left <= right then
      cond = cond .. (" AND g.lon >= %s AND g.lon <= %s"):format(self:bind(left), self:bind(right))
      return self:geo(a, d, { bottom, top, left, right }, cond), "1"
    end
    cond = cond .. (" AND (g.lon >= %s OR g.lon <= %s)"):format(self:bind(left), self:bind(right))
    return self:geo(a, d, { bottom, top, -180, 180 }, cond), "1"
  end

  K.geo_polygon = function(self, q, a, path)
    local d, m, c = geo_field(self, q, path, "geo_polygon")
    if not d then return nil, m, c end
    if type(q.points) ~= "table" or #q.points < 3 then return bad("geo_polygon: points must list at least 3 points") end
    if #q.points > L.polygon_points then return bad("geo_polygon: at most " .. L.polygon_points .. " points") end
    local ok, lm, lc = base.list(q.points, "geo_polygon: points")
    if not ok then return nil, lm, lc end
    local box, text = { 90, -90, 180, -180 }, {}
    for i, s in ipairs(q.points) do
      local lat, lon = point(s, "geo_polygon.points")
      if not lat then return nil, lon, "OTSParameterInvalid" end
      box[1], box[2] = math.min(box[1], lat), math.max(box[2], lat)
      box[3], box[4] = math.min(box[3], lon), math.max(box[4], lon)
      text[i] = ("%.17g,%.17g"):format(lat, lon)
    end
    return self:geo(a, d, box, ("geo_in_poly(g.lat, g.lon, %s)"):format(self:bind(table.concat(text, ";")))), "1"
  end
end
