--[[
batch.lua: decide one rate-limit request (every limit that applies to it) in one atomic step.

Assembled at start-up by src/storage/redis/batch-script.ts: the algorithm fragments
(lua/algorithms/<name>.lua, each assigning one function ALGORITHMS['<name>']) are inserted at the marker
line below, then the whole text is registered once with ioredis defineCommand (EVALSHA, EVAL on NOSCRIPT).

KEYS[i]   the state key of check i (built by src/core/keys.ts; this script never builds key names).
          On Redis Cluster all KEYS of one call share one hash slot (the store groups checks by slot).
ARGV[1]   now: epoch milliseconds (integer), the caller's clock; scripts never read Redis time.
ARGV[2]   commit: 1 = commit the checks if the batch is admitted; 0 = evaluate only (dry run, changes nothing).
ARGV[3 + 6 * (i - 1) .. 8 + 6 * (i - 1)], for check i = 1 .. #KEYS:
          +0 algorithm name (fixed_window | sliding_window_log | sliding_window_counter | token_bucket | leaky_bucket)
          +1 limit  L, requests per window (integer >= 0)
          +2 window W in milliseconds (integer > 0)
          +3 burst (token_bucket capacity / leaky_bucket tolerance; integer >= 1)
          +4 hits to add (integer >= 0; 0 checks without counting)
          +5 enforce: 1 = this check can veto the batch, 0 = shadow mode (reported, never vetoes)

Reply: a flat array of integers, 1 + 3 * #KEYS long:
          [1]             admitted: 1 when every enforce check is allowed, else 0
          [2 + 3(i-1)]    allowed (1|0) of check i
          [3 + 3(i-1)]    remaining of check i: after the commit when it was committed, else the state as it was
          [4 + 3(i-1)]    reset in milliseconds of check i (see AlgorithmOutcome.resetMs)
Errors:   a Redis error reply for a malformed call or an unknown algorithm (before anything is written).

Why one script and not MULTI/EXEC: the decision for all limits of a request must read one consistent state
and then write all-or-nothing (a rejected request consumes no quota from any limit). MULTI cannot branch on
what it reads, and WATCH would retry under contention; a script runs without interleaving, so concurrent
replicas sharing this Redis see each other's hits exactly.
]]

local ALGORITHMS = {}

-- @ALGORITHM_FRAGMENTS@

local FIELDS = 6
local nkeys = #KEYS
if #ARGV ~= 2 + FIELDS * nkeys then
  return redis.error_reply('ERR ratelimit batch: expected ' .. (2 + FIELDS * nkeys) .. ' arguments, got ' .. #ARGV)
end

local now = tonumber(ARGV[1])
local do_commit = ARGV[2] == '1'

local reply = { 1 }
local commits = {}        -- commits[i]: the commit function of check i, when it is allowed and adds hits
local after_commit = {}   -- after_commit[i]: remaining of check i if it is committed
local admitted = 1

for i = 1, nkeys do
  local base = 2 + FIELDS * (i - 1)
  local name = ARGV[base + 1]
  local algorithm = ALGORITHMS[name]
  if algorithm == nil then
    return redis.error_reply('ERR ratelimit batch: unknown algorithm ' .. tostring(name))
  end
  local limit = tonumber(ARGV[base + 2])
  local window = tonumber(ARGV[base + 3])
  local burst = tonumber(ARGV[base + 4])
  local hits = tonumber(ARGV[base + 5])
  local enforce = ARGV[base + 6] == '1'

  local allowed, remaining_if_committed, remaining_if_not, reset_ms, commit =
    algorithm(KEYS[i], now, limit, window, burst, hits)

  if allowed ~= 1 and enforce then admitted = 0 end
  if allowed == 1 and hits > 0 then commits[i] = commit end
  reply[2 + 3 * (i - 1)] = allowed
  -- provisional; replaced below for the checks that are committed
  reply[3 + 3 * (i - 1)] = remaining_if_not
  reply[4 + 3 * (i - 1)] = reset_ms
  after_commit[i] = remaining_if_committed
end

reply[1] = admitted
if admitted == 1 and do_commit then
  for i = 1, nkeys do
    local commit = commits[i]
    if commit ~= nil then
      commit()
      reply[3 + 3 * (i - 1)] = after_commit[i]
    end
  end
end

return reply
