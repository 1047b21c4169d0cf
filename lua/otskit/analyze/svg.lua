--- otskit.analyze.svg -- the hot-spot picture: write load per partition
-- over time, one heat map per design, designs side by side, one row per
-- scenario. Hand-written SVG 1.1 text: no dependency, opens in any browser.
local svg = {}

-- YlOrRd (ColorBrewer), light to dark: rows per second on a partition
local RAMP = {
  { 255, 255, 204 }, { 255, 237, 160 }, { 254, 217, 118 }, { 254, 178, 76 },
  { 253, 141, 60 }, { 252, 78, 42 }, { 227, 26, 28 }, { 177, 0, 38 },
}

local function color(x) -- x in [0, 1]
  if x <= 0 then return "#f4f4f2" end
  if x > 1 then x = 1 end
  local pos = x * (#RAMP - 1) + 1
  local i = math.floor(pos)
  if i >= #RAMP then i = #RAMP - 1 end
  local f = pos - i
  local a, b = RAMP[i], RAMP[i + 1]
  return ("#%02x%02x%02x"):format(math.floor(a[1] + (b[1] - a[1]) * f + 0.5),
    math.floor(a[2] + (b[2] - a[2]) * f + 0.5), math.floor(a[3] + (b[3] - a[3]) * f + 0.5))
end
svg.color = color

local function esc(s)
  return (tostring(s):gsub("[&<>\"]", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;" }))
end

-- text cut to n characters (UTF-8 aware), "..." when cut: a heat map's
-- heading stays over its map (the whole text is its tooltip)
local function fit(text, n)
  local chars = {}
  for ch in text:gmatch("[%z\1-\127\194-\244][\128-\191]*") do chars[#chars + 1] = ch end
  if #chars <= n then return text end
  return table.concat(chars, "", 1, n - 3) .. "..."
end

-- rounded here: LuaJIT and C round halves differently in %.0f
local function pct(x) return ("%d%%"):format(math.floor(100 * x + 0.5)) end

local PANEL_W, PANEL_H, GAP, LEFT, TOP = 470, 190, 60, 60, 118
local ROW_H = PANEL_H + 132

-- one heat map at (x, y): columns = seconds, rows = partitions in key order
local function panel(out, x, y, d, scale, windows)
  local heat, m = d.heat, d.metrics
  local ids = heat.ids
  local np = math.max(1, #ids)
  local cw, rh = PANEL_W / windows, PANEL_H / np
  out[#out + 1] = ('<rect x="%.1f" y="%.1f" width="%d" height="%d" fill="url(#unborn)" stroke="#bbb" stroke-width="0.5"/>')
    :format(x, y, PANEL_W, PANEL_H)
  for row, id in ipairs(ids) do
    local born = heat.born[id] or 0
    local ry = y + (row - 1) * rh
    -- one rect for the whole idle stretch, then the cells with load
    if born < windows then
      out[#out + 1] = ('<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="#f4f4f2"/>')
        :format(x + born * cw, ry, (windows - born) * cw, rh)
    end
    for w = 0, windows - 1 do
      local n = heat.load[w] and heat.load[w][id]
      if n and n > 0 then
        out[#out + 1] = ('<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"><title>%s, second %d: %d rows</title></rect>')
          :format(x + w * cw, ry, cw + 0.05, rh + 0.05, color(n / scale), esc(id), w, n)
      end
    end
  end
  out[#out + 1] = ('<rect x="%.1f" y="%.1f" width="%d" height="%d" fill="none" stroke="#888" stroke-width="0.8"/>')
    :format(x, y, PANEL_W, PANEL_H)
  -- time axis
  local step = windows <= 12 and 1 or windows <= 40 and 5 or 10
  for w = 0, windows, step do
    local tx = x + w * cw
    out[#out + 1] = ('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888" stroke-width="0.8"/>')
      :format(tx, y + PANEL_H, tx, y + PANEL_H + 4)
    out[#out + 1] = ('<text x="%.1f" y="%.1f" class="tick" text-anchor="middle">%d</text>'):format(tx, y + PANEL_H + 15, w)
  end
  out[#out + 1] = ('<text x="%.1f" y="%.1f" class="design">%s<title>%s</title></text>'):format(x, y - 22,
    esc(fit(d.name .. ": " .. d.label, 64)), esc(d.name .. ": " .. d.label))
  local share = m.mean_share and ("hottest takes %s of each second's writes (peak %s)"):format(pct(m.mean_share), pct(m.peak_share))
    or "too few writes per second to rank"
  out[#out + 1] = ('<text x="%.1f" y="%.1f" class="stat">%d partitions · %s</text>'):format(x, y - 7, np, esc(share))
  local warn = m.failed_ops > 0 and (" · %d of %d operations failed"):format(m.failed_ops, m.ops) or ""
  out[#out + 1] = ('<text x="%.1f" y="%.1f" class="stat%s">%d writes refused by throttling · %d retries%s</text>')
    :format(x, y + PANEL_H + 32, (m.throttled > 0 or m.failed_ops > 0) and " bad" or "", m.throttled, m.retries, esc(warn))
  local causes = {}
  for _, f in ipairs(d.findings or {}) do causes[#causes + 1] = f.cause end
  out[#out + 1] = ('<text x="%.1f" y="%.1f" class="stat%s">%s</text>'):format(x, y + PANEL_H + 47,
    #causes > 0 and " bad" or "", #causes > 0 and esc("findings: " .. table.concat(causes, ", ")) or "no finding")
end

local COLS = 2                          -- heat maps side by side; more designs wrap
local PANEL_ROW = PANEL_H + 94          -- height of each further line of heat maps

local function scenario_height(r)
  return ROW_H + (math.ceil(#r.designs / COLS) - 1) * PANEL_ROW
end

--- svg.render(results, opts) -> SVG text. results: analyze.run results;
-- every design of every scenario is drawn (COLS heat maps a line), except
-- the scenarios with .picture == false, which a closing line names.
-- Scenarios are numbered as the text report numbers them (their index in
-- results; no number when there is one scenario). opts.title.
function svg.render(results, opts)
  opts = opts or {}
  local rows, left_out = {}, {}
  for i, r in ipairs(results) do
    local label = #results > 1 and (i .. ". " .. r.title) or r.title
    if r.picture ~= false then rows[#rows + 1] = { r = r, label = label }
    else left_out[#left_out + 1] = label end
  end
  local W = LEFT + COLS * PANEL_W + (COLS - 1) * GAP + 70
  local H = TOP + 50 + (#left_out > 0 and 40 + 18 * #left_out or 0)
  for _, row in ipairs(rows) do H = H + scenario_height(row.r) end
  local out = {}
  out[#out + 1] = ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif">')
    :format(W, H, W, H)
  out[#out + 1] = [[<defs><pattern id="unborn" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fafafa"/><line x1="0" y1="0" x2="0" y2="6" stroke="#e2e2e2" stroke-width="2"/></pattern>
<linearGradient id="ramp" x1="0" x2="1" y1="0" y2="0">]]
  for i, c in ipairs(RAMP) do
    out[#out + 1] = ('<stop offset="%.3f" stop-color="#%02x%02x%02x"/>'):format((i - 1) / (#RAMP - 1), c[1], c[2], c[3])
  end
  out[#out + 1] = [[</linearGradient>
<style>.title{font-size:22px;font-weight:bold;fill:#222}.sub{font-size:13px;fill:#555}.scen{font-size:16px;font-weight:bold;fill:#222}.note{font-size:12px;fill:#666;font-style:italic}.design{font-size:13px;font-weight:bold;fill:#333}.stat{font-size:11.5px;fill:#444}.bad{fill:#b10026}.tick{font-size:10px;fill:#777}.axis{font-size:11px;fill:#777}</style></defs>]]
  out[#out + 1] = ('<rect width="%d" height="%d" fill="#ffffff"/>'):format(W, H)
  out[#out + 1] = ('<text x="%d" y="34" class="title">%s</text>'):format(LEFT - 30,
    esc(opts.title or "Where the writes go: naive designs beside the recommended ones"))
  out[#out + 1] = ('<text x="%d" y="56" class="sub">%s</text>'):format(LEFT - 30, esc(
    "Rows written per partition (rows, top to bottom in key order) per second of simulated time (columns), on the otskit embedded store."))
  out[#out + 1] = ('<text x="%d" y="74" class="sub">%s</text>'):format(LEFT - 30, esc(
    "A partition takes at most its capacity per second; past it the store throttles (OTSServerBusy) and the client backs off and retries."))
  -- legend
  local lx, ly = LEFT - 30, 86
  out[#out + 1] = ('<rect x="%d" y="%d" width="220" height="12" fill="url(#ramp)" stroke="#999" stroke-width="0.5"/>'):format(lx + 60, ly)
  out[#out + 1] = ('<text x="%d" y="%d" class="axis">load</text>'):format(lx, ly + 10)
  out[#out + 1] = ('<text x="%d" y="%d" class="axis" text-anchor="middle">1 row/s</text>'):format(lx + 60, ly + 25)
  out[#out + 1] = ('<text x="%d" y="%d" class="axis" text-anchor="middle">capacity</text>'):format(lx + 280, ly + 25)
  out[#out + 1] = ('<rect x="%d" y="%d" width="14" height="12" fill="#f4f4f2" stroke="#999" stroke-width="0.5"/>'):format(lx + 330, ly)
  out[#out + 1] = ('<text x="%d" y="%d" class="axis">no writes</text>'):format(lx + 350, ly + 10)
  out[#out + 1] = ('<rect x="%d" y="%d" width="14" height="12" fill="url(#unborn)" stroke="#999" stroke-width="0.5"/>'):format(lx + 420, ly)
  out[#out + 1] = ('<text x="%d" y="%d" class="axis">partition not split off yet</text>'):format(lx + 440, ly + 10)
  local ytop = TOP
  for _, row in ipairs(rows) do
    local r = row.r
    local y0 = ytop + 22
    ytop = ytop + scenario_height(r)
    out[#out + 1] = ('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#ddd"/>'):format(LEFT - 30, y0 - 6, W - 20, y0 - 6)
    out[#out + 1] = ('<text x="%d" y="%d" class="scen">%s</text>'):format(LEFT - 30, y0 + 14, esc(row.label))
    if r.note then out[#out + 1] = ('<text x="%d" y="%d" class="note">%s</text>'):format(LEFT - 30, y0 + 31, esc(r.note)) end
    local windows, peak = 1, 1
    for _, d in ipairs(r.designs) do
      if d.heat.windows > windows then windows = d.heat.windows end
      for _, l in pairs(d.heat.load) do for _, n in pairs(l) do if n > peak then peak = n end end end
    end
    local scale = r.capacity or peak
    for j, d in ipairs(r.designs) do
      local line, col = math.floor((j - 1) / COLS), (j - 1) % COLS
      local py = y0 + 72 + line * PANEL_ROW
      panel(out, LEFT + col * (PANEL_W + GAP), py, d, scale, windows)
      if col == 0 then
        out[#out + 1] = ('<text transform="translate(%d,%d) rotate(-90)" class="axis" text-anchor="middle">partitions</text>')
          :format(LEFT - 12, py + PANEL_H / 2)
      end
      if col == COLS - 1 or j == #r.designs then
        out[#out + 1] = ('<text x="%d" y="%d" class="axis">seconds</text>')
          :format(LEFT + (col + 1) * PANEL_W + col * GAP + 10, py + PANEL_H + 15)
      end
    end
  end
  if #left_out > 0 then
    out[#out + 1] = ('<text x="%d" y="%d" class="note">Not drawn (the scenario sets picture = false: no partition story to show):</text>')
      :format(LEFT - 30, ytop + 40)
    for i, l in ipairs(left_out) do
      out[#out + 1] = ('<text x="%d" y="%d" class="note">%s</text>'):format(LEFT - 10, ytop + 40 + 18 * i, esc(l))
    end
  end
  out[#out + 1] = "</svg>"
  return table.concat(out, "\n") .. "\n"
end

return svg
