--[[
sliding_window_counter: two epoch-aligned windows; with ws = now - now mod W and e = now - ws,
  estimate = current + floor(previous * (W - e) / W), allowed iff estimate + hits <= L.
Same arithmetic, in the same order, as src/algorithms/sliding-window-counter.ts, including the exact
long multiplication (INT_MATH.muldivrem, lib/int_math.lua) past 2^53 and the closed-form retry time.

State under `key` (layout 2; the store names it with batch-script.ts stateKey, the counter key + ':v2'):
24 bytes, three big-endian signed 64-bit integers (struct.pack '>i8i8i8'): the start of the current window,
its count and the previous window's count. Kept until the end of the window after it (then `current` no
longer weighs anything). A commit in the stored window overwrites the current count's 8 bytes (SETRANGE),
keeping the expiry set when the window began; a commit in a new window writes all three with SET PX.
A state of a later window than now's is decided in that window (previous weighing fully while now is before
it), never overwritten by an older one. A value that is not of this layout (not 24 bytes, or a start outside
[0, 2^53): layout 1's "<start>:<current>:<previous>" text, or anything else) counts as empty.

Atomic because it runs inside the batch script.
Cost: GET; commit: SETRANGE of 8 bytes, or SET PX once per window.
]]
ALGORITHMS['sliding_window_counter'] = (function()
  local floor = math.floor
  local muldivrem, muldivceil = INT_MATH.muldivrem, INT_MATH.muldivceil
  local MAX_START = 9007199254740992 -- 2^53: past it a stored start is not one of ours
  local pack, unpack_state = struct.pack, struct.unpack

  -- the smallest e in [0, W] with floor(p * (W - e) / W) <= m
  local function first_at_most(p, m, window)
    if p <= m then return 0 end
    return window - muldivceil(window, m + 1, p) + 1
  end

  local function until_empty(ws, current, previous, now, window)
    if current > 0 then return ws + window + first_at_most(current, 0, window) - now end
    if previous > 0 then return math.max(0, ws + first_at_most(previous, 0, window) - now) end
    return 0
  end

  return function(key, now, limit, window, burst, hits)
    local ws = now - (now - floor(now / window) * window)
    local stored, current, previous = -1, 0, 0
    local raw = redis.call('GET', key)
    if raw and #raw == 24 then
      local s, c, p = unpack_state('>i8i8i8', raw)
      if s >= 0 and s < MAX_START then
        stored = s
        -- a later window than now's is the window Redis is in (see fixed_window.lua): decide there
        if s > ws then ws = s end
        if s == ws then
          current = c
          previous = p
        elseif s == ws - window then
          previous = c
        end
      end
    end
    local elapsed = math.max(0, now - ws)
    local weighted = muldivrem(window - elapsed, previous, window)
    local estimate = current + weighted
    local allowed = estimate + hits <= limit
    local if_not = math.max(0, limit - estimate)
    local if_committed = if_not
    if allowed then if_committed = limit - estimate - hits end

    local reset
    if allowed then
      reset = until_empty(ws, current + hits, previous, now, window)
    elseif hits > limit then
      reset = until_empty(ws, current, previous, now, window)
      if reset <= 0 then reset = window end
    else
      local m = limit - hits
      local in_this = window
      if current <= m then in_this = first_at_most(previous, m - current, window) end
      if in_this < window then
        reset = ws + in_this - now
      else
        reset = ws + window + first_at_most(current, m, window) - now
      end
    end

    local commit = function()
      if stored == ws then
        redis.call('SETRANGE', key, '8', pack('>i8', current + hits))
      else
        redis.call('SET', key, pack('>i8i8i8', ws, current + hits, previous), 'PX', ws + 2 * window - now)
      end
    end
    return allowed and 1 or 0, if_committed, if_not, reset, commit
  end
end)()
