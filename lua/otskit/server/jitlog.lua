--- otskit.server.jitlog -- `otskit serve --jit-log FILE`: each worker
-- writes the traces LuaJIT records, starts, links and aborts, as
-- `luajit -jv` prints them, to FILE (appended; a "# worker PID" line when
-- a worker starts). Built on jit.attach (OpenResty's luajit2 ships no
-- jit/v.lua); abort reasons are spelled with jit.vmdef when the VM has it,
-- else as "error N (info)". Lines of several workers interleave; each is
-- one write.
--
-- The lines:
--   [TRACE   3 file.lua:12 loop]                  a trace compiled
--   [TRACE   4 (3/1) file.lua:20 -> 3]            a side trace, linked
--   [TRACE --- file.lua:30 -- NYI: ... at file.lua:31]   an abort
local jitlog = {}

local format = string.format

--- jitlog.start(path) -> true | nil, msg: attaches the logger to this VM.
function jitlog.start(path)
  if type(jit) ~= "table" or type(jit.attach) ~= "function" then
    return nil, "--jit-log needs LuaJIT (this Lua is " .. _VERSION .. ")"
  end
  local util = require "jit.util"
  local ok, vmdef = pcall(require, "jit.vmdef")
  if not ok then vmdef = nil end
  local out, err = io.open(path, "a")
  if not out then return nil, "--jit-log: cannot write " .. tostring(path) .. ": " .. tostring(err) end
  out:setvbuf("no") -- one write(2) per line, O_APPEND: whole lines from every worker

  local function fmtfunc(func, pc)
    local fi = util.funcinfo(func, pc)
    if fi.loc then return fi.loc end
    if fi.ffid and vmdef then return vmdef.ffnames[fi.ffid] end
    if fi.addr then return format("C:%x", fi.addr) end
    return "(?)"
  end

  local function fmterr(e, info)
    if type(e) ~= "number" then return tostring(e) end
    if type(info) == "function" then info = fmtfunc(info) end
    local text = vmdef and vmdef.traceerr and vmdef.traceerr[e]
    if text then
      local okf, s = pcall(format, text, info)
      if okf then return s end
      return text
    end
    return format("error %d (%s)", e, tostring(info))
  end

  local startloc, startex = "(?)", ""
  local function dump(what, tr, func, pc, otr, oex)
    if what == "start" then
      startloc = fmtfunc(func, pc)
      startex = otr and "(" .. otr .. "/" .. (oex == -1 and "stitch" or oex) .. ") " or ""
      return
    end
    local line
    if what == "abort" then
      local loc = fmtfunc(func, pc)
      if loc ~= startloc then
        line = format("[TRACE --- %s%s -- %s at %s]\n", startex, startloc, fmterr(otr, oex), loc)
      else
        line = format("[TRACE --- %s%s -- %s]\n", startex, startloc, fmterr(otr, oex))
      end
    elseif what == "stop" then
      local info = util.traceinfo(tr)
      local link, ltype = info.link, info.linktype
      if link == tr or link == 0 then
        line = format("[TRACE %3s %s%s %s]\n", tr, startex, startloc, ltype)
      elseif ltype == "root" then
        line = format("[TRACE %3s %s%s -> %d]\n", tr, startex, startloc, link)
      else
        line = format("[TRACE %3s %s%s -> %d %s]\n", tr, startex, startloc, link, ltype)
      end
    else
      line = format("[TRACE %s]\n", what)
    end
    out:write(line)
  end

  out:write(format("# worker %s: %s, jit.v-style trace log of otskit serve\n",
    tostring(ngx and ngx.worker and ngx.worker.pid() or "?"), jit.version))
  jit.attach(dump, "trace")
  jitlog.out, jitlog.dump = out, dump -- kept: the attached function must stay referenced
  return true
end

return jitlog
