-- Publishes many progress events in one call: ARGV[1] is the schema-wide channel (or '' for none),
-- then one (job channel, message) pair per event. Each message goes to its job's channel and, when
-- ARGV[1] is set, to the schema-wide one, in argument order. Returns the number of events.
-- No keys: pub/sub channels are not keys.
local global = ARGV[1]
local n = 0
for i = 2, #ARGV, 2 do
  redis.call('PUBLISH', ARGV[i], ARGV[i + 1])
  if global ~= '' then
    redis.call('PUBLISH', global, ARGV[i + 1])
  end
  n = n + 1
end
return n
