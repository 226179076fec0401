import type { Redis } from 'ioredis';

import { RateLimitBackendMissing, RateLimitStoreCorrupt, RateLimitStoreUnavailable } from './errors.js';
import * as LUA from './lua.generated.js';
import { DEFAULT_REDIS_KEY_PREFIX, type RateLimitContext } from './types.js';

/** The Lua scripts, each registered on a client with `defineCommand` (EVALSHA, EVAL on NOSCRIPT). */
const COMMANDS = {
  taskqRlTokenBucket: LUA.tokenBucket,
  taskqRlGcra: LUA.gcra,
  taskqRlSlidingLog: LUA.slidingLog,
} as const;

type CommandName = keyof typeof COMMANDS;
type ScriptFn = (key: string, ...args: (string | number)[]) => Promise<string[]>;

const defined = new WeakSet<Redis>();

/** Runs one of the rate-limit scripts on `redis` (defining the commands on first use of the client). */
export async function runScript(
  redis: Redis,
  command: CommandName,
  key: string,
  args: readonly (string | number)[],
): Promise<string[]> {
  if (!defined.has(redis)) {
    for (const [name, lua] of Object.entries(COMMANDS)) redis.defineCommand(name, { numberOfKeys: 1, lua });
    defined.add(redis);
  }
  const fn = (redis as unknown as Record<CommandName, ScriptFn>)[command];
  const reply = await fn.call(redis, key, ...args);
  if (!Array.isArray(reply)) throw new TypeError(`unexpected reply from ${command}`);
  return reply.map((x) => String(x));
}

/** Redis key kinds and their key segment. */
export type RedisKeyKind = 'tb' | 'gcra' | 'swlog';

/**
 * The Redis key of a primitive: `{prefix}{kind}:{name}`, e.g. `taskq:rl:tb:stripe_api`,
 * `taskq:rl:gcra:vendor_y`, `taskq:rl:swlog:vendor_x`.
 */
export function redisKey(ctx: RateLimitContext, kind: RedisKeyKind, name: string): string {
  return `${ctx.redisKeyPrefix ?? DEFAULT_REDIS_KEY_PREFIX}${kind}:${name}`;
}

/** The client of a `'redis'` primitive, or a configuration error naming what is missing. */
export function requireRedis(ctx: RateLimitContext, bucketName: string): Redis {
  if (!ctx.redis) {
    throw new RateLimitBackendMissing(
      bucketName,
      'redis',
      "pass an ioredis client as ctx.redis, or declare the primitive with backend: 'postgres' or 'memory'",
    );
  }
  return ctx.redis;
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ECONNABORTED',
]);
const CONNECTION_MESSAGES = [
  "Stream isn't writeable",
  'Connection is closed',
  'Command timed out',
  'Reached the max retries per request limit',
  'Connection timeout',
];
// Server replies that mean "not serving right now" rather than "bad data".
const UNAVAILABLE_REPLIES = ['LOADING', 'BUSY', 'MASTERDOWN', 'CLUSTERDOWN', 'TRYAGAIN'];

/**
 * True for errors meaning Redis could not be reached or did not answer in time (the ioredis
 * connection, offline-queue, retry-limit and command-timeout errors, socket errors, and the
 * LOADING / BUSY / MASTERDOWN family of replies). These, and only these, trigger the Postgres
 * fallback; a script or data error is not an outage.
 */
export function isRedisConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
  if (err.name === 'MaxRetriesPerRequestError' || err.name === 'AbortError' || err.name === 'InterruptError')
    return true;
  if (err.name === 'ReplyError') return UNAVAILABLE_REPLIES.some((p) => err.message.startsWith(p));
  return CONNECTION_MESSAGES.some((m) => err.message.includes(m));
}

/** Turns a WRONGTYPE reply (the key holds another data type) into `RateLimitStoreCorrupt`. */
export function mapRedisDataError(err: unknown, bucketName: string, key: string): unknown {
  if (err instanceof Error && err.name === 'ReplyError' && err.message.startsWith('WRONGTYPE')) {
    return new RateLimitStoreCorrupt(bucketName, 'redis', `key ${key} holds the wrong data type`, {
      cause: err,
    });
  }
  return err;
}

/**
 * Refunds go to the store that paid and never fall back: a connection error surfaces as
 * `RateLimitStoreUnavailable`, a WRONGTYPE reply as `RateLimitStoreCorrupt`.
 */
export function mapRedisRefundError(err: unknown, bucketName: string, key: string): unknown {
  if (isRedisConnectionError(err)) {
    return new RateLimitStoreUnavailable(bucketName, 'redis', `refund failed: ${(err as Error).message}`, {
      cause: err,
    });
  }
  return mapRedisDataError(err, bucketName, key);
}

/**
 * Runs `onRedis`; on a Redis connection or timeout error falls back to `onPostgres` when allowed
 * (`ctx.pgFallback !== false` and a driver is present), logging warning `ratelimit-redis-fallback`
 * with `backend: 'redis', fallback: 'postgres'`. Otherwise the error surfaces as
 * `RateLimitStoreUnavailable` (cause: the ioredis error). Other errors propagate unchanged.
 */
export async function withPgFallback<T>(
  ctx: RateLimitContext,
  bucketName: string,
  operation: string,
  onRedis: (redis: Redis) => Promise<T>,
  onPostgres: () => Promise<T>,
): Promise<T> {
  const redis = requireRedis(ctx, bucketName);
  try {
    return await onRedis(redis);
  } catch (err) {
    if (!isRedisConnectionError(err)) throw err;
    const fallback = ctx.pgFallback !== false;
    if (!fallback || !ctx.driver) {
      throw new RateLimitStoreUnavailable(
        bucketName,
        'redis',
        `${(err as Error).message}` +
          (fallback
            ? ' (no ctx.driver to fall back to Postgres)'
            : ' (Postgres fallback disabled: TASKQ_RATE_LIMIT_PG_FALLBACK_ENABLED=false)'),
        { cause: err },
      );
    }
    ctx.logger?.warn(
      { bucketName, operation, backend: 'redis', fallback: 'postgres', err: (err as Error).message },
      'ratelimit-redis-fallback',
    );
    return await onPostgres();
  }
}

/** Parses a numeric script reply field; a non-number means the store returned garbage. */
export function replyNumber(value: string | undefined, bucketName: string, what: string): number {
  const n = value === undefined || value === '' ? Number.NaN : Number(value);
  if (!Number.isFinite(n))
    throw new RateLimitStoreCorrupt(bucketName, 'redis', `${what} is ${String(value)}`);
  return n;
}
