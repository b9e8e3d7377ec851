--[[
on_limit.lua: what batch.lua does at the limit for one check (the store side of a rule's `on_limit`), the
same steps in the same order as src/storage/on-limit-batch.ts. Inserted by batch-script.ts after the
algorithm fragments; defines the table ON_LIMIT.

Per-check ARGV fields (after the check's other fields; `base` is the index before the first of them):
  +1 max_delay  ms a bucket request may wait for its reserved slot (0 = no delay; the meter applies it)
  +2 degrade_key  key of the degraded-hits counter ('' = the rule does not degrade); built by vocab/keys.ts
  +3 degrade_max  most degraded hits per window (-1 = no bound, nothing counted)
  +4 backoff_key  key of the consecutive-rejection count ('' = no exponential backoff); vocab/keys.ts
  +5 backoff_ttl  ms the count is kept after a rejection
The on_limit keys are not in KEYS (KEYS[i] is check i's state): they carry the hash tag of KEYS[i], so they
share its Redis Cluster slot.

State:
  degrade_key  the fixed_window layout (ALGORITHMS['fixed_window'], limit degrade_max; the store names it with stateKey)
  backoff_key  "<expiry ms>:<count>"; at or past its expiry (by `now`, not by the TTL) the count is 0.
Atomic because it runs inside the batch script, with the decision it depends on.
]]
local ON_LIMIT = (function()
  local M = {}
  M.FIELDS = 5

  -- shared by every check without on_limit (the common case): no table per check
  local NONE = { max_delay = 0, degrade_max = -1, backoff_ttl = 0 }

  function M.parse(argv, base)
    local degrade_key, backoff_key = argv[base + 2], argv[base + 4]
    if degrade_key == '' and backoff_key == '' and argv[base + 1] == '0' then return NONE end
    return {
      max_delay = tonumber(argv[base + 1]),
      degrade_key = degrade_key ~= '' and degrade_key or nil,
      degrade_max = tonumber(argv[base + 3]),
      backoff_key = backoff_key ~= '' and backoff_key or nil,
      backoff_ttl = tonumber(argv[base + 5]),
    }
  end

  local function nothing_to_commit() end

  -- A check the algorithm rejected, admitted as degraded while its counter admits the hits.
  -- Returns allowed, remaining_if_committed, commit, the key commit writes, degraded (1|0).
  function M.degrade(ol, key, now, window, hits, allowed, if_committed, commit)
    if allowed == 1 or ol.degrade_key == nil or hits == 0 then return allowed, if_committed, commit, key, 0 end
    if ol.degrade_max < 0 then return 1, 0, nothing_to_commit, key, 1 end
    local ok, _, _, _, count_commit = ALGORITHMS['fixed_window'](ol.degrade_key, now, ol.degrade_max, window, 1, hits)
    if ok ~= 1 then return allowed, if_committed, commit, key, 0 end
    return 1, 0, count_commit, ol.degrade_key, 1
  end

  local function backoff_count(key, now)
    local raw = redis.call('GET', key)
    if raw then
      local expiry, count = string.match(raw, '^(%d+):(%d+)$')
      if expiry and tonumber(expiry) > now then return tonumber(count) end
    end
    return 0
  end

  -- After the decision: count a rejection, or reset the count on an admission that counts hits.
  -- Returns the count after this rejection, or 0 when none was counted.
  function M.backoff(ol, now, admitted, committed, allowed, enforce, hits)
    if ol.backoff_key == nil then return 0 end
    if admitted == 0 and allowed ~= 1 and enforce then
      local n = backoff_count(ol.backoff_key, now) + 1
      local ttl = math.max(1, ol.backoff_ttl)
      redis.call('SET', ol.backoff_key, string.format('%.0f:%.0f', now + ttl, n), 'PX', string.format('%.0f', ttl))
      return n
    end
    if committed and allowed == 1 and hits > 0 then redis.call('DEL', ol.backoff_key) end
    return 0
  end

  return M
end)()
