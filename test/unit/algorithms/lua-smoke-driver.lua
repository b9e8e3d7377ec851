--[[
Test driver for lua-smoke.test.ts, appended after `local ALGORITHMS = {}` and one algorithm fragment.
Runs the fragment once for KEYS[1] and commits like the batch script does for a single check (allowed and
hits > 0). After a commit it reports the key's TTL and then sets it to KEPT ms (2^40): the test runs on fake
time, so a real-time expiry must not drop state the fake clock still needs; and a commit that keeps the
key's expiry (fixed_window counting in the window it stored) then reports about KEPT.
ARGV: name, now, limit, window, burst, hits.
Reply: { allowed, remaining_if_committed, remaining_if_not_committed, reset_ms, ttl_ms or -3 when not committed }
]]
local name = ARGV[1]
local now, limit, window = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local burst, hits = tonumber(ARGV[5]), tonumber(ARGV[6])
local allowed, if_committed, if_not, reset, commit = ALGORITHMS[name](KEYS[1], now, limit, window, burst, hits)
local ttl = -3
if allowed == 1 and hits > 0 then
  commit()
  ttl = redis.call('PTTL', KEYS[1])
  redis.call('PEXPIRE', KEYS[1], 1099511627776)
end
return { allowed, if_committed, if_not, reset, ttl }
