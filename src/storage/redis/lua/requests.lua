--[[
requests.lua: several rate-limit requests in one script call (cross-request batching), each decided by
decide_request, which is batch.lua's decision with KEYS and ARGV as parameters (batch-script.ts wraps it).
The requests run one after the other inside one script, so each is atomic and all-or-nothing on its own,
exactly as when it had a call of its own; a later request sees the hits of an earlier admitted one. One call
instead of one per request divides Redis's per-call cost and the client's per-command work by the batch size.

KEYS      the KEYS of request 1 (as batch.lua reads them), then those of request 2, ... On Redis Cluster the
          store batches only requests of one hash slot.
ARGV[1]   n, the number of requests (>= 1)
ARGV[2j], ARGV[2j + 1]  for j = 1 .. n: how many KEYS and how many ARGV request j has
ARGV[2n + 2 ..]  the ARGV of request 1 (batch.lua's layout), then those of request 2, ...
Reply:    an array of n elements: element j is batch.lua's reply for request j, or an error reply for that
          request alone (a malformed request, an unknown algorithm, or a Redis error raised while deciding it;
          what that request wrote before the error stays, as for a script of its own).
]]
local n = tonumber(ARGV[1])
if n == nil or n < 1 or 1 + 2 * n > #ARGV then
  return redis.error_reply('ERR ratelimit requests: bad header for ' .. #ARGV .. ' arguments')
end
local replies = {}
local k, a = 0, 1 + 2 * n
for j = 1, n do
  local nk, na = tonumber(ARGV[2 * j]), tonumber(ARGV[2 * j + 1])
  if nk == nil or na == nil or k + nk > #KEYS or a + na > #ARGV then
    return redis.error_reply('ERR ratelimit requests: request ' .. j .. ' overruns KEYS or ARGV')
  end
  local keys, argv = {}, {}
  for i = 1, nk do keys[i] = KEYS[k + i] end
  for i = 1, na do argv[i] = ARGV[a + i] end
  k, a = k + nk, a + na
  local ok, reply = pcall(decide_request, keys, argv)
  if ok then
    replies[j] = reply
  elseif type(reply) == 'table' and reply.err then
    replies[j] = reply
  else
    replies[j] = redis.error_reply(tostring(reply))
  end
end
return replies
