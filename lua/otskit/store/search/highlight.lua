--- otskit.store.search.highlight -- summary and highlighting: the
-- fragments of a TEXT field's value around the terms a query matched,
-- each matched term between a pre_tag and a post_tag.
--
-- A highlight (a search's `highlight`, or a nested query's
-- inner_hits.highlight) is
--   { encoder = "PLAIN" | "HTML", parameters = { { field_name,
--     number_of_fragments = 5, fragment_size = 100, pre_tag = "<em>",
--     post_tag = "</em>", fragments_order = "TEXT_SEQUENCE" | "SCORE" } } }
-- Each field is a TEXT field with enable_highlighting, at the level the
-- highlight is asked at (a search: top-level fields; inner_hits: the
-- nested query's path's own sub-fields); at most 10 fields.
--
-- Which terms: those of the match, match_phrase, term, terms and prefix
-- queries on that field anywhere in the query (bool must / filter /
-- should, const_score, function_score, functions_score, nested), not
-- those under a bool's must_not. A value's tokens come from the field's
-- own analyzer (otskit.store.search.analyzers, the one the index used),
-- so a highlighted term is a token the query matched: match -> a token
-- equal to one of the text's tokens; match_phrase -> each token of a run
-- equal to the phrase's tokens (fuzzy analyzer: each occurrence of the
-- phrase's text); term / terms -> a token equal to a term; prefix -> a
-- token starting with the prefix. Overlapping marks are merged; each mark
-- is wrapped on its own.
--
-- Fragments: each value (each element of an array) is cut at token
-- starts into pieces of at most fragment_size characters where it can be
-- (a token or a mark is never cut, so a piece is longer only when one
-- token is); number_of_fragments = 0 keeps each value whole. Pieces
-- without a mark are dropped; of the others the best number_of_fragments
-- are kept (more distinct marked terms first, then text order), returned
-- in text order (TEXT_SEQUENCE) or best first (SCORE). A field without a
-- mark has no fragments (it is left out of the result). HTML encoding
-- escapes & < > " ' / in the text (never in the tags).
local base = require "otskit.store.base"
local analyzers = require "otskit.store.search.analyzers"
local cjson = require "cjson.safe"

local hl = {}

hl.LIMITS = { fields = 10, fragments = 500, fragment_size = 1000000, default_fragments = 5, default_size = 100 }
local L = hl.LIMITS

local function bad(msg) return nil, msg, "OTSParameterInvalid" end

local function count(v) return type(v) == "number" and v == math.floor(v) end

local HL_KEYS = base.set{ "encoder", "parameters" }
local PARAM_KEYS = { field_name = true, number_of_fragments = true, fragment_size = true, pre_tag = true,
  post_tag = true, fragments_order = true }

local function tag(v, what, default)
  if v == nil then return default end
  if type(v) ~= "string" or v == "" or not v:match("^[<>\"'/%w]+$") then
    return bad(("highlight: %s must be made of < > \" ' / a-z A-Z 0-9"):format(what))
  end
  return v
end

--- hl.check(def, h, path) -> a checked highlight { html, fields = { {d,
-- n, size, pre, post, score_order} } } | nil, msg, code. path: the NESTED
-- field whose sub-fields are highlighted (nil: top-level fields).
function hl.check(def, h, path)
  if type(h) ~= "table" then return bad("highlight must be a table { encoder, parameters }") end
  local ok, km, kc = base.known(h, HL_KEYS, "highlight")
  if not ok then return nil, km, kc end
  local enc = h.encoder or "PLAIN"
  if enc ~= "PLAIN" and enc ~= "HTML" then return bad("highlight: encoder must be PLAIN or HTML") end
  local ps = h.parameters
  if type(ps) ~= "table" or #ps == 0 then return bad("highlight: parameters must list the fields to highlight") end
  if #ps > L.fields then return bad("highlight: at most " .. L.fields .. " fields") end
  local lok, lm, lc = base.list(ps, "highlight: parameters")
  if not lok then return nil, lm, lc end
  local out, seen = { html = enc == "HTML", fields = {} }, {}
  for i, p in ipairs(ps) do
    if type(p) ~= "table" then return bad("highlight: each parameter is a table { field_name, ... }") end
    local pok, pm, pc = base.known(p, PARAM_KEYS, "highlight: a parameter")
    if not pok then return nil, pm, pc end
    local name = p.field_name
    if type(name) ~= "string" then return bad("highlight: field_name must be a string") end
    local d = def.byname[name]
    if not d then return bad(("highlight: field [%s] does not exist in the index schema"):format(name)) end
    local parent = d.parent and d.parent.name or nil
    if parent ~= path then
      if parent then
        return bad(("highlight: field [%s] is inside NESTED field [%s]: highlight it in that nested query's inner_hits")
          :format(name, parent))
      end
      return bad(("highlight: field [%s] is not a sub-field of the nested query's path [%s]"):format(name, path))
    end
    if d.type ~= "TEXT" then return bad(("highlight: field [%s] is %s, not TEXT"):format(name, d.type)) end
    if not d.highlight then return bad(("highlight: field [%s] does not enable_highlighting"):format(name)) end
    if seen[name] then return bad(("highlight: field [%s] is listed twice"):format(name)) end
    seen[name] = true
    local n = p.number_of_fragments == nil and L.default_fragments or p.number_of_fragments
    if not count(n) or n < 0 or n > L.fragments then
      return bad("highlight: number_of_fragments must be an integer in 0.." .. L.fragments)
    end
    local size = p.fragment_size == nil and L.default_size or p.fragment_size
    if not count(size) or size < 1 or size > L.fragment_size then
      return bad("highlight: fragment_size must be an integer in 1.." .. L.fragment_size)
    end
    local pre, pm, pc = tag(p.pre_tag, "pre_tag", "<em>")
    if not pre then return nil, pm, pc end
    local post, qm, qc = tag(p.post_tag, "post_tag", "</em>")
    if not post then return nil, qm, qc end
    local order = p.fragments_order or "TEXT_SEQUENCE"
    if order ~= "TEXT_SEQUENCE" and order ~= "SCORE" then
      return bad("highlight: fragments_order must be TEXT_SEQUENCE or SCORE")
    end
    out.fields[i] = { d = d, n = n, size = size, pre = pre, post = post, score_order = order == "SCORE" }
  end
  return out
end

----------------------------------------------------------------------
-- the terms a query matched, per field

local function matcher(terms, name)
  local m = terms[name]
  if not m then
    m = { words = {}, prefixes = {}, phrases = {}, contains = {} }
    terms[name] = m
  end
  return m
end

local function as_list(v)
  if type(v) ~= "table" then return {} end
  if v[1] == nil and next(v) ~= nil then return { v } end
  return v
end

local walk

local function leaf(def, kind, b, terms)
  local d = type(b.field_name) == "string" and def.byname[b.field_name] or nil
  if not d or d.type ~= "TEXT" then return end
  local m = matcher(terms, d.name)
  if kind == "match" and type(b.text) == "string" then
    for _, t in ipairs(analyzers.tokens(d.analyzer, d.params, b.text)) do m.words[t] = true end
  elseif kind == "match_phrase" and type(b.text) == "string" then
    if d.analyzer == "fuzzy" then
      if b.text ~= "" then m.contains[#m.contains + 1] = d.params.case_sensitive and b.text or b.text:lower() end
    else
      local toks = analyzers.tokens(d.analyzer, d.params, b.text)
      if #toks > 0 then m.phrases[#m.phrases + 1] = toks end
    end
  elseif kind == "term" and type(b.term) == "string" then
    m.words[b.term] = true
  elseif kind == "terms" and type(b.terms) == "table" then
    for _, t in ipairs(b.terms) do
      if type(t) == "string" then m.words[t] = true end
    end
  elseif kind == "prefix" and type(b.prefix) == "string" and b.prefix ~= "" then
    m.prefixes[#m.prefixes + 1] = b.prefix
  end
end

function walk(def, q, terms)
  if type(q) ~= "table" then return end
  local kind, b = next(q)
  if type(b) ~= "table" then return end
  if kind == "bool" then
    for _, k in ipairs({ "must", "filter", "should" }) do
      for _, sub in ipairs(as_list(b[k])) do walk(def, sub, terms) end
    end
  elseif kind == "const_score" then walk(def, b.filter, terms)
  elseif kind == "function_score" or kind == "functions_score" or kind == "nested" then walk(def, b.query, terms)
  else leaf(def, kind, b, terms) end
end

--- hl.terms(def, q) -> { [field name] = matcher }: what query q matched
-- in each TEXT field (see the top of this file)
function hl.terms(def, q)
  local terms = {}
  walk(def, q, terms)
  return terms
end

----------------------------------------------------------------------
-- fragments

local CHAR = "[%z\1-\127\194-\244][\128-\191]*"

-- the byte ranges {first, last} of value v to mark, sorted and merged
local function marks(d, v, spans, m)
  local out = {}
  for i, sp in ipairs(spans) do
    local tok = sp[1]
    local hit = m.words[tok]
    if not hit then
      for _, pfx in ipairs(m.prefixes) do
        if tok:sub(1, #pfx) == pfx then hit = true; break end
      end
    end
    if hit then out[#out + 1] = { sp[2], sp[3] } end
    for _, ph in ipairs(m.phrases) do
      if tok == ph[1] and i + #ph - 1 <= #spans then
        local all = true
        for j = 2, #ph do
          if spans[i + j - 1][1] ~= ph[j] then all = false; break end
        end
        if all then
          for j = 0, #ph - 1 do out[#out + 1] = { spans[i + j][2], spans[i + j][3] } end
        end
      end
    end
  end
  if #m.contains > 0 then
    local low = d.params.case_sensitive and v or v:lower()
    for _, c in ipairs(m.contains) do
      local at = 1
      while true do
        local a, b = low:find(c, at, true)
        if not a then break end
        out[#out + 1] = { a, b }
        at = a + 1
      end
    end
  end
  table.sort(out, function(x, y) return x[1] < y[1] or (x[1] == y[1] and x[2] > y[2]) end)
  local merged = {}
  for _, r in ipairs(out) do
    local last = merged[#merged]
    if last and r[1] <= last[2] then
      if r[2] > last[2] then last[2] = r[2] end
    else
      merged[#merged + 1] = { r[1], r[2] }
    end
  end
  return merged
end

local HTML = { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&#x27;", ["/"] = "&#x2F;" }
local function encode(s, html)
  if not html then return s end
  return (s:gsub("[&<>\"'/]", HTML))
end

-- the fragments of one value v (a string): { {start byte, score, text} }
local function value_fragments(d, v, m, f, html)
  local spans = analyzers.spans(d.analyzer, d.params, v)
  local mk = marks(d, v, spans, m)
  if #mk == 0 then return {} end
  -- cut points (byte positions where a piece starts)
  local cuts = { 1 }
  if f.n > 0 then
    local chars = {} -- byte -> the number of characters before it
    local nc = 0
    for pos in v:gmatch("()" .. CHAR) do chars[pos] = nc; nc = nc + 1 end
    local function char_at(b) -- characters before byte b (b inside a character: the one after)
      while b <= #v and not chars[b] do b = b + 1 end
      return chars[b] or nc
    end
    local start, mi = 0, 1
    for _, sp in ipairs(spans) do
      local s = sp[2]
      while mk[mi] and mk[mi][2] < s do mi = mi + 1 end
      local inside = mk[mi] and mk[mi][1] < s and s <= mk[mi][2]
      local cs, ce = char_at(s), char_at(sp[3] + 1)
      if not inside and cs > start and ce - start > f.size then
        cuts[#cuts + 1] = s
        start = cs
      end
    end
  end
  local out = {}
  local mi = 1
  for ci, a in ipairs(cuts) do
    local z = (cuts[ci + 1] or #v + 1) - 1 -- the piece is bytes a..z
    local parts, distinct, nd = {}, {}, 0
    local at = a
    while mk[mi] and mk[mi][1] <= z do
      local r = mk[mi]
      parts[#parts + 1] = encode(v:sub(at, r[1] - 1), html)
      local word = v:sub(r[1], r[2])
      parts[#parts + 1] = f.pre .. encode(word, html) .. f.post
      local key = word:lower()
      if not distinct[key] then distinct[key] = true; nd = nd + 1 end
      at = r[2] + 1
      mi = mi + 1
    end
    if nd > 0 then
      parts[#parts + 1] = encode(v:sub(at, z), html)
      out[#out + 1] = { a, nd, table.concat(parts) }
    end
  end
  return out
end

-- the values of a TEXT field's cell (a string; an array: a JSON array
-- string, or a list inside a nested object): a list of strings
local function strings(d, cell)
  if not d.array then return type(cell) == "string" and { cell } or {} end
  local list = cell -- inside a nested object an array is already a list
  if type(cell) == "string" then list = cjson.decode(cell) end
  local out = {}
  if type(list) == "table" then
    for _, x in ipairs(list) do if type(x) == "string" then out[#out + 1] = x end end
  end
  return out
end
hl.strings = strings

--- hl.fragments(f, values, m, html) -> the fragments (a list of strings,
-- maybe empty) of field f (an entry of hl.check's fields) whose values
-- are `values` (a list of strings), given the field's matcher m
function hl.fragments(f, values, m, html)
  if not m then return {} end
  local cands = {}
  for vi, v in ipairs(values) do
    for _, fr in ipairs(value_fragments(f.d, v, m, f, html)) do
      cands[#cands + 1] = { vi, fr[1], fr[2], fr[3] }
    end
  end
  local function text_order(x, y) return x[1] < y[1] or (x[1] == y[1] and x[2] < y[2]) end
  local function best(x, y)
    if x[3] ~= y[3] then return x[3] > y[3] end
    return text_order(x, y)
  end
  local n = f.n == 0 and #cands or math.min(f.n, #cands)
  table.sort(cands, best)
  local kept = {}
  for i = 1, n do kept[i] = cands[i] end
  if not f.score_order then table.sort(kept, text_order) end
  local out = {}
  for i, c in ipairs(kept) do out[i] = c[4] end
  return out
end

--- hl.result(checked, terms, get) -> { {field_name, fragments}, ... } (the
-- fields with at least one fragment, in the order asked) | nil when none;
-- get(field def) -> the field's cell (a string) or nil
function hl.result(checked, terms, get)
  local out = {}
  for _, f in ipairs(checked.fields) do
    local frs = hl.fragments(f, strings(f.d, get(f.d)), terms[f.d.name], checked.html)
    if #frs > 0 then out[#out + 1] = { field_name = f.d.name, fragments = frs } end
  end
  return #out > 0 and out or nil
end

return hl
