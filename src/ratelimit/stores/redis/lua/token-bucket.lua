-- Token bucket on one hash: `tokens` left at `ts` (Redis TIME, microseconds). Atomic: runs as one
-- script, on the Redis clock only. A missing key is a full bucket.
-- KEYS[1] bucket key
-- ARGV: mode ('acquire' | 'peek' | 'refund'), capacity, refill per second, count, ttl (ms)
-- Reply: { status, tokens after, tokens available before, now (us) }; status 'corrupt' when the hash
-- holds something no honest write produces.
local key = KEYS[1]
local mode = ARGV[1]
local capacity = tonumber(ARGV[2])
local refill = tonumber(ARGV[3])
local count = tonumber(ARGV[4])
local ttl_ms = tonumber(ARGV[5])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local function num(x)
  return string.format('%.17g', x)
end

local raw = redis.call('HMGET', key, 'tokens', 'ts')
local tokens
local ts
local exists = not (raw[1] == false and raw[2] == false)
if exists then
  tokens = tonumber(raw[1])
  ts = tonumber(raw[2])
  if tokens == nil or ts == nil or tokens ~= tokens or ts ~= ts or tokens < 0 or tokens == math.huge then
    return { 'corrupt', tostring(raw[1]), tostring(raw[2]), num(now) }
  end
else
  tokens = capacity
  ts = now
end

-- A backward step of the Redis clock (failover to a replica behind) counts as zero elapsed.
local elapsed = now - ts
if elapsed < 0 then
  elapsed = 0
end
local avail = tokens + (elapsed / 1000000) * refill
if avail > capacity then
  avail = capacity
end

if mode == 'peek' then
  return { 'peek', num(avail), num(avail), num(now) }
end

if mode == 'refund' then
  if not exists then
    return { 'refund', num(capacity), num(capacity), num(now) }
  end
  local after = avail + count
  if after > capacity then
    after = capacity
  end
  redis.call('HSET', key, 'tokens', num(after), 'ts', string.format('%.0f', now))
  redis.call('PEXPIRE', key, ttl_ms)
  return { 'refund', num(after), num(avail), num(now) }
end

if avail >= count then
  local after = avail - count
  redis.call('HSET', key, 'tokens', num(after), 'ts', string.format('%.0f', now))
  redis.call('PEXPIRE', key, ttl_ms)
  return { 'allowed', num(after), num(avail), num(now) }
end
-- A denial writes nothing: the TTL keeps counting from the last admission, so a fixed quota
-- (refill 0) hammered by denials still expires on schedule.
return { 'denied', num(avail), num(avail), num(now) }
