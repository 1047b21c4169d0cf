local hash = require "otskit.hash"

describe("otskit.hash", function()
  -- known answers: RFC 1321, xxhsum -H3, RFC 3720 (iSCSI) test vectors
  it("md5 matches RFC 1321 vectors", function()
    assert.equal("d41d8cd98f00b204e9800998ecf8427e", hash.md5("", true))
    assert.equal("900150983cd24fb0d6963f7d28e17f72", hash.md5("abc", true))
    assert.equal("57edf4a22be3c955ac49da2e2107b67a",
      hash.md5("12345678901234567890123456789012345678901234567890123456789012345678901234567890", true))
    assert.equal(16, #hash.md5("abc"))
  end)

  -- FIPS 180-4 (and FIPS 180-2 appendix A) SHA-1 examples; sha1sum agrees
  it("sha1 matches the FIPS 180 vectors", function()
    assert.equal("a9993e364706816aba3e25717850c26c9cd0d89d", hash.sha1("abc", true))
    assert.equal("84983e441c3bd26ebaae4aa1f95129e5e54670f1",
      hash.sha1("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", true))
    assert.equal("34aa973cd4c4daa4f61eeb2bdbad27316534016f", hash.sha1(string.rep("a", 1000000), true))
    assert.equal("da39a3ee5e6b4b0d3255bfef95601890afd80709", hash.sha1("", true))
    assert.equal(20, #hash.sha1("abc"))
    -- the raw digest is the hex one's bytes
    assert.equal(hash.sha1("abc", true), (hash.sha1("abc"):gsub(".", function(c) return ("%02x"):format(c:byte()) end)))
    assert.equal(hash.sha1("12345", true), hash.sha1(12345, true))
    -- binary input, NUL bytes included
    assert.equal("5ba93c9db0cff93f52b521d7420e43f6eda2784f", hash.sha1("\0", true))
  end)

  it("xxh3 matches xxhsum -H3", function()
    assert.equal("2d06800538d394c2", hash.xxh3("", true))
    assert.equal("78af5f94892f3950", hash.xxh3("abc", true))
  end)

  it("crc32c matches RFC 3720 vectors", function()
    assert.equal("e3069283", hash.crc32c("123456789", true))
    assert.equal("8a9136aa", hash.crc32c(string.rep("\0", 32), true))
    assert.equal("62a8ab43", hash.crc32c(string.rep("\255", 32), true))
    assert.equal("00000000", hash.crc32c("", true))
  end)

  it("crc32c equals a bitwise reference at every length (word and byte paths)", function()
    -- reference: bit-at-a-time CRC-32C in plain arithmetic, exact in doubles
    local function xor(a, b)
      local r, p = 0, 1
      for _ = 1, 32 do
        local x, y = a % 2, b % 2
        if x ~= y then r = r + p end
        a, b, p = (a - x) / 2, (b - y) / 2, p * 2
      end
      return r
    end
    local function ref(s)
      local c = 0xFFFFFFFF
      for i = 1, #s do
        c = xor(c, s:byte(i))
        for _ = 1, 8 do
          local lsb = c % 2
          c = (c - lsb) / 2
          if lsb == 1 then c = xor(c, 0x82F63B78) end
        end
      end
      return string.format("%08x", xor(c, 0xFFFFFFFF))
    end
    local s = ("The quick brown fox \0\255 jumps"):rep(2)
    for n = 0, #s do
      assert.equal(ref(s:sub(1, n)), hash.crc32c(s:sub(1, n), true))
    end
  end)

  it("hashes integers as their decimal text on both interpreters", function()
    assert.equal(hash.md5("12345", true), hash.md5(12345, true))
    assert.equal(hash.md5("-7", true), hash.md5(-7, true))
    assert.equal(hash.md5("3", true), hash.md5(3.0, true))
    assert.equal(hash.xxh3("9007199254740993", true), hash.xxh3("9007199254740993", true))
  end)

  it("hex_prefix is the start of the hex digest, for every length", function()
    for _, algo in ipairs { "md5", "sha1", "xxh3", "crc32c" } do
      local full = hash[algo]("order-000123", true)
      for len = 1, #full do
        assert.equal(full:sub(1, len), hash.hex_prefix(algo, "order-000123", len))
      end
    end
  end)

  it("raises on programming mistakes", function()
    assert.has_error(function() hash.hex_prefix("md5", "x", 0) end, "otskit.hash: len must be 1..32 for md5")
    assert.has_error(function() hash.hex_prefix("xxh3", "x", 17) end, "otskit.hash: len must be 1..16 for xxh3")
    assert.has_error(function() hash.hex_prefix("crc32c", "x", 9) end, "otskit.hash: len must be 1..8 for crc32c")
    assert.has_error(function() hash.hex_prefix("sha1", "x", 41) end, "otskit.hash: len must be 1..40 for sha1")
    assert.has_error(function() hash.hex_prefix("sha256", "x", 4) end)
    assert.has_error(function() hash.sha1({}) end)
    assert.has_error(function() hash.md5({}) end)
    assert.has_error(function() hash.md5(1.5) end)
    assert.has_error(function() hash.md5(2^63) end)
  end)
end)
