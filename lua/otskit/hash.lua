--- otskit.hash -- digests: md5 and sha1 (OpenSSL), xxh3 (libxxhash), crc32c.
-- Inputs are byte strings; integers are hashed as their decimal text (the
-- same bytes on Lua 5.4 and LuaJIT).
local core = require "otskit.core"
local C = core.hash

local hash = {}

--- hash.md5(v [, hex]) -> 16-byte digest, or 32 lowercase hex digits.
function hash.md5(v, hex) return C.digest("md5", v, hex) end

--- hash.sha1(v [, hex]) -> 20-byte SHA-1 digest (FIPS 180-4), or 40
-- lowercase hex digits (the form sha1sum prints). Computed by OpenSSL's
-- EVP interface; raises "otskit.hash: sha1 failed (OpenSSL)" if OpenSSL
-- refuses (no provider offers SHA-1).
function hash.sha1(v, hex) return C.digest("sha1", v, hex) end

--- hash.xxh3(v [, hex]) -> XXH3-64 as 8 big-endian bytes, or 16 hex digits
-- (the form xxhsum -H3 prints).
function hash.xxh3(v, hex) return C.digest("xxh3", v, hex) end

--- hash.crc32c(v [, hex]) -> CRC-32C as 4 big-endian bytes, or 8 hex digits.
function hash.crc32c(v, hex) return C.digest("crc32c", v, hex) end

--- hash.hex_prefix(algo, v, len) -> the first len hex digits of algo(v)
-- (algo "md5", "sha1", "xxh3" or "crc32c"; len 1..32, 40, 16, 8).
hash.hex_prefix = C.hex_prefix

return hash
