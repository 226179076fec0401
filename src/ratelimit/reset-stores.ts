import { requireDriver, schemaOf, sql } from './pg-store.js';
import { redisKey, withPgFallback, type RedisKeyKind } from './redis-store.js';
import type { RateLimitBackend, RateLimitContext } from './types.js';

/**
 * Shared reset: memory runs `onMemory`; Redis deletes the key (falling back to Postgres when Redis
 * is down) and, with a driver, also clears the Postgres row (the fallback state); Postgres clears
 * the row's state. Logs warning `ratelimit-reset`.
 */
export async function resetStores(
  primitive: { name: string; backend: RateLimitBackend },
  ctx: RateLimitContext,
  keyKind: RedisKeyKind,
  onMemory: () => void,
): Promise<void> {
  const resetPg = async (): Promise<void> => {
    await requireDriver(ctx, primitive.name).query(sql('bucketReset', schemaOf(ctx)), [primitive.name]);
  };
  if (primitive.backend === 'memory') {
    onMemory();
  } else if (primitive.backend === 'postgres') {
    await resetPg();
  } else {
    let viaRedis = false;
    await withPgFallback(
      ctx,
      primitive.name,
      'reset',
      async (redis) => {
        await redis.del(redisKey(ctx, keyKind, primitive.name));
        viaRedis = true;
      },
      resetPg,
    );
    if (viaRedis && ctx.driver) {
      try {
        await resetPg();
      } catch (err) {
        ctx.logger?.warn(
          { bucketName: primitive.name, err: (err as Error).message },
          'ratelimit-reset-fallback-state-failed',
        );
      }
    }
  }
  ctx.logger?.warn({ bucketName: primitive.name, backend: primitive.backend }, 'ratelimit-reset');
}
