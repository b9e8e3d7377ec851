--[[
sliding_window_counter: two epoch-aligned windows; with ws = now - now mod W and e = now - ws,
  estimate = current + floor(previous * (W - e) / W), allowed iff estimate + hits <= L.
Same arithmetic, in the same order, as src/algorithms/sliding-window-counter.ts, including the exact
long multiplication (INT_MATH.muldivrem, lib/int_math.lua) past 2^53 and the closed-form retry time.

State under `key`: a string "<start of current window>:<current>:<previous>", kept until the end of the
window after it (then `current` no longer weighs anything). A state of a later window than now's is decided
in that window (previous weighing fully while now is before it), never overwritten by an older one.

Atomic because it runs inside the batch script.
Cost: GET; commit: SET PX.
]]
ALGORITHMS['sliding_window_counter'] = (function()
  local floor = math.floor
  local muldivrem, muldivceil = INT_MATH.muldivrem, INT_MATH.muldivceil

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
    local current, previous = 0, 0
    local raw = redis.call('GET', key)
    if raw then
      local s, c, p = string.match(raw, '^(%d+):(%d+):(%d+)$')
      if s then
        s = tonumber(s)
        -- a later window than now's is the window Redis is in (see fixed_window.lua): decide there
        if s > ws then ws = s end
        if s == ws then
          current = tonumber(c)
          previous = tonumber(p)
        elseif s == ws - window then
          previous = tonumber(c)
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
      redis.call('SET', key, string.format('%.0f:%.0f:%.0f', ws, current + hits, previous),
        'PX', string.format('%.0f', ws + 2 * window - now))
    end
    return allowed and 1 or 0, if_committed, if_not, reset, commit
  end
end)()
