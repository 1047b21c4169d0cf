-- `make install PREFIX=...`: the modules for both VMs and bin/otskit,
-- working from the install alone. Each run installs into a temporary
-- prefix and works from a clean directory with no LUA_PATH / LUA_CPATH,
-- so nothing can come from the checkout.
local LUA = jit and "luajit" or "lua5.4"
local V = jit and "5.1" or "5.4"

local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1; echo \"rc=$?\""))
  local out = p:read("*a")
  p:close()
  return out, tonumber(out:match("rc=(%d+)%s*$"))
end

-- a command with no Lua search paths from the environment, run elsewhere
local function clean(dir, cmd)
  return sh(("cd %s && env -u LD_PRELOAD -u LUA_PATH -u LUA_CPATH -u LUA_PATH_5_4 -u LUA_CPATH_5_4 -u LUA_INIT %s")
    :format(dir, cmd))
end

local function tmpdir()
  local p = assert(io.popen("mktemp -d /tmp/otskit-install.XXXXXX"))
  local d = p:read("*l")
  p:close()
  return d
end

describe("make install PREFIX=... (" .. LUA .. ")", function()
  local prefix, work

  setup(function()
    prefix, work = tmpdir(), tmpdir()
    -- the build is already there (make test builds first): install only
    -- copies; MAKEFLAGS cleared so a parent make's flags do not leak in
    local out, rc = sh("env -u LD_PRELOAD -u MAKEFLAGS -u MAKELEVEL make -s install PREFIX=" .. prefix)
    assert(rc == 0, out)
  end)

  teardown(function()
    os.execute("rm -rf " .. prefix .. " " .. work)
  end)

  it("installs bin/otskit and the modules of both VMs", function()
    for _, f in ipairs { "bin/otskit", "lib/lua/5.4/otskit/core.so", "lib/lua/5.1/otskit/core.so",
                         "share/lua/5.4/otskit/init.lua", "share/lua/5.1/otskit/store/init.lua",
                         "share/lua/5.4/otskit/analyze/scenarios.lua", "share/lua/5.1/otskit/cmd/demo.lua" } do
      local h = io.open(prefix .. "/" .. f, "rb")
      assert(h, "not installed: " .. f)
      h:close()
    end
    local out, rc = sh("test -x " .. prefix .. "/bin/otskit")
    assert.are.equal(0, rc, out)
  end)

  it("otskit demo runs from the install, in a clean directory", function()
    local out, rc = clean(work, LUA .. " " .. prefix .. "/bin/otskit demo --only timeseries,orders -q --svg demo.svg")
    assert.are.equal(0, rc, out)
    assert.matches("Sensor readings: timestamp first vs 16 buckets", out, 1, true)
    assert.matches("writes on the hottest partition", out, 1, true)
    local h = assert(io.open(work .. "/demo.svg", "rb"))
    assert.is_true(#h:read("*a") > 1000)
    h:close()
    -- and through its shebang (lua5.4)
    out, rc = clean(work, prefix .. "/bin/otskit keys")
    assert.are.equal(0, rc, out)
    assert.matches("Spliced partition key", out, 1, true)
  end)

  it("the installed modules load from the install, not the checkout", function()
    local code = ([[package.path = "%s/share/lua/%s/?.lua;%s/share/lua/%s/?/init.lua;" .. package.path
package.cpath = "%s/lib/lua/%s/?.so;" .. package.cpath
local hash = require "otskit.hash"
local store = require "otskit.store"
local db = assert(store.open {})
assert(db:create_table { name = "t", primary_key = { { "k", "INTEGER" } } })
assert(db:put_row { table = "t", primary_key = { 1 }, columns = { v = "x" } })
print(hash.md5("abc", true), db:get_row { table = "t", primary_key = { 1 } }.row.columns.v)
print(package.searchpath("otskit.store", package.path))
print(package.searchpath("otskit.core", package.cpath))]]):format(prefix, V, prefix, V, prefix, V)
    local f = assert(io.open(work .. "/req.lua", "wb"))
    f:write(code)
    f:close()
    local out, rc = clean(work, LUA .. " req.lua")
    assert.are.equal(0, rc, out)
    assert.matches("900150983cd24fb0d6963f7d28e17f72\tx", out, 1, true)
    assert.matches(prefix .. "/share/lua/" .. V .. "/otskit/store/init.lua", out, 1, true)
    assert.matches(prefix .. "/lib/lua/" .. V .. "/otskit/core.so", out, 1, true)
  end)

  it("at the default prefix, require needs no setup at all", function()
    -- the prefix bound over /usr/local in a private mount namespace (root
    -- only): exactly a default `make install`, without touching the host
    local probe, prc = sh("unshare --mount --propagation private true")
    if prc ~= 0 then
      pending("no mount namespaces here (" .. probe:gsub("%s+$", "") .. ")")
      return
    end
    local out, rc = clean(work, ("unshare --mount --propagation private sh -c 'mount --bind %s /usr/local && "
      .. "%s -e \"print(require([[otskit.hash]]).md5([[abc]], true), package.searchpath([[otskit.core]], package.cpath))\" && "
      .. "otskit_out=$(/usr/local/bin/otskit demo --only orders -q --svg -) && echo \"$otskit_out\" | head -3'")
      :format(prefix, LUA))
    assert.are.equal(0, rc, out)
    assert.matches("900150983cd24fb0d6963f7d28e17f72\t/usr/local/lib/lua/" .. V .. "/otskit/core.so", out, 1, true)
    assert.matches("otskit demo", out, 1, true)
  end)
end)

-- make rock: luarocks (installed by make deps) builds and installs the
-- rockspec; once, under Lua 5.4 (it compiles the C core: ~15 s), and not
-- again in the sanitizer run (make check: OTSKIT_BUILD set), which would
-- only repeat the same plain build
if not jit and not os.getenv("OTSKIT_BUILD") then
  describe("make rock", function()
    it("builds the rockspec into a tree whose otskit runs", function()
      local tree = tmpdir()
      local out, rc = sh("env -u LD_PRELOAD -u MAKEFLAGS -u MAKELEVEL make -s rock ROCK_TREE=" .. tree)
      assert.are.equal(0, rc, out)
      assert.matches("otskit scm%-1 is now installed", out)
      -- luarocks' wrapper sets the tree's paths itself
      out, rc = clean("/tmp", tree .. "/bin/otskit keys")
      assert.are.equal(0, rc, out)
      assert.matches("Spliced partition key", out, 1, true)
      out, rc = clean("/tmp", ("lua5.4 -e 'package.cpath = \"%s/lib/lua/5.4/?.so;\" .. package.cpath; "
        .. "package.path = \"%s/share/lua/5.4/?.lua;%s/share/lua/5.4/?/init.lua;\" .. package.path; "
        .. "print(require(\"otskit.key\").pack { 54 } == \"\\21\\54\")'"):format(tree, tree, tree))
      assert.are.equal(0, rc, out)
      assert.matches("true", out, 1, true)
      os.execute("rm -rf " .. tree)
    end)
  end)
end
