--[[
The decision shared by fixed_window.lua and formats/envoy_fixed_window.lua, which differ only in how a
window's count is stored. Same arithmetic, in the same order, as src/algorithms/fixed-window.ts.
WINDOW_COUNT.start(now, W): the epoch-aligned window holding `now` (now - now mod W).
WINDOW_COUNT.decide(start, now, L, W, count, hits): allowed iff count + hits <= L; returns
  allowed (boolean), remaining if committed, remaining if not, ms until the window ends.
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
}
