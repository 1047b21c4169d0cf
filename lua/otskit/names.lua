--- otskit.names -- the service's rule for table and column names, in one
-- place: 1..255 bytes of [A-Za-z0-9_], not starting with a digit. The
-- store enforces it on every name it is given; the pattern constructors
-- check the names of their tables (with the suffixes they append) against
-- it before any request. No dependency: loads without the store.
local names = {}

--- The longest name, in bytes.
names.MAX_BYTES = 255

--- What a name is, as a Lua pattern (ASCII only, locale-independent).
names.PATTERN = "^[A-Za-z_][A-Za-z0-9_]*$"

--- names.valid(s) -> boolean: s is a string that is a valid name.
function names.valid(s)
  return type(s) == "string" and #s >= 1 and #s <= names.MAX_BYTES and s:find(names.PATTERN) ~= nil
end

--- The rule as text, for messages.
names.RULE = ("1..%d bytes of [A-Za-z0-9_], not starting with a digit"):format(names.MAX_BYTES)

return names
