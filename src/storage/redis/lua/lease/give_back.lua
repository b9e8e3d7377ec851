--[[
lease/give_back.lua: give a lease's unused units back into the shared state, atomically, and only into the
window they came from (fixed_window, sliding_window_counter) or the bucket they came from (token_bucket,
same L); anything else returns nothing. The TypeScript twin is src/lease/arithmetic.ts (giveBackUnits).

KEYS[1]   the state key of the limit
ARGV[1]   now (epoch ms)     ARGV[2] algorithm     ARGV[3] limit L     ARGV[4] window W ms
ARGV[5]   units to give back (>= 1)
ARGV[6]   window start (epoch ms) the units were claimed in (window algorithms; ignored by token_bucket)
          calendar_window (a refund to a calendar limit): the key is the window's plain counter, W its length

State layouts are those of lua/algorithms/fixed_window.lua (two 64-bit integers), sliding_window_counter.lua
(three) and lib/meter.lua ("TAT ms:numerator:L"). A count never goes below 0; a bucket
never above full (TAT not before now: then the key is deleted, which means full).

Reply: { units returned } (for a bucket, the whole tokens it gained).
]]

local key = KEYS[1]
local now = tonumber(ARGV[1])
local name = ARGV[2]
local limit, window = tonumber(ARGV[3]), tonumber(ARGV[4])
local units, start = tonumber(ARGV[5]), tonumber(ARGV[6])
local raw = redis.call('GET', key)
if not raw then return { 0 } end
if name == 'calendar_window' then
  -- a calendar window's plain counter (formats/calendar_window.lua): its key names the window, which ends
  -- with the key's TTL; DECRBY keeps the TTL
  local c = tonumber(raw)
  if not c or start + window <= now then return { 0 } end
  local back = math.min(c, units)
  if back <= 0 then return { 0 } end
  redis.call('DECRBY', key, back)
  return { back }
end
if name == 'fixed_window' then
  -- layout 2 (lua/algorithms/fixed_window.lua): start and count as two big-endian 64-bit integers
  if #raw ~= 16 then return { 0 } end
  local s, c = struct.unpack('>i8i8', raw)
  if s ~= start or start + window <= now then return { 0 } end
  local back = math.min(c, units)
  if back <= 0 then return { 0 } end
  redis.call('SETRANGE', key, '8', struct.pack('>i8', c - back))
  return { back }
end
if name == 'sliding_window_counter' then
  -- layout 2 (lua/algorithms/sliding_window_counter.lua): start, current, previous as 64-bit integers
  if #raw ~= 24 then return { 0 } end
  local s, c = struct.unpack('>i8i8i8', raw)
  if s ~= start or start + window <= now then return { 0 } end
  local back = math.min(c, units)
  if back <= 0 then return { 0 } end
  redis.call('SETRANGE', key, '8', struct.pack('>i8', c - back))
  return { back }
elseif name == 'token_bucket' then
  local ms, frac, den = string.match(raw, '^(%d+):(%d+):(%d+)$')
  if not ms or tonumber(den) ~= limit or limit == 0 then return { 0 } end
  ms, frac = tonumber(ms), tonumber(frac)
  if ms < now or (ms == now and frac == 0) then return { 0 } end
  -- whole tokens missing before: ceil((TAT - now) * L / W)
  local muldivrem, ceildiv = INT_MATH.muldivrem, INT_MATH.ceildiv
  local q, r = muldivrem(limit, ms - now, window)
  local missing_before = q + ceildiv(r + frac, window)
  -- TAT' = TAT - units * W / L (exact: quotient and remainder over L)
  local uq, ur = muldivrem(window, units, limit)
  local nm, nf = ms - uq, frac - ur
  if nf < 0 then
    nf = nf + limit
    nm = nm - 1
  end
  if nm < now or (nm == now and nf == 0) then
    redis.call('DEL', key)
    return { missing_before }
  end
  local q2, r2 = muldivrem(limit, nm - now, window)
  local missing_after = q2 + ceildiv(r2 + nf, window)
  local ttl = nm - now
  if nf > 0 then ttl = ttl + 1 end
  redis.call('SET', key, string.format('%.0f:%.0f:%.0f', nm, nf, limit), 'PX', string.format('%.0f', ttl))
  return { missing_before - missing_after }
end
return redis.error_reply('ERR ratelimit lease: no lease for algorithm ' .. tostring(name))
