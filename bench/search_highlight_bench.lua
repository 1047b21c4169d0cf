--- bench/search_highlight_bench.lua -- summary and highlighting: a
-- match query of two words over N documents of ~30 random words, the
-- first 100 rows (primary key order) with their TEXT field highlighted
-- whole (number_of_fragments = 0), against SQLite FTS5 asked the same
-- (MATCH 'a OR b' and highlight() over an FTS5 table of the same texts,
-- rowid order, LIMIT 100); the same search without highlight shows what
-- highlighting adds. Every answer is checked equal to FTS5's before it is
-- timed. N: OTSKIT_SEARCH_HL_BENCH_N (default 100 000; 5 000 in the quick
-- suite); R: OTSKIT_SEARCH_HL_BENCH_R (default 7; 3 quick).
local bench = require "lib"
local store = require "otskit.store"
local core = require "otskit.core"
local sql, kv = core.sql, core.kv

local N = tonumber(os.getenv("OTSKIT_SEARCH_HL_BENCH_N") or "") or (bench.quick and 5000 or 100000)
local R = tonumber(os.getenv("OTSKIT_SEARCH_HL_BENCH_R") or "") or (bench.quick and 3 or 7)
local clock = os.clock

local WORDS = {}
do
  local seed = 7
  for i = 1, 2000 do
    local w = {}
    for j = 1, 3 + i % 6 do
      seed = (seed * 48271) % 2147483647
      w[j] = string.char(97 + seed % 26)
    end
    WORDS[i] = table.concat(w)
  end
end
local SEPS = { " ", " ", " ", ", ", ". ", " - " }
local seed = 42
local function rnd(n) seed = (seed * 48271) % 2147483647; return seed % n end
local function text(i)
  seed = (i * 2654435761) % 2147483647 + 1
  local t = {}
  for j = 1, 20 + rnd(20) do
    t[#t + 1] = WORDS[1 + rnd(#WORDS)]
    t[#t + 1] = SEPS[1 + rnd(#SEPS)]
  end
  t[#t] = nil
  return table.concat(t)
end

local db = assert(store.open{ partitions = false })
assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = {
  { field_name = "s", field_type = "TEXT", enable_highlighting = true } } } })
local rows = {}
for i = 1, N do
  rows[#rows + 1] = { type = "PUT", primary_key = { { "id", i } }, columns = { s = text(i) } }
  if #rows == 200 or i == N then
    assert(assert(db:batch_write_row{ tables = { { table = "t", rows = rows } } }).failed == 0)
    rows = {}
  end
end

local h = assert(kv.open(":memory:"))
local function exec(s) assert(sql.exec(h, s)) end
exec("CREATE VIRTUAL TABLE f USING fts5(s)")
exec("BEGIN")
for i = 1, N do sql.rows(h, "INSERT INTO f (rowid, s) VALUES (?1, ?2)", { i, text(i) }) end
exec("COMMIT")

local function p50(xs) table.sort(xs); return xs[math.ceil(#xs / 2)] end

bench.title(("search highlight: %d documents, 100 rows highlighted"):format(N))
bench.table({ "query", "otskit p50 ms", "otskit no highlight p50 ms", "FTS5 p50 ms", "ratio", "highlight share" })
for qi, pair in ipairs({ { 1, 2 }, { 17, 400 }, { 1999, 3 } }) do
  local a, b = WORDS[pair[1]], WORDS[pair[2]]
  local req = { table = "t", index = "ix", limit = 100, query = { match = { field_name = "s", text = a .. " " .. b } },
    highlight = { parameters = { { field_name = "s", number_of_fragments = 0 } } } }
  local plain = { table = "t", index = "ix", limit = 100, query = req.query }
  local text_q = "SELECT rowid, highlight(f, 0, '<em>', '</em>') FROM f WHERE f MATCH ?1 ORDER BY rowid LIMIT 100"
  local ot, pt, ft = {}, {}, {}
  for i = 1, R do
    collectgarbage()
    local a0 = clock()
    local res = assert(db:search(req))
    local a1 = clock()
    local res2 = assert(db:search(plain))
    local a2 = clock()
    local fr = sql.rows(h, text_q, { a .. " OR " .. b })
    local a3 = clock()
    ot[i], pt[i], ft[i] = a1 - a0, a2 - a1, a3 - a2
    local same = #res.rows == #fr and #res2.rows == #fr
    for j, r in ipairs(res.rows) do
      local hf = res.search_hits[j].highlight_fields
      if r.primary_key[1][2] ~= fr[j][1] or not hf or hf[1].fragments[1] ~= fr[j][2] then same = false; break end
    end
    bench.same(true, same, "query " .. qi)
  end
  local o, p, f = p50(ot), p50(pt), p50(ft)
  bench.row(a .. " " .. b, o * 1e3, p * 1e3, f * 1e3, o / f, (o - p) / o)
  bench.value(("search highlight query %d: vs FTS5"):format(qi), "x", "lower", o / f)
end
db:close()
h:close()
