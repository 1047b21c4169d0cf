--- examples/openresty/setup.lua -- creates the gateway's tables on the
-- service before nginx starts (existing tables are kept), through
-- otskit.client. The service comes from the environment: OTSKIT_ENDPOINT,
-- OTSKIT_INSTANCE, OTSKIT_ACCESS_KEY_ID, OTSKIT_ACCESS_KEY_SECRET.
-- On Tablestore a new table takes a few seconds before it serves. It
-- prints what it did: each table created, or found and kept.
local client = require "otskit.client"
local events = require "gateway.events"

local function env(name)
  local v = os.getenv(name)
  if v == nil or v == "" then
    io.stderr:write("setup.lua: set ", name, " (and OTSKIT_ENDPOINT, OTSKIT_INSTANCE, OTSKIT_ACCESS_KEY_ID, OTSKIT_ACCESS_KEY_SECRET)\n")
    os.exit(2)
  end
  return v
end

local db = client.new { endpoint = env("OTSKIT_ENDPOINT"), instance = env("OTSKIT_INSTANCE"),
  access_key_id = env("OTSKIT_ACCESS_KEY_ID"), access_key_secret = env("OTSKIT_ACCESS_KEY_SECRET"),
  retry = { max_attempts = 5, deadline = 30 } }

-- says what it did, one line a table, on stdout
local function check(name, ok, msg, code)
  if ok then
    print(("setup.lua: created table %s on %s"):format(name, os.getenv("OTSKIT_ENDPOINT")))
  elseif code == "OTSObjectAlreadyExist" then
    print(("setup.lua: table %s exists on %s: kept as it is"):format(name, os.getenv("OTSKIT_ENDPOINT")))
  else
    io.stderr:write("setup.lua: table ", name, ": ", tostring(msg), " (", tostring(code), ")\n")
    os.exit(1)
  end
end

for _, t in ipairs {
  { name = "series", primary_key = { { "b", "INTEGER" }, { "id", "STRING" }, { "ts", "INTEGER" } } },
  { name = "blobs", primary_key = { { "id", "STRING" } } },
  { name = "counters", primary_key = { { "id", "STRING" } } },
} do
  check(t.name, db:create_table(t))
end
-- the event stream of /events: otskit.patterns.timeseries's own table
check(events.TABLE, events.create(db))
db:close()
