-- otskit.analyze.choice: the index-choice half of the report: whether the
-- best practices' advice for a scenario agrees with its measures, and,
-- per query kind, what each design read and which design answered it best.
local choice = {}

-- names of the measures advice is checked by (lower is better); any
-- other name is one of the designs' own (report) measures
local ADVICE_MEASURES = { rows_per_query = "rows read per query", requests_per_query = "requests per query",
  ranges_per_query = "key ranges per query", bytes_stored = "bytes stored", index_bytes = "bytes of indexes",
  rows_kept_per_row = "rows kept per row written", failed_ops = "operations failed", throttled = "writes throttled" }
choice.ADVICE_MEASURES = ADVICE_MEASURES

--- choice.advice(scenario, result) -> list of { query, design, why, by,
-- agree, text }: for each piece of advice, whether the measures agree (the
-- advised design is not beaten on any of its `by` measures: a field of
-- the metrics, or a design's own report measure; lower is better).
-- Raises when a measure is not a number for some design.
function choice.advice(sc, res)
  local out = {}
  local function num(x) return x == math.floor(x) and ("%d"):format(x) or ("%.1f"):format(x) end
  local function value(d, k)
    local v = d.metrics[k]
    if v == nil then v = d.metrics.extras[k] end
    if type(v) ~= "number" then
      error(("otskit.analyze: scenario %s: advice measure '%s' is not a number for design %s"):format(sc.name, k, d.name), 0)
    end
    return v
  end
  for _, a in ipairs(sc.advice or {}) do
    local mine
    for _, d in ipairs(res.designs) do if d.name == a.design then mine = d end end
    local beaten, parts = {}, {}
    for _, k in ipairs(a.by) do
      local v, label = value(mine, k), ADVICE_MEASURES[k] or k
      parts[#parts + 1] = ("%s %s"):format(label, num(v))
      for _, d in ipairs(res.designs) do
        if d ~= mine and value(d, k) < v then
          beaten[#beaten + 1] = ("%s has %s %s"):format(d.name, label, num(value(d, k)))
        end
      end
    end
    local agree = #beaten == 0
    local text = ("for %s the best practices advise %s (%s). Measured: %s, %s"):format(a.query, a.design, a.why,
      table.concat(parts, ", "), agree and ("the least of the " .. #res.designs .. " designs: the measures agree")
      or ("but " .. table.concat(beaten, ", ") .. ": the measures do not agree"))
    out[#out + 1] = { query = a.query, design = a.design, why = a.why, by = a.by, agree = agree, text = text }
  end
  return out
end

local function num1(x) return x == math.floor(x) and ("%d"):format(x) or ("%.1f"):format(x) end

-- "1 row read in 1 request per query through global index files_by_md5"
local function paths_text(e)
  local parts = {}
  for _, p in ipairs(e.paths) do
    parts[#parts + 1] = ("%s %s (%s row%s in %s request%s)"):format(p.path, p.name, num1(p.rows_per_query),
      p.rows_per_query == 1 and "" or "s", num1(p.requests_per_query), p.requests_per_query == 1 and "" or "s")
  end
  return #parts > 0 and table.concat(parts, " + ") or "no read"
end

--- choice.query_choice(result) -> list, per query kind (queries whose
-- item has a `kind`), of { kind, designs = { { design, paths, rows_per_query,
-- requests_per_query, results_per_query, rows_kept_per_row } }, best, text }:
-- what each design read for it, through which access path, and the design
-- that answered it reading the fewest rows (then fewest requests, then
-- fewest rows kept per row written), among those returning as many rows as
-- any design did, and losing no write when some design lost none.
function choice.query_choice(res)
  local order, by = {}, {}
  for _, d in ipairs(res.designs) do
    for _, e in ipairs(d.metrics.query_kinds or {}) do
      local k = by[e.kind]
      if not k then k = { kind = e.kind, designs = {} }; by[e.kind] = k; order[#order + 1] = e.kind end
      k.designs[#k.designs + 1] = { design = d.name, paths = e.paths, rows_per_query = e.rows_per_query,
        requests_per_query = e.requests_per_query, results_per_query = e.results_per_query, failed = e.failed,
        rows_kept_per_row = d.metrics.rows_kept_per_row, text = paths_text(e),
        failed_writes = d.metrics.failed_ops, ops = d.metrics.ops }
    end
  end
  local out = {}
  for _, kind in ipairs(order) do
    local k = by[kind]
    -- candidates: no failed query, and no lost write when some design
    -- lost none (a design that lost writes answers over other data)
    local most, clean = 0, false
    for _, x in ipairs(k.designs) do
      if x.failed == 0 and x.results_per_query > most then most = x.results_per_query end
      if x.failed == 0 and x.failed_writes == 0 then clean = true end
    end
    local best, tied
    for _, x in ipairs(k.designs) do
      if x.failed == 0 and x.results_per_query >= most and (not clean or x.failed_writes == 0) then
        if not best or x.rows_per_query < best.rows_per_query
           or (x.rows_per_query == best.rows_per_query and x.requests_per_query < best.requests_per_query) then
          best, tied = x, { x }
        elseif x.rows_per_query == best.rows_per_query and x.requests_per_query == best.requests_per_query then
          tied[#tied + 1] = x
          if x.rows_kept_per_row < best.rows_kept_per_row then best = x end
        end
      end
    end
    local lines = {}
    for _, x in ipairs(k.designs) do
      lines[#lines + 1] = ("%s: %s, %s returned%s%s"):format(x.design, x.text, num1(x.results_per_query),
        x.failed > 0 and (", %d failed"):format(x.failed) or (x.results_per_query < most and " (fewer: it misses rows)" or ""),
        x.failed_writes > 0 and (" (over the data left after %d of %d writes failed)"):format(x.failed_writes, x.ops) or "")
    end
    k.best = best and best.design
    local function via(x) return x.paths[1] and x.paths[1].path or "no read" end
    if not best then
      k.text = ("query %q: %s. No design answered it without failing"):format(kind, table.concat(lines, "; "))
    elseif #tied > 1 then
      local names, kept = {}, {}
      for i, x in ipairs(tied) do
        names[i] = ("%s (%s)"):format(x.design, via(x))
        kept[i] = ("%s %s"):format(x.design, num1(x.rows_kept_per_row))
      end
      k.text = ("query %q: %s. Equal reads (%s row(s) in %s request(s) per query): %s; rows kept per row written: %s"):format(
        kind, table.concat(lines, "; "), num1(best.rows_per_query), num1(best.requests_per_query),
        table.concat(names, ", "), table.concat(kept, ", "))
    else
      k.text = ("query %q: %s. Recommended: %s (%s), the fewest rows read per query%s"):format(kind,
        table.concat(lines, "; "), best.design, via(best),
        best.rows_kept_per_row > 1 and (", at %s rows kept per row written"):format(num1(best.rows_kept_per_row)) or "")
    end
    k.tied = {}
    for i, x in ipairs(tied or {}) do k.tied[i] = x.design end
    out[#out + 1] = k
  end
  return out
end

return choice
