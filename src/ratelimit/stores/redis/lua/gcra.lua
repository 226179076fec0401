-- GCRA sliding window on one string key: the theoretical arrival time (TAT, Redis TIME in
-- microseconds). A missing key means no debt. Emission interval T = window / limit; up to `limit`
-- requests pass at once, then one per T.
-- KEYS[1] window key
-- ARGV: mode ('acquire' | 'peek' | 'refund'), limit, window (ms), ttl (ms)
-- Reply: { status, debt (us), previous TAT (us, or '') }. The debt is the TAT this call reached (or,
-- denied, would have reached) minus now; peek reports the current TAT minus now. The caller derives
-- the remaining estimate and the retry hint from it.
local key = KEYS[1]
local mode = ARGV[1]
local limit = tonumber(ARGV[2])
local window_us = tonumber(ARGV[3]) * 1000
local ttl_ms = tonumber(ARGV[4])
local interval = window_us / limit

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local function num(x)
  return string.format('%.17g', x)
end

local raw = redis.call('GET', key)
local stored = nil
if raw ~= false then
  stored = tonumber(raw)
  if stored == nil or stored ~= stored or stored == math.huge or stored == -math.huge then
    return { 'corrupt', tostring(raw), '' }
  end
end
local tat = stored or now
if tat < now then
  tat = now
end
local prev = ''
if stored ~= nil then
  prev = string.format('%.0f', stored)
end

if mode == 'peek' then
  return { 'peek', num(tat - now), prev }
end

if mode == 'refund' then
  if stored == nil then
    return { 'refund', '0', prev }
  end
  local back = tat - interval
  if back <= now then
    redis.call('DEL', key)
    back = now
  else
    redis.call('SET', key, string.format('%.0f', back), 'PX', ttl_ms)
  end
  return { 'refund', num(back - now), prev }
end

local new_tat = tat + interval
if now < new_tat - window_us then
  return { 'denied', num(new_tat - now), prev }
end
redis.call('SET', key, string.format('%.0f', new_tat), 'PX', ttl_ms)
return { 'allowed', num(new_tat - now), prev }
