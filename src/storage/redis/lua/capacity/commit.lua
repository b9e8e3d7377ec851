-- capacity/commit.lua: records one decision (or a release) on one resource, if nobody wrote since the replica
-- synchronised (src/capacity/redis-lease-cache.ts), and logs every change for the other replicas (sync.lua).
--
-- KEYS[1] the leases (hash), KEYS[2] the version, KEYS[3] the marker, KEYS[4] the change log (sync.lua),
-- KEYS[5] the expiries: a sorted set client -> lease expiry (epoch ms)
-- ARGV[1] the marker the decision was made on; "" to write unconditionally (a release that kept conflicting:
--         dropping a lease never over-grants)
-- ARGV[2] the version the decision was made on
-- ARGV[3] the client
-- ARGV[4] its packed lease; "" to drop the client's lease
-- ARGV[5] the lease's expiry (epoch ms)
-- ARGV[6] now (epoch ms): up to 64 leases that expired before it are dropped (and logged), so Redis sheds
--         expired leases at O(log n) each without any walk
-- ARGV[7] how many changes the log keeps
--
-- Reply: the new version (≥ 1; every replica's copy at the version it synchronised plus this change is now
-- the state at this version, expired leases aside); 0 on a conflict (another replica wrote since, or the state
-- was flushed): nothing written, the caller synchronises and decides again.
--
-- Atomic because a script runs alone: the check and the write cannot interleave with another replica's, so
-- every grant is computed on the state it is written into and the grants stay within the capacity exactly as
-- on one process. Cost O(log n) in the leases of the resource. One hash tag: one Cluster node.
local marker = redis.call('GET', KEYS[3])
if ARGV[1] ~= '' then
  if marker ~= ARGV[1] or (redis.call('GET', KEYS[2]) or '0') ~= ARGV[2] then return 0 end
end
local now = tonumber(ARGV[6])
local changes = {}
local gone = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', '(' .. ARGV[6], 'LIMIT', 0, 64)
for i = 1, #gone do
  redis.call('HDEL', KEYS[1], gone[i])
  changes[#changes + 1] = '-\n' .. gone[i]
end
if #gone > 0 then redis.call('ZREM', KEYS[5], unpack(gone)) end
if ARGV[4] == '' then
  if redis.call('HDEL', KEYS[1], ARGV[3]) == 1 then
    redis.call('ZREM', KEYS[5], ARGV[3])
    changes[#changes + 1] = '-\n' .. ARGV[3]
  end
else
  redis.call('HSET', KEYS[1], ARGV[3], ARGV[4])
  redis.call('ZADD', KEYS[5], ARGV[5], ARGV[3])
  changes[#changes + 1] = ARGV[4] .. '\n' .. ARGV[3]
end
if #changes == 0 then return tonumber(redis.call('GET', KEYS[2]) or '0') end
local version = redis.call('INCRBY', KEYS[2], #changes)
redis.call('RPUSH', KEYS[4], unpack(changes))
redis.call('LTRIM', KEYS[4], -tonumber(ARGV[7]), -1)
-- The hash, expiries and log live until a second after the last lease expires: an idle resource costs nothing
-- but its version and marker. (With no lease left Redis has deleted the hash and the set already.)
local last = redis.call('ZRANGE', KEYS[5], -1, -1, 'WITHSCORES')
local keep = 1000
if last[2] ~= nil then keep = math.max(1000, math.ceil(tonumber(last[2]) - now) + 1000) end
redis.call('PEXPIRE', KEYS[1], keep)
redis.call('PEXPIRE', KEYS[5], keep)
redis.call('PEXPIRE', KEYS[4], keep)
return version
