--- bench_plot -- the trend picture of `bench/runs.lua plot`: one
-- small panel per measure, the runs along x in git order (commit time,
-- then run time), the median as a line with the interquartile range as a
-- band and min..max as whiskers. Hand-written SVG 1.1 in the style of the
-- demo's picture (otskit.analyze.svg): no dependency, opens in a browser.
local report = require "bench_report"

local plot = {}

local PW, PH, GAP_X, GAP_Y, LEFT, TOP, COLS = 330, 150, 70, 92, 64, 96, 3
local LINE, BAND, WHISK, BAD = "#e31a1c", "#fed976", "#fd8d3c", "#b10026"

local function esc(s)
  return (tostring(s):gsub("[&<>\"]", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;" }))
end

--- plot.order(docs) -> docs sorted in git order: by commit time, then by
-- the time of the run (several runs of one revision keep their order).
function plot.order(docs)
  local t = {}
  for i, d in ipairs(docs) do t[i] = { d = d, i = i } end
  table.sort(t, function(a, b)
    local ca = a.d.facts and a.d.facts.git_commit_time or 0
    local cb = b.d.facts and b.d.facts.git_commit_time or 0
    if ca ~= cb then return ca < cb end
    if (a.d.created or "") ~= (b.d.created or "") then return (a.d.created or "") < (b.d.created or "") end
    return a.i < b.i
  end)
  local out = {}
  for i, x in ipairs(t) do out[i] = x.d end
  return out
end

local function nice_range(lo, hi)
  if lo == hi then
    local d = lo == 0 and 1 or math.abs(lo) * 0.1
    return lo - d, hi + d
  end
  local pad = (hi - lo) * 0.08
  local a = lo - pad
  if lo >= 0 and a < 0 then a = 0 end
  return a, hi + pad
end

local function panel(out, x, y, title, series, labels)
  out[#out + 1] = ('<rect x="%d" y="%d" width="%d" height="%d" fill="#fcfcfb" stroke="#888" stroke-width="0.8"/>')
    :format(x, y, PW, PH)
  out[#out + 1] = ('<text x="%d" y="%d" class="design">%s</text>'):format(x, y - 24, esc(title[1]))
  out[#out + 1] = ('<text x="%d" y="%d" class="stat">%s</text>'):format(x, y - 9, esc(title[2]))
  local lo, hi = math.huge, -math.huge
  for _, m in pairs(series) do
    if m.min < lo then lo = m.min end
    if m.max > hi then hi = m.max end
  end
  if lo == math.huge then
    out[#out + 1] = ('<text x="%d" y="%d" class="note">no data</text>'):format(x + 10, y + PH / 2)
    return
  end
  lo, hi = nice_range(lo, hi)
  local n = #labels
  local function X(i) return x + (n == 1 and PW / 2 or 14 + (i - 1) * (PW - 28) / (n - 1)) end
  local function Y(v) return y + PH - (v - lo) / (hi - lo) * PH end
  -- y ticks: low, middle, high
  for _, v in ipairs { lo, (lo + hi) / 2, hi } do
    out[#out + 1] = ('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e4e4e4" stroke-width="0.6"/>'):format(x, Y(v), x + PW, Y(v))
    out[#out + 1] = ('<text x="%d" y="%.1f" class="tick" text-anchor="end">%s</text>'):format(x - 4, Y(v) + 3, report.fmt(v))
  end
  -- band (q1..q3) as one polygon over the runs that have the measure
  local up, down, line = {}, {}, {}
  for i = 1, n do
    local m = series[i]
    if m then
      up[#up + 1] = ("%.1f,%.1f"):format(X(i), Y(m.q3))
      table.insert(down, 1, ("%.1f,%.1f"):format(X(i), Y(m.q1)))
      line[#line + 1] = ("%.1f,%.1f"):format(X(i), Y(m.median))
    end
  end
  if #up > 1 then
    out[#out + 1] = ('<polygon points="%s %s" fill="%s" fill-opacity="0.55" stroke="none"/>')
      :format(table.concat(up, " "), table.concat(down, " "), BAND)
    out[#out + 1] = ('<polyline points="%s" fill="none" stroke="%s" stroke-width="1.6"/>'):format(table.concat(line, " "), LINE)
  end
  for i = 1, n do
    local m = series[i]
    if m then
      local cx = X(i)
      out[#out + 1] = ('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1"/>')
        :format(cx, Y(m.min), cx, Y(m.max), WHISK)
      out[#out + 1] = ('<rect x="%.1f" y="%.1f" width="6" height="%.1f" fill="%s" fill-opacity="0.8"/>')
        :format(cx - 3, Y(m.q3), math.max(0.8, Y(m.q1) - Y(m.q3)), BAND)
      out[#out + 1] = ('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s: median %s, q1–q3 %s–%s, min %s, max %s, %d reps</title></circle>')
        :format(cx, Y(m.median), m.failed and BAD or LINE, esc(labels[i]), report.fmt(m.median), report.fmt(m.q1),
          report.fmt(m.q3), report.fmt(m.min), report.fmt(m.max), m.n or 1)
    end
  end
  -- x labels: revisions (every one when few, else a few)
  local step = math.max(1, math.ceil(n / 6))
  for i = 1, n, step do
    out[#out + 1] = ('<text x="%.1f" y="%d" class="tick" text-anchor="middle">%s</text>'):format(X(i), y + PH + 14, esc(labels[i]))
  end
end

--- plot.render(docs, opts) -> SVG text. docs: run documents (any order);
-- opts.only: keep measures whose id contains this text; opts.title.
function plot.render(docs, opts)
  opts = opts or {}
  docs = plot.order(docs)
  local labels, ids, by = {}, {}, {}
  for i, d in ipairs(docs) do
    local f = d.facts or {}
    labels[i] = (f.git_short or "?"):sub(1, 7) .. (f.git_dirty and "*" or "")
    for _, m in ipairs(report.measures(d)) do
      if not opts.only or m.id:find(opts.only, 1, true) then
        if not by[m.id] then by[m.id] = { m = m, s = {} }; ids[#ids + 1] = m.id end
        by[m.id].s[i] = m
      end
    end
  end
  local rows = math.max(1, math.ceil(#ids / COLS))
  local W = LEFT + COLS * PW + (COLS - 1) * GAP_X + 40
  local H = TOP + rows * (PH + GAP_Y) + 10
  local out = {}
  out[#out + 1] = ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif">')
    :format(W, H, W, H)
  out[#out + 1] = [[<defs><style>.title{font-size:22px;font-weight:bold;fill:#222}.sub{font-size:13px;fill:#555}.note{font-size:12px;fill:#666;font-style:italic}.design{font-size:12.5px;font-weight:bold;fill:#333}.stat{font-size:11px;fill:#444}.tick{font-size:10px;fill:#777}</style></defs>]]
  out[#out + 1] = ('<rect width="%d" height="%d" fill="#ffffff"/>'):format(W, H)
  out[#out + 1] = ('<text x="%d" y="34" class="title">%s</text>'):format(LEFT - 40,
    esc(opts.title or ("otskit benchmarks across %d runs"):format(#docs)))
  out[#out + 1] = ('<text x="%d" y="56" class="sub">%s</text>'):format(LEFT - 40, esc(
    "Each panel: one measure; runs left to right in git order (revision; * = dirty tree). " ..
    "Line: median; band and box: interquartile range; whisker: min..max of the repetitions."))
  out[#out + 1] = ('<text x="%d" y="74" class="sub">%s</text>'):format(LEFT - 40, esc(
    "Units and which way is better are in each panel's subtitle."))
  if #ids == 0 then
    out[#out + 1] = ('<text x="%d" y="%d" class="note">no measures%s</text>'):format(LEFT, TOP + 20,
      opts.only and (" matching " .. esc(opts.only)) or "")
  end
  for k, id in ipairs(ids) do
    local col, row = (k - 1) % COLS, math.floor((k - 1) / COLS)
    local e = by[id]
    local m = e.m
    local title = { ("%s · %s"):format(m.bench, m.name), ("%s, %s, %s is better"):format(m.abi, m.unit,
      m.direction == "higher" and "higher" or "lower") }
    panel(out, LEFT + col * (PW + GAP_X), TOP + 30 + row * (PH + GAP_Y), title, e.s, labels)
  end
  out[#out + 1] = "</svg>"
  return table.concat(out, "\n") .. "\n"
end

return plot
