-- otskit.openresty: the one list of yieldable phases and the one thread
-- runner (merge.read and the patterns use it), against a scripted ngx.
local openresty = require "otskit.openresty"

-- A fake ngx: spawn runs nothing yet; wait runs the job and reports it.
local function fake_ngx(phase, spawn_fails_at)
  local log = { killed = {}, ran = {} }
  local n = 0
  local ngx = { get_phase = function() return phase end, thread = {} }
  function ngx.thread.spawn(f)
    n = n + 1
    if n == spawn_fails_at then return nil, "no memory" end
    return { f = f, id = n }
  end
  function ngx.thread.wait(t)
    log.ran[#log.ran + 1] = t.id
    return pcall(t.f)
  end
  function ngx.thread.kill(t) log.killed[#log.killed + 1] = t.id; return true end
  return ngx, log
end

local function with_ngx(ngx, f)
  local old = rawget(_G, "ngx")
  rawset(_G, "ngx", ngx)
  local ok, err = pcall(f)
  rawset(_G, "ngx", old)
  if not ok then error(err, 0) end
end

describe("otskit.openresty", function()
  it("knows the yieldable phases", function()
    for _, p in ipairs { "rewrite", "access", "content", "timer", "ssl_cert",
                         "ssl_session_fetch", "ssl_client_hello" } do
      assert.is_true(openresty.YIELDABLE[p], p)
    end
    for _, p in ipairs { "init", "init_worker", "set", "header_filter", "body_filter", "log", "balancer" } do
      assert.is_nil(openresty.YIELDABLE[p], p)
    end
    with_ngx(fake_ngx("content"), function() assert.is_true(openresty.can_yield()) end)
    with_ngx(fake_ngx("log"), function() assert.is_false(openresty.can_yield()) end)
    assert.is_false(openresty.can_yield())
  end)

  it("runs every job and kills the rest when one fails", function()
    local ngx, log = fake_ngx("content")
    local done = {}
    with_ngx(ngx, function()
      openresty.run_threads({ function() done[1] = true end, function() done[2] = true end }, "merge")
    end)
    assert.same({ true, true }, done)
    assert.same({}, log.killed)
    ngx, log = fake_ngx("content")
    local jobs = {}
    for i = 1, 4 do jobs[i] = function() if i == 2 then error("job 2 broke", 0) end end end
    assert.has_error(function() with_ngx(ngx, function() openresty.run_threads(jobs, "merge") end) end,
                     "job 2 broke")
    assert.same({ 1, 2 }, log.ran)
    assert.same({ 3, 4 }, log.killed)
  end)

  it("kills the spawned threads when a spawn fails", function()
    local ngx, log = fake_ngx("content", 3)
    local jobs = { function() end, function() end, function() end }
    assert.has_error(function() with_ngx(ngx, function() openresty.run_threads(jobs, "patterns") end) end,
                     "otskit.patterns: ngx.thread.spawn failed: no memory")
    assert.same({ 1, 2 }, log.killed)
  end)

  it("is the runner of merge.read and patterns", function()
    local common = require "otskit.patterns.common"
    local ngx, log = fake_ngx("access")
    local jobs = { function() end, function() error("boom", 0) end, function() end }
    assert.has_error(function() with_ngx(ngx, function() common.run_jobs(jobs) end) end, "boom")
    assert.same({ 3 }, log.killed)
    assert.has_error(function() common.run_jobs(jobs, "ngx") end,
                     "otskit.patterns: parallel = \"ngx\" needs OpenResty")
  end)
end)
