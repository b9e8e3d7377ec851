--[[
requests.lua: several rate-limit requests in one script call (cross-request batching), each decided by
batch.lua's decide_request on its slice of KEYS and ARGV (nothing is copied per request). The requests run
one after the other inside one script, so each is atomic and all-or-nothing on its own, exactly as when it
had a call of its own; a later request sees the hits of an earlier admitted one. One call instead of one per
request divides Redis's per-call cost and the client's per-command work by the batch size.

KEYS      the KEYS of request 1 (as batch.lua reads them), then those of request 2, ... On Redis Cluster the
          store batches only requests of one hash slot.
ARGV[1]   n, the number of requests (>= 1)
ARGV[2j], ARGV[2j + 1]  for j = 1 .. n: how many KEYS and how many ARGV request j has
ARGV[2n + 2 ..]  the ARGV of request 1 (batch.lua's layout), then those of request 2, ...
Reply:    an array of n elements: element j is batch.lua's reply for request j, or an error reply for that
          request alone (a malformed request, an unknown algorithm, or a Redis error raised while deciding it;
          what that request wrote before the error stays, as for a script of its own).

Redis's clock (a request's expiry, batch.lua ARGV[3]) is read with TIME when the first request with an
expiry is reached and again every TIME_EVERY requests after it: a request is compared with a reading at most
that many requests old (a few hundred µs of script time), which the expiry's guard (redis-health.ts) covers.
]]
local TIME_EVERY = 16
local n = tonumber(ARGV[1])
if n == nil or n < 1 or 1 + 2 * n > #ARGV then
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

local replies = {}
local nkeys, nargv = #KEYS, #ARGV
local k, a = 0, 1 + 2 * n
for j = 1, n do
  local nk, na = tonumber(ARGV[2 * j]), tonumber(ARGV[2 * j + 1])
  if nk == nil or na == nil or k + nk > nkeys or a + na > nargv then
    return redis.error_reply('ERR ratelimit requests: request ' .. j .. ' overruns KEYS or ARGV')
  end
  local ok, reply = pcall(decide_request, KEYS, k, nk, ARGV, a, na, redis_ms)
  if ok then
    replies[j] = reply
  elseif type(reply) == 'table' and reply.err then
    replies[j] = reply
  else
    replies[j] = redis.error_reply(tostring(reply))
  end
  k, a = k + nk, a + na
end
return replies
