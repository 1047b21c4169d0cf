--- otskit.client.pager -- reading a whole range page by page, for any
-- object with the store interface (the embedded store or the client).
local pager = {}

pager.MAX_STALL = 32

-- equal keys ({{name, value}, ...}) or equal values; depth-bounded
local function same(a, b, depth)
  if a == b then return true end
  depth = depth or 0
  if type(a) ~= "table" or type(b) ~= "table" or depth > 8 then return false end
  if getmetatable(a) ~= getmetatable(b) then return false end
  for k, v in pairs(a) do
    if not same(v, b[k], depth + 1) then return false end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end
pager.same = same

--- pager.range(db, req [, opts]) -> iterator. Each call returns the next
-- row of the range; nil when the range is done; nil, message, code when
-- a page failed (the iterator then stays failed). Pages follow
-- next_start_primary_key, through empty pages (a filter can return a page
-- with no rows and a next key). A page may end before its first row (no
-- rows, the next key where it began); pager.MAX_STALL (32) such pages in
-- a row would read the same page forever: the iterator fails with code
-- "NoProgress". opts.t_end (otskit.backoff.now() scale):
-- the deadline of the whole read; past it the iterator fails with
-- "RequestTimeout", and a client's attempts are cut to what is left.
-- req is get_range's request; req.limit is the page size. The request
-- table is not modified.
function pager.range(db, req, opts)
  if type(req) ~= "table" then error("otskit.client: range expects a get_range request table", 2) end
  local t_end = opts and opts.t_end
  local now = require("otskit.backoff").now
  local page_req = {}
  for k, v in pairs(req) do page_req[k] = v end
  local rows, i, done, err = nil, 0, false, nil
  local pages, stalled = 0, 0
  return function()
    if err then return nil, err[1], err[2] end
    while true do
      if rows and i < #rows then
        i = i + 1
        return rows[i]
      end
      if done then return nil end
      if t_end and pages > 0 and now() > t_end then
        err = { ("otskit.client: range: the deadline passed after %d pages"):format(pages), "RequestTimeout" }
        return nil, err[1], err[2]
      end
      local page, msg, code
      if t_end and db._call then
        page, msg, code = db:_call("GetRange", page_req, t_end)
      else
        page, msg, code = db:get_range(page_req)
      end
      pages = pages + 1
      if not page then
        err = { msg, code }
        return nil, msg, code
      end
      rows, i = page.rows or {}, 0
      local nx = page.next_start_primary_key
      if nx == nil then
        done = true
      elseif #rows == 0 and same(nx, page_req.start) then
        stalled = stalled + 1
        if stalled >= pager.MAX_STALL then
          err = { ("otskit.client: range: next_start_primary_key did not advance in %d pages in a row "
            .. "(each ended where it began): the read would never end"):format(stalled), "NoProgress" }
          return nil, err[1], err[2]
        end
      else
        stalled = 0
        page_req.start = nx
      end
    end
  end
end

--- The sentinels of otskit.values (the store and otskit.wire re-export
-- the same objects).
function pager.sentinels()
  local values = require "otskit.values"
  return values.INF_MIN, values.INF_MAX, values.AUTO_INCREMENT
end

return pager
