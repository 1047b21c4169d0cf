--- otskit.client.parallel -- client:parallel(jobs): run Lua functions that
-- call the client so that their requests are in flight together.
--
-- Each job runs in a coroutine registered with the client. When a job's
-- client call needs the network it yields its request here instead of
-- blocking; a retry's sleep yields a wake-up time. The driver submits
-- every yielded request to the transport at once, waits for the next to
-- finish (curl) or for the whole round (nginx), resumes the jobs whose
-- answers arrived, and sleeps only when nothing is in flight and a job
-- waits for its backoff. Plain Lua: works the same on 5.4 and LuaJIT
-- (both yield across pcall).
local backoff = require "otskit.backoff"

local parallel = {}

-- yield tags (unique tables, so a job's own yields are told apart)
parallel.HTTP = setmetatable({}, { __tostring = function() return "otskit.client.parallel.HTTP" end })
parallel.SLEEP = setmetatable({}, { __tostring = function() return "otskit.client.parallel.SLEEP" end })

local running = coroutine.running

--- parallel.in_job(jobs_registry) -> whether the caller runs as a job.
function parallel.in_job(reg)
  local co = running()
  return co ~= nil and reg[co] == true
end

--- parallel.request(req): inside a job, yield the request to the driver
-- and return its result.
function parallel.request(req) return coroutine.yield(parallel.HTTP, req) end

--- parallel.sleep(secs): inside a job, wait secs without blocking others.
function parallel.sleep(secs) return coroutine.yield(parallel.SLEEP, secs) end

--- parallel.run(reg, transport, jobs, sleep): runs every job; returns
-- when all have returned. An error raised by a job cancels what is in
-- flight and is raised again.
function parallel.run(reg, t, jobs, sleep)
  if type(jobs) ~= "table" then error("otskit.client: parallel expects a list of functions", 3) end
  local n = #jobs
  local cos, vals, ready = {}, {}, {}
  for i = 1, n do
    if type(jobs[i]) ~= "function" then error("otskit.client: parallel: job " .. i .. " is not a function", 3) end
    cos[i] = coroutine.create(jobs[i])
    reg[cos[i]] = true
    ready[i] = i
  end
  local alive = n
  local inflight, nflight, timers = {}, 0, {}
  local function cleanup()
    for id in pairs(inflight) do t:cancel(id) end
    for i = 1, n do reg[cos[i]] = nil end
  end
  while alive > 0 do
    local k = 1
    while ready[k] do
      local i = ready[k]
      local ok, tag, arg = coroutine.resume(cos[i], vals[i])
      vals[i] = nil
      if not ok then cleanup(); error(tag, 0) end
      if coroutine.status(cos[i]) == "dead" then
        alive = alive - 1
        reg[cos[i]] = nil
      elseif tag == parallel.HTTP then
        local id, msg = t:submit(arg)
        if id then
          inflight[id] = i
          nflight = nflight + 1
        else
          vals[i] = { failure = "other", error = tostring(msg) }
          ready[#ready + 1] = i
        end
      elseif tag == parallel.SLEEP then
        timers[i] = backoff.now() + arg
      else
        cleanup()
        error("otskit.client: parallel: a job yielded outside the client (coroutines inside jobs must not yield through them)", 0)
      end
      k = k + 1
    end
    ready = {}
    if alive == 0 then break end
    local wake
    for _, w in pairs(timers) do
      if not wake or w < wake then wake = w end
    end
    if nflight > 0 then
      local wait = wake and math.max(0, wake - backoff.now()) or 60
      for _, r in ipairs(t:wait(wait)) do
        local i = inflight[r.id]
        if i then
          inflight[r.id] = nil
          nflight = nflight - 1
          vals[i] = r
          ready[#ready + 1] = i
        end
      end
    elseif wake then
      local d = wake - backoff.now()
      if d > 0 then sleep(d) end
    else
      cleanup()
      error("otskit.client: parallel: jobs wait on nothing", 0)
    end
    local now = backoff.now()
    for i, w in pairs(timers) do
      if w <= now then
        timers[i] = nil
        ready[#ready + 1] = i
      end
    end
  end
  cleanup()
end

return parallel
