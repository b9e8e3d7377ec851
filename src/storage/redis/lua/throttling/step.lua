--[[
throttling/step.lua: one check of the batch with its throttling fields (ban, elastic). Inserted into
batch.lua by src/storage/redis/batch-script.ts before the algorithm fragments run; the same steps, in the
same order, as src/storage/throttling-step.ts (checked on random traces against it). Soft limits and
criticality shares need nothing here: the caller passes their admission ceiling as the check's limit/burst.

THROTTLING.FIELDS per-check ARGV values, right after the six of batch.lua (offsets from that block's end):
  +1 elastic max M (integer; 0 = not elastic)
  +2 elastic capacity N (integer)
  +3 index in KEYS of the rule's aggregate key (0 = none: not elastic, or its use is given in +4)
  +4 aggregate use read beforehand by the caller (Redis Cluster, the aggregate in another slot); -1 = read +3;
     -2 = ask: where borrowing would need the use, reject with flag 8 (vetoes the batch, writes nothing)
  +5 ban in ms (integer; 0 = no ban)
  +6 index in KEYS of the ban key (0 = none); built beside the counter key, so in its slot
  +7 the algorithm counting the aggregate ('' = the check's own)
THROTTLING.parse(keys, k0, argv, base) reads them from a request's slice of KEYS and ARGV; THROTTLING.touched(key, t) lists the keys a commit writes;
THROTTLING.decide(...) returns allowed, remaining if committed, remaining if not, reset ms, commit, flags.
flags: 1 = admitted by elastic borrowing, 2 = rejected by a live ban, 4 = this rejection started a ban,
8 = needs the aggregate's use (+4 = -2): batch.lua treats it as a veto even for a check that is not enforced.

Ban key: a string "<end ms>" in the caller's clock, SET PX <ban ms> (the TTL only cleans up; the stored end
decides). Aggregate key: the rule's state of its algorithm (+7; the engine counts a sliding_window_log rule's aggregate
with sliding_window_counter, constant memory however busy the rule), read at limit 2^32 - 1 (so it always
counts); use = 2^32 - 1 - remaining.
Cost: a ban adds one GET (and a SET when it starts); elastic adds, only for a client above its own limit, the
algorithm's reads at M and on the aggregate, and the aggregate's write on every admitted hit.
]]
local THROTTLING = (function()
  local AGGREGATE_LIMIT = 4294967295
  local function nothing() end

  -- keys, argv: the call's KEYS and ARGV; the request's KEYS start after keys[k0] (requests.lua decides
  -- several requests per call, each reading its slice); base is absolute in argv
  local function parse(keys, k0, argv, base)
    local t = {
      max = tonumber(argv[base + 1]),
      capacity = tonumber(argv[base + 2]),
      use = tonumber(argv[base + 4]),
      ban_ms = tonumber(argv[base + 5]),
    }
    local ai, bi = tonumber(argv[base + 3]), tonumber(argv[base + 6])
    if ai > 0 then t.agg_key = keys[k0 + ai] end
    if bi > 0 then t.ban_key = keys[k0 + bi] end
    if argv[base + 7] ~= '' then t.agg_algorithm = argv[base + 7] end
    return t
  end

  local function touched(key, t)
    if t.agg_key then return { key, t.agg_key } end
    return { key }
  end

  local function decide(algorithm, key, now, limit, window, burst, hits, enforce, t)
    if t.ban_key then
      local ends = tonumber(redis.call('GET', t.ban_key) or '')
      if ends and ends > now then return 0, 0, 0, ends - now, nothing, 2 end
    end
    local allowed, rc, rn, reset, commit = algorithm(key, now, limit, window, burst, hits)
    local flags = 0
    local elastic = t.max > 0
    local agg_read, agg_allowed, agg_commit = false, 0, nothing
    local function aggregate_use()
      agg_read = true
      if not t.agg_key then return t.use end
      local counter = algorithm
      if t.agg_algorithm then counter = ALGORITHMS[t.agg_algorithm] end
      local a, _, arn, _, c = counter(t.agg_key, now, AGGREGATE_LIMIT, window, burst, hits)
      agg_allowed, agg_commit = a, c
      return AGGREGATE_LIMIT - arn
    end
    if elastic and allowed ~= 1 then
      local m_allowed, _, _, m_reset, m_commit = algorithm(key, now, t.max, window, burst, hits)
      if m_allowed == 1 and t.use == -2 then return allowed, rc, rn, reset, nothing, 8 end
      if m_allowed == 1 and aggregate_use() + hits <= t.capacity then
        allowed, rc, reset, commit, flags = 1, 0, m_reset, m_commit, 1
      end
    end
    if allowed == 1 and hits > 0 and elastic then
      if not agg_read then aggregate_use() end
      if agg_allowed == 1 then
        local own = commit
        commit = function() own(); agg_commit() end
      end
    end
    if allowed ~= 1 and t.ban_key and enforce and hits > 0 then
      redis.call('SET', t.ban_key, string.format('%.0f', now + t.ban_ms), 'PX', string.format('%.0f', t.ban_ms))
      if reset < t.ban_ms then reset = t.ban_ms end
      flags = flags + 4
    end
    return allowed, rc, rn, reset, commit, flags
  end

  return { FIELDS = 7, parse = parse, touched = touched, decide = decide }
end)()
