--- otskit.analyze.json -- the results of `otskit analyze --json` and
-- `otskit demo --json` as one JSON document (docs/analyze.md describes
-- it), written by otskit.json: keys sorted, the same document on Lua 5.4
-- and LuaJIT run after run; lists stay lists when empty ("errors": []).
local base = require "otskit.json"

local json = {}

--- json.array(t) -> t, encoded as a JSON array even when empty.
json.array = base.array

--- json.encode(v) -> JSON text (see the header).
function json.encode(v) return base.encode(v) end

local function copy(t, skip)
  local o = {}
  for k, v in pairs(t) do if not (skip and skip[k]) then o[k] = v end end
  return o
end

--- json.document(results, opts) -> the document as a Lua table: { tool,
-- scenarios = { { index, name, title, note, capacity, rate, designs = { {
-- name, label, measures, errors, findings } } } } }. opts.tool: "otskit
-- demo" or "otskit analyze".
function json.document(results, opts)
  local doc = { tool = (opts or {}).tool or "otskit analyze", scenarios = json.array() }
  for i, r in ipairs(results) do
    local sc = { index = i, name = r.name, title = r.title, note = r.note, capacity = r.capacity,
                 rate = r.rate, designs = json.array() }
    for _, d in ipairs(r.designs) do
      local m = d.metrics
      local measures = copy(m, { extras = true, tables = true, query_kinds = true })
      measures.extras = copy(m.extras)
      local tables = json.array()
      for j, t in ipairs(m.tables or {}) do tables[j] = copy(t) end
      measures.tables = tables
      local errors, findings = json.array(), json.array()
      for j, e in ipairs(d.errors or {}) do errors[j] = copy(e) end
      for j, f in ipairs(d.findings or {}) do
        local ev = copy(f.evidence)
        if ev.split_points then ev.split_points = json.array(copy(ev.split_points)) end
        findings[j] = { cause = f.cause, text = f.text, evidence = ev }
      end
      sc.designs[#sc.designs + 1] = { name = d.name, label = d.label, measures = measures,
                                      errors = errors, findings = findings }
    end
    sc.advice = json.array()
    for j, a in ipairs(r.advice or {}) do
      sc.advice[j] = { query = a.query, design = a.design, why = a.why, by = json.array(copy(a.by)), agree = a.agree,
                       text = a.text }
    end
    sc.queries = json.array()
    for j, k in ipairs(r.queries or {}) do
      local ds = json.array()
      for n, x in ipairs(k.designs) do
        local paths = json.array()
        for pi, p in ipairs(x.paths) do paths[pi] = copy(p) end
        ds[n] = { design = x.design, paths = paths, rows_per_query = x.rows_per_query,
                  requests_per_query = x.requests_per_query, results_per_query = x.results_per_query,
                  failed = x.failed, rows_kept_per_row = x.rows_kept_per_row }
      end
      sc.queries[j] = { kind = k.kind, designs = ds, best = k.best, tied = json.array(copy(k.tied or {})), text = k.text }
    end
    doc.scenarios[i] = sc
  end
  return doc
end

return json
