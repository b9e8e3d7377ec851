--[[
fixed_window: epoch-aligned windows (start = now - now mod W), allowed iff count + hits <= L.
The decision is lib/window_count.lua (the arithmetic of src/algorithms/fixed-window.ts).

State under `key` (layout 2; the store names it with batch-script.ts stateKey, the counter key + ':v2'):
16 bytes, two big-endian signed 64-bit integers, the window start (ms) and its count, read with one
BITFIELD GET pair (integers, no parsing). A commit in the same window is one BITFIELD INCRBY of the count,
which keeps the key's expiry; a commit in a new window writes both with SET PX (the window's end).
A state of an earlier window counts as empty: the stored start decides, not the TTL, so a late expiry cannot
carry counts across windows. A state of a later window (a replica whose clock is behind, or a call decided
after the window it was made in had ended) is the window Redis is in: the call is decided in it, so it can
never overwrite a newer window's count with an older one.
A value that is not of this layout (layout 1's "<start>:<count>" text, or anything else) reads as a start
outside [0, 2^53): it counts as empty and a commit replaces it whole (a key of another type is a Redis error).

Atomic because it runs inside the batch script: the read here and the write in commit() cannot interleave
with another client.
Cost: BITFIELD (2 GET); commit: BITFIELD INCRBY, or SET PX once per window.
]]
ALGORITHMS['fixed_window'] = (function()
  local MAX_START = 9007199254740992 -- 2^53: past it a stored start is not one of ours
  local pack = struct.pack

  return function(key, now, limit, window, burst, hits)
    local start = WINDOW_COUNT.start(now, window)
    local state = redis.call('BITFIELD', key, 'GET', 'i64', 0, 'GET', 'i64', 64)
    local stored, count = state[1], 0
    if stored >= 0 and stored < MAX_START then
      -- a later window than now's is the window Redis is in: decide there, never write an older one over it
      if stored > start then start = stored end
      if stored == start then count = state[2] end
    else
      stored = -1
    end
    local allowed, if_committed, if_not, until_end = WINDOW_COUNT.decide(start, now, limit, window, count, hits)
    local commit = function()
      if stored == start then
        redis.call('BITFIELD', key, 'INCRBY', 'i64', 64, hits)
      else
        redis.call('SET', key, pack('>i8i8', start, count + hits), 'PX', until_end)
      end
    end
    return allowed and 1 or 0, if_committed, if_not, until_end, commit
  end
end)()
