--- bench/client_bench.lua -- otskit.client against `otskit serve` on this
-- machine (plain Lua: 5.4 or LuaJIT, curl transport):
--  1. fan-out: merge.read over 16 buckets, the server adding 20 ms to every
--     request: one page with client:parallel vs one bucket's read alone
--     (and vs the same page read sequentially); wall-clock medians.
--  2. a 5000-row GetRange page: the client's CPU (encode, sign, HTTP,
--     checks, decode) vs decoding the same body alone (wire.decode_response)
--     and vs the floor: decode + MD5 + HTTP alone (the client must check
--     the response's x-ots-contentmd5), and vs those three steps run in
--     sequence by plain code (the difference is the client's own work);
--     all interleaved in one measure, ratios per round.
--  3. 1000 sequential GetRow calls: TCP connections opened (curl's count).
-- The outputs are checked (merged pages equal, rows equal) before timing.
package.path = "spec/?.lua;" .. package.path
local bench = require "lib"
local serve = require "support.serve"
local merge = require "otskit.merge"
local wire = require "otskit.wire"
local store = require "otskit.store"
local backoff = require "otskit.backoff"

local INF_MIN, INF_MAX = store.INF_MIN, store.INF_MAX
local REPS = bench.quick and 5 or 15

local function wall(fn, reps)
  local t = {}
  for r = 1, reps do
    local t0 = backoff.now()
    fn()
    t[r] = backoff.now() - t0
  end
  table.sort(t)
  return bench.median(t), t[1], t[#t]
end

print(("\n### %s"):format(bench.interp))

---------------------------------------------------------------------------
-- 1. fan-out with 20 ms per request
local WORKERS = tonumber(os.getenv("OTSKIT_SERVE_WORKERS") or "2")
-- sections 1, 3 and 4 print wall times and counts, not recorded measures:
-- only the first process of a run spends the seconds of server latency
local FIRST = bench.first_process()
if FIRST then
  -- the server's work for 16 requests is spread over its workers (2 cores)
  local srv = assert(serve.start{ faults = "latency=20,apis=GetRange", workers = WORKERS })
  local ok, err = pcall(function()
    local c = serve.client(srv)
    assert(c:create_table{ name = "b16", primary_key = {{"b", "INTEGER"}, {"ts", "INTEGER"}} })
    local rows = {}
    for ts = 1, 3200 do
      rows[#rows + 1] = { type = "PUT", primary_key = {{"b", ts % 16}, {"ts", ts}}, columns = { v = ts } }
      if #rows == 200 then assert(c:batch_write_row{ tables = {{ table = "b16", rows = rows }} }); rows = {} end
    end
    local function fetch(b, after, n)
      local start = after or {{"b", b}, {"ts", INF_MIN}}
      if type(after) == "table" and after.resume then start = {{"b", b}, {"ts", after.key[1] + (after.inclusive and 0 or 1)}} end
      local page = assert(c:get_range{ table = "b16", start = start, stop = {{"b", b}, {"ts", INF_MAX}}, limit = n })
      return page.rows, page.next_start_primary_key
    end
    local function page(parallel)
      local got = assert(merge.read{ sources = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 },
        fetch = fetch, key = { 2 }, limit = 100, parallel = parallel })
      local ts = {}
      for i, r in ipairs(got) do ts[i] = r.primary_key[2][2] end
      return ts
    end
    local want = {}
    for i = 1, 100 do want[i] = i end
    bench.same(page(c), want, "parallel page")
    bench.same(page(false), want, "sequential page")
    local one = wall(function() fetch(3, nil, 100) end, REPS)
    local par, plo, phi = wall(function() page(c) end, REPS)
    local seq = wall(function() page(false) end, bench.quick and 3 or 5)
    print("| measure | median | range | x one bucket |")
    print("|---|---|---|---|")
    print(("| one bucket's get_range (20 ms server latency, %d server workers) | %.1f ms | | 1.00 |"):format(WORKERS, one * 1e3))
    print(("| merge.read page, 16 buckets, client:parallel | %.1f ms | %.1f-%.1f ms | %.2f |"):format(par * 1e3, plo * 1e3, phi * 1e3, par / one))
    print(("| merge.read page, 16 buckets, sequential | %.1f ms | | %.2f |"):format(seq * 1e3, seq / one))
  end)
  srv.stop()
  if not ok then error(err, 0) end
end

---------------------------------------------------------------------------
-- 2. CPU of a 5000-row GetRange page, 3. connections of 1000 GetRow
do
  local srv = assert(serve.start{})
  local ok, err = pcall(function()
    local c = serve.client(srv)
    assert(c:create_table{ name = "big", primary_key = {{"id", "INTEGER"}} })
    local rows = {}
    for i = 1, 5000 do
      rows[#rows + 1] = { type = "PUT", primary_key = {{"id", i}},
        columns = { a = "value-" .. i, n = i * 7, f = i / 3, flag = i % 2 == 0, s = ("x"):rep(24) } }
      if #rows == 200 then assert(c:batch_write_row{ tables = {{ table = "big", rows = rows }} }); rows = {} end
    end
    local req = { table = "big", start = {{"id", INF_MIN}}, stop = {{"id", INF_MAX}}, limit = 5000 }
    -- the body, fetched once through a transport function that keeps it
    local core = require "otskit.core"
    local body, sent
    local keep = serve.client(srv, { transport = function(r)
      sent = r
      local res = core.http.new():request{ url = r.url, headers = r.headers, body = r.body }
      body = res.body
      return res
    end })
    local viaf = assert(keep:get_range(req))
    local page = assert(c:get_range(req))
    assert(#page.rows == 5000 and #viaf.rows == 5000)
    local dec = assert(wire.decode_response("GetRange", body))
    bench.same(#dec.rows, #page.rows, "rows")
    for i = 1, 5000, 499 do
      bench.same(dec.rows[i].columns.a, page.rows[i].columns.a, "row " .. i)
    end
    -- HTTP alone: a curl session like the client's, the same signed
    -- request (fresh x-ots-date), no check, no decode
    local s = core.http.new()
    local function http_alone()
      local r = s:request{ url = sent.url, headers = c:_headers("GetRange", wire.content_md5(sent.body)), body = sent.body }
      assert(r.status == 200 and #r.body == #body)
    end
    local md5 = wire.content_md5(body)
    http_alone()
    -- the same three steps in sequence in plain code: what the client adds
    -- beyond them is its own work (encode, sign, keys, retry, signature)
    local function in_sequence()
      local r = s:request{ url = sent.url, headers = c:_headers("GetRange", wire.content_md5(sent.body)), body = sent.body }
      assert(wire.equal(r.headers["x-ots-contentmd5"], wire.content_md5(r.body)))
      return assert(wire.decode_response("GetRange", r.body))
    end
    bench.same(#in_sequence().rows, 5000, "rows in sequence")
    local r = bench.run { name = "5000-row GetRange page (CPU)", unit = "ms/page", units = 1,
      reps = bench.quick and 15 or 51,
      variants = {
        { "decode alone", function() assert(wire.decode_response("GetRange", body)) end },
        { "MD5 alone", function() assert(wire.content_md5(body) == md5) end },
        { "HTTP alone", http_alone },
        { "HTTP + MD5 + decode in sequence", in_sequence },
        { "client:get_range", function() assert(c:get_range(req)) end },
      },
      ratios = { { "decode alone", "client:get_range" }, { "HTTP + MD5 + decode in sequence", "client:get_range" } } }
    -- the floor: the same work in C alone, per round (adjacent repetitions)
    local D, M, H, C = r["decode alone"], r["MD5 alone"], r["HTTP alone"], r["client:get_range"]
    local floor, vs_floor = {}, {}
    for k = 1, #C.values do
      floor[k] = D.values[k] + M.values[k] + H.values[k]
      vs_floor[k] = C.values[k] / floor[k]
    end
    local floor_ms = bench.value("5000-row GetRange page (CPU): floor (decode + MD5 + HTTP)", "ms/page", "lower",
      bench.median(floor))
    local ratio_floor = bench.value("5000-row GetRange page (CPU): client vs floor", "x", "lower", bench.median(vs_floor))
    local ratio_dec = r.ratio["decode alone vs client:get_range"]
    local ratio_seq = r.ratio["HTTP + MD5 + decode in sequence vs client:get_range"]
    local S = r["HTTP + MD5 + decode in sequence"]
    print()
    print(("| 5000-row GetRange page, %d KB (CPU of this process, medians of %d interleaved rounds) | median | x decode alone | x floor |")
      :format(math.floor(#body / 1024), C.n))
    print("|---|---|---|---|")
    local function row(what, m, xd, xf)
      print(("| %s | %.2f ms | %.2f | %s |"):format(what, m, xd or m / D.median, xf and ("%.2f"):format(xf) or ""))
    end
    row("wire.decode_response of the body (decode alone)", D.median)
    row("wire.content_md5 of the body (MD5 alone)", M.median)
    row("the HTTP exchange alone (curl, no check, no decode)", H.median)
    row("**floor**: decode + MD5 + HTTP, each alone", floor_ms.median, nil, 1)
    row("HTTP, MD5 check, decode in sequence (plain code)", S.median, nil, S.median / floor_ms.median)
    row("**client:get_range** (curl; MD5 and signature checked)", C.median, ratio_dec.median, ratio_floor.median)
    print(("\nThe client's ratios are medians of the rounds' ratios (adjacent repetitions). client / the"
      .. " same steps in sequence: %.3f (what the client's own work adds)."):format(ratio_seq.median))
    s:close()

    if not FIRST then return end
    local c2 = serve.client(srv)
    local before = c2:connects()
    for i = 1, 1000 do assert(c2:get_row{ table = "big", primary_key = {{"id", i}} }) end
    print()
    print(("| 1000 sequential get_row | TCP connections opened: %d |"):format(c2:connects() - before))
    print("|---|---|")
  end)
  srv.stop()
  if not ok then error(err, 0) end
end

---------------------------------------------------------------------------
-- 4. the same fan-out in OpenResty (transport "nginx": capture_multi),
-- once (the nginx side is LuaJIT whatever runs this script)
if not jit and FIRST then
  local ng = require "support.nginx"
  local cjson = require "cjson"
  local srv = assert(serve.start{ faults = "latency=20,apis=GetRange", workers = WORKERS })
  local ok, err = pcall(function()
    local n = assert(ng.start(srv.port))
    local ok2, err2 = pcall(function()
      local s = require("otskit.core").http.new()
      local function get(q)
        local r = assert(s:request{ url = n.url .. "/t?" .. q, method = "GET", timeout = 300 })
        assert(r.status == 200, r.body)
        return cjson.decode(r.body)
      end
      get("case=fanout&fill=1&t=bo")
      local r = get("case=fanout&t=bo&reps=" .. REPS)
      for i = 1, 100 do assert(r.ts[i] == i, "OpenResty page differs") end
      print()
      print("| OpenResty (transport nginx), 20 ms server latency | median | range | x one bucket |")
      print("|---|---|---|---|")
      print(("| one bucket's get_range | %.1f ms | %.1f-%.1f ms | 1.00 |"):format(r.one.median * 1e3, r.one.min * 1e3, r.one.max * 1e3))
      print(("| merge.read page, 16 buckets, client:parallel | %.1f ms | %.1f-%.1f ms | %.2f |"):format(
        r.parallel.median * 1e3, r.parallel.min * 1e3, r.parallel.max * 1e3, r.parallel.median / r.one.median))
      print(("| merge.read page, 16 buckets, sequential | %.1f ms | | %.2f |"):format(r.sequential.median * 1e3, r.sequential.median / r.one.median))
    end)
    n.stop()
    if not ok2 then error(err2, 0) end
  end)
  srv.stop()
  if not ok then error(err, 0) end
end
