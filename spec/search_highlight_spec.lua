-- spec/search_highlight_spec.lua -- summary and highlighting, and nested
-- inner_hits, over random documents and queries: analyzer spans are the
-- analyzer's tokens at their places; every fragment is a piece of the
-- field's value with tags around exactly the tokens the query matched
-- (by the field's own analyzer) and nowhere else; fragment counts, sizes
-- and orders as asked; a field is in the result iff a value has a match;
-- inner hits are the model's matching objects in the asked order and
-- page; the same through the wire; bad highlight / inner_hits refused.
local store = require "otskit.store"
local wire = require "otskit.wire"
local analyzers = require "otskit.store.search.analyzers"
local cjson = require "cjson.safe"
local helper = require "helper"

local WORDS = { "hangzhou", "Shanghai", "beijing", "hz", "bj", "abc123", "x", "go", "Go", "search", "数", "参", "杭州" }
local SEPS = { " ", " ", ", ", ".", "  ", "-", "；", "\t" }

local function text(r, n)
  local t = {}
  for i = 1, n do
    t[#t + 1] = WORDS[r.int(1, #WORDS)]
    if i < n then t[#t + 1] = SEPS[r.int(1, #SEPS)] end
  end
  return table.concat(t)
end

local function helper_same(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i][1] ~= b[i][1] or a[i][2] ~= b[i][2] then return false end end
  return true
end

local CHAR = "[%z\1-\127\194-\244][\128-\191]*"
local function nchars(s)
  local n = 0
  for _ in s:gmatch(CHAR) do n = n + 1 end
  return n
end

local function unhtml(s)
  return (s:gsub("&#x2F;", "/"):gsub("&#x27;", "'"):gsub("&quot;", '"'):gsub("&lt;", "<"):gsub("&gt;", ">"):gsub("&amp;", "&"))
end

-- a fragment -> its plain text and the marked pieces { {first, last} } in it
local function strip(frag, pre, post, html)
  local plain, marks, at = {}, {}, 1
  local len = 0
  while true do
    local a = frag:find(pre, at, true)
    local piece = frag:sub(at, (a or #frag + 1) - 1)
    if html then
      assert(not piece:find("[<>\"'/]"), "unescaped text in an HTML fragment: " .. frag)
      piece = unhtml(piece)
    end
    plain[#plain + 1] = piece
    len = len + #piece
    if not a then break end
    local b = frag:find(post, a + #pre, true)
    assert(b, "a pre_tag without its post_tag: " .. frag)
    local word = frag:sub(a + #pre, b - 1)
    if html then word = unhtml(word) end
    assert(#word > 0, "an empty mark: " .. frag)
    marks[#marks + 1] = { len + 1, len + #word }
    plain[#plain + 1] = word
    len = len + #word
    at = b + #post
  end
  return table.concat(plain), marks
end

describe("otskit.store.search.analyzers spans", function()
  it("are the analyzer's tokens on any bytes (invalid UTF-8 too)", function()
    local r = helper.rng(11)
    local parts = { "a", "Z", "9", " ", ",", "é", "数", "，", "１", "\128", "\255", "\194", "\xC3", "\xE6\x95", "-", "x1" }
    for _ = 1, helper.trials(3000) do
      local t = {}
      for i = 1, r.int(0, 20) do t[i] = parts[r.int(1, #parts)] end
      local s = table.concat(t)
      for _, a in ipairs({ { "single_word", {} }, { "single_word", { case_sensitive = true } },
          { "single_word", { delimit_word = true } }, { "split", {} }, { "fuzzy", { max_chars = 3 } } }) do
        local toks, spans = analyzers.tokens(a[1], a[2], s), analyzers.spans(a[1], a[2], s)
        assert.equal(#toks, #spans, s)
        for i, sp in ipairs(spans) do assert.equal(toks[i], sp[1], s) end
      end
    end
  end)

  it("are the analyzer's tokens, each the text it came from", function()
    local r = helper.rng(7)
    for _ = 1, helper.trials(400) do
      local s = text(r, r.int(0, 12))
      for _, a in ipairs({ { "single_word", {} }, { "single_word", { case_sensitive = true } },
          { "single_word", { delimit_word = true } }, { "split", {} }, { "split", { delimiter = "," } },
          { "fuzzy", { min_chars = 1, max_chars = r.int(1, 4) } }, { "max_word", {} } }) do
        local toks = analyzers.tokens(a[1], a[2], s)
        local spans = analyzers.spans(a[1], a[2], s)
        assert.equal(#toks, #spans)
        for i, sp in ipairs(spans) do
          assert.equal(toks[i], sp[1])
          local piece = s:sub(sp[2], sp[3])
          if a[1] == "split" and a[2].delimiter == nil then assert.equal(toks[i], piece:lower())
          elseif a[2].case_sensitive then assert.equal(toks[i], piece)
          else assert.equal(toks[i], piece:lower()) end
          if i > 1 then assert.is_true(sp[2] >= spans[i - 1][2]) end
        end
      end
    end
  end)
end)

local function fresh(analyzer, params, array)
  local db = assert(store.open{})
  assert(db:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
  assert(db:create_search_index{ table = "t", index = "ix", schema = { field_schemas = {
    { field_name = "s", field_type = "TEXT", analyzer = analyzer, analyzer_parameter = params,
      enable_highlighting = true, is_array = array },
    { field_name = "plain", field_type = "TEXT" },
    { field_name = "k", field_type = "KEYWORD" },
    { field_name = "n", field_type = "NESTED", field_schemas = {
      { field_name = "t", field_type = "TEXT", enable_highlighting = true },
      { field_name = "w", field_type = "LONG", enable_sort_and_agg = true },
      { field_name = "m", field_type = "NESTED", field_schemas = {
        { field_name = "u", field_type = "TEXT", enable_highlighting = true } } } } } } } })
  return db
end

-- the query and a model of what it matches: ok(token, tokens, i) -> is the
-- i-th token of a value matched
local function random_query(r, analyzer, params)
  local kind = r.int(1, 4)
  local w = WORDS[r.int(1, #WORDS)]
  if kind == 1 then
    local q = w .. " " .. WORDS[r.int(1, #WORDS)]
    local set = {}
    for _, t in ipairs(analyzers.tokens(analyzer, params, q)) do set[t] = true end
    return { match = { field_name = "s", text = q } }, function(tok) return set[tok] end
  elseif kind == 2 then
    local t = analyzers.tokens(analyzer, params, w)[1] or "x"
    return { term = { field_name = "s", term = t } }, function(tok) return tok == t end
  elseif kind == 3 then
    local t = (analyzers.tokens(analyzer, params, w)[1] or "x"):sub(1, r.int(1, 2))
    return { prefix = { field_name = "s", prefix = t } }, function(tok) return tok:sub(1, #t) == t end
  end
  local q = w .. " " .. WORDS[r.int(1, #WORDS)]
  local ph = analyzers.tokens(analyzer, params, q)
  return { match_phrase = { field_name = "s", text = q } }, function(_, toks, i)
    for s = i - #ph + 1, i do
      if s >= 1 and s + #ph - 1 <= #toks then
        local all = true
        for j = 1, #ph do if toks[s + j - 1] ~= ph[j] then all = false; break end end
        if all then return true end
      end
    end
    return false
  end
end

describe("highlight vs a model", function()
  it("marks exactly the matched tokens, in fragments as asked", function()
    local r = helper.rng(2027)
    local rounds = helper.trials(60)
    for round = 1, rounds do
      local analyzer, params = "single_word", {}
      local pick = r.int(1, 4)
      if pick == 2 then params = { case_sensitive = true }
      elseif pick == 3 then analyzer = "split" end
      local array = r.int(1, 4) == 1
      local db = fresh(analyzer, params, array)
      local vals = {}
      for id = 1, r.int(1, 12) do
        local v
        if array then
          v = {}
          for j = 1, r.int(1, 3) do v[j] = text(r, r.int(1, 10)) end
        else
          v = { text(r, r.int(1, 14)) }
        end
        vals[id] = v
        assert(db:put_row{ table = "t", primary_key = { { "id", id } },
          columns = { s = array and cjson.encode(v) or v[1] } })
      end
      local q, model = random_query(r, analyzer, params)
      local tags = { { "<em>", "</em>" }, { "<b>", "</b>" }, { "'x'", "\"/\"" }, { "<SPAN1>", "</SPAN1>" } }
      local tg = tags[r.int(1, #tags)]
      local p = { field_name = "s", pre_tag = tg[1], post_tag = tg[2], fragment_size = r.int(1, 40),
        number_of_fragments = r.int(0, 4), fragments_order = r.int(1, 2) == 1 and "SCORE" or "TEXT_SEQUENCE" }
      local html = r.int(1, 2) == 1
      local req = { table = "t", index = "ix", limit = 100, query = q,
        highlight = { encoder = html and "HTML" or "PLAIN", parameters = { p } } }
      if round % 2 == 0 then -- through the wire
        req = assert(wire.decode_request("Search", assert(wire.encode_request("Search", req))))
      end
      local res = assert(db:search(req))
      if round % 2 == 0 then
        res = assert(wire.decode_response("Search", assert(wire.encode_response("Search", res))))
      end
      assert.equal(#res.rows, #(res.search_hits or {}))
      for i, row in ipairs(res.rows) do
        local id = row.primary_key[1][2]
        local hit = res.search_hits[i]
        -- the model: which values have a matched token
        local matched = 0
        for _, v in ipairs(vals[id]) do
          local toks = analyzers.tokens(analyzer, params, v)
          for k, tk in ipairs(toks) do if model(tk, toks, k) then matched = matched + 1; break end end
        end
        local f = hit.highlight_fields and hit.highlight_fields[1]
        if matched == 0 then assert.is_nil(f) else
          assert.is_table(f, cjson.encode(vals[id]))
          assert.equal("s", f.field_name)
          if p.number_of_fragments == 0 then assert.equal(matched, #f.fragments)
          else assert.is_true(#f.fragments >= 1 and #f.fragments <= p.number_of_fragments) end
          local last_vi, last_at, last_score = 0, 0, math.huge
          for _, frag in ipairs(f.fragments) do
            local plain, marks = strip(frag, p.pre_tag, p.post_tag, html)
            assert.is_true(#marks > 0)
            -- a piece of one of the values (after the previous one in
            -- text order) whose matched tokens are exactly the marks
            local vi, at
            local function want_at(k, a)
              local v = vals[id][k]
              local toks = analyzers.tokens(analyzer, params, v)
              local want = {}
              for j, sp in ipairs(analyzers.spans(analyzer, params, v)) do
                if sp[2] >= a and sp[3] <= a + #plain - 1 and model(sp[1], toks, j) then
                  want[#want + 1] = { sp[2] - a + 1, sp[3] - a + 1 }
                end
              end
              return want
            end
            for k = (p.fragments_order == "SCORE" and 1 or math.max(1, last_vi)), #vals[id] do
              local from = (p.fragments_order ~= "SCORE" and k == last_vi) and last_at or 1
              while true do
                local a = vals[id][k]:find(plain, from, true)
                if not a then break end
                if helper_same(want_at(k, a), marks) then vi, at = k, a; break end
                from = a + 1
              end
              if vi then break end
            end
            assert(vi, ("fragment %q: not a piece of %s with its matched tokens marked"):format(frag, cjson.encode(vals[id])))
            if p.fragments_order ~= "SCORE" then last_vi, last_at = vi, at + #plain end
            local v = vals[id][vi]
            local distinct, nd = {}, 0
            for _, m in ipairs(marks) do
              local wd = plain:sub(m[1], m[2]):lower()
              if not distinct[wd] then distinct[wd] = true; nd = nd + 1 end
            end
            if p.fragments_order == "SCORE" then
              assert.is_true(nd <= last_score)
              last_score = nd
            end
            -- at most fragment_size characters up to its last token, unless one token
            if p.number_of_fragments > 0 then
              local fs = analyzers.spans(analyzer, params, plain)
              if #fs > 1 then
                assert.is_true(nchars(plain:sub(1, fs[#fs][3])) <= p.fragment_size + nchars(plain:sub(1, fs[1][2] - 1)),
                  ("fragment %q longer than %d"):format(plain, p.fragment_size))
              end
            else
              assert.equal(v, plain)
            end
          end
        end
      end
      db:close()
    end
  end)
end)

describe("nested inner_hits vs a model", function()
  it("returns the matching objects in order, paged, highlighted", function()
    local r = helper.rng(99)
    for round = 1, helper.trials(40) do
      local db = fresh("single_word", {}, false)
      local objs = {}
      for id = 1, r.int(1, 8) do
        local list = {}
        for j = 1, r.int(0, 5) do
          local kids = {}
          for k = 1, r.int(0, 3) do kids[k] = { u = text(r, r.int(1, 4)) } end
          list[j] = { t = text(r, r.int(1, 6)), m = kids, w = r.int(1, 3) > 1 and r.int(0, 4) or nil }
        end
        objs[id] = list
        assert(db:put_row{ table = "t", primary_key = { { "id", id } }, columns = { n = cjson.encode(list), k = "k" } })
      end
      local w = ({ "hangzhou", "hz", "go", "数" })[r.int(1, 4)]
      local desc = r.int(1, 2) == 1
      local by_w = r.int(1, 2) == 1
      local offset, limit = r.int(0, 2), r.int(0, 4)
      local deep = r.int(1, 2) == 1
      local inner_q = { match = { field_name = "n.t", text = w } }
      if deep then
        inner_q = { bool = { should = { inner_q, { nested = { path = "n.m", query = { match = { field_name = "n.m.u", text = w } },
          inner_hits = { highlight = { parameters = { { field_name = "n.m.u" } } } } } } } } }
      end
      local q = { bool = { should = { { term = { field_name = "k", term = "k" } }, { nested = { path = "n", query = inner_q,
        inner_hits = { sort = by_w and { { field_sort = { field_name = "n.w", order = desc and "DESC" or "ASC" } } }
          or { { doc_sort = { order = desc and "DESC" or "ASC" } } }, offset = offset, limit = limit,
          highlight = { parameters = { { field_name = "n.t", pre_tag = "<b>", post_tag = "</b>" } } } } } } } } }
      local req = { table = "t", index = "ix", limit = 100, query = q }
      local res
      if round % 2 == 0 then
        local back = assert(wire.decode_request("Search", assert(wire.encode_request("Search", req))))
        res = assert(wire.decode_response("Search", assert(wire.encode_response("Search", assert(db:search(back))))))
      else
        res = assert(db:search(req))
      end
      local function has(s) for _, t in ipairs(analyzers.tokens("single_word", {}, s)) do if t == w then return true end end end
      for i, row in ipairs(res.rows) do
        local id = row.primary_key[1][2]
        local want = {}
        for j, o in ipairs(objs[id]) do
          local ok = has(o.t)
          if deep then for _, kid in ipairs(o.m) do if has(kid.u) then ok = true end end end
          if ok then want[#want + 1] = j - 1 end
        end
        if by_w then -- by w (objects without one last), then in array order
          local o = objs[id]
          table.sort(want, function(x, y)
            local a, b = o[x + 1].w, o[y + 1].w
            if (a == nil) ~= (b == nil) then return b == nil end
            if a ~= b then if desc then return a > b end return a < b end
            return x < y
          end)
        elseif desc then local rev = {}; for j = #want, 1, -1 do rev[#rev + 1] = want[j] end; want = rev end
        local page = {}
        for j = offset + 1, math.min(#want, offset + limit) do page[#page + 1] = want[j] end
        local ih = res.search_hits[i].inner_hits
        assert.equal(1, #ih)
        assert.equal("n", ih[1].path)
        local got = {}
        for j, h in ipairs(ih[1].hits) do
          got[j] = h.nested_doc_offset or 0
          local o = objs[id][got[j] + 1]
          local f = h.highlight_fields and h.highlight_fields[1]
          if has(o.t) then
            local plain, marks = strip(f.fragments[1], "<b>", "</b>", false)
            assert.is_truthy(o.t:find(plain, 1, true))
            assert.is_true(#marks > 0)
            for _, m in ipairs(marks) do assert.equal(w, plain:sub(m[1], m[2]):lower()) end
          else
            assert.is_nil(f)
          end
          if deep then
            local sub = h.inner_hits[1]
            assert.equal("n.m", sub.path)
            local kw = {}
            for k, kid in ipairs(o.m) do if has(kid.u) then kw[#kw + 1] = k - 1 end end
            local kg = {}
            for k, sh in ipairs(sub.hits) do
              kg[k] = sh.nested_doc_offset or 0
              local frag = sh.highlight_fields[1].fragments[1]
              assert.is_truthy(frag:find("<em>", 1, true))
            end
            local kp = {}
            for k = 1, math.min(3, #kw) do kp[k] = kw[k] end
            assert.same(kp, kg)
          else
            assert.is_nil(h.inner_hits)
          end
        end
        assert.same(page, got, cjson.encode(objs[id]))
      end
      db:close()
    end
  end)
end)

describe("highlight and inner_hits: bad input", function()
  local function fails(what, res, msg, code)
    assert.is_nil(res)
    assert.equal("OTSParameterInvalid", code)
    assert.is_truthy(msg:find(what, 1, true), msg)
  end
  local function hl(p, enc) return { encoder = enc, parameters = { p } } end
  it("refuses what the service refuses", function()
    local db = fresh("single_word", {}, false)
    local q = { match = { field_name = "s", text = "x" } }
    local function s(h) return db:search{ table = "t", index = "ix", query = q, highlight = h } end
    fails("not TEXT", s(hl{ field_name = "k" }))
    fails("enable_highlighting", s(hl{ field_name = "plain" }))
    fails("inner_hits", s(hl{ field_name = "n.t" }))
    fails("does not exist", s(hl{ field_name = "nope" }))
    fails("pre_tag", s(hl{ field_name = "s", pre_tag = "<em class=x>" }))
    fails("post_tag", s(hl{ field_name = "s", post_tag = "" }))
    fails("fragment_size", s(hl{ field_name = "s", fragment_size = 0 }))
    fails("number_of_fragments", s(hl{ field_name = "s", number_of_fragments = -1 }))
    fails("fragments_order", s(hl{ field_name = "s", fragments_order = "RANDOM" }))
    fails("encoder", s(hl({ field_name = "s" }, "XML")))
    fails("unsupported option 'size'", s(hl{ field_name = "s", size = 3 }))
    fails("twice", s{ parameters = { { field_name = "s" }, { field_name = "s" } } })
    local many = {}
    for i = 1, 11 do many[i] = { field_name = "s" } end
    fails("at most 10", s{ parameters = many })
    local function nested(ih, inner)
      return db:search{ table = "t", index = "ix", query = { nested = { path = "n", inner_hits = ih,
        query = inner or { match = { field_name = "n.t", text = "x" } } } } }
    end
    fails("score_sort, doc_sort and field_sort", nested{ sort = { { geo_distance_sort = { field_name = "n.t" } } } })
    fails("is TEXT", nested{ sort = { { field_sort = { field_name = "n.t" } } } })
    fails("not a sub-field", nested{ sort = { { field_sort = { field_name = "k" } } } })
    fails("unsupported option 'missing_value'", nested{ sort = { { field_sort = { field_name = "n.w", missing_value = 1 } } } })
    fails("limit", nested{ limit = 101 })
    fails("offset", nested{ offset = -1 })
    fails("unsupported option 'size'", nested{ size = 1 })
    fails("not a sub-field", nested{ highlight = hl{ field_name = "s" } })
    fails("inner_hits inside a nested query without them", db:search{ table = "t", index = "ix", query = { nested = {
      path = "n", query = { nested = { path = "n.m", query = { match = { field_name = "n.m.u", text = "x" } }, inner_hits = {} } } } } })
    assert(nested({}))
    -- inner_hits deep inside a query (20 levels)
    local deep = { nested = { path = "n", query = { match = { field_name = "n.t", text = "x" } }, inner_hits = {} } }
    for _ = 1, 20 do deep = { bool = { should = { deep } } } end
    assert(db:search{ table = "t", index = "ix", query = deep })
    db:close()
  end)
end)

describe("highlight and inner_hits through otskit serve and otskit.client", function()
  it("come back as the embedded store gives them", function()
    local serve = require "support.serve"
    local srv = assert(serve.start{ workers = 1 })
    local ok, err = pcall(function()
      local cl = serve.client(srv)
      local db = fresh("single_word", {}, false)
      local schema = assert(db:describe_search_index{ table = "t", index = "ix" }).schema
      assert(cl:create_table{ name = "t", primary_key = { { "id", "INTEGER" } } })
      assert(cl:create_search_index{ table = "t", index = "ix", schema = { field_schemas = schema.field_schemas } })
      local r = helper.rng(8)
      for id = 1, 15 do
        local list = {}
        for j = 1, r.int(0, 3) do list[j] = { t = text(r, r.int(1, 5)), m = { { u = text(r, 2) } } } end
        local cols = { s = text(r, r.int(1, 12)), n = cjson.encode(list) }
        for _, s in ipairs({ cl, db }) do assert(s:put_row{ table = "t", primary_key = { { "id", id } }, columns = cols }) end
      end
      local req = { table = "t", index = "ix", limit = 20, query = { bool = { should = {
        { match = { field_name = "s", text = "hangzhou go" } },
        { nested = { path = "n", query = { match = { field_name = "n.t", text = "hz search" } },
          inner_hits = { sort = { { score_sort = { order = "DESC" } }, { doc_sort = {} } }, limit = 2,
            highlight = { encoder = "HTML", parameters = { { field_name = "n.t", pre_tag = "'", post_tag = "'" } } } } } } } } },
        highlight = { parameters = { { field_name = "s", fragment_size = 10, number_of_fragments = 2, fragments_order = "SCORE" } } } }
      local want = assert(db:search(req))
      local got = assert(cl:search(req))
      assert.is_true(#want.rows > 0)
      assert.same(want.search_hits, got.search_hits)
      db:close()
    end)
    srv.stop()
    assert(ok, err)
  end)
end)
