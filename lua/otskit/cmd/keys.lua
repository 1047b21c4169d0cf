--- otskit keys -- the key designs of the best practices on the seed's
-- example data: spliced keys, hash prefixes, buckets, packed tuples.
local key = require "otskit.key"

local demo = {}

local function hex(s)
  return (s:gsub(".", function(c) return ("%02x"):format(c:byte()) end))
end

local function show_tuple(t)
  local parts = {}
  for i, v in ipairs(t) do
    local k = key.kind(v)
    if k == "bytes" then parts[i] = ("%q"):format(v):gsub("\\\n", "\\n")
    elseif k == "text" then parts[i] = ("text(%q)"):format(tostring(v))
    elseif k == "nil" then parts[i] = "null"
    elseif k == "double" then
      local x = type(v) == "table" and v[1] or v
      if x ~= x then parts[i] = "nan"
      elseif x == 0 and 1 / x < 0 then parts[i] = "-0.0"
      else parts[i] = ("%.17g"):format(x):gsub("^(%-?%d+)$", "%1.0") end
    else parts[i] = tostring(v) end
  end
  return "(" .. table.concat(parts, ", ") .. ")"
end

-- Sorts a copy of the array of {key, label} pairs by key bytes.
local function sorted_by_key(pairs_)
  local t = {}
  for i, p in ipairs(pairs_) do t[i] = p end
  table.sort(t, function(a, b) return key.compare(a[1], b[1]) < 0 end)
  return t
end

local function heading(s)
  print()
  print(s)
  print(("-"):rep(#s))
end

local purchases = { { 16, "a100", 66661 }, { 54, "a100", 6777 }, { 54, "a1001", 6777 },
                    { 167, "a101", 283408 } }

local function spliced()
  heading("1. Spliced partition key: (CardID, SellerID, Amount) joined with ','")
  local sp = key.splice { sep = ",", { "CardID", "int", width = 6 },
                          { "SellerID", "string", charset = "alnum" },
                          { "Amount", "int", width = 6 } }
  local keys = assert(sp:encode_many(purchases))
  local rows = {}
  for i, t in ipairs(purchases) do
    print(("  %-22s -> %s"):format(show_tuple(t), keys[i]))
    rows[i] = { keys[i], i }
  end
  local order = {}
  for i, r in ipairs(sorted_by_key(rows)) do order[i] = r[2] end
  print(("  keys in byte order come from tuples %s: the tuple order %s")
    :format(table.concat(order, " "), table.concat(order, " ") == "1 2 3 4" and "(same)" or "(DIFFERENT)"))
  print(("  decode(%q) -> %s"):format(keys[3], show_tuple(sp:decode(keys[3]))))

  print()
  print("  Every int field is zero-padded to its width. Unpadded, 6777 sorts after 66661:")
  local a, b = "000054,a100,6777", "000054,a100,66661"
  print(("    %q %s %q although 6777 < 66661")
    :format(a, key.compare(a, b) > 0 and ">" or "<", b))
  print(("    padded: %q < %q"):format(sp:encode { 54, "a100", 6777 }, sp:encode { 54, "a100", 66661 }))

  print()
  print("  The connector ':' is refused:")
  local ok, err = pcall(key.splice, { sep = ":", { "CardID", "int", width = 6 },
                                       { "SellerID", "string", charset = "alnum" } })
  assert(not ok)
  print("    " .. err)
  local k1, k2 = "000054:a100:006777", "000054:a1001:006777"
  print(("    why: ':' is 0x3A, above '1' (0x31), so %q sorts %s %q,"):format(
    k1, key.compare(k1, k2) > 0 and "after" or "before", k2))
  print("    while the tuple (54, 'a100', 6777) comes before (54, 'a1001', 6777).")

  print()
  print("  Values that do not fit come back as nil, message, code:")
  for _, t in ipairs { { 1234567, "a1", 1 }, { 16, "a-100", 1 }, { 16.5, "a1", 1 } } do
    local _, msg, code = sp:encode(t)
    print(("    %-22s -> %s: %s"):format(show_tuple(t), code, msg))
  end
end

local function prefixed()
  heading("2. Hash-prefixed order numbers: md5, 4 hex digits")
  local hp = key.hash_prefix { algo = "md5", len = 4 }
  local ids, rows = {}, {}
  for n = 1, 8 do ids[n] = ("%010d"):format(90000000 + n) end
  local keys = hp:encode_many(ids)
  for i, id in ipairs(ids) do
    print(("  order %s -> %s"):format(id, keys[i]))
    rows[i] = { keys[i], i }
  end
  local order = {}
  for i, r in ipairs(sorted_by_key(rows)) do order[i] = r[2] end
  print("  byte order of the keys visits orders " .. table.concat(order, " ") ..
        ": sequential writes scatter over partitions")
  print(("  point read of order %s: recompute the key -> %s; decode -> %s")
    :format(ids[5], hp:encode(ids[5]), hp:decode(keys[5])))
  local bad = "0000" .. ids[5]
  print(("  decode(%q) -> %s"):format(bad, select(3, hp:decode(bad))))
end

local function bucketed()
  heading("3. Buckets: ts mod 16 as the first key column, time second")
  local b = key.buckets { n = 16, by = "mod" }
  local ts0 = 1700000000
  for i = 0, 5 do
    local ts = ts0 + i * 7
    print(("  ts %d -> bucket %2d (label %q)"):format(ts, b:of(ts), b:label(b:of(ts))))
  end
  print(("  a time-range read queries all %d buckets in parallel: %s ... %s, then merges")
    :format(#b:all(), b:all()[1], b:all()[16]))
  local h = key.buckets { n = 8, by = "hash" }
  print(("  by = \"hash\" for string ids: device-a -> %d, device-b -> %d, device-c -> %d")
    :format(h:of("device-a"), h:of("device-b"), h:of("device-c")))
  print(("  newest first: reverse_ts(%d, 9999999999) -> %s, reverse_ts(%d, 9999999999) -> %s")
    :format(ts0, tostring(key.reverse_ts(ts0, 9999999999)), ts0 + 60,
            tostring(key.reverse_ts(ts0 + 60, 9999999999))))
end

local function packed()
  heading("4. Packed tuples (FoundationDB tuple layer) for BINARY key columns")
  local tuples = {
    { 54, "a1001", 6777 }, { 16, "a100", 66661 }, { 54, "a100", 6777 }, { 167, "a101", 283408 },
    { -5, "x" }, { 54, "a100" }, { 54, key.text("a100") }, { 54, "a100\0z" },
    { key.null }, { 1.5 }, { -0.0 }, { key.double(0) }, { 0.0 / 0.0 }, { -1 / 0 }, { true }, { false },
  }
  local rows = {}
  for i, t in ipairs(tuples) do rows[i] = { key.pack(t), t } end
  print("  sorted by their packed bytes:")
  for _, r in ipairs(sorted_by_key(rows)) do
    print(("    %-26s %s"):format(show_tuple(r[2]), hex(r[1])))
  end
  print("  element by element: null < bytes < text < integers < doubles < false < true,")
  print("  then by value (a prefix first; -inf < -0.0 < 0.0 < nan); unpack gives the tuple back:")
  local u = key.unpack(key.pack(tuples[7]))
  print(("    unpack(pack((54, text(\"a100\")))) -> %s"):format(show_tuple(u)))
  local d1, d2 = key.pack_desc { 1700000000 }, key.pack_desc { 1700000060 }
  print(("  pack_desc reverses the order: (1700000000) -> %s, (1700000060) -> %s (%s)")
    :format(hex(d1), hex(d2), key.compare(d2, d1) < 0 and "newer sorts first" or "WRONG"))
  local start, stop = key.prefix_range(key.pack { 54 })
  print(("  every tuple starting with (54): prefix_range -> [%s, %s)"):format(hex(start), hex(stop)))
  print(("  check_pk{{'CardID', 16}, {'Seller', 'a100'}} -> %s"):format(
    tostring(key.check_pk { { "CardID", 16 }, { "Seller", "a100" } })))
  print(("  check_pk{{'Card-ID', 16}} -> %s"):format(select(2, key.check_pk { { "Card-ID", 16 } })))
end

function demo.run()
  print("otskit keys: the Tablestore key designs on the best practices' example data")
  spliced()
  prefixed()
  bucketed()
  packed()
  return 0
end

return demo
