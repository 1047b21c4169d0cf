--- otskit.analyze.report -- the side-by-side table of `otskit demo` and
-- `otskit analyze`: one column per design, one line per measure.
local report = {}

-- rounded here: LuaJIT and C round halves differently in %.0f
local function pct(x) return ("%d%%"):format(math.floor(100 * x + 0.5)) end

local function bytes(n)
  if n >= 10 * 1024 * 1024 then return ("%.1f MB"):format(n / 1048576) end
  if n >= 10 * 1024 then return ("%.0f KB"):format(n / 1024) end
  return ("%d B"):format(n)
end
report.bytes = bytes

local function num(x)
  if x == math.floor(x) then return ("%d"):format(x) end
  return ("%.1f"):format(x)
end

-- the measures, in order: label, function(metrics) -> text
local LINES = {
  { "writes on the hottest partition", function(m)
      return ("%d (%s of %d)"):format(m.hottest_writes, pct(m.hottest_share), m.rows_written) end },
  { "hottest partition, share of each second", function(m)
      if not m.mean_share then return "-" end
      return ("%s mean, %s peak"):format(pct(m.mean_share), pct(m.peak_share)) end },
  { "partitions used (of all)", function(m) return ("%d of %d"):format(m.partitions_used, m.partitions) end },
  { "requests per query", function(m) return m.queries > 0 and num(m.requests_per_query) or "-" end },
  { "rows read per query", function(m) return m.queries > 0 and num(m.rows_per_query) or "-" end },
  { "rows returned per query", function(m) return m.queries > 0 and num(m.results_per_query) or "-" end },
  { "bytes stored", function(m) return bytes(m.bytes_stored) end },
  -- these two only when a design of the scenario has an index
  { "rows kept per row written (indexes)", function(m)
      return m.indexes > 0 and ("%s (%d index%s)"):format(num(m.rows_kept_per_row), m.indexes, m.indexes == 1 and "" or "es") or "1 (no index)" end,
    indexed = true },
  { "bytes stored with indexes", function(m) return bytes(m.bytes_stored + m.index_bytes) end, indexed = true },
  { "retries", function(m) return ("%d"):format(m.retries) end },
  { "writes refused (throttled)", function(m) return ("%d"):format(m.throttled) end },
  { "operations failed", function(m)
      local s = ("%d of %d"):format(m.failed_ops, m.ops)
      if m.failed_queries > 0 then s = s .. (", %d queries"):format(m.failed_queries) end
      return s end },
  { "errors (code x count)", function(_, d)
      local parts = {}
      for _, e in ipairs(d.errors or {}) do parts[#parts + 1] = ("%s x %d"):format(e.code, e.count) end
      return #parts > 0 and table.concat(parts, ", ") or "-" end },
}

-- display width of UTF-8 text (counts code points, not bytes)
local function width(s) return #(s:gsub("[\128-\191]", "")) end
local function padu(s, n) return s .. (" "):rep(math.max(0, n - width(s))) end

-- text wrapped at `cols` columns: the first line as is, the others
-- indented by `indent` spaces
local function wrap(text, cols, indent)
  local lead = text:match("^%s*")
  local lines, cur = {}, ""
  for word in text:gmatch("%S+") do
    if cur == "" and #lines == 0 then word = lead .. word end
    if cur ~= "" and width(cur) + 1 + width(word) > cols then
      lines[#lines + 1] = cur
      cur = (" "):rep(indent) .. word
    else
      cur = cur == "" and word or (cur .. " " .. word)
    end
  end
  if cur ~= "" then lines[#lines + 1] = cur end
  return lines
end
report.wrap = wrap

--- report.text(result, index) -> the table of one scenario (lines of text)
function report.text(r, index)
  local out = {}
  local head = (index and (index .. ". ") or "") .. r.title
  out[#out + 1] = head
  out[#out + 1] = ("="):rep(width(head))
  if r.note then out[#out + 1] = r.note end
  local nw = 0
  for _, d in ipairs(r.designs) do if width(d.name) > nw then nw = width(d.name) end end
  for _, d in ipairs(r.designs) do
    out[#out + 1] = "  " .. padu(d.name, nw) .. "  " .. d.label
  end
  out[#out + 1] = ""
  local cols = {}
  local indexed = false
  for _, d in ipairs(r.designs) do if (d.metrics.indexes or 0) > 0 then indexed = true end end
  local lines = {}
  for _, l in ipairs(LINES) do if indexed or not l.indexed then lines[#lines + 1] = l end end
  for j, d in ipairs(r.designs) do
    local c = { d.name }
    for i, l in ipairs(lines) do c[i + 1] = l[2](d.metrics, d) end
    cols[j] = c
    cols[j].extras = d.metrics.extras
  end
  -- extra measures (a design's report()), union over designs, sorted
  local names, seen = {}, {}
  for _, d in ipairs(r.designs) do
    for k in pairs(d.metrics.extras) do if not seen[k] then seen[k] = true; names[#names + 1] = k end end
  end
  table.sort(names)
  local labels = { "" }
  for i, l in ipairs(lines) do labels[i + 1] = l[1] end
  for _, k in ipairs(names) do
    labels[#labels + 1] = k
    for _, c in ipairs(cols) do
      local v = c.extras[k]
      if type(v) == "number" then v = (k:find("bytes") and v >= 1024) and bytes(v) or num(v) end
      c[#labels] = v ~= nil and tostring(v) or "-"
    end
  end
  local lw = 0
  for _, l in ipairs(labels) do if width(l) > lw then lw = width(l) end end
  local widths = {}
  for j, c in ipairs(cols) do
    local w = 11
    for i = 1, #labels do if c[i] and width(c[i]) > w then w = width(c[i]) end end
    widths[j] = w
  end
  for i = 1, #labels do
    local cells = { "  " .. padu(labels[i], lw) }
    for j, c in ipairs(cols) do cells[#cells + 1] = padu(c[i] or "", widths[j]) end
    out[#out + 1] = (table.concat(cells, "   "):gsub("%s+$", ""))
    if i == 1 then
      local rule = { "  " .. ("-"):rep(lw) }
      for j = 1, #cols do rule[#rule + 1] = ("-"):rep(widths[j]) end
      out[#out + 1] = table.concat(rule, "   ")
    end
  end
  -- each design's errors (first message per code) and findings
  for _, d in ipairs(r.designs) do
    for _, e in ipairs(d.errors or {}) do
      for _, l in ipairs(wrap(("  %s: %s x %d (%s), first: %s"):format(d.name, e.code, e.count, e.op, e.message), 100, 4)) do
        out[#out + 1] = l
      end
    end
  end
  for _, d in ipairs(r.designs) do
    for _, f in ipairs(d.findings or {}) do
      for _, l in ipairs(wrap(("  ! %s: %s: %s"):format(d.name, f.cause, f.text), 100, 4)) do out[#out + 1] = l end
    end
  end
  for _, k in ipairs(r.queries or {}) do
    for _, l in ipairs(wrap("  " .. k.text, 100, 4)) do out[#out + 1] = l end
  end
  for _, a in ipairs(r.advice or {}) do
    for _, l in ipairs(wrap("  advice: " .. a.text, 100, 4)) do out[#out + 1] = l end
  end
  return out
end

-- one measure of the digest: label, value(metrics) -> number or nil, format
local DIGEST = {
  { "hottest partition's share of each second", function(m) return m.mean_share end, pct },
  { "writes throttled", function(m) return m.throttled end, num },
  { "retries", function(m) return m.retries end, num },
  { "operations failed", function(m) return m.failed_ops end, num },
  { "requests per query", function(m) return m.queries > 0 and m.requests_per_query or nil end, num },
  { "rows read per query", function(m) return m.queries > 0 and m.rows_per_query or nil end, num },
  { "bytes stored", function(m) return m.bytes_stored end, bytes },
}

--- report.digest(results) -> lines: per scenario, what changed from its
-- first design to each other one (only the measures that differ).
function report.digest(results)
  local out = {}
  for i, r in ipairs(results) do
    local a = r.designs[1]
    for j = 2, #r.designs do
      local b = r.designs[j]
      local parts = {}
      for _, d in ipairs(DIGEST) do
        local x, y = d[2](a.metrics), d[2](b.metrics)
        if x and y and d[3](x) ~= d[3](y) then parts[#parts + 1] = ("%s %s -> %s"):format(d[1], d[3](x), d[3](y)) end
      end
      local names = {}
      for k in pairs(a.metrics.extras) do names[#names + 1] = k end
      table.sort(names)
      for _, k in ipairs(names) do
        local x, y = a.metrics.extras[k], b.metrics.extras[k]
        if x ~= nil and y ~= nil and tostring(x) ~= tostring(y) then
          local f = function(v) return type(v) == "number" and ((k:find("bytes") and v >= 1024) and bytes(v) or num(v)) or tostring(v) end
          parts[#parts + 1] = ("%s %s -> %s"):format(k, f(x), f(y))
        end
      end
      out[#out + 1] = ("%d. %s (%s -> %s):"):format(i, r.name, a.name, b.name)
      for _, p in ipairs(parts) do out[#out + 1] = "     " .. p end
    end
  end
  return out
end

return report
