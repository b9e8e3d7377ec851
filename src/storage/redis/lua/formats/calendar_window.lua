--[[
calendar_window: fixed_window over a window the caller names (a calendar day, week, month or year in a time
zone, src/core/windows/limit-windows.ts), instead of the epoch-aligned one holding `now`.

Key (built by src/vocab/keys.ts calendarTagKey, never here): the counter's hash tag, the period, the zone and
the window's start, so one key holds one window. State: a plain integer counter ("7"), written with INCRBY and
PEXPIRE to the window's end (Redis forgets it then; the start in the key decides, not the TTL).

Arguments as every fragment's, but for `burst`, which carries the window's start (epoch ms): the window is
[start, start + window). Same decision as fixed_window.lua (lib/window_count.lua): allowed iff count + hits <= L,
the reset the time to the window's end. A value that is not an integer counts as 0 and is overwritten on commit.
Cost: GET; commit: INCRBY + PEXPIRE.
]]
ALGORITHMS['calendar_window'] = function(key, now, limit, window, start, hits)
  local count, add = WINDOW_COUNT.plain(key)
  local allowed, if_committed, if_not, until_end = WINDOW_COUNT.decide(start, now, limit, window, count, hits)
  local commit = function()
    add(hits)
    redis.call('PEXPIRE', key, string.format('%.0f', math.max(1, until_end)))
  end
  return allowed and 1 or 0, if_committed, if_not, until_end, commit
end
