--- otskit.errors -- every error code otskit produces or understands: the
-- HTTP status the service answers it with, the service's message, and
-- whether the official SDKs retry it. The server (status and message of
-- every error it sends), the store (its messages and injectable faults),
-- the client and otskit.retry (classification) all read this one table.
--
-- Retry classes, as the official SDKs' default policies apply them:
--   "throttle"    retried for any operation, writes included (the
--                 request was refused, nothing applied), after a longer
--                 base delay
--   "retry"       retried for any operation (refused, nothing applied)
--   "idempotent"  the outcome is unknown (a write may have been applied):
--                 retried for reads, and for writes only when the caller
--                 says a repeat is harmless (idempotent or conditional)
--   "never"       never retried (the request itself is wrong, or a retry
--                 cannot change the answer)
-- OTSQuotaExhausted is "throttle" only with the message "Too frequent
-- table operations." (a table-operation rate limit); any other quota
-- (the number of tables, ...) is "never".
--
-- Sides: "service" codes are answered by Tablestore (and by `otskit
-- serve`) with `status`; "client" codes are made on the calling side
-- (a lost connection, a response that does not verify, the retry budget)
-- and have no status.
local errors = {}

local function bad(msg) error("otskit.errors: " .. msg, 3) end

-- code -> { side, status, message, class [, exact] [, varies] [, timeout]
-- [, documented] }
--   message     the service's message (a template where `%s` stands for
--               what varies); for client codes, otskit's own
--   varies      the service sends one message per cause: `message` is
--               one of them (callers pass the one that applies)
--   exact       the service always sends exactly this message, and SDK
--               users match it: `otskit serve` answers it verbatim
--   timeout     a timeout (a retry after it costs the budget more)
--   documented  false: the service's documentation gives no status or
--               message for this code; `otskit serve` uses the ones here
local S = "service"
errors.CODES = {
  -- refused as wrong: never retried
  OTSParameterInvalid = { side = S, status = 400, class = "never", varies = true,
    message = "Missing header: %s" },
  OTSInvalidPK = { side = S, status = 400, class = "never", varies = true,
    message = "Validate PK name fail. Input: %s, Meta: %s." },
  OTSOutOfColumnCountLimit = { side = S, status = 400, class = "never",
    message = "The number of columns in one row exceeded the limit." },
  OTSOutOfRowSizeLimit = { side = S, status = 400, class = "never",
    message = "The total data size of columns in one row exceeded the limit." },
  OTSAuthFailed = { side = S, status = 403, class = "never", varies = true,
    message = "Signature mismatch." },
  OTSConditionCheckFail = { side = S, status = 403, class = "never", exact = true,
    message = "Condition check failed." },
  OTSTooFrequentReservedThroughputAdjustment = { side = S, status = 403, class = "never",
    message = "Capacity unit adjustment is too frequent." },
  OTSNoPermissionAccess = { side = S, status = 403, class = "never",
    message = "You have no permission to access the requested resource, please contact the resource owner" },
  OTSForbiddenUpdateCapacityUnit = { side = S, status = 400, class = "never",
    message = "Your instance is forbidden to update capacity unit." },
  OTSFlowControl = { side = S, status = 429, class = "never",
    message = "The requests have been throttled." },
  OTSObjectNotExist = { side = S, status = 404, class = "never", exact = true,
    message = "Requested table does not exist." },
  OTSObjectAlreadyExist = { side = S, status = 409, class = "never", exact = true,
    message = "Requested table already exists." },
  OTSMethodNotAllowed = { side = S, status = 405, class = "never",
    message = "Only POST method for requests is supported." },
  OTSRequestTimeout = { side = S, status = 408, class = "never",
    message = "Request timeout." },
  OTSRequestBodyTooLarge = { side = S, status = 413, class = "never",
    message = "The size of POST data is too large." },
  -- local transactions (otskit.store.localtxn), parallel scans and SQL:
  -- the service documents these codes (none is retried by the SDKs) but
  -- not their statuses
  OTSDataOutOfRange = { side = S, status = 400, class = "never", documented = false,
    message = "The primary key is out of the partition-key range of the transaction." },
  OTSSessionNotExist = { side = S, status = 404, class = "never", exact = true, documented = false,
    message = "Session not exist or may be timeout." },
  OTSOutOfTransactionDataSizeLimit = { side = S, status = 400, class = "never", documented = false,
    message = "The data size of the transaction exceeds the limit." },
  OTSSessionBusy = { side = S, status = 400, class = "never", documented = false,
    message = "The last request on the session is not complete." },
  OTSSessionExpired = { side = S, status = 400, class = "never", documented = false,
    message = "The session has expired." },
  OTSUnsupportOperation = { side = S, status = 400, class = "never", documented = false,
    message = "Operation not supported" },
  -- refused, nothing applied: retried for any operation
  OTSRowOperationConflict = { side = S, status = 409, class = "retry",
    message = "Data is being modified by the other request." },
  OTSTableNotReady = { side = S, status = 404, class = "retry",
    message = "The table is not ready." },
  OTSPartitionUnavailable = { side = S, status = 503, class = "retry",
    message = "The partition is not available." },
  -- throttled, nothing applied: retried for any operation, later
  OTSServerBusy = { side = S, status = 503, class = "throttle",
    message = "Server is busy." },
  OTSNotEnoughCapacityUnit = { side = S, status = 403, class = "throttle",
    message = "Remaining capacity unit is not enough." },
  OTSCapacityUnitExhausted = { side = S, status = 403, class = "throttle",
    message = "Capacity unit is not enough." },
  OTSQuotaExhausted = { side = S, status = 403, class = "throttle",
    message = "Too frequent table operations.", throttle_message = "Too frequent table operations" },
  OTSOperationThrottled = { side = S, status = 503, class = "throttle",
    message = "Table operation throttled.", documented = false },
  OTSStorageServerBusy = { side = S, status = 503, class = "throttle",
    message = "Storage server is busy.", documented = false },
  -- outcome unknown: retried for reads, for writes only when idempotent
  OTSTimeout = { side = S, status = 503, class = "idempotent", timeout = true,
    message = "Operation timeout." },
  OTSInternalServerError = { side = S, status = 500, class = "idempotent",
    message = "Internal server error." },
  OTSServerUnavailable = { side = S, status = 503, class = "idempotent",
    message = "Server is not available." },

  -- made by otskit on the calling side (no HTTP status)
  NetworkError = { side = "client", class = "idempotent",
    message = "The connection failed before an answer came back." },
  RequestTimeout = { side = "client", class = "idempotent", timeout = true,
    message = "No answer came back within the timeout." },
  OTSResponseCorrupted = { side = "client", class = "idempotent",
    message = "response body does not match its x-ots-contentmd5" },
  OTSResponseInvalid = { side = "client", class = "never",
    message = "the response cannot be decoded" },
  OTSResponseSignatureMismatch = { side = "client", class = "never",
    message = "response signature does not verify" },
  RetryBudgetExhausted = { side = "client", class = "never",
    message = "retry budget exhausted" },
  -- A write whose outcome is unknown and could not be settled (it may or
  -- may not have been applied): retrying it blindly could apply it twice,
  -- so it is never retried; read the row to find out.
  OTSOutcomeUnknown = { side = "client", class = "never",
    message = "The write may or may not have been applied; read the row to find out." },
}

--- Transport failures that carry no code, by message (OpenResty cosocket
-- messages, libcurl's kinds): "retry" when the request was never sent,
-- "idempotent" when it may have been.
errors.TRANSPORT = {
  ["connection refused"] = { class = "retry" },
  ["no route to host"] = { class = "retry" },
  ["host unreachable"] = { class = "retry" },
  ["network unreachable"] = { class = "retry" },
  timeout = { class = "idempotent", timeout = true },
  closed = { class = "idempotent" },
  ["connection reset by peer"] = { class = "idempotent" },
  ["broken pipe"] = { class = "idempotent" },
}

for code, e in pairs(errors.CODES) do
  e.code = code
  if e.documented == nil then e.documented = true end
end

--- errors.get(code) -> the code's entry { code, side, status, message,
-- class, ... } or nil for a code otskit does not know.
function errors.get(code)
  return errors.CODES[code]
end

--- errors.status(code) -> the HTTP status the service answers the code
-- with, or nil (a client code, or an unknown one).
function errors.status(code)
  local e = errors.CODES[code]
  return e and e.status
end

--- errors.message(code) -> the code's message (the service's, or a
-- template with %s), or nil for an unknown code.
function errors.message(code)
  local e = errors.CODES[code]
  return e and e.message
end

--- errors.class(code [, message]) -> "throttle" | "retry" | "idempotent"
-- | "never" for a known code or transport message; nil for anything
-- else. message matters for OTSQuotaExhausted only ("throttle" when it is
-- the table-operation rate limit, else "never").
function errors.class(code, message)
  local e = errors.CODES[code] or errors.TRANSPORT[code]
  if not e then return nil end
  if e.throttle_message and not (type(message) == "string"
      and message:find(e.throttle_message, 1, true)) then
    return "never"
  end
  return e.class
end

--- errors.is_timeout(code) -> whether the code or transport message is a
-- timeout.
function errors.is_timeout(code)
  local e = errors.CODES[code] or errors.TRANSPORT[code]
  return e ~= nil and e.timeout == true
end

--- errors.fail(code [, message]) -> nil, message, code: the failure
-- convention of otskit, with the code's own message when none is given.
-- A code not in the table raises (a programming mistake).
function errors.fail(code, message)
  local e = errors.CODES[code]
  if not e then bad("unknown error code " .. tostring(code)) end
  if message == nil then message = e.message end
  return nil, message, code
end

--- errors.codes([side]) -> the known codes, sorted (only those of `side`,
-- "service" or "client", when given).
function errors.codes(side)
  local out = {}
  for code, e in pairs(errors.CODES) do
    if side == nil or e.side == side then out[#out + 1] = code end
  end
  table.sort(out)
  return out
end

return errors
