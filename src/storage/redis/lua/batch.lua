--[[
batch.lua: decide one rate-limit request (every limit that applies to it) in one atomic step.

Assembled at start-up by src/storage/redis/batch-script.ts: the algorithm fragments
(lua/algorithms/<name>.lua, each assigning one function ALGORITHMS['<name>']) are inserted at the marker
line below, then the whole text is sent with EVALSHA (EVAL on NOSCRIPT), see BatchCommands.

One request is its KEYS and its fields; lua/requests.lua puts several requests in one call and calls
decide_request(K, k0, nk, fields, redis_ms) for each: the request's KEYS[i] is K[k0 + i] (i <= nk), nothing
is copied per request.

KEYS[i]   the state key of check i (built by src/vocab/keys.ts and storage/redis/state-key.ts; this script never
          builds key names), for i = 1 .. n; KEYS after the n-th are the extra keys the checks' throttling and
          on_limit fields name by index (ban, aggregate, degrade and backoff keys).
          On Redis Cluster all KEYS of one call share one hash slot (the store groups checks by slot).
fields    one string of little-endian doubles (every value an integer below 2^53), read with struct.unpack
          (no text parsing): a header of 3, then FIELDS = 6 + THROTTLING.FIELDS + ON_LIMIT.FIELDS = 18 per
          check, so n = (#fields / 8 - 3) / FIELDS.
  header  +1 now: epoch milliseconds, the caller's clock; every decision uses it, never Redis time.
          +2 commit: 1 = commit the checks if the batch is admitted; 0 = evaluate only (dry run, changes nothing).
          +3 expires: Redis TIME in epoch milliseconds after which the caller no longer waits for this
             request (its give-up time converted to Redis's clock, less a guard); 0 = never. Past it, the script
             does nothing and replies { -1 }: a request the caller answered by its failure mode is never counted.
             Redis's clock is redis_ms(), read by requests.lua (TIME once per 16 requests of a call).
  check i +1 algorithm: its index in ALGORITHM_NAMES (written by batch-script.ts from algorithm-ids.ts)
          +2 limit  L, requests per window (integer >= 0)
          +3 window W in milliseconds (integer > 0)
          +4 burst (token_bucket capacity / leaky_bucket tolerance; integer >= 1); formats/calendar_window.lua:
             the window's start, epoch ms
          +5 hits to add (integer >= 0; 0 checks without counting)
          +6 mode: the sum of 1 = enforce (this check can veto the batch; without it: shadow mode, reported,
             never vetoes), 2 = counted past its limit when the batch is admitted, 4 = counted whatever the
             outcome, even on a rejected batch (src/storage/counter-store.ts LimitCheck.countOver)
          +7 .. +13 throttling: ban and elastic, see lua/throttling/step.lua (+13: an algorithm index, 0 = none)
          +14 .. +18 on_limit: max_delay, degrade key index, degrade_max, backoff key index, backoff_ttl
             (lua/on_limit.lua; a key index 0 = none)

Reply: a flat array of integers, 1 + 7 * n long (requests.lua sends it packed as doubles):
          [1]             admitted: 1 when every enforce check is allowed (and none has throttling flag 8), else 0
          (or { -1 } alone, 1 long: expired, see header +3; nothing was read or written)
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

Two paths, one decision: a plain request (no throttling, no on_limit, no key named twice: the common case)
is decided by decide_plain with no per-check tables; any other by decide_general. Both follow
counter-store.ts's batch contract, checked on random traces by test/integration/storage/conformance.test.ts.
]]

local ALGORITHMS = {}

-- @ALGORITHM_FRAGMENTS@

local FIELDS = 6 + THROTTLING.FIELDS + ON_LIMIT.FIELDS
local HEADER = 3
local floor = math.floor
local unpack_fields = struct.unpack
local HEADER_FORMAT = '<ddd'
local CHECK_FORMAT = '<' .. string.rep('d', FIELDS)
local CHECK_BYTES = 8 * FIELDS

-- The reply for n checks decided without throttling flags or on_limit: their part of it is all zeros.
local function zero_tail(reply, n)
  for j = 2 + 3 * n, 1 + 7 * n do reply[j] = 0 end
end

local function unknown_algorithm(id)
  return redis.error_reply('ERR ratelimit batch: unknown algorithm ' .. tostring(ALGORITHM_NAMES[id] or id))
end

-- A request whose checks use neither throttling nor on_limit and name distinct keys: nothing is written before
-- the decision, so each check's commit, computed on the state as it is, is also its count_every_hit count.
-- Returns nil, having read and written nothing, for any other request.
local function decide_plain(K, k0, fields, n, now, do_commit)
  local reply = { 1 }
  local commits, after, always = {}, {}, {}
  local admitted = 1
  for i = 1, n do
    local id, limit, window, burst, hits, mode, elastic_max, _, _, _, ban_ms, _, _, max_delay, degrade, _, backoff =
      unpack_fields(CHECK_FORMAT, fields, 1 + 8 * HEADER + CHECK_BYTES * (i - 1))
    if elastic_max ~= 0 or ban_ms ~= 0 or max_delay ~= 0 or degrade ~= 0 or backoff ~= 0 then return nil end
    local key = K[k0 + i]
    for j = 1, i - 1 do
      if K[k0 + j] == key then return nil end
    end
    local algorithm = ALGORITHMS[ALGORITHM_NAMES[id]]
    if algorithm == nil then return unknown_algorithm(id) end
    local allowed, if_committed, if_not, reset, commit = algorithm(key, now, limit, window, burst, hits)
    if allowed ~= 1 and mode % 2 == 1 then admitted = 0 end
    if (allowed == 1 or mode >= 2) and hits > 0 then
      commits[i] = commit
      always[i] = mode >= 4
      if allowed == 1 then after[i] = if_committed else after[i] = 0 end
    end
    local at = 3 * (i - 1)
    reply[at + 2] = allowed
    reply[at + 3] = if_not
    reply[at + 4] = reset
  end
  zero_tail(reply, n)
  reply[1] = admitted
  if not do_commit then return reply end
  for i = 1, n do
    local commit = commits[i]
    if commit ~= nil then
      if admitted == 1 then
        commit()
        reply[3 * i] = after[i]
      elseif always[i] then
        commit() -- counted whatever the outcome (count_every_hit), on the state as it was
      end
    end
  end
  return reply
end

-- The fields of a request that is not plain as decide_general reads them: an array in the order of the fields
-- (header, then FIELDS per check), with the algorithms as names and the on_limit keys as keys ('' = none).
local function fields_array(K, k0, fields, n)
  local A = { unpack_fields(HEADER_FORMAT, fields) }
  for i = 1, n do
    local f = { unpack_fields(CHECK_FORMAT, fields, 1 + 8 * HEADER + CHECK_BYTES * (i - 1)) }
    local base = HEADER + FIELDS * (i - 1)
    for j = 1, FIELDS do A[base + j] = f[j] end
    A[base + 1] = ALGORITHM_NAMES[f[1]] or ('#' .. tostring(f[1]))
    A[base + 6 + 7] = f[6 + 7] > 0 and ALGORITHM_NAMES[f[6 + 7]] or ''
    A[base + 6 + THROTTLING.FIELDS + 2] = f[6 + THROTTLING.FIELDS + 2] > 0 and K[k0 + f[6 + THROTTLING.FIELDS + 2]] or ''
    A[base + 6 + THROTTLING.FIELDS + 4] = f[6 + THROTTLING.FIELDS + 4] > 0 and K[k0 + f[6 + THROTTLING.FIELDS + 4]] or ''
  end
  return A
end

-- Any request: throttling, on_limit, keys named by several checks.
local function decide_general(K, k0, A, a0, n, now, do_commit)
  -- A key named by several checks (one descriptor sent twice) counts them one after the other, as the memory
  -- store does: an allowed check on such a key is written at once so the next check sees it, after saving
  -- the key (DUMP + PTTL) so that a rejected batch or a dry run can put it back exactly.
  local occurrences = {}
  local throttling = {}
  for i = 1, n do
    throttling[i] = THROTTLING.parse(K, k0, A, a0 + HEADER + FIELDS * (i - 1) + 6)
    for _, k in ipairs(THROTTLING.touched(K[k0 + i], throttling[i])) do occurrences[k] = (occurrences[k] or 0) + 1 end
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

  for i = 1, n do
    local base = a0 + HEADER + FIELDS * (i - 1)
    local name = A[base + 1]
    local algorithm = ALGORITHMS[name]
    if algorithm == nil then
      return redis.error_reply('ERR ratelimit batch: unknown algorithm ' .. tostring(name))
    end
    local key = K[k0 + i]
    local limit = tonumber(A[base + 2])
    local window = tonumber(A[base + 3])
    local burst = tonumber(A[base + 4])
    local hits = tonumber(A[base + 5])
    local mode = tonumber(A[base + 6])
    local enforce = mode % 2 == 1
    local count_over = mode >= 2
    local ol = ON_LIMIT.parse(A, base + 6 + THROTTLING.FIELDS)
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
    reply[1 + 3 * n + i] = flags
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
    for i = 1, n do
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
      for i = 1, n do
        local base = a0 + HEADER + FIELDS * (i - 1)
        local h = tonumber(A[base + 5])
        if tonumber(A[base + 6]) >= 4 and h > 0 then
          local _, _, _, _, count = ALGORITHMS[A[base + 1]](K[k0 + i], now, tonumber(A[base + 2]), tonumber(A[base + 3]), tonumber(A[base + 4]), h)
          count()
        end
      end
    end
  end

  local committed = admitted == 1 and do_commit
  for i = 1, n do
    local at = 1 + 4 * n + 3 * (i - 1)
    reply[at + 1] = tail[i][1]
    reply[at + 2] = tail[i][2]
    reply[at + 3] = ON_LIMIT.backoff(on_limit[i], now, admitted, committed, reply[2 + 3 * (i - 1)],
      tonumber(A[a0 + HEADER + FIELDS * (i - 1) + 6]) % 2 == 1, tonumber(A[a0 + HEADER + FIELDS * (i - 1) + 5]))
  end

  return reply
end

-- One request; redis_ms() is Redis's clock in epoch ms (requests.lua).
local function decide_request(K, k0, nk, fields, redis_ms)
  local n = (#fields / 8 - HEADER) / FIELDS -- the checks; KEYS past them are named by their fields
  if n ~= floor(n) or n < 0 or n > nk then
    return redis.error_reply('ERR ratelimit batch: ' .. #fields .. ' bytes of fields do not make whole checks for ' .. nk .. ' keys')
  end
  local now, commit, expires = unpack_fields(HEADER_FORMAT, fields)
  if expires > 0 and redis_ms() > expires then return { -1 } end
  local reply = decide_plain(K, k0, fields, n, now, commit == 1)
  if reply ~= nil then return reply end
  return decide_general(K, k0, fields_array(K, k0, fields, n), 0, n, now, commit == 1)
end
