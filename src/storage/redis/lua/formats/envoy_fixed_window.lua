--[[
envoy_fixed_window: fixed_window on envoyproxy/ratelimit's counters (REDIS_KEY_FORMAT=envoy), so that the
reference and this service, sharing one Redis during a rolling update, count into the same keys.

Key (built by src/vocab/keys.ts envoyCounterKey, never here): <prefix><domain>_<key>_<value>..._<window start s>,
so one key holds one window. State: the reference's plain integer counter ("7"), which it writes with
INCRBY hits + EXPIRE <unit seconds (+ jitter)>.

Same decision as fixed_window.lua (lib/window_count.lua: allowed iff count + hits <= L, a rejected request
adds nothing; the reference, unlike us, also counts the hits of the requests it rejects). The window start is the key's, so
the reference and we agree on windows as long as the clocks agree on the second.
A value that is not an integer (not a counter of either service) counts as 0 and is overwritten on commit.
Cost: GET; commit: INCRBY + EXPIRE (after a DEL of a value that is not an integer).
]]
-- `jitter` (where the other fragments read the burst): seconds added to the expiry (EXPIRATION_JITTER_MAX_SECONDS).
ALGORITHMS['envoy_fixed_window'] = function(key, now, limit, window, jitter, hits)
  local start = WINDOW_COUNT.start(now, window)
  local count, add = WINDOW_COUNT.plain(key)
  local allowed, if_committed, if_not, until_end = WINDOW_COUNT.decide(start, now, limit, window, count, hits)
  local commit = function()
    add(hits)
    -- as the reference: the unit in seconds from now plus the random jitter, so the key outlives its window
    redis.call('EXPIRE', key, string.format('%.0f', math.floor(window / 1000) + jitter))
  end
  return allowed and 1 or 0, if_committed, if_not, until_end, commit
end
