--[[
token_bucket: capacity B = burst (default requests_per_unit), refilled continuously with L tokens per W ms,
starting full; allowed iff the bucket holds at least `hits` tokens. The test is the shared meter
(lib/meter.lua, state layout described there).

Atomic because it runs inside the batch script.
]]
ALGORITHMS['token_bucket'] = METER
