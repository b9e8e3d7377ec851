-- capacity/sync.lua: what a replica needs to bring its copy of one resource's leases up to date
-- (src/capacity/redis-lease-cache.ts), in one step.
--
-- KEYS[1] the resource's leases: a hash client -> packed lease ("has wants subclients priority expiryMs refresh")
-- KEYS[2] its version: the number of changes ever written (commit.lua adds one per changed lease)
-- KEYS[3] its marker: "<epoch ms> <nonce>", when the state began; absent after a flush or on first use
-- KEYS[4] its change log: a list of the last changes, "<packed lease>\n<client>" or "-\n<client>" (dropped);
--         the last entry is change number `version`
-- ARGV[1] the marker to set when there is none (the state begins now: learning mode counts from it)
-- ARGV[2] the marker the replica's copy is of ("" when it has none)
-- ARGV[3] the version the replica's copy is at
-- ARGV[4] most changes worth sending: past it the whole hash is cheaper
--
-- Reply: { marker, version, 'd', change... } the changes after the replica's version, in order (none when it is
-- current: O(1) for a replica that wrote last), or { marker, version, 'f', client1, lease1, ... } the whole
-- state, when the copy is of another marker (a flush), too far behind, or the log no longer reaches back to it.
--
-- Atomic because a script runs alone: marker, version and changes (or hash) are one consistent snapshot. All
-- keys carry the resource's hash tag, so on Redis Cluster they are on one node.
local marker = redis.call('GET', KEYS[3])
if not marker then
  marker = ARGV[1]
  redis.call('SET', KEYS[3], marker)
end
local version = tonumber(redis.call('GET', KEYS[2]) or '0')
local known = tonumber(ARGV[3])
if marker == ARGV[2] and known ~= nil and known <= version and version - known <= tonumber(ARGV[4]) then
  local reply = { marker, tostring(version), 'd' }
  if known == version then return reply end
  -- The log holds the changes numbered first + 1 .. version.
  local first = version - redis.call('LLEN', KEYS[4])
  if known >= first then
    local changes = redis.call('LRANGE', KEYS[4], known - first, -1)
    for i = 1, #changes do reply[#reply + 1] = changes[i] end
    return reply
  end
end
local reply = { marker, tostring(version), 'f' }
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all do reply[#reply + 1] = all[i] end
return reply
