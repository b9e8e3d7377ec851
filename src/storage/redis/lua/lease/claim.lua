--[[
lease/claim.lua: claim up to `want` units of one limit for a replica's lease, in one atomic step that counts
them in the shared state (so leased units are already spent when the replica admits from them).

Assembled by src/storage/redis/lease-scripts.ts: the shared libraries and the fragments of the algorithms
that support leases (lua/algorithms/<name>.lua, used as they are) are inserted at the marker line below.
The TypeScript twin is src/lease/arithmetic.ts (claimUnits); test/integration/storage/lease-conformance.test.ts
checks the two against each other on random traces.

KEYS[1]   the state key of the limit (as the batch script uses it)
ARGV[1]   now (epoch ms, the caller's clock)
ARGV[2]   algorithm: fixed_window | sliding_window_counter | token_bucket
ARGV[3]   limit L      ARGV[4] window W ms      ARGV[5] burst
ARGV[6]   want: units to claim (the lease size, or more for a request of more hits)
ARGV[7]   need: hits of the request that asked (>= 1), for the retry time when fewer are granted

The claim takes `want` units when the algorithm admits `want` hits now; otherwise it takes what remains
(the algorithm's remaining-if-not-committed, which it always admits) if that covers `need`, else nothing:
a request that cannot be admitted takes no units away from the other replicas.

Reply: { granted, remaining before the claim, reset ms, again ms }; reset is the algorithm's reset after the
claim when granted >= need, else the time until `need` hits could be admitted; again is 0 when all `want`
units were granted, else the time until `want` hits could be admitted (when a full claim is worth trying).
]]

local ALGORITHMS = {}

-- @LEASE_FRAGMENTS@

local key = KEYS[1]
local now = tonumber(ARGV[1])
local algorithm = ALGORITHMS[ARGV[2]]
if algorithm == nil then
  return redis.error_reply('ERR ratelimit lease: no lease for algorithm ' .. tostring(ARGV[2]))
end
local limit, window, burst = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local want, need = tonumber(ARGV[6]), tonumber(ARGV[7])

local allowed, _, before, reset, commit = algorithm(key, now, limit, window, burst, want)
local granted = 0
if allowed == 1 then
  granted = want
elseif before >= need then
  local allowed_rest, _, _, reset_rest, commit_rest = algorithm(key, now, limit, window, burst, before)
  if allowed_rest == 1 then
    granted, reset, commit = before, reset_rest, commit_rest
  end
end
if granted > 0 then commit() end
if granted < need then
  local _, _, _, reset_need = algorithm(key, now, limit, window, burst, need)
  reset = reset_need
end
local again = 0
if granted < want then
  local _, _, _, reset_want = algorithm(key, now, limit, window, burst, want)
  again = reset_want
end
return { granted, before, reset, again }
