-- capacity/exchange.lua: one round trip between a replica's copy of a resource's leases and the state in Redis
-- (src/capacity/redis-lease-cache.ts): write the replica's decisions if nobody wrote since its copy, else send
-- what the copy lacks so it can decide again.
--
-- KEYS[1] the leases: a hash client -> packed lease ("has wants subclients priority expiryMs refresh")
-- KEYS[2] the version: the number of changes ever written (one per changed lease)
-- KEYS[3] the marker: "<epoch ms> <nonce>", when the state began; absent after a flush or on first use
-- KEYS[4] the change log: a list of the last changes, "<packed lease>\n<client>" or "-\n<client>" (dropped);
--         its last entry is change number `version`
-- KEYS[5] the expiries: a sorted set client -> lease expiry (epoch ms)
-- ARGV[1] the marker to set when there is none and this call writes a lease (the state begins now: learning
--         mode counts from it); a call that only reads or drops creates nothing
-- ARGV[2] the marker the replica's copy is of ("" when it has none)
-- ARGV[3] the version the copy is at
-- ARGV[4] how many changes the log keeps (and most changes worth sending: past it the whole hash is cheaper)
-- ARGV[5] now (epoch ms): up to 64 leases that expired before it are dropped (and logged) by a write
-- ARGV[6] "1": write whatever the state (releases that kept conflicting: dropping never over-grants)
-- ARGV[7] the writes, one binary string ("" when the call only reads), each in struct format '<Hc0Hc0d':
--         client, packed lease ("" drops the client's lease), expiry ms
-- ARGV[8] how long (ms) the marker and version outlive the resource's last lease
--
-- Reply: { 'w', version, marker } written, the new version and the marker ('' when there is still no state):
-- the copy with these writes is the state at it, expired leases aside. Otherwise nothing is written and the reply is { marker, version, 'd', change... }, the changes
-- after the copy's version in order (none when it is current), or { marker, version, 'f', client1, lease1, ... },
-- the whole state, when the copy is of another marker (a flush), too far behind, or the log no longer reaches it;
-- { '', version, 'f' } when there is no state (never used, dropped with its last lease, or lost).
--
-- Every key expires: the hash, expiries and log a second after the last lease, the marker and version
-- ARGV[8] ms later. A resource without leases thus leaves nothing behind.
--
-- Atomic because a script runs alone: the check and the write cannot interleave with another replica's, so
-- every grant is computed on the state it is written into and the grants stay within the capacity exactly as
-- on one process. O(log n) per write in the leases of the resource, O(1) to find a copy current. All keys
-- carry the resource's hash tag: one Cluster node.
local marker = redis.call('GET', KEYS[3])
-- No state: a copy of "no state" (marker '') is current, and the marker is set by the first write of a lease.
local fresh = not marker
if fresh then marker = ARGV[1] end
local version = tonumber(redis.call('GET', KEYS[2]) or '0')
local keepLog = tonumber(ARGV[4])
local grace = tonumber(ARGV[8])

local frame = ARGV[7]
local current = (marker == ARGV[2] or (fresh and ARGV[2] == '')) and tostring(version) == ARGV[3]
if #frame > 0 and (ARGV[6] == '1' or current) then
  local now = tonumber(ARGV[5])
  local changes = {}
  local gone = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', '(' .. ARGV[5], 'LIMIT', 0, 64)
  for i = 1, #gone do
    redis.call('HDEL', KEYS[1], gone[i])
    changes[#changes + 1] = '-\n' .. gone[i]
  end
  if #gone > 0 then redis.call('ZREM', KEYS[5], unpack(gone)) end
  local at = 1
  while at <= #frame do
    local client, lease, expiry
    client, lease, expiry, at = struct.unpack('<Hc0Hc0d', frame, at)
    if lease == '' then
      if redis.call('HDEL', KEYS[1], client) == 1 then
        redis.call('ZREM', KEYS[5], client)
        changes[#changes + 1] = '-\n' .. client
      end
    else
      redis.call('HSET', KEYS[1], client, lease)
      redis.call('ZADD', KEYS[5], expiry, client)
      changes[#changes + 1] = lease .. '\n' .. client
    end
  end
  if #changes > 0 then
    if fresh then redis.call('SET', KEYS[3], marker) end
    version = redis.call('INCRBY', KEYS[2], #changes)
    for i = 1, #changes, 100 do redis.call('RPUSH', KEYS[4], unpack(changes, i, math.min(i + 99, #changes))) end
    redis.call('LTRIM', KEYS[4], -keepLog, -1)
    -- Hash, expiries and log live until a second after the last lease expires: an idle resource costs nothing
    -- but its version and marker. (With no lease left Redis has deleted the hash and the set already.)
    local last = redis.call('ZRANGE', KEYS[5], -1, -1, 'WITHSCORES')
    local keep = 1000
    if last[2] ~= nil then keep = math.max(1000, math.ceil(tonumber(last[2]) - now) + 1000) end
    redis.call('PEXPIRE', KEYS[1], keep)
    redis.call('PEXPIRE', KEYS[5], keep)
    redis.call('PEXPIRE', KEYS[4], keep)
    redis.call('PEXPIRE', KEYS[3], keep + grace)
    redis.call('PEXPIRE', KEYS[2], keep + grace)
  elseif fresh then
    return { 'w', tostring(version), '' }
  end
  return { 'w', tostring(version), marker }
end
if fresh then return { '', tostring(version), 'f' } end

local known = tonumber(ARGV[3])
if marker == ARGV[2] and known ~= nil and known <= version and version - known <= keepLog then
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
