import type { Redis } from 'ioredis';

import { InvalidArgumentError } from '../../../errors/invalid-argument-error.js';
import type { Logger } from '../../../obs/logger.js';
import { closeOwnedRedis } from '../../../progress/redis-progress-publisher.js';
import { RateLimitBackendMissing, RateLimitStoreCorrupt, RateLimitStoreUnavailable } from '../../errors.js';
import { checkKnownKeys } from '../../../core/closest-name.js';
import { DEFAULT_REDIS_KEY_PREFIX, type RateLimitBackend } from '../../types.js';
import type {
  BucketKind,
  BucketMetadata,
  GcraOutcome,
  GcraReading,
  RateLimitStore,
  ReservationSpec,
  SlidingLogOutcome,
  SlidingLogReading,
  SlidingWindowSpec,
  SlotCounts,
  SlotOutcome,
  SlotSyncResult,
  SweepIdleKeyedResult,
  TokenBucketOutcome,
  TokenBucketReading,
  TokenBucketSpec,
  PublishedBucket,
  ReservationSummary,
} from '../rate-limit-store.js';
import * as LUA from './lua.generated.js';
import { isRedisConnectionError, isWrongTypeError } from './redis-errors.js';

/** Options of {@link RedisRateLimitStore}. Give exactly one of `redis` and `createClient`. */
export interface RedisRateLimitStoreOptions {
  /** An ioredis client: yours, never closed by the store. */
  redis?: Redis | null;
  /**
   * Builds the client on first need (`open()` or the first operation); the store owns it, logs its
   * connection errors (`ratelimit-redis-error`, at most one line per 10 s) and `close()` closes it.
   */
  createClient?: (() => Redis) | null;
  /** Prefix of every key: `{prefix}{tb|gcra|swlog}:{name}`. Default `'taskq:rl:'`. */
  keyPrefix?: string;
  /** Where the owned client's connection problems go. Default: silent. */
  logger?: Logger | null;
}

/** The keys of {@link RedisRateLimitStoreOptions}: any other is refused (a misspelt `keyPrefix` meant the default). */
const REDIS_STORE_OPTION_KEYS: readonly string[] = ['redis', 'createClient', 'keyPrefix', 'logger'];

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
async function runScript(
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

/** Redis key segment of each state shape. */
const KEY_KIND: Record<BucketKind, string> = { token_bucket: 'tb', gcra: 'gcra', sliding_log: 'swlog' };

/** Parses a numeric script reply field; a non-number means the store returned garbage. */
function replyNumber(value: string | undefined, bucketName: string, what: string): number {
  const n = value === undefined || value === '' ? Number.NaN : Number(value);
  if (!Number.isFinite(n))
    throw new RateLimitStoreCorrupt(bucketName, 'redis', `${what} is ${String(value)}`);
  return n;
}

const unusedFactory = (): never => {
  throw new Error('a key-prefix view uses its base store’s client');
};

const NO_SLOTS = 'reservations live in Postgres or memory: the Redis store holds no slots';

/** The client of a store and its prefix views: given, or built and owned on first need. */
class RedisConnection {
  private client: Redis | null;
  private opening: Promise<void> | null = null;
  private closed = false;
  private lastWarn = 0;

  constructor(
    given: Redis | null,
    private readonly createClient: (() => Redis) | null,
    private readonly logger: Logger | null,
  ) {
    this.client = given;
  }

  /** The client; an owned one is built and connected (once) first. */
  async get(): Promise<Redis> {
    if (this.createClient && !this.closed) await this.open();
    if (this.client) return this.client;
    throw new Error('Connection is closed (the rate-limit store was closed)');
  }

  /** Builds and connects an owned client, once; a failed connect is logged, not thrown. */
  open(): Promise<void> {
    if (!this.createClient || this.closed) return Promise.resolve();
    this.opening ??= this.connect(this.createClient);
    return this.opening;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.createClient && this.client) await closeOwnedRedis(this.client);
  }

  private async connect(createClient: () => Redis): Promise<void> {
    const client = createClient();
    client.on('error', (err: Error) => {
      // ioredis reports every failed reconnect; one line per 10 s is enough.
      if (Date.now() - this.lastWarn < 10_000) return;
      this.lastWarn = Date.now();
      this.logger?.warn({ err: err.message }, 'ratelimit-redis-error');
    });
    this.client = client;
    try {
      await client.connect();
    } catch (err) {
      // Not fatal: acquisitions fall back to Postgres (or surface the error) until Redis is back.
      this.logger?.warn({ err: (err as Error).message }, 'ratelimit-redis-unavailable-at-start');
    }
  }
}

/**
 * Rate-limit state in Redis: each operation is one atomic Lua script (`lua/*.lua`, run by
 * `EVALSHA`) that reads time only from Redis `TIME`, so the clients' clocks never matter. Keys are
 * `{prefix}tb:{name}` (a hash: `tokens`, `ts`), `{prefix}gcra:{name}` (a string: the arrival time)
 * and `{prefix}swlog:{name}` (a sorted set of request ids scored by admission time); every write
 * sets the key's TTL, so Redis memory bounds itself.
 *
 * A connection or timeout error raises `RateLimitStoreUnavailable` (cause: the ioredis error): wrap
 * the store in a {@link FallbackRateLimitStore} to continue on Postgres. A key holding something no
 * honest write produces raises `RateLimitStoreCorrupt`. Redis holds no reservation slots.
 */
export class RedisRateLimitStore implements RateLimitStore {
  /** Always `'redis'`. */
  readonly backend = 'redis' as const;
  /** Prefix of every key. */
  readonly keyPrefix: string;
  private connection: RedisConnection;
  private views = new Map<string, RedisRateLimitStore>();

  constructor(options: RedisRateLimitStoreOptions) {
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('RedisRateLimitStore.options', options, 'must be an object');
    // Allocation-free: a context that gives `redis` instead of `stores` builds one per call.
    checkKnownKeys(
      options,
      REDIS_STORE_OPTION_KEYS,
      'RedisRateLimitStore',
      'an option of RedisRateLimitStore',
    );
    const given = options.redis ?? null;
    const createClient = options.createClient ?? null;
    if ((given === null) === (createClient === null)) {
      throw new InvalidArgumentError(
        'RedisRateLimitStore.redis',
        given,
        'pass exactly one of an ioredis client (redis) and a client factory (createClient)',
      );
    }
    this.keyPrefix = options.keyPrefix ?? DEFAULT_REDIS_KEY_PREFIX;
    this.connection = new RedisConnection(given, createClient, options.logger ?? null);
  }

  /** The same client under another key prefix (views are cached; they share the connection). */
  withKeyPrefix(prefix: string): RedisRateLimitStore {
    if (prefix === this.keyPrefix) return this;
    let view = this.views.get(prefix);
    if (!view) {
      // The view's own connection is replaced by the base store's before any use.
      view = new RedisRateLimitStore({ createClient: unusedFactory, keyPrefix: prefix });
      view.connection = this.connection;
      view.views = this.views;
      this.views.set(prefix, view);
    }
    return view;
  }

  /** Itself for `'redis'`, else null. */
  forBackend(backend: RateLimitBackend): RateLimitStore | null {
    return backend === 'redis' ? this : null;
  }

  /** The key of rate limit `name` of shape `kind`: `{prefix}{tb|gcra|swlog}:{name}`. */
  key(kind: BucketKind, name: string): string {
    return `${this.keyPrefix}${KEY_KIND[kind]}:${name}`;
  }

  /** Connects an owned client (a failure is logged, not thrown); a given client is left alone. */
  open(): Promise<void> {
    return this.connection.open();
  }

  /** Closes an owned client; a given one is left open. */
  close(): Promise<void> {
    return this.connection.close();
  }

  // ---------------------------------------------------------------- token bucket

  async acquireTokens(bucket: TokenBucketSpec, count: number): Promise<TokenBucketOutcome> {
    const reply = await this.tokenScript(bucket, 'acquire', count, false);
    return {
      status: reply[0] === 'allowed' ? 'allowed' : 'denied',
      backend: 'redis',
      tokens: replyNumber(reply[1], bucket.name, 'tokens'),
      available: replyNumber(reply[2], bucket.name, 'available tokens'),
      previousTokens: null,
    };
  }

  async refundTokens(bucket: TokenBucketSpec, count: number): Promise<void> {
    await this.tokenScript(bucket, 'refund', count, true);
  }

  async peekTokens(bucket: TokenBucketSpec): Promise<TokenBucketReading> {
    const reply = await this.tokenScript(bucket, 'peek', 1, false);
    return { backend: 'redis', available: replyNumber(reply[1], bucket.name, 'tokens') };
  }

  private async tokenScript(
    bucket: TokenBucketSpec,
    mode: 'acquire' | 'refund' | 'peek',
    count: number,
    refund: boolean,
  ): Promise<string[]> {
    const key = this.key('token_bucket', bucket.name);
    const reply = await this.script(bucket.name, 'taskqRlTokenBucket', key, refund, [
      mode,
      bucket.capacity,
      bucket.refillPerSecond,
      count,
      Math.ceil(bucket.ttlMs),
    ]);
    if (reply[0] === 'corrupt')
      throw new RateLimitStoreCorrupt(bucket.name, 'redis', `hash holds tokens=${reply[1]} ts=${reply[2]}`);
    return reply;
  }

  // ---------------------------------------------------------------- GCRA

  async acquireGcra(window: SlidingWindowSpec): Promise<GcraOutcome> {
    const reply = await this.gcraScript(window, 'acquire', false);
    return {
      status: reply[0] === 'allowed' ? 'allowed' : 'denied',
      backend: 'redis',
      debtMs: replyNumber(reply[1], window.name, 'debt') / 1000,
      previousTatMs: reply[2] ? replyNumber(reply[2], window.name, 'tat') / 1000 : null,
    };
  }

  async refundGcra(window: SlidingWindowSpec): Promise<void> {
    await this.gcraScript(window, 'refund', true);
  }

  async peekGcra(window: SlidingWindowSpec): Promise<GcraReading> {
    const reply = await this.gcraScript(window, 'peek', false);
    return { backend: 'redis', debtMs: Math.max(0, replyNumber(reply[1], window.name, 'debt') / 1000) };
  }

  private async gcraScript(
    window: SlidingWindowSpec,
    mode: 'acquire' | 'refund' | 'peek',
    refund: boolean,
  ): Promise<string[]> {
    const key = this.key('gcra', window.name);
    const reply = await this.script(window.name, 'taskqRlGcra', key, refund, [
      mode,
      window.limit,
      window.windowMs,
      Math.ceil(window.ttlMs),
    ]);
    if (reply[0] === 'corrupt')
      throw new RateLimitStoreCorrupt(window.name, 'redis', `key ${key} holds ${reply[1]}`);
    return reply;
  }

  // ---------------------------------------------------------------- sliding log

  async acquireLog(window: SlidingWindowSpec, requestId: string): Promise<SlidingLogOutcome> {
    const reply = await this.logScript(window, 'acquire', requestId, false);
    return {
      status: reply[0] === 'allowed' ? 'allowed' : 'denied',
      backend: 'redis',
      live: replyNumber(reply[3], window.name, 'live count'),
      retryMs: replyNumber(reply[2], window.name, 'retry') / 1000,
    };
  }

  async refundLog(window: SlidingWindowSpec, requestId: string): Promise<void> {
    await this.logScript(window, 'refund', requestId, true);
  }

  async peekLog(window: SlidingWindowSpec): Promise<SlidingLogReading> {
    const reply = await this.logScript(window, 'peek', '', false);
    return {
      backend: 'redis',
      live: replyNumber(reply[3], window.name, 'live count'),
      retryMs: replyNumber(reply[2], window.name, 'retry') / 1000,
    };
  }

  private async logScript(
    window: SlidingWindowSpec,
    mode: 'acquire' | 'refund' | 'peek',
    requestId: string,
    refund: boolean,
  ): Promise<string[]> {
    const key = this.key('sliding_log', window.name);
    const reply = await this.script(window.name, 'taskqRlSlidingLog', key, refund, [
      mode,
      window.limit,
      window.windowMs,
      Math.ceil(window.ttlMs),
      requestId,
    ]);
    if (reply[0] === 'corrupt')
      throw new RateLimitStoreCorrupt(window.name, 'redis', `key ${key} holds ${reply[1]}`);
    return reply;
  }

  // ---------------------------------------------------------------- shared

  /** Deletes the key: an absent key is a full bucket or an empty window. */
  async resetBucket(name: string, kind: BucketKind): Promise<void> {
    const key = this.key(kind, name);
    try {
      await (await this.connection.get()).del(key);
    } catch (err) {
      throw this.mapError(err, name, key, false);
    }
  }

  /** Redis keeps no admin list (Postgres does): always false. */
  async publishBucket(_meta: BucketMetadata): Promise<boolean> {
    return false;
  }

  /** Redis keys expire by TTL: nothing to sweep. */
  async sweepIdleKeyed(_idleForMs: number): Promise<SweepIdleKeyedResult> {
    return { rateLimitRows: 0, reservationBuckets: 0, reservationRows: 0 };
  }

  // ---------------------------------------------------------------- reservation slots (none)

  /** @throws RateLimitBackendMissing: Redis holds no slots. */
  async ensureSlots(reservation: ReservationSpec): Promise<void> {
    throw new RateLimitBackendMissing(reservation.name, 'driver', NO_SLOTS);
  }

  /** @throws RateLimitBackendMissing: Redis holds no slots. */
  async syncSlots(reservation: ReservationSpec): Promise<SlotSyncResult> {
    throw new RateLimitBackendMissing(reservation.name, 'driver', NO_SLOTS);
  }

  /** Always false: Redis holds no slots. */
  async slotRowsExist(_name: string): Promise<boolean> {
    return false;
  }

  /** @throws RateLimitBackendMissing: Redis holds no slots. */
  async acquireSlot(reservation: ReservationSpec, _jobId: string, _workerId: string): Promise<SlotOutcome> {
    throw new RateLimitBackendMissing(reservation.name, 'driver', NO_SLOTS);
  }

  /** Always false: Redis holds no slots. */
  async releaseSlot(
    _name: string,
    _slotIndex: number,
    _workerId: string,
    _fence: string | null,
  ): Promise<boolean> {
    return false;
  }

  /** Always 0: Redis holds no slots. */
  async extendSlotLeases(_workerId: string, _leaseMs: number, _name: string | null): Promise<number> {
    return 0;
  }

  /** Always empty: Redis holds no slots. */
  async peekSlots(_name: string): Promise<SlotCounts> {
    return { free: 0, held: 0, total: 0 };
  }

  /** Always empty: rate limits are published to Postgres, not to Redis. */
  async listBuckets(_name?: string | null): Promise<PublishedBucket[]> {
    return [];
  }

  /** Always empty: Redis holds no slots. */
  async listReservations(_name?: string | null): Promise<ReservationSummary[]> {
    return [];
  }

  // ---------------------------------------------------------------- plumbing

  private async script(
    bucketName: string,
    command: CommandName,
    key: string,
    refund: boolean,
    args: readonly (string | number)[],
  ): Promise<string[]> {
    try {
      return await runScript(await this.connection.get(), command, key, args);
    } catch (err) {
      throw this.mapError(err, bucketName, key, refund);
    }
  }

  /**
   * An outage becomes `RateLimitStoreUnavailable` (a refund's says the refund failed: refunds go to
   * the store that paid and never fall back), a WRONGTYPE reply `RateLimitStoreCorrupt`; anything
   * else propagates unchanged.
   */
  private mapError(err: unknown, bucketName: string, key: string, refund: boolean): unknown {
    if (isRedisConnectionError(err)) {
      const message = (err as Error).message;
      return new RateLimitStoreUnavailable(
        bucketName,
        'redis',
        refund ? `refund failed: ${message}` : message,
        {
          cause: err,
        },
      );
    }
    if (isWrongTypeError(err)) {
      return new RateLimitStoreCorrupt(bucketName, 'redis', `key ${key} holds the wrong data type`, {
        cause: err,
      });
    }
    return err;
  }
}
