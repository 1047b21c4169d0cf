--- otskit.store.search.memo -- texts remembered: a search's SQL texts
-- repeat with its shape (the kinds, fields and flags of its query; the
-- values are bound), so the texts built from a part of it are remembered
-- per what they depend on (and a remembered text is the same string each
-- time, so the next lookup of what is built from it is cheap too).
-- memo.new() -> m: a table m.t of at most 512 entries (memo.keep(m, k, v)
-- adds one; all are dropped when it is full); memo.forget() empties every
-- memo (a spec compares what is remembered with what is built afresh).
-- otskit.store.search.query gives them as query.memo, query.keep and
-- query.forget.
local memo = {}

local MEMOS = setmetatable({}, { __mode = "k" })

function memo.new()
  local m = { t = {}, n = 0 }
  MEMOS[m] = true
  return m
end

function memo.keep(m, k, v)
  if m.n >= 512 then m.t, m.n = {}, 0 end
  m.t[k], m.n = v, m.n + 1
  return v
end

function memo.forget()
  for m in pairs(MEMOS) do m.t, m.n = {}, 0 end
end

--- memo.remembered(fn) -> fn remembered per string argument s
function memo.remembered(fn)
  local m = memo.new()
  return function(s)
    local r = m.t[s]
    if r == nil then r = memo.keep(m, s, fn(s)) end
    return r
  end
end

return memo
