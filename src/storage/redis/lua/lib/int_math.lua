--[[
Exact integer helpers shared by the algorithm fragments (inserted before them in the batch script).
Lua 5.1 numbers are doubles: products past 2^53 lose precision, so (a * b) div c is computed by long
multiplication in base 2^15. The same steps, in the same order, as src/algorithms/int-math.ts, so Redis and
the memory store decide bit-identically.
]]
local INT_MATH = (function()
  local floor = math.floor
  local TWO_52 = 4503599627370496

  -- exact (a * b) div c and mod c for a, c < 2^36, b < 2^53
  local function muldivrem(a, b, c)
    local p = a * b
    if p <= TWO_52 then
      local q = floor(p / c)
      return q, p - q * c
    end
    local d3 = floor(b / 35184372088832)
    local rest = b - d3 * 35184372088832
    local d2 = floor(rest / 1073741824)
    rest = rest - d2 * 1073741824
    local d1 = floor(rest / 32768)
    local digits = { d3, d2, d1, rest - d1 * 32768 }
    local q, r = 0, 0
    for i = 1, 4 do
      local s = r * 32768 + a * digits[i]
      local qs = floor(s / c)
      q = q * 32768 + qs
      r = s - qs * c
    end
    return q, r
  end

  -- ceil(a * b / c), exactly
  local function muldivceil(a, b, c)
    local q, r = muldivrem(a, b, c)
    if r > 0 then return q + 1 end
    return q
  end

  -- ceil(a / b) for integers a >= 0, b > 0
  local function ceildiv(a, b)
    local q = floor(a / b)
    if q * b == a then return q end
    return q + 1
  end

  return { muldivrem = muldivrem, muldivceil = muldivceil, ceildiv = ceildiv }
end)()
