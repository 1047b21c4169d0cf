-- The Makefile's promises: `make` (build) compiles and never installs;
-- `make demo`, `make test` and CI run the deps step (Debian packages still
-- missing) first; builds are quiet (one "CC target" line per file, the
-- compiler's own messages in full), V=1 shows the command lines.

-- output (stdout and stderr) and exit status of a shell command
local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1; echo \"rc=$?\""))
  local out = p:read("*a")
  p:close()
  local rc = tonumber(out:match("rc=(%d+)%s*$"))
  return out:gsub("rc=%d+%s*$", ""), rc
end

-- the commands `make -n TARGET` would run (nothing is run; recursive
-- makes are listed with their own commands)
local function dry(target)
  local out, rc = sh("make -n " .. target)
  assert.equal(0, rc, out)
  return out
end

describe("make", function()
  it("build never installs: no apt-get, no dpkg, even with every target out of date", function()
    for _, target in ipairs { "", "build", "-B build", "-B build/5.4/otskit/core.so build/jit/otskit/core.so" } do
      local out = dry(target)
      assert.is_nil(out:find("apt-get", 1, true), target)
      assert.is_nil(out:find("dpkg", 1, true), target)
      assert.is_nil(out:find("make deps", 1, true), target)
    end
    -- but it does compile both modules when asked to from scratch
    local out = dry("-B build")
    assert.matches("%-o build/5%.4/otskit/core%.so", out)
    assert.matches("%-o build/jit/otskit/core%.so", out)
  end)

  it("demo and test install what is missing first (the deps step), then build", function()
    for _, target in ipairs { "demo", "test" } do
      local out = dry(target)
      local deps = out:find("dpkg-query", 1, true)
      local apt = out:find("apt-get install", 1, true)
      assert.truthy(deps, target); assert.truthy(apt, target)
      local run = target == "demo" and out:find("bin/otskit demo", 1, true) or out:find("spec/run.sh all", 1, true)
      assert.truthy(run, target)
      assert.is_true(deps < run and apt < run, target)
    end
    -- CI installs through the same step
    local f = assert(io.open(".ci/run"))
    local ci = f:read("*a"); f:close()
    local steps = {}
    for line in ci:gmatch("[^\n]+") do
      if line:match("^[^#]*make ") then steps[#steps + 1] = line:match("make %S+") end
    end
    assert.equal("make deps", steps[1])
    local seen = {}
    for i = 2, #steps do seen[steps[i]] = i end
    assert.truthy(seen["make test"], ci)
    assert.truthy(seen["make check"], ci)
    assert.truthy(seen["make interop"], ci)
  end)

  it("is quiet: a target line per compile, the compiler's errors in full; V=1 shows the command", function()
    -- a compiler that fails with a message; nothing is written (core.so is
    -- left as it is) and the generated protobuf sources are not remade
    local cc = os.tmpname()
    local f = assert(io.open(cc, "w"))
    f:write("#!/bin/sh\necho \"fakecc: error: the compiler's message\" >&2\nexit 1\n")
    f:close()
    assert(os.execute("chmod +x " .. cc))
    local keep = {}
    local p = assert(io.popen("ls build/proto/*.pb-c.c build/proto/*.pb-c.h"))
    for file in p:lines() do keep[#keep + 1] = "-o " .. file end
    p:close()
    assert.is_true(#keep >= 2, "make build first")
    local target = "build/5.4/otskit/core.so"
    local cmd = ("make -B %s CC=%s %s"):format(table.concat(keep, " "), cc, target)
    local out, rc = sh(cmd)
    assert.equal(2, rc, out)
    assert.matches("  CC +" .. target:gsub("%p", "%%%0"), out)
    assert.matches("fakecc: error: the compiler's message", out, 1, true)
    assert.matches("Error 1", out, 1, true)
    assert.not_matches("-Wpedantic", out, 1, true)
    assert.not_matches(cc, out, 1, true)
    out, rc = sh(cmd .. " V=1")
    assert.equal(2, rc, out)
    assert.matches(cc .. " -std=c99 -Wall -Wextra -Wpedantic", out, 1, true)
    assert.matches("fakecc: error: the compiler's message", out, 1, true)
    os.remove(cc)
  end)
end)
