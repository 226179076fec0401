-- GCRA sliding window on one string key: the theoretical arrival time (TAT, Redis TIME in
-- microseconds). A missing key means no debt. Emission interval T = window / limit; up to `limit`
-- requests pass at once, then one per T.
-- KEYS[1] window key
-- ARGV: mode ('acquire' | 'peek' | 'refund'), limit, window (ms), ttl (ms)
-- Reply: { status, remaining, retry after (us), previous TAT (us, or '') }.
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
    return { 'corrupt', tostring(raw), '0', '' }
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

local function remaining_at(v)
  local r = math.floor((window_us - (v - now)) / interval + 1e-9)
  if r < 0 then
    r = 0
  end
  return r
end

if mode == 'peek' then
  local r = remaining_at(tat)
  local retry = 0
  if r < 1 then
    retry = tat + interval - window_us - now
    if retry < 0 then
      retry = 0
    end
  end
  return { 'peek', tostring(r), num(retry), prev }
end

if mode == 'refund' then
  if stored == nil then
    return { 'refund', tostring(remaining_at(now)), '0', prev }
  end
  local back = tat - interval
  if back <= now then
    redis.call('DEL', key)
    back = now
  else
    redis.call('SET', key, string.format('%.0f', back), 'PX', ttl_ms)
  end
  return { 'refund', tostring(remaining_at(back)), '0', prev }
end

local new_tat = tat + interval
local allow_at = new_tat - window_us
if now < allow_at then
  return { 'denied', '0', num(allow_at - now), prev }
end
redis.call('SET', key, string.format('%.0f', new_tat), 'PX', ttl_ms)
return { 'allowed', tostring(remaining_at(new_tat)), '0', prev }
