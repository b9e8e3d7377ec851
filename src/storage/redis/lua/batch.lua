--[[
batch.lua: decide one rate-limit request (every limit that applies to it) in one atomic step.

Assembled at start-up by src/storage/redis/batch-script.ts: the algorithm fragments
(lua/algorithms/<name>.lua, each assigning one function ALGORITHMS['<name>']) are inserted at the marker
line below, then the whole text is sent with EVALSHA (EVAL on NOSCRIPT), see BatchCommands.

KEYS[i]   the state key of check i (built by src/core/keys.ts; this script never builds key names), for
          i = 1 .. n, n = (#ARGV - 3) / FIELDS; KEYS after the n-th are the extra keys the checks' throttling
          fields name by index (ban and aggregate keys, lua/throttling/step.lua).
          On Redis Cluster all KEYS of one call share one hash slot (the store groups checks by slot).
ARGV[1]   now: epoch milliseconds (integer), the caller's clock; every decision uses it, never Redis time.
ARGV[2]   commit: 1 = commit the checks if the batch is admitted; 0 = evaluate only (dry run, changes nothing).
ARGV[3]   expires: Redis TIME in epoch milliseconds (integer) after which the caller no longer waits for this
          call (its give-up time converted to Redis's clock, less a guard); 0 = never. Past it, the script
          does nothing and replies { -1 }: a request the caller answered by its failure mode is never counted.
ARGV[4 + FIELDS * (i - 1) ..], for check i = 1 .. n (FIELDS = 6 + THROTTLING.FIELDS + ON_LIMIT.FIELDS = 18):
          +0 algorithm name (fixed_window | sliding_window_log | sliding_window_counter | token_bucket | leaky_bucket)
          +1 limit  L, requests per window (integer >= 0)
          +2 window W in milliseconds (integer > 0)
          +3 burst (token_bucket capacity / leaky_bucket tolerance; integer >= 1)
          +4 hits to add (integer >= 0; 0 checks without counting)
          +5 mode: the sum of 1 = enforce (this check can veto the batch; without it: shadow mode, reported,
             never vetoes), 2 = counted past its limit when the batch is admitted, 4 = counted whatever the
             outcome, even on a rejected batch (src/storage/counter-store.ts LimitCheck.countOver)
          +6 .. +12 throttling: ban and elastic, see lua/throttling/step.lua
          +13 .. +17 on_limit: max_delay, degrade_key, degrade_max, backoff_key, backoff_ttl (lua/on_limit.lua)

Reply: a flat array of integers, 1 + 7 * n long:
          [1]             admitted: 1 when every enforce check is allowed (and none has throttling flag 8), else 0
          (or { -1 } alone, 1 long: expired, see ARGV[3]; nothing was read or written)
          [2 + 3(i-1)]    allowed (1|0) of check i
          [3 + 3(i-1)]    remaining of check i: after the commit when it was committed, else the state as it was
          [4 + 3(i-1)]    reset in milliseconds of check i (see AlgorithmOutcome.resetMs)
          [1 + 3n + i]    throttling flags of check i (lua/throttling/step.lua)
          [2 + 4n + 3(i-1) .. 4 + 4n + 3(i-1)]  on_limit of check i: delay ms (admitted by a reserved slot
                          that far ahead), degraded (1|0), consecutive rejections counted now (0 = none)
Repeated keys: checks naming the same key count one after the other (a later one sees the hits of an
          earlier allowed one), as in the memory store; see below.
Errors:   a Redis error reply for a malformed call or an unknown algorithm (before anything is written).

Why one script and not MULTI/EXEC: the decision for all limits of a request must read one consistent state
and then write all-or-nothing (a rejected request consumes no quota from any limit). MULTI cannot branch on
what it reads, and WATCH would retry under contention; a script runs without interleaving, so concurrent
replicas sharing this Redis see each other's hits exactly. The expiry test reads TIME before any write, in
the same script, so "expired" and "counted" exclude each other: no check-then-act gap.
]]

local ALGORITHMS = {}

-- @ALGORITHM_FRAGMENTS@

local FIELDS = 6 + THROTTLING.FIELDS + ON_LIMIT.FIELDS
local HEADER = 3
local nkeys = (#ARGV - HEADER) / FIELDS -- the checks; KEYS past them are named by the throttling fields
if nkeys ~= math.floor(nkeys) or nkeys < 0 or nkeys > #KEYS then
  return redis.error_reply('ERR ratelimit batch: ' .. #ARGV .. ' arguments do not make whole checks for ' .. #KEYS .. ' keys')
end

local now = tonumber(ARGV[1])
local do_commit = ARGV[2] == '1'
local expires = tonumber(ARGV[3])
if expires > 0 then
  -- Redis < 5 refuses writes after TIME unless effects are replicated; from 5 on this is the default.
  if redis.replicate_commands then redis.replicate_commands() end
  local time = redis.call('TIME')
  if tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) > expires then return { -1 } end
end

-- A key named by several checks (one descriptor sent twice) counts them one after the other, as the memory
-- store does: an allowed check on such a key is written at once so the next check sees it, after saving
-- the key (DUMP + PTTL) so that a rejected batch or a dry run can put it back exactly.
local occurrences = {}
local throttling = {}
for i = 1, nkeys do
  throttling[i] = THROTTLING.parse(KEYS, ARGV, HEADER + FIELDS * (i - 1) + 6)
  for _, k in ipairs(THROTTLING.touched(KEYS[i], throttling[i])) do occurrences[k] = (occurrences[k] or 0) + 1 end
end
local saved = {}          -- saved[key] = { dump or false, pttl } for keys written before the decision
local saved_keys = {}

local reply = { 1 }
local commits = {}        -- commits[i]: the commit function of check i, when it is allowed and adds hits
local after_commit = {}   -- after_commit[i]: remaining of check i if it is committed
local written = {}        -- written[i]: check i was written before the decision (a repeated key)
local admitted = 1
local on_limit = {}       -- on_limit[i]: check i's parsed on_limit fields (lua/on_limit.lua)
local tail = {}           -- tail[i]: { delay, degraded } of check i

for i = 1, nkeys do
  local base = HEADER + FIELDS * (i - 1)
  local name = ARGV[base + 1]
  local algorithm = ALGORITHMS[name]
  if algorithm == nil then
    return redis.error_reply('ERR ratelimit batch: unknown algorithm ' .. tostring(name))
  end
  local key = KEYS[i]
  local limit = tonumber(ARGV[base + 2])
  local window = tonumber(ARGV[base + 3])
  local burst = tonumber(ARGV[base + 4])
  local hits = tonumber(ARGV[base + 5])
  local mode = tonumber(ARGV[base + 6])
  local enforce = mode % 2 == 1
  local count_over = mode >= 2
  local ol = ON_LIMIT.parse(ARGV, base + 6 + THROTTLING.FIELDS)
  on_limit[i] = ol

  -- on_limit delay (token_bucket / leaky_bucket): the algorithm reserves a slot up to max_delay ahead and
  -- says how far; throttling's elastic never meets it (window algorithms only), so one capture suffices.
  local run, delay = algorithm, 0
  if ol.max_delay > 0 then
    run = function(k, n, l, w, b, h)
      local a, rc, rn, r, c, d = algorithm(k, n, l, w, b, h, ol.max_delay)
      delay = d or 0
      return a, rc, rn, r, c
    end
  end
  local allowed, remaining_if_committed, remaining_if_not, reset_ms, commit, flags =
    THROTTLING.decide(run, key, now, limit, window, burst, hits, enforce, throttling[i])
  reply[1 + 3 * nkeys + i] = flags
  -- on_limit degrade (config refuses it beside ban or elastic): over the limit, admitted on its own counter.
  local write_key, degraded
  allowed, remaining_if_committed, commit, write_key, degraded =
    ON_LIMIT.degrade(ol, key, now, window, hits, allowed, remaining_if_committed, commit)
  tail[i] = { delay, degraded }

  if allowed ~= 1 and (enforce or flags == 8) then admitted = 0 end
  if (allowed == 1 or count_over) and hits > 0 then
    local keys = THROTTLING.touched(key, throttling[i])
    local repeated = false
    for _, k in ipairs(keys) do repeated = repeated or occurrences[k] > 1 end
    if repeated then
      if write_key ~= key then keys = { write_key } end -- degraded: the commit writes the degrade counter
      for _, k in ipairs(keys) do
        if saved[k] == nil then
          saved[k] = { redis.call('DUMP', k), redis.call('PTTL', k) }
          saved_keys[#saved_keys + 1] = k
        end
      end
      commit()
      written[i] = true
    else
      commits[i] = commit
    end
  end
  reply[2 + 3 * (i - 1)] = allowed
  reply[3 + 3 * (i - 1)] = remaining_if_not   -- replaced below for the checks that are committed
  reply[4 + 3 * (i - 1)] = reset_ms
  after_commit[i] = remaining_if_committed
  if allowed ~= 1 then after_commit[i] = 0 end -- counted past its limit (mode 2 or 4): nothing is left
end

reply[1] = admitted
if admitted == 1 and do_commit then
  for i = 1, nkeys do
    local commit = commits[i]
    if commit ~= nil then commit() end
    if commit ~= nil or written[i] then reply[3 + 3 * (i - 1)] = after_commit[i] end
  end
else
  for _, key in ipairs(saved_keys) do
    local dump, pttl = saved[key][1], saved[key][2]
    if dump then
      if pttl < 0 then pttl = 0 end
      redis.call('RESTORE', key, pttl, dump, 'REPLACE')
    else
      redis.call('DEL', key)
    end
  end
  -- Checks counted whatever the outcome (mode 4) count on a rejected batch, one after the other on the state
  -- as it was (the keys were just put back), as the memory store does (storage/memory/apply-batch.ts).
  if do_commit then
    for i = 1, nkeys do
      local base = HEADER + FIELDS * (i - 1)
      local h = tonumber(ARGV[base + 5])
      if tonumber(ARGV[base + 6]) >= 4 and h > 0 then
        local _, _, _, _, count = ALGORITHMS[ARGV[base + 1]](KEYS[i], now, tonumber(ARGV[base + 2]), tonumber(ARGV[base + 3]), tonumber(ARGV[base + 4]), h)
        count()
      end
    end
  end
end

local committed = admitted == 1 and do_commit
for i = 1, nkeys do
  local at = 1 + 4 * nkeys + 3 * (i - 1)
  reply[at + 1] = tail[i][1]
  reply[at + 2] = tail[i][2]
  reply[at + 3] = ON_LIMIT.backoff(on_limit[i], now, admitted, committed, reply[2 + 3 * (i - 1)],
    tonumber(ARGV[HEADER + FIELDS * (i - 1) + 6]) % 2 == 1, tonumber(ARGV[HEADER + FIELDS * (i - 1) + 5]))
end

return reply
