--- otskit.client.verify -- what the client checks in every answer before
-- trusting it: the body's MD5 and the response signature (required unless
-- the client was made with unsigned = true), the response date within the
-- skew window, and that the rows returned belong to the key or range that
-- was asked. Each check returns nil when the answer passes, or an error
-- table { code, message, network } for otskit.client._exchange.
local values = require "otskit.values"

local verify = {}

local INF_MIN, INF_MAX = values.INF_MIN, values.INF_MAX

--- The skew window: Tablestore refuses requests dated more than 15
-- minutes from its clock; the client refuses answers the same way.
verify.SKEW = 900

local function bad(code, msg, network)
  return { code = code, message = msg, network = network or nil }
end

--- verify.headers(client, api, res, code) -> nil | err. res: { status,
-- headers, body }; code: the Tablestore code of an error answer (nil for
-- a success). A 403 OTSAuthFailed may come from a front end that cannot
-- sign: it is taken as it is.
function verify.headers(c, api, res, code)
  local w, h = c.wire, res.headers
  local front = res.status == 403 and code == "OTSAuthFailed"
  local md5 = h["x-ots-contentmd5"]
  if md5 then
    if not w.equal(md5, w.content_md5(res.body or "")) then
      -- corrupted on the way: the outcome is unknown, like a lost connection
      return bad("OTSResponseCorrupted", "response body does not match its x-ots-contentmd5", true)
    end
  elseif not c.unsigned and not front then
    return bad("OTSResponseSignatureMismatch", "response has no x-ots-contentmd5 "
      .. "(a server that does not sign: otskit.client.new{ unsigned = true })")
  end
  local auth = h["authorization"]
  if auth and not front then
    local ak, sig = auth:match("^OTS ([^:]+):(.+)$")
    if not ak or ak ~= c.ak or not w.equal(sig, w.sign_response(c.secret, api, h)) then
      return bad("OTSResponseSignatureMismatch", "response signature does not verify")
    end
  elseif not auth and not c.unsigned and not front then
    return bad("OTSResponseSignatureMismatch", "response is not signed (no authorization header; "
      .. "a server that does not sign: otskit.client.new{ unsigned = true })")
  end
  if c.skew and not front then
    local d = h["x-ots-date"]
    local ms = d and w.parse_date and w.parse_date(d)
    if d == nil then
      if not c.unsigned then return bad("OTSResponseInvalid", "response has no x-ots-date") end
    elseif not ms then
      return bad("OTSResponseInvalid", "response x-ots-date does not parse: " .. tostring(d):sub(1, 64))
    elseif math.abs(ms - c.now_ms()) > c.skew * 1000 then
      return bad("OTSResponseInvalid", ("response dated %s, more than %d s from this clock (a replayed answer?)")
        :format(tostring(d):sub(1, 64), c.skew))
    end
  end
  return nil
end

---------------------------------------------------------------------------
-- Keys

-- One key cell {name, value [, type]} -> rank, type, value: rank 0 for
-- INF_MIN, 2 for INF_MAX, 1 for a value (nil type when it has none otskit
-- can compare). INTEGER values: a number, or decimal text (LuaJIT, past
-- 2^53; values.key_cell); compared as int64.
local function cell(e)
  local v = e[2]
  if v == INF_MIN then return 0 end
  if v == INF_MAX then return 2 end
  local tag = e[3]
  if values.is_typed(v) then tag, v = v.type, v.value end
  local t = type(v)
  if t == "string" then
    if tag == "BINARY" then return 1, "BINARY", v end
    if tag == "INTEGER" then
      local n = values.decimal(v)
      if n == nil then return 1 end
      return 1, "INTEGER", n
    end
    if tag == nil or tag == "STRING" then return 1, "STRING", v end
    return 1
  end
  if t == "number" and (tag == nil or tag == "INTEGER") and v == math.floor(v) then return 1, "INTEGER", v end
  if t == "cdata" and (tag == nil or tag == "INTEGER") then
    local n = values.decimal((tostring(v):gsub("U?LL$", "")))
    if n ~= nil then return 1, "INTEGER", n end
  end
  return 1
end

-- int64 text: sign, then digits compared by length and bytes
local function int_text(v)
  if type(v) == "string" then return v end
  if math.type then return ("%d"):format(v) end
  return ("%.0f"):format(v)
end

local function int_cmp(a, b)
  if type(a) == "number" and type(b) == "number" then
    return a < b and -1 or (a > b and 1 or 0)
  end
  local sa, sb = int_text(a), int_text(b)
  local na, nb = sa:sub(1, 1) == "-", sb:sub(1, 1) == "-"
  if na ~= nb then return na and -1 or 1 end
  local r
  if #sa ~= #sb then r = #sa < #sb and -1 or 1 else r = sa < sb and -1 or (sa > sb and 1 or 0) end
  return na and -r or r
end

local function value_cmp(t, a, b)
  if t == "INTEGER" then return int_cmp(a, b) end
  -- STRING and BINARY: by bytes (Lua compares strings byte-wise in the C
  -- locale, NULs included)
  return a < b and -1 or (a > b and 1 or 0)
end

--- verify.compare(a, b) -> -1, 0, 1, or nil when the keys cannot be
-- compared (not lists of {name, value}, other names, other types): the
-- order Tablestore gives rows (column by column; INTEGER as int64,
-- STRING and BINARY by bytes; INF_MIN and INF_MAX at the ends).
local floor = math.floor
function verify.compare(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then return nil end
  local n = #a
  if #b > n then n = #b end
  if n == 0 then return nil end
  for i = 1, n do
    local x, y = a[i], b[i]
    if type(x) ~= "table" or type(y) ~= "table" or x[1] ~= y[1] or type(x[1]) ~= "string" then return nil end
    local vx, vy = x[2], y[2]
    local t = type(vx)
    if vx == INF_MIN or vx == INF_MAX or vy == INF_MIN or vy == INF_MAX then
      -- rank alone (cell(): 0 INF_MIN, 2 INF_MAX, 1 any other value)
      local rx = vx == INF_MIN and 0 or (vx == INF_MAX and 2 or 1)
      local ry = vy == INF_MIN and 0 or (vy == INF_MAX and 2 or 1)
      if rx ~= ry then return rx < ry and -1 or 1 end
      return 0 -- both the same infinity: what follows is irrelevant
    elseif t == type(vy) and x[3] == nil and y[3] == nil
      and (t == "string" or (t == "number" and vx == floor(vx) and vy == floor(vy))) then
      -- what cell() and value_cmp() decide for two plain STRING or two
      -- integral number values, without the calls (a GetRange answer
      -- compares every row's key with the one before)
      if vx ~= vy then return vx < vy and -1 or 1 end
    else
      local rx, tx, cx = cell(x)
      local ry, ty, cy = cell(y)
      if rx ~= ry then return rx < ry and -1 or 1 end
      if rx ~= 1 then
        -- an infinite cell ends the comparison (what follows is irrelevant)
        return 0
      end
      if tx == nil or ty == nil or tx ~= ty then return nil end
      local r = value_cmp(tx, cx, cy)
      if r ~= 0 then return r end
    end
  end
  return 0
end

local function show(pk)
  local parts = {}
  for i, e in ipairs(type(pk) == "table" and pk or {}) do
    if i > 4 then parts[#parts + 1] = "..."; break end
    local v = type(e) == "table" and e[2]
    if v == INF_MIN then v = "INF_MIN" elseif v == INF_MAX then v = "INF_MAX" end
    local s = tostring(v)
    if #s > 32 then s = s:sub(1, 32) .. "..." end
    parts[#parts + 1] = tostring(type(e) == "table" and e[1]) .. "=" .. s
  end
  return "(" .. table.concat(parts, ", ") .. ")"
end

local function foreign(what, pk, asked)
  return bad("OTSResponseInvalid", ("%s %s is not the key or range asked %s"):format(what, show(pk), asked), true)
end

-- a row of a GetRow / BatchGetRow answer against the key asked
local function same_key(row, pk)
  if type(row) ~= "table" or row.primary_key == nil then return nil end
  local r = verify.compare(row.primary_key, pk)
  if r ~= nil and r ~= 0 then return foreign("row", row.primary_key, show(pk)) end
  return nil
end

-- A well-formed answer in one pass: every row's key strictly after the
-- one before (compare never nil), the first not before start, the last
-- before stop, next_start_primary_key (if any) strictly after the last
-- and not past stop. compare being a total order on the keys it can
-- compare, every row is then inside the range and range_rows' checks of
-- each row against both bounds would find nothing either; any other
-- answer takes those checks.
-- order: the decoder's word on the rows (otskit.wire.rows_order): when it
-- says every row's key is after (1) or before (2) the one before it, as
-- compare orders them, or that there are fewer than two rows (3), the
-- loop's comparisons are not made again.
local function ordered_inside(rows, nx, lo, hi, backward, order)
  local step = backward and -1 or 1
  local first, prev
  if order == 3 or order == (backward and 2 or 1) then
    local r1, rn = rows[1], rows[#rows]
    first = type(r1) == "table" and rawget(r1, "primary_key")
    prev = type(rn) == "table" and rawget(rn, "primary_key")
    if type(first) ~= "table" or type(prev) ~= "table" then return false end
  else
    local i = 1
    while rows[i] ~= nil do
      local row = rows[i]
      local pk = type(row) == "table" and rawget(row, "primary_key")
      if type(pk) ~= "table" then return false end
      if prev then
        if verify.compare(pk, prev) ~= step then return false end
      else
        first = pk
      end
      prev = pk
      i = i + 1
    end
  end
  if not first then return false end
  local a, b = verify.compare(first, lo), verify.compare(prev, hi)
  if not ((a == 0 or a == step) and b == -step) then return false end
  if nx ~= nil then
    if type(nx) ~= "table" or verify.compare(nx, prev) ~= step then return false end
    local c = verify.compare(nx, hi)
    if not (c == 0 or c == -step) then return false end
  end
  return true
end

local function range_rows(req, out, order)
  local backward = req.direction == "BACKWARD"
  local lo, hi = req.start, req.stop
  local rows = out.rows
  if type(rows) == "table" and ordered_inside(rows, out.next_start_primary_key, lo, hi, backward, order) then
    return nil
  end
  local asked = ("[%s, %s)"):format(show(lo), show(hi))
  local function inside(pk, may_equal_stop)
    local a, b = verify.compare(pk, lo), verify.compare(pk, hi)
    if backward then
      -- BACKWARD reads from start down to stop (stop excluded)
      if a == 1 then return false end
      if b == -1 or (b == 0 and not may_equal_stop) then return false end
    else
      if a == -1 then return false end
      if b == 1 or (b == 0 and not may_equal_stop) then return false end
    end
    return true
  end
  local prev
  for _, row in ipairs(out.rows or {}) do
    local pk = type(row) == "table" and row.primary_key
    if pk then
      if not inside(pk) then return foreign("row", pk, asked) end
      if prev then
        local r = verify.compare(pk, prev)
        if r ~= nil and ((not backward and r ~= 1) or (backward and r ~= -1)) then
          return bad("OTSResponseInvalid", "GetRange rows out of order at " .. show(pk), true)
        end
      end
      prev = pk
    end
  end
  local nx = out.next_start_primary_key
  if nx ~= nil then
    if not inside(nx, true) then return foreign("next_start_primary_key", nx, asked) end
    if prev then
      local r = verify.compare(nx, prev)
      if r ~= nil and ((not backward and r ~= 1) or (backward and r ~= -1)) then
        return bad("OTSResponseInvalid", "GetRange next_start_primary_key " .. show(nx)
          .. " is not past the last row " .. show(prev), true)
      end
    end
  end
  return nil
end

--- verify.rows(api, req, out [, order]) -> nil | err: the rows of a GetRow,
-- BatchGetRow or GetRange answer belong to the key or range asked (a key
-- that cannot be compared -- another form, another type -- is let
-- through: this guards against a wrong answer, not a codec). order: a
-- GetRange answer's otskit.wire.rows_order(out.rows), when decoded so.
function verify.rows(api, req, out, order)
  if type(req) ~= "table" or type(out) ~= "table" then return nil end
  if api == "GetRow" then
    return same_key(out.row, req.primary_key)
  elseif api == "GetRange" then
    return range_rows(req, out, order)
  elseif api == "BatchGetRow" then
    local by = {}
    for _, spec in ipairs(type(req.tables) == "table" and req.tables or {}) do
      if type(spec) == "table" and spec.table ~= nil then by[spec.table] = spec end
    end
    for _, rt in ipairs(type(out.tables) == "table" and out.tables or {}) do
      local spec = type(rt) == "table" and by[rt.table]
      if type(rt) == "table" and not spec then
        return bad("OTSResponseInvalid", "BatchGetRow answer names a table that was not asked: "
          .. tostring(rt.table):sub(1, 64), true)
      end
      if spec and type(rt.rows) == "table" and type(spec.primary_keys) == "table" then
        for j, r in ipairs(rt.rows) do
          local pk = spec.primary_keys[j]
          if type(r) == "table" and r.ok ~= false and pk ~= nil then
            local e = same_key(r.row, pk)
            if e then return e end
          end
        end
      end
    end
  end
  return nil
end

return verify
