--[[
requests.lua: several rate-limit requests in one script call (cross-request batching), each decided by
batch.lua's decide_request on its slice of KEYS and its own packed fields (nothing is copied per request).
The requests run one after the other inside one script, so each is atomic and all-or-nothing on its own,
exactly as when it had a call of its own; a later request sees the hits of an earlier admitted one. One call
instead of one per request divides Redis's per-call cost and the client's per-command work by the batch size.

KEYS      the KEYS of request 1 (as batch.lua reads them), then those of request 2, ... On Redis Cluster the
          store batches only requests of one hash slot.
ARGV[1]   the header: for j = 1 .. n, how many KEYS request j has, as little-endian doubles (n = #ARGV - 1)
ARGV[1 + j]  the packed fields of request j (batch.lua's layout)
Reply:    an array of n elements: element j is batch.lua's reply for request j packed as little-endian doubles
          in one string (one bulk string to write and to parse instead of 1 + 7 * checks integers), or an
          error reply for that request alone (a malformed request, an unknown algorithm, or a Redis error
          raised while deciding it; what that request wrote before the error stays, as for a script of its own).

Redis's clock (a request's expiry, batch.lua ARGV[3]) is read with TIME when the first request with an
expiry is reached and again every TIME_EVERY requests after it: a request is compared with a reading at most
that many requests old (a few hundred µs of script time), which the expiry's guard (redis-health.ts) covers.
]]
local TIME_EVERY = 16
local n = #ARGV - 1
if n < 1 or #ARGV[1] ~= 8 * n then
  return redis.error_reply('ERR ratelimit requests: bad header for ' .. #ARGV .. ' arguments')
end
-- Redis < 5 refuses writes after TIME unless effects are replicated; from 5 on this is the default.
if redis.replicate_commands then redis.replicate_commands() end
local time_ms, time_age = 0, TIME_EVERY
local function redis_ms()
  if time_age >= TIME_EVERY then
    local t = redis.call('TIME')
    time_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    time_age = 0
  end
  time_age = time_age + 1
  return time_ms
end

-- A reply as little-endian doubles: one struct.pack for up to 64 values (the common case: a request of up to 9
-- checks), else 64 values per struct.pack (a bounded stack for any length) joined.
local pack, formats = struct.pack, {}
local function pack_values(reply, at, last)
  local format = formats[last - at + 1]
  if format == nil then
    format = '<' .. string.rep('d', last - at + 1)
    formats[last - at + 1] = format
  end
  return pack(format, unpack(reply, at, last))
end
local function packed(reply)
  local m = #reply
  if m <= 64 then return pack_values(reply, 1, m) end
  local parts = {}
  for at = 1, m, 64 do parts[#parts + 1] = pack_values(reply, at, math.min(m, at + 63)) end
  return table.concat(parts)
end

local replies = {}
local nkeys = #KEYS
local k = 0
for j = 1, n do
  local nk = struct.unpack('<d', ARGV[1], 8 * j - 7)
  if k + nk > nkeys then
    return redis.error_reply('ERR ratelimit requests: request ' .. j .. ' overruns KEYS')
  end
  local ok, reply = pcall(decide_request, KEYS, k, nk, ARGV[1 + j], redis_ms)
  if ok and reply.err == nil then
    replies[j] = packed(reply)
  elseif ok or (type(reply) == 'table' and reply.err) then
    replies[j] = reply
  else
    replies[j] = redis.error_reply(tostring(reply))
  end
  k = k + nk
end
return replies
