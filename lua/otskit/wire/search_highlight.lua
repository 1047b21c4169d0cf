--- otskit.wire.search_highlight -- highlight, inner hits and search hits
-- in the store's vocabulary (otskit.store.search.highlight, .inner) <->
-- the service's messages (proto/search.proto): SearchQuery.highlight (12)
-- and InnerHits.highlight are a Highlight {highlight_parameters[],
-- highlight_encoder PLAIN_MODE | HTML_MODE}; NestedQuery.inner_hits (5) is
-- InnerHits {sort, offset, limit, highlight}; each SearchResponse
-- search_hits (5) entry is a SearchHit {score, highlight_result
-- {highlight_fields[]{field_name, field_fragments[]}}, search_inner_hits[]
-- {path, search_hits[]}, nested_doc_offset}. Registers the inner_hits
-- codec with otskit.wire.search_query (its nested query carries them).
local common = require "otskit.wire.common"
local sq = require "otskit.wire.search_query"

local invalid = common.invalid

local sh = {}

-- the keys of each part that travel
local HL, PARAM = sq.set{ "encoder", "parameters" },
  sq.set{ "field_name", "number_of_fragments", "fragment_size", "pre_tag", "post_tag", "fragments_order" }
local IH = sq.set{ "sort", "offset", "limit", "highlight" }

--- sh.enc_highlight(h) -> Highlight message table | nil, msg, code
function sh.enc_highlight(h)
  if h == nil then return nil end
  if type(h) ~= "table" then return invalid("highlight must be a table { encoder, parameters }") end
  local ok, km, kc = sq.known(h, HL, "highlight")
  if not ok then return nil, km, kc end
  local ps = {}
  for i, p in ipairs(type(h.parameters) == "table" and h.parameters or {}) do
    if type(p) ~= "table" then return invalid("highlight: each parameter is a table") end
    local pok, pm, pc = sq.known(p, PARAM, "highlight: a parameter")
    if not pok then return nil, pm, pc end
    ps[i] = { field_name = p.field_name, number_of_fragments = p.number_of_fragments, fragment_size = p.fragment_size,
      pre_tag = p.pre_tag, post_tag = p.post_tag, fragments_order = p.fragments_order }
  end
  return { highlight_parameters = ps, highlight_encoder = h.encoder and h.encoder .. "_MODE" or nil }
end

--- sh.dec_highlight(m) -> the store's highlight | nil, msg, code
function sh.dec_highlight(m)
  if m == nil then return nil end
  local ps = {}
  for i, p in ipairs(m.highlight_parameters or {}) do
    ps[i] = { field_name = p.field_name, number_of_fragments = p.number_of_fragments, fragment_size = p.fragment_size,
      pre_tag = p.pre_tag, post_tag = p.post_tag, fragments_order = p.fragments_order }
  end
  local e = m.highlight_encoder
  if type(e) == "string" then e = e:gsub("_MODE$", "") end
  return { parameters = ps, encoder = e }
end

local function enc_ih(ih)
  if type(ih) ~= "table" then return invalid("nested: inner_hits must be a table") end
  local ok, km, kc = sq.known(ih, IH, "inner_hits")
  if not ok then return nil, km, kc end
  local so, m, c = sq.encode_sort(ih.sort)
  if m then return nil, m, c end
  local h, m2, c2 = sh.enc_highlight(ih.highlight)
  if m2 then return nil, m2, c2 end
  return { sort = so, offset = ih.offset, limit = ih.limit, highlight = h }
end

local function dec_ih(m)
  local out = { offset = m.offset, limit = m.limit }
  if m.sort and m.sort.sorter and #m.sort.sorter > 0 then
    local so, sm, sc = sq.decode_sort(m.sort)
    if not so then return nil, sm, sc end
    out.sort = so
  end
  if m.highlight then
    local h, hm, hc = sh.dec_highlight(m.highlight)
    if not h then return nil, hm, hc end
    out.highlight = h
  end
  return out
end

sq.inner_hits = { enc = enc_ih, dec = dec_ih }

local function enc_fields(list)
  if not list then return nil end
  local out = {}
  for i, f in ipairs(list) do out[i] = { field_name = f.field_name, field_fragments = f.fragments } end
  return { highlight_fields = out }
end

local function dec_fields(m)
  if not m then return nil end
  local out = {}
  for i, f in ipairs(m.highlight_fields or {}) do out[i] = { field_name = f.field_name, fragments = f.field_fragments or {} } end
  return out
end

--- sh.enc_hits(hits) -> list of SearchHit message tables (nil stays nil)
function sh.enc_hits(hits)
  if hits == nil then return nil end
  local out = {}
  for i, h in ipairs(hits) do
    local inner
    if h.inner_hits then
      inner = {}
      for j, ih in ipairs(h.inner_hits) do inner[j] = { path = ih.path, search_hits = sh.enc_hits(ih.hits) } end
    end
    out[i] = { score = h.score, highlight_result = enc_fields(h.highlight_fields), search_inner_hits = inner,
      nested_doc_offset = h.nested_doc_offset }
  end
  return out
end

--- sh.dec_hits(list) -> the store's hits
function sh.dec_hits(list)
  local out = {}
  for i, m in ipairs(list or {}) do
    local h = { score = m.score, nested_doc_offset = m.nested_doc_offset, highlight_fields = dec_fields(m.highlight_result) }
    if m.search_inner_hits and #m.search_inner_hits > 0 then
      h.inner_hits = {}
      for j, ih in ipairs(m.search_inner_hits) do h.inner_hits[j] = { path = ih.path, hits = sh.dec_hits(ih.search_hits) } end
    end
    out[i] = h
  end
  return out
end

return sh
