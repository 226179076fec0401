import { Command } from 'commander';
import type { Redis } from 'ioredis';

import { openClientBackend } from '../backend/open-backend.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { closeOwnedRedis, createOwnedRedis } from '../progress/redis-progress-publisher.js';
import { RateLimitBackendMissing, RateLimitNotFound } from '../ratelimit/errors.js';
import { RateLimitAdmin } from '../ratelimit/rate-limit-admin.js';
import type { RateLimitState } from '../ratelimit/types.js';
import {
  cliPgSource,
  PG_CREDENTIAL_PROVIDER_OPTION,
  resolveConnection,
  type ConnectionFlags,
} from './connection-options.js';
import { CliExit, type CliIo } from './io.js';

interface RateLimitFlags extends ConnectionFlags {
  redisUrl?: string;
}

async function withRateLimitAdmin<T>(
  flags: RateLimitFlags,
  io: CliIo,
  fn: (a: RateLimitAdmin) => Promise<T>,
): Promise<T> {
  const { dsn, schema } = resolveConnection(flags, io);
  const url = flags.redisUrl ?? io.env.TASKQ_REDIS_URL;
  const backend = await openClientBackend({
    ...(await cliPgSource(flags, io, dsn as string, 2)),
    schema,
    maxPoolSize: 2,
    field: '--dsn',
  });
  let redis: Redis | null = null;
  try {
    if (url) {
      redis = createOwnedRedis(url, flags.redisUrl ? '--redis-url' : 'TASKQ_REDIS_URL', {
        connectionName: 'taskq-cli',
        lazyConnect: true,
      });
      redis.on('error', () => undefined);
      await redis.connect().catch(() => io.err(`taskq: Redis at ${url} is unreachable; reading Postgres`));
    }
    return await fn(RateLimitAdmin.forBackend(backend, { redis }));
  } catch (err) {
    // Naming something that does not exist, or what cannot be reset, is a usage error.
    if (err instanceof RateLimitNotFound || err instanceof InvalidArgumentError)
      throw new CliExit(2, err.message);
    if (err instanceof RateLimitBackendMissing)
      throw new CliExit(2, `${err.message} (pass --redis-url or set TASKQ_REDIS_URL)`);
    throw err;
  } finally {
    if (redis) await closeOwnedRedis(redis);
    await backend.close();
  }
}

const options = (c: Command): Command =>
  c
    .option('--dsn <dsn>', 'Postgres connection string (default: $TASKQ_PG_DSN)')
    .option(...PG_CREDENTIAL_PROVIDER_OPTION)
    .option('--schema <schema>', 'schema (default: $TASKQ_SCHEMA_NAME or taskq)')
    .option('--redis-url <url>', 'Redis, for Redis-backed limits (default: $TASKQ_REDIS_URL)');

const describeState = (s: RateLimitState): string => {
  const left =
    s.kind === 'token_bucket'
      ? `tokens ${s.tokensRemaining.toFixed(2)}/${s.capacity}`
      : `remaining ${s.remaining.toFixed(2)}/${s.limit}`;
  const wait = s.isExhausted
    ? s.retryAfterMs === null
      ? ' exhausted (fixed quota: never refills; reset it)'
      : ` exhausted, next admission in ${Math.ceil(s.retryAfterMs)} ms`
    : '';
  return `${left} (store: ${s.backend})${wait}`;
};

/** `taskq ratelimits list|peek|reset`. */
export function rateLimitsCommand(io: CliIo): Command {
  const cmd = new Command('ratelimits').description('fleet-wide rate limits and reservations');
  options(cmd.command('list').description('published rate limits and reservations')).action(
    async (flags: RateLimitFlags) => {
      await withRateLimitAdmin(flags, io, async (a) => {
        const { rateLimits, reservations } = await a.list();
        if (rateLimits.length + reservations.length === 0)
          io.out('no rate limit or reservation published (workers publish theirs at startup)');
        for (const r of rateLimits) {
          const shape =
            r.kind === 'token_bucket'
              ? `capacity ${r.capacity} refill ${r.refillPerSecond}/s`
              : `limit ${r.capacity} per ${r.windowMs} ms`;
          io.out(
            `${r.name.padEnd(40)} ${r.kind.padEnd(12)} ${r.backend.padEnd(8)} ${shape}${r.keyed ? ' keyed' : ''}`,
          );
        }
        for (const r of reservations)
          io.out(
            `${r.name.padEnd(40)} ${'reservation'.padEnd(12)} ${'postgres'.padEnd(8)} held ${r.held}/${r.slots}${r.keyed ? ' keyed' : ''}`,
          );
      });
    },
  );
  options(cmd.command('peek <name>').description('current state (uses no token)')).action(
    async (name: string, flags: RateLimitFlags) => {
      await withRateLimitAdmin(flags, io, async (a) => {
        const r = await a.peek(name);
        if (r.kind === 'reservation') io.out(`${r.row.name}: held ${r.row.held}/${r.row.slots} slots`);
        else io.out(`${r.row.name}: ${describeState(r.state)}`);
      });
    },
  );
  options(
    cmd.command('reset <name>').description('refill a rate limit (reservations cannot be reset)'),
  ).action(async (name: string, flags: RateLimitFlags) => {
    await withRateLimitAdmin(flags, io, async (a) => {
      const row = await a.reset(name);
      io.out(`${row.name}: reset (full again)`);
    });
  });
  return cmd;
}
