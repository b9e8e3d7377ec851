--[[
leaky_bucket: GCRA, the leaky bucket as a meter: emission interval T = W/L, `burst` requests (default 1)
may arrive back to back (tolerance (burst - 1) * T), then one per T. Requests are never queued. The test
is the shared meter (lib/meter.lua, state layout described there).

Atomic because it runs inside the batch script.
]]
ALGORITHMS['leaky_bucket'] = METER
