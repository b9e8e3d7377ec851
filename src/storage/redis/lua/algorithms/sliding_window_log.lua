--[[
sliding_window_log: exact; a hit at t counts while t > now - W; allowed iff (hits logged) + hits <= L.
Same decisions as src/algorithms/sliding-window-log.ts.

State under `key`: a sorted set with one member per admitted request: score = its time (ms), member =
"<running total of hits logged under the key, zero-padded to 16 digits>:<hits of this request>".
Times never decrease (a request is logged at max(now, last time)), and the padded totals sort like numbers,
so rank order = insertion order: the live count is (total of the last member) - (total of the first live
member - its hits), and the member whose expiry makes room for a rejected request is found by binary search
on rank. At most L members are live; expired ones are removed on every commit. The key expires when its
last member does.

Atomic because it runs inside the batch script.
Cost: ZRANGE -1 -1, ZRANGEBYSCORE LIMIT 0 1 (when anything is live); when rejected, ZCOUNT, ZCARD and
about log2(L) single-member ZRANGE; commit: ZREMRANGEBYSCORE, ZADD, PEXPIRE.
]]
ALGORITHMS['sliding_window_log'] = (function()
  local floor = math.floor

  local function fmt(x) return string.format('%.0f', x) end

  -- "<total>:<hits>" -> total, hits
  local function parse(member)
    local total, n = string.match(member, '^(%d+):(%d+)$')
    return tonumber(total), tonumber(n)
  end

  return function(key, now, limit, window, burst, hits)
    local cutoff = now - window -- members at t <= cutoff no longer count
    local count, last_total, last_time, until_empty = 0, 0, now, 0
    local first_total, first_n
    local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    if #last == 2 then
      last_total = parse(last[1])
      local t = tonumber(last[2])
      if t > cutoff then
        local first = redis.call('ZRANGEBYSCORE', key, '(' .. fmt(cutoff), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
        first_total, first_n = parse(first[1])
        count = last_total - (first_total - first_n)
        last_time = math.max(now, t)
        until_empty = t + window - now
      end
    end
    local allowed = count + hits <= limit
    local if_not = math.max(0, limit - count)
    local if_committed = if_not
    if allowed then if_committed = limit - count - hits end

    local reset
    if allowed then
      if hits > 0 then reset = last_time + window - now else reset = until_empty end
    elseif hits > limit then
      reset = until_empty
      if reset <= 0 then reset = window end
    else
      -- the first live member whose running total reaches this target is the last one that must expire
      local target = first_total - first_n + (count + hits - limit)
      local lo = redis.call('ZCOUNT', key, '-inf', fmt(cutoff))
      local hi = redis.call('ZCARD', key) - 1
      while lo < hi do
        local mid = floor((lo + hi) / 2)
        if parse(redis.call('ZRANGE', key, mid, mid)[1]) >= target then hi = mid else lo = mid + 1 end
      end
      reset = tonumber(redis.call('ZRANGE', key, lo, lo, 'WITHSCORES')[2]) + window - now
    end

    local commit = function()
      redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt(cutoff))
      redis.call('ZADD', key, fmt(last_time), string.format('%016.0f:%.0f', last_total + hits, hits))
      redis.call('PEXPIRE', key, fmt(last_time + window - now))
    end
    return allowed and 1 or 0, if_committed, if_not, reset, commit
  end
end)()
