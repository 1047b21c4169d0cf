--- otskit.store.search.textquery -- the full-text query kinds of
-- otskit.store.search.query: match { field_name, text, operator = "OR"|
-- "AND", minimum_should_match } (on a TEXT field its analyzer's tokens,
-- scored by FTS5's bm25; on any other field the text is one term) and
-- match_phrase { field_name, text } (a TEXT field's tokens in order; the
-- fuzzy analyzer: the text, or each max_chars window of it). Called by
-- query.lua with its kind table and the value conversion, the
-- minimum_should_match rule and the FTS5 token quoting it shares with
-- the other kinds.
local analyzers = require "otskit.store.search.analyzers"
local docs = require "otskit.store.search.docs"

local function bad(msg) return nil, msg, "OTSParameterInvalid" end

return function(K, convert, msm, fts_quote)
  K.match = function(self, q, a, path)
    local d, m, c = self:field(q.field_name, path, "match")
    if not d then return nil, m, c end
    if type(q.text) ~= "string" then return bad("match: text must be a string") end
    if q.operator ~= nil and q.operator ~= "OR" and q.operator ~= "AND" then return bad("match: operator must be OR or AND") end
    local _, m1, c1 = msm(q.minimum_should_match, 1, "match") -- its type, whatever the field and the text
    if m1 then return nil, m1, c1 end
    if d.type ~= "TEXT" then
      -- a non-TEXT field: the text is one term
      local v, m2, c2 = convert(d, d.type == "KEYWORD" and q.text or tonumber(q.text) or q.text, "match")
      if v == nil then return nil, m2, c2 end
      return self:values(a, d, "v = " .. self:bindv(d, v)), "1"
    end
    local toks = analyzers.tokens(d.analyzer, d.params, q.text)
    local seen, uniq = {}, {}
    for _, t in ipairs(toks) do
      if not seen[t] then seen[t] = true; uniq[#uniq + 1] = fts_quote(t) end
    end
    if #uniq == 0 then return "0", "0" end
    local need, m3, c3 = msm(q.minimum_should_match, #uniq, "match")
    if need == nil and m3 then return nil, m3, c3 end
    local all = table.concat(uniq, q.operator == "AND" and " AND " or " OR ")
    local expr
    if q.operator == "AND" or not need or need <= 1 then
      expr = self:fts(a, d, "(" .. all .. ")")
    else
      local parts = {}
      local drive = self.drive
      self.drive = false
      for i, t in ipairs(uniq) do parts[i] = "(" .. self:fts(a, d, t) .. ")" end
      self.drive = drive
      expr = "(" .. table.concat(parts, " + ") .. ") >= " .. math.floor(need)
    end
    return expr, self:fts_score(a, d, "(" .. table.concat(uniq, " OR ") .. ")")
  end

  K.match_phrase = function(self, q, a, path)
    local d, m, c = self:field(q.field_name, path, "match_phrase")
    if not d then return nil, m, c end
    if type(q.text) ~= "string" then return bad("match_phrase: text must be a string") end
    if d.type ~= "TEXT" then return bad(("match_phrase: field [%s] is %s, not TEXT"):format(d.name, d.type)) end
    local toks
    if d.analyzer == "fuzzy" then
      -- contains: the text itself when it fits in max_chars, else every
      -- max_chars window of it
      local chars = {}
      for ch in q.text:gmatch("[%z\1-\127\194-\244][\128-\191]*") do chars[#chars + 1] = ch end
      local hi = d.params.max_chars or 7
      toks = {}
      local text = table.concat(chars)
      if not d.params.case_sensitive then text = text:lower() end
      if #chars <= hi then toks[1] = text
      else
        for i = 1, #chars - hi + 1 do
          local w = table.concat(chars, "", i, i + hi - 1)
          toks[#toks + 1] = d.params.case_sensitive and w or w:lower()
        end
      end
      if #chars == 0 then return "0", "0" end
      local parts = {}
      for i, t in ipairs(toks) do parts[i] = fts_quote(t) end
      local e = "(" .. table.concat(parts, " AND ") .. ")"
      return self:fts(a, d, e), self:fts_score(a, d, e)
    end
    toks = analyzers.tokens(d.analyzer, d.params, q.text)
    if #toks == 0 then return "0", "0" end
    local hx = {}
    for i, t in ipairs(toks) do hx[i] = docs.hex(t) end
    local e = '"' .. table.concat(hx, " ") .. '"'
    return self:fts(a, d, e), self:fts_score(a, d, e)
  end
end
