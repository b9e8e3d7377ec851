--[[
The meter shared by token_bucket and leaky_bucket, which are the same test written two ways: GCRA with
emission interval T = W/L and a capacity of `burst` requests (a token bucket of capacity B refilled at L per
W admits exactly what GCRA admits with tolerance (B - 1) * T). They differ only in their default `burst`
(set by the config) and their keys. Same arithmetic, in the same order, as src/algorithms/meter.ts.
allowed iff max(TAT, now) + hits*T - now <= burst*T; a commit sets TAT = max(TAT, now) + hits*T.

on_limit delay (max_delay, ms; 0 = none): a request admissible within max_delay is admitted now, its commit
moving TAT on (the bucket runs into debt), and the wait is returned as a sixth value (0 otherwise).

State under `key`: a string "<TAT ms>:<TAT fraction numerator>:<denominator L>", TAT being the instant the
bucket is full again (TAT = ms + numerator / L, kept exact as a rational; T = W/L is usually fractional).
The key expires at TAT, when no state and a full bucket mean the same. A TAT stored under another L (the
limit was changed) is rounded up to the next whole ms.

Cost: GET; commit: SET PX.
]]
local METER = (function()
  local muldivrem, ceildiv = INT_MATH.muldivrem, INT_MATH.ceildiv

  local function ceil_ms(ms, frac)
    if frac > 0 then return ms + 1 end
    return ms
  end

  -- tokens left when the bucket is dm + df/L ms short of full: burst - ceil((dm*L + df) / W), at least 0
  local function tokens_left(dm, df, limit, window, burst)
    local q, r = muldivrem(limit, dm, window)
    return math.max(0, burst - (q + ceildiv(r + df, window)))
  end

  -- Kept for L = 0, where nothing with hits > 0 is ever allowed, so the batch never calls it.
  local function nothing_to_commit() end

  return function(key, now, limit, window, burst, hits, max_delay)
    if limit == 0 then
      if hits == 0 then return 1, 0, 0, 0, nothing_to_commit end
      return 0, 0, 0, window, nothing_to_commit
    end
    -- the deficit D = max(TAT, now) - now = dm + df/L ms
    local dm, df = 0, 0
    local raw = redis.call('GET', key)
    if raw then
      local ms, frac, den = string.match(raw, '^(%d+):(%d+):(%d+)$')
      if ms then
        ms, frac = tonumber(ms), tonumber(frac)
        if tonumber(den) ~= limit then
          ms = ceil_ms(ms, frac)
          frac = 0
        end
        if ms >= now then
          dm = ms - now
          df = frac
        end
      end
    end
    local hq, hr = muldivrem(window, hits, limit)
    local nm, nf = dm + hq, df + hr
    if nf >= limit then
      nf = nf - limit
      nm = nm + 1
    end
    local bq, br = muldivrem(window, burst, limit)
    local allowed = nm < bq or (nm == bq and nf <= br)
    local delay, wait = 0, 0
    if not allowed and hits <= burst then
      -- admissible once the deficit has shrunk to (burst - hits) * T
      local gq, gr = muldivrem(window, burst - hits, limit)
      local wm, wf = dm - gq, df - gr
      if wf < 0 then
        wf = wf + limit
        wm = wm - 1
      end
      wait = ceil_ms(wm, wf)
      if hits > 0 and wait <= (max_delay or 0) then
        allowed = true
        delay = wait
      end
    end
    local if_not = tokens_left(dm, df, limit, window, burst)
    local if_committed = if_not
    if allowed then if_committed = tokens_left(nm, nf, limit, window, burst) end

    local reset
    if allowed then
      reset = ceil_ms(nm, nf)
    elseif hits > burst then
      reset = ceil_ms(dm, df)
      if reset <= 0 then reset = window end
    else
      reset = wait
    end

    local commit = function()
      redis.call('SET', key, string.format('%.0f:%.0f:%.0f', now + nm, nf, limit),
        'PX', string.format('%.0f', math.max(1, ceil_ms(nm, nf))))
    end
    return allowed and 1 or 0, if_committed, if_not, reset, commit, delay
  end
end)()
