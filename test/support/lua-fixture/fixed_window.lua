-- Development fixture (test only): a fixed_window fragment to exercise batch.lua before the real
-- fragments in src/storage/redis/lua/algorithms/ exist. Same contract: epoch-aligned windows,
-- allowed iff count + hits <= limit; state is a hash {s = window start, c = count}.
ALGORITHMS['fixed_window'] = function(key, now, limit, window, burst, hits)
  local start = now - (now % window)
  local state = redis.call('HMGET', key, 's', 'c')
  local count = 0
  if tonumber(state[1]) == start then count = tonumber(state[2]) end
  local allowed = 0
  if count + hits <= limit then allowed = 1 end
  local not_committed = math.max(0, limit - count)
  local committed = not_committed
  if allowed == 1 then committed = math.max(0, limit - count - hits) end
  local until_end = start + window - now
  local function commit()
    redis.call('HSET', key, 's', start, 'c', count + hits)
    redis.call('PEXPIRE', key, until_end)
  end
  return allowed, committed, not_committed, until_end, commit
end
