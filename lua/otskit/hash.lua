--- otskit.hash -- digests for keys: md5 (OpenSSL), xxh3 (libxxhash), crc32c.
-- Inputs are byte strings; integers are hashed as their decimal text (the
-- same bytes on Lua 5.4 and LuaJIT).
local core = require "otskit.core"
local C = core.hash

local hash = {}

--- hash.md5(v [, hex]) -> 16-byte digest, or 32 lowercase hex digits.
function hash.md5(v, hex) return C.digest("md5", v, hex) end

--- hash.xxh3(v [, hex]) -> XXH3-64 as 8 big-endian bytes, or 16 hex digits
-- (the form xxhsum -H3 prints).
function hash.xxh3(v, hex) return C.digest("xxh3", v, hex) end

--- hash.crc32c(v [, hex]) -> CRC-32C as 4 big-endian bytes, or 8 hex digits.
function hash.crc32c(v, hex) return C.digest("crc32c", v, hex) end

--- hash.hex_prefix(algo, v, len) -> the first len hex digits of algo(v).
hash.hex_prefix = C.hex_prefix

return hash
