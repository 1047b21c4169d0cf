--- otskit.store.search.analyzers -- the search index's TEXT analyzers:
-- text -> the list of tokens in order, as the service's analyzers split
-- it. The same analyzer splits a field's values when a row is indexed and
-- a match / match_phrase query's text when it is searched.
--
-- single_word (the default): each CJK character is a token; runs of
--   letters and digits (ASCII, and non-CJK letters beyond ASCII) are
--   tokens, split on spaces and punctuation; lower-cased unless
--   case_sensitive; delimit_word additionally splits a run where letters
--   and digits meet ("abc123" -> "abc", "123").
-- split: the pieces between occurrences of delimiter (default: any
--   whitespace); empty pieces dropped; lower-cased unless case_sensitive.
-- fuzzy: every substring of min_chars..max_chars characters (n-grams) of
--   the first 1024 characters; lower-cased unless case_sensitive.
-- min_word, max_word: the service segments Chinese with a dictionary;
--   otskit has none, so both split as single_word does (each CJK
--   character a word). Queries are analysed the same way, so match and
--   match_phrase find what a one-character segmentation finds.
local analyzers = {}

local CHAR = "[%z\1-\127\194-\244][\128-\191]*"

-- the code point of one UTF-8 character
local function cp(ch)
  local b = ch:byte(1)
  if b < 0x80 then return b end
  -- a truncated sequence (invalid UTF-8) counts its missing bytes as 0
  local b2, b3, b4 = (ch:byte(2) or 128) % 64, (ch:byte(3) or 128) % 64, (ch:byte(4) or 128) % 64
  if b < 0xE0 then return (b % 0x20) * 64 + b2 end
  if b < 0xF0 then return ((b % 0x10) * 64 + b2) * 64 + b3 end
  return (((b % 0x08) * 64 + b2) * 64 + b3) * 64 + b4
end

-- "c": a CJK character (a token of its own); "l": letter; "d": digit; "s": separator
local function class(ch)
  local b = ch:byte(1)
  if b < 0x80 then
    if (b >= 48 and b <= 57) then return "d" end
    if (b >= 65 and b <= 90) or (b >= 97 and b <= 122) then return "l" end
    return "s"
  end
  local c = cp(ch)
  if (c >= 0x2E80 and c <= 0x2FFF) or (c >= 0x3040 and c <= 0x9FFF) or (c >= 0xAC00 and c <= 0xD7AF)
    or (c >= 0xF900 and c <= 0xFAFF) or (c >= 0x20000 and c <= 0x2FFFF) then return "c" end
  if (c >= 0x2000 and c <= 0x206F) or (c >= 0x3000 and c <= 0x303F) or (c >= 0xFF00 and c <= 0xFF0F)
    or (c >= 0xFF1A and c <= 0xFF20) or (c >= 0xFF3B and c <= 0xFF40) or (c >= 0xFF5B and c <= 0xFF65)
    or c == 0xA0 or (c >= 0xA1 and c <= 0xBF) or c == 0xD7 or c == 0xF7 then return "s" end
  if c >= 0xFF10 and c <= 0xFF19 then return "d" end
  return "l"
end

local function single_word(text, p)
  local out, n = {}, 0
  local lower = not p.case_sensitive
  local delimit = p.delimit_word
  local word, wn, last = {}, 0, nil
  local function flush()
    if wn == 0 then return end
    local w = table.concat(word, "", 1, wn)
    if lower then w = w:lower() end
    n = n + 1
    out[n] = w
    wn = 0
  end
  for ch in text:gmatch(CHAR) do
    local k = class(ch)
    if k == "c" then
      flush()
      n = n + 1
      out[n] = ch
    elseif k == "s" then
      flush()
    else
      if delimit and wn > 0 and k ~= last then flush() end
      wn = wn + 1
      word[wn] = ch
    end
    last = k
  end
  flush()
  return out
end

local function split(text, p)
  local out, n = {}, 0
  local lower = not p.case_sensitive
  local d = p.delimiter
  local function add(s)
    if s ~= "" then
      n = n + 1
      out[n] = lower and s:lower() or s
    end
  end
  if d == nil or d == "" then
    for s in text:gmatch("[^%s]+") do add(s) end
  else
    local i = 1
    while true do
      local a, b = text:find(d, i, true)
      if not a then add(text:sub(i)); break end
      add(text:sub(i, a - 1))
      i = b + 1
    end
  end
  return out
end

local function fuzzy(text, p)
  local chars, nc = {}, 0
  for ch in text:gmatch(CHAR) do
    nc = nc + 1
    chars[nc] = ch
    if nc >= 1024 then break end
  end
  local lo, hi = p.min_chars or 1, p.max_chars or 7
  local out, n = {}, 0
  local lower = not p.case_sensitive
  for i = 1, nc do
    for len = lo, hi do
      if i + len - 1 > nc then break end
      local s = table.concat(chars, "", i, i + len - 1)
      n = n + 1
      out[n] = lower and s:lower() or s
    end
  end
  return out
end

----------------------------------------------------------------------
-- spans: the same tokens with where they lie in the text (highlighting)

-- each function below returns { {token, first byte, last byte}, ... }:
-- the tokens its analyzer above returns, in the same order
-- the class of each ASCII byte (as class() says)
local ACLASS = {}
for b = 0, 127 do ACLASS[b] = class(string.char(b)) end

-- single_word byte by byte (string.byte, which LuaJIT compiles): a
-- character is a lead byte and the continuation bytes after it, as CHAR
-- matches; other bytes are not characters (they neither end nor join a
-- word; a word holding one is rebuilt from its characters)
local function single_word_spans(text, p)
  local out, n = {}, 0
  local lower, delimit = not p.case_sensitive, p.delimit_word
  local byte, sub = string.byte, string.sub
  local len = #text
  local ws, we, last, dirty = nil, 0, nil, false
  local function flush()
    if not ws then return end
    local w = sub(text, ws, we)
    if dirty then
      local t = {}
      for ch in w:gmatch(CHAR) do t[#t + 1] = ch end
      w = table.concat(t)
    end
    if lower then w = w:lower() end
    n = n + 1
    out[n] = { w, ws, we }
    ws, dirty = nil, false
  end
  local i = 1
  while i <= len do
    local b = byte(text, i)
    local j = i + 1
    local k
    if b < 128 or (b >= 194 and b <= 244) then
      while true do
        local c = byte(text, j)
        if c and c >= 128 and c <= 191 then j = j + 1 else break end
      end
      if b < 128 then k = ACLASS[b] else k = class(sub(text, i, j - 1)) end
    elseif ws then
      dirty = true
    end
    if k == "c" then
      flush()
      n = n + 1
      out[n] = { sub(text, i, j - 1), i, j - 1 }
    elseif k == "s" then
      flush()
    elseif k then
      if delimit and ws and k ~= last then flush() end
      if not ws then ws = i end
      we = j - 1
    end
    if k then last = k end
    i = j
  end
  flush()
  return out
end

local function split_spans(text, p)
  local out, n = {}, 0
  local lower = not p.case_sensitive
  local d = p.delimiter
  local function add(s, i)
    if s ~= "" then
      n = n + 1
      out[n] = { lower and s:lower() or s, i, i + #s - 1 }
    end
  end
  if d == nil or d == "" then
    for i, s in text:gmatch("()([^%s]+)") do add(s, i) end
  else
    local i = 1
    while true do
      local a, b = text:find(d, i, true)
      if not a then add(text:sub(i), i); break end
      add(text:sub(i, a - 1), i)
      i = b + 1
    end
  end
  return out
end

local function fuzzy_spans(text, p)
  local chars, at, nc = {}, {}, 0
  for pos, ch in text:gmatch("()(" .. CHAR .. ")") do
    nc = nc + 1
    chars[nc], at[nc] = ch, pos
    if nc >= 1024 then break end
  end
  local lo, hi = p.min_chars or 1, p.max_chars or 7
  local out, n = {}, 0
  local lower = not p.case_sensitive
  for i = 1, nc do
    for len = lo, hi do
      local j = i + len - 1
      if j > nc then break end
      local s = table.concat(chars, "", i, j)
      n = n + 1
      out[n] = { lower and s:lower() or s, at[i], at[j] + #chars[j] - 1 }
    end
  end
  return out
end

local SPANS = { single_word = single_word_spans, max_word = single_word_spans, min_word = single_word_spans,
  split = split_spans, fuzzy = fuzzy_spans }

--- analyzers.spans(name, params, text) -> { {token, first, last}, ... }:
-- the tokens analyzers.tokens returns, in order, each with the first and
-- last byte of the text it came from
function analyzers.spans(name, params, text)
  return SPANS[name](text, params or {})
end

analyzers.FNS = { single_word = single_word, max_word = single_word, min_word = single_word,
  split = split, fuzzy = fuzzy }

--- The parameters each analyzer takes (name -> Lua type).
analyzers.PARAMS = {
  single_word = { case_sensitive = "boolean", delimit_word = "boolean" },
  split = { delimiter = "string", case_sensitive = "boolean" },
  fuzzy = { min_chars = "number", max_chars = "number", case_sensitive = "boolean" },
  max_word = {}, min_word = {},
}

--- analyzers.check(name, params) -> params (a fresh table) | nil, msg
function analyzers.check(name, params)
  local want = analyzers.PARAMS[name]
  if not want then return nil, "analyzer must be one of single_word, max_word, min_word, split, fuzzy: " .. tostring(name) end
  local out = {}
  if params == nil then params = {} end
  if type(params) ~= "table" then return nil, "analyzer_parameter must be a table" end
  for k, v in pairs(params) do
    if not want[k] then return nil, ("analyzer %s takes no parameter '%s'"):format(name, tostring(k)) end
    if type(v) ~= want[k] then return nil, ("analyzer parameter %s must be a %s"):format(k, want[k]) end
    out[k] = v
  end
  if name == "fuzzy" then
    local lo, hi = out.min_chars or 1, out.max_chars or 7
    if lo ~= math.floor(lo) or hi ~= math.floor(hi) or lo < 1 or hi > 7 or lo > hi then
      return nil, "fuzzy analyzer: min_chars and max_chars must be integers with 1 <= min_chars <= max_chars <= 7"
    end
  end
  if name == "split" and out.delimiter and #out.delimiter > 64 then
    return nil, "split analyzer: delimiter is longer than 64 bytes"
  end
  return out
end

--- analyzers.tokens(name, params, text) -> list of tokens
function analyzers.tokens(name, params, text)
  return analyzers.FNS[name](text, params or {})
end

return analyzers
