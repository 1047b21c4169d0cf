local merge = require "otskit.merge"
local helper = require "helper"

-- byte order, independent of the locale (Lua 5.4's string < uses strcoll)
local function bytes_lt(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = a:byte(i), b:byte(i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- A sorted in-memory bucket behind a Tablestore-like fetch: pages of at
-- most `want` rows (and at most the bucket's random page size), sometimes
-- empty pages that still carry a continuation, and a continuation after
-- the last row now and then (the next call then returns an empty page).
local function store(buckets, opts)
  local r = opts.rng
  local desc = opts.desc
  local lt = opts.lt
  local st = { calls = 0, fetched = {}, max_want = 0 }
  local function before(a, b) -- a goes out before b in the read's order
    if desc then return lt(b, a) end
    return lt(a, b)
  end
  function st.fetch(src, after, want, i)
    assert(src == opts.sources[i])
    st.calls = st.calls + 1
    if want > st.max_want then st.max_want = want end
    local t = buckets[i]
    local pos = 1
    if type(after) == "table" then
      assert(after.resume)
      -- first row not before the key (inclusive) / after it (exclusive)
      local lo, hi = 1, #t + 1
      while lo < hi do
        local mid = math.floor((lo + hi) / 2)
        local kk = opts.keyof(t[mid])
        local skip = before(kk, after.key) or (not after.inclusive and not before(after.key, kk))
        if skip then lo = mid + 1 else hi = mid end
      end
      pos = lo
    elseif after ~= nil then
      pos = after
    end
    if r.int(1, 8) == 1 and pos <= #t then return {}, pos end -- empty page, continuation
    local n = math.min(want, opts.page[i], #t - pos + 1)
    local rows = {}
    for j = 1, n do rows[j] = t[pos + j - 1] end
    st.fetched[i] = (st.fetched[i] or 0) + n
    local nxt = pos + n
    if nxt > #t and r.int(1, 4) > 1 then return rows, nil end
    return rows, nxt
  end
  return st
end

-- Random buckets of rows {k = key, s = source, n = index}; keys unique
-- within a bucket (like primary keys), shared across buckets.
local function make_buckets(r, k, total, desc, alphabet)
  local buckets = {}
  for i = 1, k do
    local size = r.int(0, 3) == 0 and 0 or r.int(0, math.floor(total / k))
    if r.int(1, 40) == 1 then size = 5000 end
    local seen, keys = {}, {}
    for _ = 1, size do
      local key = r.bytes(r.int(0, 4), alphabet)
      if not seen[key] then seen[key] = true; keys[#keys + 1] = key end
    end
    table.sort(keys, desc and function(a, b) return bytes_lt(b, a) end or bytes_lt)
    local rows = {}
    for j, key in ipairs(keys) do rows[j] = { k = key, s = i, n = j } end
    buckets[i] = rows
  end
  return buckets
end

local function expected(buckets, desc, dedup)
  local all = {}
  for _, b in ipairs(buckets) do for _, row in ipairs(b) do all[#all + 1] = row end end
  table.sort(all, function(a, b)
    if a.k ~= b.k then
      if desc then return bytes_lt(b.k, a.k) end
      return bytes_lt(a.k, b.k)
    end
    return a.s < b.s
  end)
  if not dedup then return all end
  local out = {}
  for _, row in ipairs(all) do
    if #out == 0 or out[#out].k ~= row.k then out[#out + 1] = row end
  end
  return out
end

local function same_rows(want, got)
  assert.equal(#want, #got)
  for i = 1, #want do
    if want[i] ~= got[i] then
      error(("row %d: want %q from %d, got %q from %d"):format(i, want[i].k, want[i].s,
        got[i].k, got[i].s), 2)
    end
  end
end

describe("otskit.merge", function()
  it("paging with cursors yields exactly the sorted union (property)", function()
    local r = helper.rng()
    local trials = helper.trials(40)
    for trial = 1, trials do
      local k = r.int(1, 4) == 1 and r.int(17, 64) or r.int(1, 16)
      local desc = r.int(0, 1) == 1
      local dedup = r.int(1, 4) == 1
      local alphabet = r.int(0, 1) == 1 and "ab\0\255" or nil
      local buckets = make_buckets(r, k, r.int(0, 1) == 1 and 6000 or 300, desc, alphabet)
      local want = expected(buckets, desc, dedup)
      local sources, pages = {}, {}
      for i = 1, k do sources[i] = "bucket" .. i; pages[i] = r.int(1, 60) end
      local st = store(buckets, { rng = r, desc = desc, lt = bytes_lt, sources = sources, page = pages,
        keyof = function(row) return row.k end })
      local limit = r.int(1, 4) == 1 and r.int(1, 5) or r.int(1, 700)
      local secret = r.int(0, 1) == 1 and "a secret of 16+ bytes" or nil
      local first_rows = ({ nil, 1, limit, r.int(1, limit) })[r.int(1, 4)]
      local got, cursor, npages = {}, nil, 0
      repeat
        st.fetched = {}
        st.max_want = 0
        local rows, c, code = merge.read { sources = sources, fetch = st.fetch, key = "k", limit = limit,
          order = desc and "desc" or "asc", dedup = dedup, cursor = cursor, secret = secret,
          first_rows = first_rows }
        assert(rows, c, code)
        npages = npages + 1
        assert(#rows == limit or c == nil, "a short page must be the last")
        assert.is_true(#rows <= limit)
        -- per page: no fetch asks for more than the page still needs, and
        -- no source gives more than one page's worth: <= k * limit in all
        assert.is_true(st.max_want <= limit)
        local fetched = 0
        for i = 1, k do
          assert.is_true((st.fetched[i] or 0) <= limit)
          fetched = fetched + (st.fetched[i] or 0)
        end
        assert.is_true(fetched <= k * limit)
        for _, row in ipairs(rows) do got[#got + 1] = row end
        if c then assert.is_truthy(c:match("^[A-Za-z0-9_-]+$")) end
        cursor = c
        assert(npages <= #want + 2, "paging does not end")
      until cursor == nil
      local ok, err = pcall(same_rows, want, got)
      if not ok then
        error(("trial %d (k=%d desc=%s dedup=%s limit=%d): %s"):format(trial, k, tostring(desc),
          tostring(dedup), limit, err))
      end
    end
  end)

  it("merges pushed batches and stops for a pending source", function()
    local m = merge.new { sources = 3, key = "k" }
    local rows, state = m:pull()
    assert.same({}, rows)
    assert.equal(1, state)
    assert.same({ 1, 2, 3 }, m:needs())
    m:push(1, { { k = "a" }, { k = "d" } }, false)
    m:push(2, { { k = "b" } }, true)
    m:push(3, { { k = "a" }, { k = "c" } }, true)
    rows, state = m:pull()
    local ks = {}
    for i, row in ipairs(rows) do ks[i] = row.k end
    assert.same({ "a", "a", "b", "c", "d" }, ks)
    assert.equal(1, state) -- nothing past "d" until source 1 says more
    assert.equal("pending", m:state(1))
    assert.equal("done", m:state(2))
    m:push(1, { { k = "e" } }, true)
    rows, state = m:pull()
    assert.equal("e", rows[1].k)
    assert.equal("done", state)
    assert.is_true(m:exhausted())
    assert.equal(6, m:emitted())
    m:close()
    m:close() -- idempotent
    assert.has_error(function() m:pull() end, "otskit.merge: merge is closed")
  end)

  it("big batches pushed and pulled directly give the sorted union (property)", function()
    -- batches of up to 2500 rows: the push reads keys in chunks (64 rows
    -- through the C API, 1024 through LuaJIT's FFI), so cross those edges;
    -- keys up to 12 bytes so the merge's 8-byte prefixes often tie; each
    -- merge is closed, so the next reuses its buffers (other k, order,
    -- dedup, key)
    local r = helper.rng(777)
    for trial = 1, helper.trials(20) do
      local k = r.int(1, 5) == 1 and r.int(7, 24) or r.int(1, 6)
      local desc = r.int(0, 1) == 1
      local dedup = r.int(1, 3) == 1
      local by_index = r.int(0, 1) == 1
      local buckets = {}
      -- half the trials: keys mostly share leading bytes (the merge skips
      -- those), and now and then one does not
      local shared = r.int(0, 1) == 1 and r.bytes(r.int(1, 70), "\0\255ab") or ""
      for i = 1, k do
        local seen, keys = {}, {}
        for _ = 1, r.int(0, 1) == 1 and r.int(0, 3000) or r.int(0, 70) do
          local key = shared:sub(1, r.int(1, 200) == 1 and r.int(0, #shared) or #shared) ..
            r.bytes(r.int(0, 12), "\0\255ab")
          if not seen[key] then seen[key] = true; keys[#keys + 1] = key end
        end
        table.sort(keys, desc and function(a, b) return bytes_lt(b, a) end or bytes_lt)
        local rows = {}
        for j, key in ipairs(keys) do rows[j] = { key, k = key, s = i, n = j } end
        buckets[i] = rows
      end
      local want = expected(buckets, desc, dedup)
      local m = merge.new { sources = k, key = by_index and 1 or "k", order = desc and "desc" or "asc", dedup = dedup }
      local pos, got = {}, {}
      for i = 1, k do pos[i] = 1 end
      while true do
        local _, state = m:pull(r.int(1, 4) == 1 and r.int(0, 3000) or nil, got)
        if state == "done" then break end
        if state ~= "more" then
          local i, b = state, {}
          local n = math.min(r.int(0, 2500), #buckets[i] - pos[i] + 1)
          for j = 1, n do b[j] = buckets[i][pos[i] + j - 1] end
          pos[i] = pos[i] + n
          m:push(i, b, pos[i] > #buckets[i] and r.int(1, 3) > 1)
        end
      end
      m:close()
      local ok, err = pcall(same_rows, want, got)
      if not ok then error(("trial %d (k=%d desc=%s dedup=%s): %s"):format(trial, k, tostring(desc), tostring(dedup), err)) end
    end
  end)

  it("a bad row anywhere in a big batch is named, and the source stays usable (property)", function()
    local r = helper.rng(4242)
    local kinds = { "no key", "number key", "not a table", "out of order" }
    for _ = 1, helper.trials(40) do
      local n = r.int(1, 3000)
      local bad = r.int(1, n)
      local kind = kinds[r.int(1, #kinds)]
      if kind == "out of order" and bad == 1 then bad = 2; n = math.max(n, 2) end
      local by_index = r.int(0, 1) == 1
      local function row(key) if by_index then return { key } end return { k = key } end
      local rows = {}
      for j = 1, n do rows[j] = row(("%06d"):format(j)) end
      if kind == "no key" then rows[bad] = {}
      elseif kind == "number key" then rows[bad] = row(7)
      elseif kind == "not a table" then rows[bad] = true
      else rows[bad] = row("000000") end -- before row 1's key
      local m = merge.new { sources = 2, key = by_index and 1 or "k" }
      local msg = ({ ["no key"] = "has no key", ["number key"] = "key must be a string, got number",
        ["not a table"] = "is a boolean, not a table", ["out of order"] = "is out of order in its source" })[kind]
      assert.has_error(function() m:push(2, rows, true) end, ("otskit.merge: source 2 row %d %s"):format(bad, msg))
      assert.equal("pending", m:state(2))
      m:push(2, { row("b") }, true)
      m:push(1, { row("a") }, true)
      local out, state = m:pull()
      assert.equal("done", state)
      assert.equal(2, #out)
    end
  end)

  it("pull(max) stops at max, limit stops the merge, both orders", function()
    local m = merge.new { sources = 2, key = 1, order = "desc", limit = 3 }
    m:push(1, { { "z" }, { "m" }, { "a" } }, true)
    m:push(2, { { "y" }, { "m" } }, true)
    local rows, state = m:pull(2)
    assert.equal("more", state)
    assert.same({ { "z" }, { "y" } }, rows)
    rows, state = m:pull(5)
    assert.equal("done", state) -- limit 3 reached
    assert.same({ { "m" } }, rows)
    assert.equal(1, (m:last()))
  end)

  it("pull appends to a caller's array", function()
    local m = merge.new { sources = 2, key = "k" }
    m:push(1, { { k = "b" }, { k = "d" } }, true)
    m:push(2, { { k = "a" }, { k = "c" } }, true)
    local out = { "first" }
    local rows, state = m:pull(3, out)
    assert.equal(out, rows)
    assert.equal("more", state)
    assert.same({ "first", { k = "a" }, { k = "b" }, { k = "c" } }, out)
    rows, state = m:pull(nil, out)
    assert.equal("done", state)
    assert.equal(5, #out)
    assert.equal("d", out[5].k)
    assert.has_error(function() m:pull(1, "x") end)
  end)

  it("a closed merge's buffers go to the next merge.new, at most two kept", function()
    local core = require "otskit.core"
    local function use(k)
      local m = merge.new { sources = k, key = "k" }
      for i = 1, k do m:push(i, { { k = ("%03d"):format(i) } }, true) end
      local rows = m:pull()
      assert.equal(k, #rows)
      return m
    end
    -- no collection during the test: a finalized merge would refill the pool
    collectgarbage(); collectgarbage()
    collectgarbage("stop")
    finally(function() collectgarbage("restart") end)
    local held = {}
    while core.merge._pooled() > 0 do held[#held + 1] = merge.new { sources = 1, key = "k" } end
    local a, b, c = use(3), use(5), use(2)
    a:close(); b:close()
    assert.equal(2, core.merge._pooled())
    c:close()
    assert.equal(2, core.merge._pooled()) -- full: c is freed
    local d = use(7) -- a pooled one, grown to 7 sources, merges right
    assert.equal(1, core.merge._pooled())
    d:close()
    assert.equal(2, core.merge._pooled())
    for _, m in ipairs(held) do m:close() end
  end)

  it("push and pull read and write tables raw: no metamethod runs inside a call", function()
    -- a metamethod running mid-call could re-enter the merge (or another
    -- one) while it is half done; both interpreters' paths stay raw
    local function trap() error("metamethod ran") end
    local guarded = { __index = trap, __newindex = trap }
    local m = merge.new { sources = 2, key = "k" }
    m:push(1, setmetatable({ setmetatable({ k = "b" }, guarded), { k = "d" } }, guarded), true)
    m:push(2, setmetatable({ { k = "a" }, { k = "c" } }, guarded), true)
    local out = setmetatable({}, guarded)
    local _, state = m:pull(nil, out)
    assert.equal("done", state)
    assert.equal("abcd", rawget(out, 1).k .. rawget(out, 2).k .. rawget(out, 3).k .. rawget(out, 4).k)
    m:close()
  end)

  it("dedup emits the first of equal keys across sources", function()
    local m = merge.new { sources = 3, key = "k", dedup = true }
    m:push(1, { { k = "a", s = 1 }, { k = "b", s = 1 } }, true)
    m:push(2, { { k = "a", s = 2 } }, false)
    m:push(3, { { k = "b", s = 3 }, { k = "c", s = 3 } }, true)
    local rows, state = m:pull()
    assert.equal(2, state)
    assert.equal(1, #rows)
    m:push(2, { { k = "a", s = 2 }, { k = "b", s = 2 } }, true) -- "a" again after a refill
    rows, state = m:pull()
    assert.equal("done", state)
    assert.same({ { k = "b", s = 1 }, { k = "c", s = 3 } }, rows)
  end)

  it("a fetch may yield: caller-supplied coroutines run the fetches", function()
    local buckets = { { "a", "c", "e" }, { "b", "d" }, { "f" } }
    local order, yields = {}, 0
    local function fetch(_, after, want, i)
      coroutine.yield() -- as a cosocket would
      yields = yields + 1
      order[#order + 1] = i
      local pos = after or 1
      local rows = {}
      for j = pos, math.min(#buckets[i], pos + want - 1) do rows[#rows + 1] = { buckets[i][j] } end
      local nxt = pos + #rows
      return rows, nxt <= #buckets[i] and nxt or nil
    end
    local function runner(jobs) -- round-robin over coroutines
      local cos = {}
      for i, job in ipairs(jobs) do cos[i] = coroutine.create(job) end
      local live = #cos
      while live > 0 do
        live = 0
        for _, co in ipairs(cos) do
          if coroutine.status(co) ~= "dead" then
            assert(coroutine.resume(co))
            if coroutine.status(co) ~= "dead" then live = live + 1 end
          end
        end
      end
    end
    local rows, cursor = merge.read { sources = 3, fetch = fetch, key = 1, limit = 10, parallel = runner }
    assert.is_nil(cursor)
    local ks = {}
    for i, row in ipairs(rows) do ks[i] = row[1] end
    assert.same({ "a", "b", "c", "d", "e", "f" }, ks)
    assert.same({ 1, 2, 3 }, order) -- the first round went out to all three
    assert.equal(3, yields)
  end)

  it("in OpenResty, fetches run in ngx.thread.spawn threads (mock ngx)", function()
    -- a minimal ngx.thread on coroutines: spawn runs until the first yield,
    -- wait resumes until the thread ends
    local spawned, killed = 0, 0
    local fake = {
      get_phase = function() return "content" end,
      thread = {
        spawn = function(f)
          spawned = spawned + 1
          local co = coroutine.create(function() return true, f() end)
          local th = { co = co }
          th.res = { coroutine.resume(co) }
          return th
        end,
        wait = function(th)
          while coroutine.status(th.co) ~= "dead" do th.res = { coroutine.resume(th.co) } end
          if not th.res[1] then return false, th.res[2] end
          return true
        end,
        kill = function() killed = killed + 1 end,
      },
    }
    local buckets = { { "a", "d" }, { "b" }, { "c" } }
    local function fetch(_, after, want, i)
      coroutine.yield()
      local pos = after or 1
      local rows = {}
      for j = pos, math.min(#buckets[i], pos + want - 1) do rows[#rows + 1] = { buckets[i][j] } end
      return rows, pos + #rows <= #buckets[i] and pos + #rows or nil
    end
    _G.ngx = fake
    local ok, rows = pcall(merge.read, { sources = 3, fetch = fetch, key = 1, limit = 10 })
    local first_round = spawned
    local ok2, err = pcall(merge.read, { sources = 3, key = 1, limit = 10, fetch = function(_, _, _, i)
      coroutine.yield()
      if i == 1 then error("boom", 0) end
      return {}, nil
    end })
    _G.ngx = nil
    assert(ok, rows)
    assert.equal(4, #rows)
    assert.equal("d", rows[4][1])
    assert.equal(3, first_round) -- one round of three; the refill of source 1 runs inline
    assert.is_false(ok2)
    assert.equal("boom", err)
    assert.equal(0, killed) -- every thread of that round ran to its end first
  end)

  it("a page over many buckets asks each for about twice its share first", function()
    local k, per, limit = 64, 1000, 1000
    local fetched = 0
    local function fetch(_, after, want, i)
      local pos = after or 0
      local rows = {}
      for j = pos, math.min(per - 1, pos + want - 1) do rows[#rows + 1] = { ("%08d"):format(j * k + i) } end
      fetched = fetched + #rows
      return rows, pos + #rows < per and pos + #rows or nil
    end
    local rows = merge.read { sources = k, fetch = fetch, key = 1, limit = limit }
    assert.equal(limit, #rows)
    assert.is_true(fetched <= 2 * limit + k, "fetched " .. fetched)
    fetched = 0
    merge.read { sources = k, fetch = fetch, key = 1, limit = limit, first_rows = limit }
    assert.equal(k * limit, fetched)
  end)

  it("returns the fetch's failure as nil, message, code", function()
    local rows, msg, code = merge.read { sources = 2, key = "k", limit = 5, fetch = function(_, _, _, i)
      if i == 2 then return nil, "throttled", "OTSServerBusy" end
      return { { k = "a" } }, nil
    end }
    assert.is_nil(rows)
    assert.equal("throttled", msg)
    assert.equal("OTSServerBusy", code)
    -- a source that only ever returns empty pages
    rows, msg, code = merge.read { sources = 1, key = "k", limit = 5, max_empty = 3,
      fetch = function() return {}, "again" end }
    assert.is_nil(rows)
    assert.equal("EmptyPages", code)
    assert.matches("3 empty pages", msg)
  end)

  describe("cursors", function()
    local buckets = { { "a", "c", "e", "g" }, { "b", "d", "f" } }
    local function fetch(_, after, want, i)
      local t = buckets[i]
      local pos = 1
      if type(after) == "table" then
        while t[pos] and (bytes_lt(t[pos], after.key) or (t[pos] == after.key and not after.inclusive)) do pos = pos + 1 end
      elseif after then
        pos = after
      end
      local rows = {}
      for j = pos, math.min(#t, pos + want - 1) do rows[#rows + 1] = { k = t[j] } end
      return rows, pos + #rows <= #t and pos + #rows or nil
    end
    local secret = "0123456789abcdef0123"
    local function read(cursor, o)
      o = o or {}
      return merge.read { sources = o.sources or { 1, 2 }, fetch = fetch, key = "k", limit = 3,
        cursor = cursor, secret = o.secret == nil and secret or o.secret or nil,
        order = o.order, dedup = o.dedup }
    end
    local function b64(s) -- base64url, no padding
      local a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
      local out = {}
      for i = 1, #s, 3 do
        local x, y, z = s:byte(i, i + 2)
        local v = x * 65536 + (y or 0) * 256 + (z or 0)
        local n = (z and 4) or (y and 3) or 2
        for j = 1, n do
          local d = math.floor(v / 2 ^ (18 - 6 * (j - 1))) % 64
          out[#out + 1] = a:sub(d + 1, d + 1)
        end
      end
      return table.concat(out)
    end

    it("resume the read exactly where the page ended", function()
      local rows, c = read()
      assert.equal(3, #rows)
      assert.is_string(c)
      local rows2, c2 = read(c)
      assert.same({ { k = "d" }, { k = "e" }, { k = "f" } }, rows2)
      local rows3, c3 = read(c2)
      assert.same({ { k = "g" } }, rows3)
      assert.is_nil(c3)
    end)

    it("every tampered or truncated signed cursor is BadCursor", function()
      local _, c = read()
      local alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
      for i = 1, #c do
        local ch = c:sub(i, i)
        local j = alpha:find(ch, 1, true) % 64 + 1
        local bad = c:sub(1, i - 1) .. alpha:sub(j, j) .. c:sub(i + 1)
        local rows, msg, code = read(bad)
        assert.is_nil(rows)
        assert.equal("BadCursor", code, msg)
        rows, msg, code = read(c:sub(1, i - 1))
        assert.is_nil(rows)
        assert.equal("BadCursor", code)
      end
      for _, bad in ipairs { c .. "A", c .. "=", "!" .. c, "", ("A"):rep(20000) } do
        local rows, _, code = read(bad)
        assert.is_nil(rows)
        assert.equal("BadCursor", code)
      end
      local rows, _, code = read(42)
      assert.is_nil(rows)
      assert.equal("BadCursor", code)
    end)

    it("a forged, foreign or mismatched cursor is BadCursor", function()
      local _, signed = read()
      local _, plain = read(nil, { secret = false })
      local cases = {
        { signed, { secret = "another secret of 16+ bytes" } }, -- forged with another key
        { signed, { secret = false } },                         -- signed, no secret to check
        { plain, {} },                                          -- unsigned where a MAC is required
        { plain, { sources = { 1, 2, 3 } } },                   -- another bucket count
        { plain, { order = "desc", secret = false } },
        { plain, { dedup = true, secret = false } },
        -- version 2 of an otherwise valid payload
        { b64("\2\0\0\2\0\0\1s\0\1a"), { secret = false } },
        { b64("\1\16\0\2\0\0\1s\0\1a"), { secret = false } },  -- unknown flag
        { b64("\1\0\0\2\0\2\1s\0\1a"), { secret = false } },   -- source 3 of 2
        { b64("\1\0\0\2\0\0\1s\0\2a"), { secret = false } },   -- truncated key
        { b64("\1\0\0\2\0\0\1s\0\1ab"), { secret = false } },  -- trailing byte
      }
      for n, case in ipairs(cases) do
        local rows, msg, code = read(case[1], case[2])
        assert(rows == nil and code == "BadCursor", "case " .. n .. ": " .. tostring(msg))
      end
      -- the same hand-made payload with version 1 is accepted
      local rows = assert(read(b64("\1\0\0\2\0\0\1s\0\1c"), { secret = false }))
      assert.same({ { k = "d" }, { k = "e" }, { k = "f" } }, rows)
    end)
  end)

  describe("typed primary-key columns", function()
    local function cmp_tuple(a, b)
      for i = 1, #a do
        if a[i] ~= b[i] then
          if type(a[i]) == "number" then return a[i] < b[i] end
          return bytes_lt(a[i], b[i])
        end
      end
      return false
    end

    it("orders INTEGER as int64 and STRING as bytes, column by column (property)", function()
      local r = helper.rng(777)
      local ints = { -2 ^ 53, -2 ^ 40, -1000, -1, 0, 1, 2, 255, 256, 1000, 2 ^ 31, 2 ^ 53 }
      for _ = 1, helper.trials(20) do
        local k = r.int(1, 8)
        local desc = r.int(0, 1) == 1
        local buckets, all = {}, {}
        for i = 1, k do
          local seen, rows = {}, {}
          for _ = 1, r.int(0, 60) do
            local ts = r.int(0, 2) == 0 and ints[r.int(1, #ints)] or r.int(-50, 50)
            local name = r.bytes(r.int(0, 3), "a\0\255")
            local id = ts .. "|" .. name
            if not seen[id] then
              seen[id] = true
              -- {bucket, ts, name}; the merge key skips the bucket column
              rows[#rows + 1] = { primary_key = { { "b", i }, { "ts", ts }, { "name", name } },
                attributes = {}, t = { ts, name }, s = i }
            end
          end
          table.sort(rows, function(a, b)
            if desc then return cmp_tuple(b.t, a.t) end
            return cmp_tuple(a.t, b.t)
          end)
          buckets[i] = rows
          for _, row in ipairs(rows) do all[#all + 1] = row end
        end
        table.sort(all, function(a, b)
          if cmp_tuple(a.t, b.t) then return not desc end
          if cmp_tuple(b.t, a.t) then return desc end
          return a.s < b.s
        end)
        local sources, pages = {}, {}
        for i = 1, k do sources[i] = i; pages[i] = r.int(1, 9) end
        local st = store(buckets, { rng = r, desc = desc, sources = sources, page = pages,
          lt = cmp_tuple, keyof = function(row) return row.t end })
        local got, cursor = {}, nil
        repeat
          local rows, c, code = merge.read { sources = sources, fetch = st.fetch, key = { 2, 3 },
            limit = r.int(1, 20), order = desc and "desc" or "asc", cursor = cursor }
          assert(rows, c, code)
          for _, row in ipairs(rows) do got[#got + 1] = row end
          cursor = c
        until cursor == nil
        assert.equal(#all, #got)
        for i = 1, #all do assert.equal(all[i], got[i]) end
      end
    end)

    it("orders the full int64 range (Lua 5.4 integers) and round-trips it through cursors", function()
      if not math.tointeger then return end -- LuaJIT: numbers are doubles
      local lo, hi = math.mininteger, math.maxinteger
      local vals = { lo, lo + 1, -2 ^ 53 - 1, -1, 0, 1, 2 ^ 53 + 1, hi - 1, hi }
      for i = 1, #vals do vals[i] = math.tointeger(vals[i]) end
      local b1, b2 = {}, {}
      for i, v in ipairs(vals) do
        local t = i % 2 == 1 and b1 or b2
        t[#t + 1] = { primary_key = { { "b", 0 }, { "ts", v } } }
      end
      local buckets = { b1, b2 }
      local function fetch(_, after, want, i)
        local t, pos = buckets[i], 1
        if type(after) == "number" then pos = after
        elseif after then
          while t[pos] and (t[pos].primary_key[2][2] < after.key[1] or
            (t[pos].primary_key[2][2] == after.key[1] and not after.inclusive)) do pos = pos + 1 end
        end
        local rows = {}
        for j = pos, math.min(#t, pos + want - 1) do rows[#rows + 1] = t[j] end
        return rows, pos + #rows <= #t and pos + #rows or nil
      end
      local got, cursor = {}, nil
      repeat
        local rows, c = assert(merge.read { sources = 2, fetch = fetch, key = { 2 }, limit = 2, cursor = cursor })
        for _, row in ipairs(rows) do got[#got + 1] = row.primary_key[2][2] end
        cursor = c
      until not cursor
      assert.same(vals, got)
    end)

    it("accepts {name, value}, {name=, value=} and bare values; int64 as decimal strings are bytes", function()
      local m = merge.new { sources = 3, key = { 1 } }
      m:push(1, { { primary_key = { { "ts", -5 } } }, { primary_key = { { "ts", 7 } } } }, true)
      m:push(2, { { primaryKey = { { name = "ts", value = 3 } } } }, true)
      m:push(3, { { primary_key = { 10 } } }, true)
      local rows = m:pull()
      assert.equal(4, #rows)
      assert.equal(3, rows[2].primaryKey[1].value)
      assert.equal(7, rows[3].primary_key[1][2])
    end)
  end)

  describe("bad input raises, naming the source and row", function()
    it("rows without a key, keys of the wrong type, out of order", function()
      local m = merge.new { sources = 2, key = "k" }
      assert.has_error(function() m:push(1, { { k = "a" }, { x = 1 } }, true) end,
        "otskit.merge: source 1 row 2 has no key")
      assert.has_error(function() m:push(2, { { k = 5 } }, true) end,
        "otskit.merge: source 2 row 1 key must be a string, got number")
      assert.has_error(function() m:push(2, { "row" }, true) end,
        "otskit.merge: source 2 row 1 is a string, not a table")
      assert.has_error(function() m:push(1, { { k = "b" }, { k = "a" } }, true) end,
        "otskit.merge: source 1 row 2 is out of order in its source")
      -- a failed push leaves the source pending and usable
      m:push(1, { { k = "b" } }, false)
      assert.has_error(function() m:push(1, { { k = "c" } }, true) end,
        "otskit.merge: source 1 pushed before its rows were merged")
      m:push(2, {}, true)
      assert.has_error(function() m:push(2, {}, true) end, "otskit.merge: source 2 pushed after done")
      assert.has_error(function() m:push(3, {}, true) end, "otskit.merge: source 3 out of range 1..2")
      assert.has_error(function() m:push(0, {}, true) end, "otskit.merge: source 0 out of range 1..2")
      local rows = m:pull()
      assert.equal(1, #rows)
      -- across batches too: "a" after "b"
      assert.has_error(function() m:push(1, { { k = "a" } }, true) end,
        "otskit.merge: source 1 row 1 is out of order in its source")
      local t = merge.new { sources = 1, key = { 2 } }
      assert.has_error(function() t:push(1, { { primary_key = { { "a", 1 }, { "b", 1.5 } } } }, true) end,
        "otskit.merge: source 1 row 1 primary-key column 2: not an integer")
      assert.has_error(function() t:push(1, { { primary_key = { { "a", 1 }, { "b", true } } } }, true) end,
        "otskit.merge: source 1 row 1 primary-key column 2 must be an integer or a string, got boolean")
      assert.has_error(function() t:push(1, { { attributes = {} } }, true) end,
        "otskit.merge: source 1 row 1 has no primary_key table")
    end)

    it("bad options", function()
      assert.has_error(function() merge.new { sources = 0, key = "k" } end, "otskit.merge: sources must be an integer 1..1024")
      assert.has_error(function() merge.new { sources = 1025, key = "k" } end, "otskit.merge: sources must be an integer 1..1024")
      assert.has_error(function() merge.new { sources = 2 } end)
      assert.has_error(function() merge.new { sources = 2, key = "k", order = "up" } end,
        "otskit.merge: order must be \"asc\" or \"desc\"")
      assert.has_error(function() merge.new { sources = 2, key = { 0 } } end, "otskit.merge: key positions must be integers 1..64")
      assert.has_error(function() merge.read { sources = 2, key = "k", fetch = print } end,
        "otskit.merge: limit must be an integer 1..2147483648")
      assert.has_error(function() merge.read { sources = 2, key = "k", limit = 1 } end, "otskit.merge: fetch must be a function")
      assert.has_error(function() merge.read { sources = 2, key = "k", limit = 1, fetch = print, secret = "short" } end,
        "otskit.merge: secret must be a string of at least 16 bytes")
      assert.has_error(function() merge.read { sources = 1, key = "k", limit = 1, fetch = function() return "x" end } end,
        "otskit.merge: fetch of source 1 returned a string, not a table of rows")
    end)

    it("k = 1024 sources merge", function()
      local m = merge.new { sources = 1024, key = 1 }
      for i = 1024, 1, -1 do m:push(i, { { ("%04d"):format(1024 - i) } }, true) end
      local rows, state = m:pull()
      assert.equal("done", state)
      assert.equal(1024, #rows)
      for i = 1, 1024 do assert.equal(("%04d"):format(i - 1), rows[i][1]) end
    end)
  end)
end)
