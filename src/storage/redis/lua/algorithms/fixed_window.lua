--[[
fixed_window: epoch-aligned windows (start = now - now mod W), allowed iff count + hits <= L.
The decision is lib/window_count.lua (the arithmetic of src/algorithms/fixed-window.ts).

State under `key`: a string "<window start ms>:<count>", expiring when the window ends (SET PX).
A state of an earlier window counts as empty: the stored start decides, not the TTL, so a late expiry cannot
carry counts across windows. A state of a later window (a replica whose clock is behind, or a call decided
after the window it was made in had ended) is the window Redis is in: the call is decided in it, so it can
never overwrite a newer window's count with an older one.

Atomic because it runs inside the batch script: the read here and the write in commit() cannot interleave
with another client.
Cost: GET; commit: SET PX.
]]
ALGORITHMS['fixed_window'] = function(key, now, limit, window, burst, hits)
  local start = WINDOW_COUNT.start(now, window)
  local count = 0
  local raw = redis.call('GET', key)
  if raw then
    local s, c = string.match(raw, '^(%d+):(%d+)$')
    -- a later window than now's is the window Redis is in: decide there, never write an older one over it
    if s and tonumber(s) > start then start = tonumber(s) end
    if s and tonumber(s) == start then count = tonumber(c) end
  end
  local allowed, if_committed, if_not, until_end = WINDOW_COUNT.decide(start, now, limit, window, count, hits)
  local commit = function()
    redis.call('SET', key, string.format('%.0f:%.0f', start, count + hits), 'PX', string.format('%.0f', until_end))
  end
  return allowed and 1 or 0, if_committed, if_not, until_end, commit
end
