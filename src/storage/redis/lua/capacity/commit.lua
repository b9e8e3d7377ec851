-- capacity/commit.lua: records one decision (or a release) on one resource, if nobody wrote since it was read
-- (src/capacity/redis-capacity.ts).
--
-- KEYS[1] the resource's leases (hash client -> packed lease), KEYS[2] its version, KEYS[3] its marker (read.lua)
-- ARGV[1] the state the decision was made on, "marker:version" as read.lua answered; "" to write unconditionally
--         (a release: dropping a lease never over-grants)
-- ARGV[2] the client
-- ARGV[3] its packed lease; "" to drop the client's lease
-- ARGV[4] milliseconds the leases hash is kept after this write (the longest lease length), so an idle resource
--         does not hold Redis memory forever
-- ARGV[5..] clients whose leases had expired when the decision was made: dropped
--
-- Reply: 1 written; 0 conflict (another replica wrote since the read, or the state was flushed): nothing
-- written, the caller reads and decides again.
--
-- Atomic because a script runs alone: the check of the version and the write cannot interleave with another
-- replica's, so every grant is computed on the state it is written into; the sum of grants stays within the
-- capacity exactly as on one process. The keys share the resource's hash tag (one Cluster node).
local marker = redis.call('GET', KEYS[3])
if ARGV[1] ~= '' then
  local version = redis.call('GET', KEYS[2]) or '0'
  if not marker or ARGV[1] ~= marker .. ':' .. version then return 0 end
end
for i = 5, #ARGV do redis.call('HDEL', KEYS[1], ARGV[i]) end
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], ARGV[2])
else
  redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
redis.call('INCR', KEYS[2])
return 1
