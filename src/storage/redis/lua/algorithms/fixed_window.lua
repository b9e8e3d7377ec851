--[[
fixed_window: epoch-aligned windows (start = now - now mod W), allowed iff count + hits <= L.
The decision is lib/window_count.lua (the arithmetic of src/algorithms/fixed-window.ts).

State under `key` (layout 2; the store names it with batch-script.ts stateKey, the counter key + ':v2'):
16 bytes, two big-endian signed 64-bit integers, the window start (ms) and its count (struct.pack '>i8i8':
no text to parse or format). A commit in the same window overwrites the count's 8 bytes (SETRANGE), which
keeps the key's expiry; a commit in a new window writes both with SET PX (the window's end).
A state of an earlier window counts as empty: the stored start decides, not the TTL, so a late expiry cannot
carry counts across windows. A state of a later window (a replica whose clock is behind, or a call decided
after the window it was made in had ended) is the window Redis is in: the call is decided in it, so it can
never overwrite a newer window's count with an older one.
A value that is not of this layout (not 16 bytes, or a start outside [0, 2^53): layout 1's "<start>:<count>"
text, or anything else) counts as empty and a commit replaces it whole (a key of another type is a Redis error).

Atomic because it runs inside the batch script: the read here and the write in commit() cannot interleave
with another client.
Cost: GET; commit: SETRANGE of 8 bytes, or SET PX once per window. (BITFIELD GET/INCRBY on the same bytes
costs Redis 2-3 times as much: it parses its subcommands on every call.)
]]
ALGORITHMS['fixed_window'] = (function()
  local MAX_START = 9007199254740992 -- 2^53: past it a stored start is not one of ours
  local pack, unpack_state = struct.pack, struct.unpack

  return function(key, now, limit, window, burst, hits)
    local start = WINDOW_COUNT.start(now, window)
    local raw = redis.call('GET', key)
    local stored, count = -1, 0
    if raw and #raw == 16 then
      local s, c = unpack_state('>i8i8', raw)
      if s >= 0 and s < MAX_START then
        stored = s
        -- a later window than now's is the window Redis is in: decide there, never write an older one over it
        if s > start then start = s end
        if s == start then count = c end
      end
    end
    local allowed, if_committed, if_not, until_end = WINDOW_COUNT.decide(start, now, limit, window, count, hits)
    local commit = function()
      if stored == start then
        redis.call('SETRANGE', key, '8', pack('>i8', count + hits))
      else
        redis.call('SET', key, pack('>i8i8', start, count + hits), 'PX', until_end)
      end
    end
    return allowed and 1 or 0, if_committed, if_not, until_end, commit
  end
end)()
