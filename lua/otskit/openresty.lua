--- otskit.openresty -- what otskit needs to know about OpenResty, in one
-- place: the phases in which a request may yield (ngx.sleep,
-- ngx.thread.spawn and cosockets are allowed there), and the thread runner
-- that the parallel reads (merge, patterns) share.
local M = {}

--- M.YIELDABLE: set of the nginx phases (ngx.get_phase() names) that may
-- yield: rewrite, access, content, timer, ssl_cert, ssl_session_fetch,
-- ssl_client_hello (lua-nginx-module's context lists of ngx.sleep and
-- ngx.thread.spawn).
M.YIELDABLE = { rewrite = true, access = true, content = true, timer = true,
                ssl_cert = true, ssl_session_fetch = true, ssl_client_hello = true }

--- M.ngx() -> the ngx table when running inside OpenResty with light
-- threads, else nil.
function M.ngx()
  local ngx = rawget(_G, "ngx")
  if type(ngx) == "table" and type(ngx.thread) == "table" and ngx.get_phase then return ngx end
  return nil
end

--- M.can_yield() -> true inside OpenResty in a phase that may yield.
function M.can_yield()
  local ngx = M.ngx()
  return ngx ~= nil and M.YIELDABLE[ngx.get_phase()] == true
end

--- M.run_threads(jobs, modname): runs every job (a function) in its own
-- ngx.thread and returns when all finished. The first job that fails
-- (in list order) kills the threads still running and re-raises its error;
-- a failed spawn kills those already spawned and raises
-- "otskit.<modname>: ngx.thread.spawn failed: ...". One job runs inline.
function M.run_threads(jobs, modname)
  if #jobs == 1 then return jobs[1]() end
  local ngx = rawget(_G, "ngx")
  local threads = {}
  for i = 1, #jobs do
    local th, err = ngx.thread.spawn(jobs[i])
    if not th then
      for j = 1, i - 1 do ngx.thread.kill(threads[j]) end
      error(("otskit.%s: ngx.thread.spawn failed: %s"):format(modname, tostring(err)), 2)
    end
    threads[i] = th
  end
  for i = 1, #threads do
    local ok, err = ngx.thread.wait(threads[i])
    if not ok then
      for j = i + 1, #threads do ngx.thread.kill(threads[j]) end
      error(err, 0)
    end
  end
end

return M
