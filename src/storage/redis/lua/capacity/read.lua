-- capacity/read.lua: one resource's capacity state, read in one step (src/capacity/redis-capacity.ts).
--
-- KEYS[1] the resource's leases: a hash client -> packed lease ("has wants subclients priority expiryMs")
-- KEYS[2] its version: a counter bumped by every write (commit.lua)
-- KEYS[3] its marker: the time (epoch ms) the state began; absent after a flush or on first use
-- ARGV[1] now (epoch ms): written to the marker when it is absent (state began now: learning mode counts from it)
--
-- Reply: { marker, version, client1, lease1, client2, lease2, ... }. The caller decides in TypeScript and
-- writes with commit.lua naming "marker:version" as the state it decided on.
--
-- Atomic because a script runs alone: the marker, the version and the leases are one consistent snapshot.
-- All three keys carry the resource's hash tag, so on Redis Cluster they are on one node.
local marker = redis.call('GET', KEYS[3])
if not marker then
  marker = ARGV[1]
  redis.call('SET', KEYS[3], marker)
end
local version = redis.call('GET', KEYS[2]) or '0'
local reply = { marker, version }
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all do reply[#reply + 1] = all[i] end
return reply
