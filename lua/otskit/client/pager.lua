--- otskit.client.pager -- reading a whole range page by page, for any
-- object with the store interface (the embedded store or the client).
local pager = {}

--- pager.range(db, req) -> iterator. Each call returns the next row of
-- the range; nil when the range is done; nil, message, code when a page
-- failed (the iterator then stays failed). Pages follow
-- next_start_primary_key, through empty pages (a filter can return a page
-- with no rows and a next key). req is get_range's request; req.limit is
-- the page size. The request table is not modified.
function pager.range(db, req)
  if type(req) ~= "table" then error("otskit.client: range expects a get_range request table", 2) end
  local page_req = {}
  for k, v in pairs(req) do page_req[k] = v end
  local rows, i, done, err = nil, 0, false, nil
  return function()
    if err then return nil, err[1], err[2] end
    while true do
      if rows and i < #rows then
        i = i + 1
        return rows[i]
      end
      if done then return nil end
      local page, msg, code = db:get_range(page_req)
      if not page then
        err = { msg, code }
        return nil, msg, code
      end
      rows, i = page.rows or {}, 0
      if page.next_start_primary_key == nil then
        done = true
      else
        page_req.start = page.next_start_primary_key
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
