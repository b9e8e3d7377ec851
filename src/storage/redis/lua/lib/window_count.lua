--[[
The decision shared by fixed_window.lua and formats/envoy_fixed_window.lua, which differ only in how a
window's count is stored. Same arithmetic, in the same order, as src/algorithms/fixed-window.ts.
WINDOW_COUNT.start(now, W): the epoch-aligned window holding `now` (now - now mod W).
WINDOW_COUNT.decide(start, now, L, W, count, hits): allowed iff count + hits <= L; returns
  allowed (boolean), remaining if committed, remaining if not, ms until the window ends.
WINDOW_COUNT.plain(key): the count of a plain integer counter (formats/*.lua) and a function adding hits to it;
  a value that is not an integer counts as 0 and is replaced.
]]
local WINDOW_COUNT = {
  start = function(now, window)
    return now - (now - math.floor(now / window) * window)
  end,
  decide = function(start, now, limit, window, count, hits)
    local allowed = count + hits <= limit
    local if_not = math.max(0, limit - count)
    local if_committed = if_not
    if allowed then if_committed = math.max(0, limit - count - hits) end
    return allowed, if_committed, if_not, start + window - now
  end,
  plain = function(key)
    local raw = redis.call('GET', key)
    local numeric = raw and string.match(raw, '^%d+$')
    local add = function(hits)
      if raw and not numeric then redis.call('DEL', key) end
      redis.call('INCRBY', key, hits)
    end
    if numeric then return tonumber(raw), add end
    return 0, add
  end,
}
