-- Log-style sliding window on one sorted set: one member per admitted request (its request id),
-- scored by its admission time (Redis TIME, microseconds). A request is inside the window while
-- its score is greater than now - window.
-- KEYS[1] window key
-- ARGV: mode ('acquire' | 'peek' | 'refund'), limit, window (ms), ttl (ms), request id
-- Reply: { status, remaining, retry after (us), live count before }.
local key = KEYS[1]
local mode = ARGV[1]
local limit = tonumber(ARGV[2])
local window_us = tonumber(ARGV[3]) * 1000
local ttl_ms = tonumber(ARGV[4])
local request_id = ARGV[5]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local boundary = now - window_us

local function num(x)
  return string.format('%.17g', x)
end

if mode == 'refund' then
  local removed = redis.call('ZREM', key, request_id)
  return { 'refund', tostring(removed), '0', '0' }
end

local function retry_after(live)
  -- The (live - limit + 1)-th oldest live entry must leave before one more fits.
  local nth = redis.call('ZRANGEBYSCORE', key, '(' .. string.format('%.0f', boundary), '+inf', 'WITHSCORES', 'LIMIT', live - limit, 1)
  if nth[2] == nil then
    return 0
  end
  local score = tonumber(nth[2])
  if score == nil then
    return -1
  end
  local r = score + window_us - now
  if r < 0 then
    r = 0
  end
  return r
end

if mode == 'peek' then
  local live = redis.call('ZCOUNT', key, '(' .. string.format('%.0f', boundary), '+inf')
  local remaining = limit - live
  local retry = 0
  if remaining <= 0 then
    remaining = 0
    retry = retry_after(live)
  end
  return { 'peek', tostring(remaining), num(retry), tostring(live) }
end

redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%.0f', boundary))
local live = redis.call('ZCARD', key)
if live < limit then
  redis.call('ZADD', key, string.format('%.0f', now), request_id)
  redis.call('PEXPIRE', key, ttl_ms)
  return { 'allowed', tostring(limit - live - 1), '0', tostring(live) }
end
local retry = retry_after(live)
if retry < 0 then
  return { 'corrupt', tostring(live), '0', tostring(live) }
end
return { 'denied', '0', num(retry), tostring(live) }
