--- gateway.blobs -- /blobs: table "blobs", primary key (id STRING); the
-- value compressed into a frame (otskit.blob), split over columns
-- body_0 .. body_N-1, and the manifest in column body, written last (the
-- commit point), through the worker's otskit.client.
local blob = require "otskit.blob"
local wire = require "otskit.wire"
local gwdb = require "gateway.db"

local blobs = {}

local CHUNK = 64 * 1024

--- put(id, value) -> { bytes, stored, chunks, codec } | nil, msg, code
function blobs.put(id, value)
  local db = gwdb.client()
  local frame = assert(blob.pack(value))
  local cur, msg, code = db:get_row { table = "blobs", primary_key = { id } }
  if not cur then return nil, msg, code end
  local prev = cur.row and cur.row.columns.body or nil   -- the manifest it replaces
  local parts = blob.split(frame, { name = "body", key = id, chunk_size = CHUNK })
  local plan, pmsg, pcode = blob.plan(parts, { previous = prev })
  if not plan then return nil, pmsg, pcode end
  for _, req in ipairs(plan.requests) do
    for _, row in ipairs(req.rows) do
      local put = {}
      for _, c in ipairs(row.columns) do put[c[1]] = wire.binary(c[2]) end
      local ok, m, c = db:update_row { table = "blobs", primary_key = { id }, update = { PUT = put } }
      if not ok then return nil, m, c end
    end
  end
  local stale = {}
  for _, c in ipairs(plan.cleanup) do stale[#stale + 1] = c.column end
  if #stale > 0 then
    -- best effort: the manifest no longer names them
    db:update_row { table = "blobs", primary_key = { id }, update = { DELETE_ALL = stale } }
  end
  return { bytes = #value, stored = #frame, chunks = parts.count, codec = blob.info(frame).codec }
end

--- get(id) -> value | nil, msg, code ("NotFound", or the blob codes)
function blobs.get(id)
  local res, msg, code = gwdb.client():get_row { table = "blobs", primary_key = { id } }
  if not res then return nil, msg, code end
  if not res.row then return nil, "no blob " .. id, "NotFound" end
  local manifest, chunks = blob.from_columns(res.row.columns, "body")
  if not manifest then return nil, chunks, "NotFound" end
  local frame, jmsg, jcode = blob.join(manifest, chunks)
  if not frame then return nil, jmsg, jcode end
  return blob.unpack(frame)
end

return blobs
