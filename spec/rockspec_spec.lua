-- The rockspec must list every C source and every Lua module, or
-- `luarocks make` builds a module that fails at require time; it lists
-- nothing else (the bench tooling is not installed), and its license is
-- the LICENSE file's.
describe("rockspec", function()
  local spec = {}
  local chunk = assert(loadfile("rockspec/otskit-scm-1.rockspec", "t", spec))
  if setfenv then setfenv(chunk, spec) end
  chunk()

  local function lines(cmd)
    local t = {}
    local p = assert(io.popen(cmd))
    for l in p:lines() do t[#t + 1] = l end
    p:close()
    table.sort(t)
    return t
  end

  it("lists every csrc/*/*.c and every generated proto/*.proto C file as a source of otskit.core", function()
    local listed, generated = {}, {}
    for _, s in ipairs(spec.build.modules["otskit.core"].sources) do
      if s:match("^build/proto/") then generated[#generated + 1] = s else listed[#listed + 1] = s end
    end
    table.sort(listed); table.sort(generated)
    assert.same(lines("ls csrc/*/*.c"), listed)
    local want = {}
    for _, p in ipairs(lines("ls proto/*.proto")) do want[#want + 1] = p:gsub("^proto/(.*)%.proto$", "build/proto/%1.pb-c.c") end
    assert.same(want, generated)
  end)

  it("lists every Lua module under lua/otskit", function()
    local want = {}
    for _, f in ipairs(lines("cd lua && find otskit -name '*.lua'")) do
      local m = f:gsub("%.lua$", ""):gsub("/init$", ""):gsub("/", ".")
      want[#want + 1] = m .. "=lua/" .. f
    end
    local got = {}
    for m, f in pairs(spec.build.modules) do
      if type(f) == "string" then got[#got + 1] = m .. "=" .. f end
    end
    table.sort(want); table.sort(got)
    assert.same(want, got)
  end)

  it("installs library code only: the bench tooling stays in bench/", function()
    for m, f in pairs(spec.build.modules) do
      assert.is_nil(m:find("bench", 1, true), m)
      if type(f) == "string" then assert.matches("^lua/otskit/", f) end
    end
    assert.same({}, lines("find lua -name '*bench*'"))
  end)

  it("says MIT, as the LICENSE file does", function()
    assert.equal("MIT", spec.description.license)
    local f = assert(io.open("LICENSE", "rb"))
    local text = f:read("*a")
    f:close()
    assert.equal("MIT License", text:match("^[^\n]+"))
    assert.matches("Copyright %(c%) 2026 the otskit authors", text)
    assert.matches("Permission is hereby granted, free of charge, to any person obtaining a copy", text, 1, true)
  end)
end)
