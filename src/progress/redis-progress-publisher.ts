import { createRequire } from 'node:module';

import type { Redis } from 'ioredis';

import type { JobStatus } from '../backend/types.js';
import { createCredentialedRedis } from '../credentials/credentialed-redis.js';
import { checkRedisUrlWithoutCredentials, warnPlaintextRedis } from '../credentials/redis-credential-url.js';
import type { ReloadableRedisCredentials } from '../credentials/reloadable-redis-credentials.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import type { Logger } from '../obs/logger.js';
import { silentLogger } from '../obs/logger.js';
import { validateSchemaName } from '../core/schema-name.js';
import { buildProgressEvent, encodeProgressEvent } from './progress-event-codec.js';
import { progressGlobalChannel, progressJobChannel } from './progress-channels.js';
import type { ProgressEvent, ProgressPublisher } from './progress-event.js';
import * as LUA from './lua.generated.js';
import { RateLimitedWarning } from './rate-limited-warning.js';

/** The name `publish-many.lua` is defined under on the client. */
const PUBLISH_MANY = 'taskqPublishProgressMany';

/** Events per script call: a larger flush is split, so that no one call holds Redis for long. */
export const MAX_EVENTS_PER_CALL = 500;

type PublishManyFn = (...args: (string | ((err?: unknown) => void))[]) => unknown;

/** Options of {@link RedisProgressPublisher}. Give exactly one of `redisUrl` and `redis`. */
export interface RedisProgressPublisherOptions {
  /** Schema of the jobs (part of every channel name). */
  schema: string;
  /** `redis://` or `rediss://` URL; the publisher builds and owns the client (closed by `close()`). */
  redisUrl?: string;
  /**
   * With `redisUrl`: authenticates the publisher's client with a credential provider, fetched at
   * every (re)connect; `redisCredentials.reload()` re-authenticates it (see docs/credentials.md).
   */
  redisCredentials?: ReloadableRedisCredentials | null;
  /**
   * Your own ioredis client; the publisher never closes it. It defines one script command on it,
   * `taskqPublishProgressMany` (a client without `defineCommand` gets plain PUBLISHes).
   */
  redis?: Redis;
  /** Also publish to the schema-wide channel `taskq:{schema}:progress`. Default true. */
  publishGlobal?: boolean;
  /** Logger (pino-compatible). Default: silent. */
  logger?: Logger;
  /** How long `close()` waits for publishes in flight, in ms. Default 2000. */
  closeTimeoutMs?: number;
  /** Least time between two `progress-publish-failed` warnings, in ms. Default 10 000. */
  warnIntervalMs?: number;
}

/** Counters of a publisher (for metrics and tests). */
export interface ProgressPublisherStats {
  /** Events Redis accepted. */
  published: number;
  /** Events that could not be published (Redis down, closed publisher, unencodable event). */
  failed: number;
  /** Publishes in flight. */
  pending: number;
}

/**
 * Publishes live progress to Redis pub/sub: each event goes to the job's channel
 * `taskq:{schema}:progress:{jobId}` and, when `publishGlobal` is on, to `taskq:{schema}:progress`.
 * The payload is the event as JSON (absent fields left out).
 *
 * Events published in one turn of the event loop go out together, at the end of that turn: one
 * `publish-many.lua` script call per up to {@link MAX_EVENTS_PER_CALL} events (a lone event, or a
 * client you pass in without `defineCommand`, by plain PUBLISHes). Order is kept.
 *
 * Fire-and-forget: `publish()` returns at once and never throws. A failed publish is counted and
 * logged (`progress-publish-failed`, at most once per `warnIntervalMs`); Postgres stays the durable
 * record of progress. While Redis is unreachable an owned client fails publishes at once instead
 * of queueing them, and reconnects in the background.
 */
export class RedisProgressPublisher implements ProgressPublisher {
  readonly schema: string;
  private readonly redis: Redis;
  private readonly owned: boolean;
  private readonly publishGlobal: boolean;
  private readonly logger: Logger;
  private readonly closeTimeoutMs: number;
  private readonly failures: RateLimitedWarning;
  private readonly connectionErrors: RateLimitedWarning;
  /** Events queued or sent and not yet answered on every channel. */
  private inFlight = 0;
  /** Events waiting for the flush: job id, then encoded event, per event. */
  private queued: string[] = [];
  private flushScheduled = false;
  private scriptDefined = false;
  /** Resolves `close()`'s wait once `inFlight` drops to zero. */
  private onIdle: (() => void) | null = null;
  private published = 0;
  private failed = 0;
  private closing: Promise<void> | null = null;

  constructor(options: RedisProgressPublisherOptions) {
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('RedisProgressPublisher', options, 'options must be an object');
    this.schema = validateSchemaName(options.schema, 'RedisProgressPublisher.schema');
    const hasUrl = options.redisUrl !== undefined && options.redisUrl !== null;
    const hasClient = options.redis !== undefined && options.redis !== null;
    if (hasUrl === hasClient)
      throw new InvalidArgumentError(
        'RedisProgressPublisher',
        hasUrl ? 'redisUrl, redis' : 'none',
        'give exactly one of redisUrl or redis',
      );
    this.logger = options.logger ?? silentLogger;
    this.publishGlobal = options.publishGlobal ?? true;
    this.closeTimeoutMs = options.closeTimeoutMs ?? 2000;
    const warnIntervalMs = options.warnIntervalMs ?? 10_000;
    this.failures = new RateLimitedWarning(this.logger, 'progress-publish-failed', warnIntervalMs);
    this.connectionErrors = new RateLimitedWarning(this.logger, 'progress-redis-unavailable', warnIntervalMs);
    if (hasClient) {
      if (typeof (options.redis as Partial<Redis>).publish !== 'function')
        throw new InvalidArgumentError(
          'RedisProgressPublisher.redis',
          '(object)',
          'must be an ioredis client',
        );
      this.redis = options.redis!;
      this.owned = false;
    } else {
      this.redis = createOwnedRedis(options.redisUrl, 'RedisProgressPublisher.redisUrl', {
        connectionName: 'taskq-progress-publisher',
        credentials: options.redisCredentials ?? null,
      });
      this.owned = true;
      // Without a listener ioredis prints every connection error; these are expected during outages.
      this.redis.on('error', (err: Error) => this.connectionErrors.warn({ err: err.message }));
    }
  }

  /** Counters since construction. */
  get stats(): ProgressPublisherStats {
    return { published: this.published, failed: this.failed, pending: this.inFlight };
  }

  publish(event: ProgressEvent): void {
    if (this.closing) {
      this.failed++;
      return;
    }
    let payload: string;
    try {
      payload = encodeProgressEvent(event);
    } catch (err) {
      this.fail(err, event.jobId, 1);
      return;
    }
    // Queued for this turn of the event loop: a worker publishes the terminal events of a whole
    // outcome write at once (hundreds), and one command per channel per event was most of what a
    // Redis URL cost it (each ioredis command allocates a command object, its promise and its
    // reply). The flush sends them in one script call.
    this.inFlight++;
    this.queued.push(event.jobId, payload);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
  }

  /** Sends the queued events: one script call per {@link MAX_EVENTS_PER_CALL}, or plain PUBLISHes. */
  private readonly flush = (): void => {
    this.flushScheduled = false;
    const queued = this.queued;
    this.queued = [];
    const events = queued.length / 2;
    if (events === 1 || typeof this.redis.defineCommand !== 'function') {
      for (let i = 0; i < queued.length; i += 2) this.publishEach(queued[i]!, queued[i + 1]!);
      return;
    }
    if (!this.scriptDefined) {
      this.redis.defineCommand(PUBLISH_MANY, { numberOfKeys: 0, lua: LUA.publishMany });
      this.scriptDefined = true;
    }
    const global = this.publishGlobal ? progressGlobalChannel(this.schema) : '';
    for (let from = 0; from < queued.length; from += 2 * MAX_EVENTS_PER_CALL) {
      const to = Math.min(queued.length, from + 2 * MAX_EVENTS_PER_CALL);
      const args: string[] = [global];
      for (let i = from; i < to; i += 2)
        args.push(progressJobChannel(this.schema, queued[i]!), queued[i + 1]!);
      const n = (to - from) / 2;
      const done = (err?: unknown): void => this.settled(n, err, queued[from]!);
      try {
        (this.redis as unknown as Record<string, PublishManyFn>)[PUBLISH_MANY]!.call(
          this.redis,
          ...args,
          done,
        );
      } catch (err) {
        // A caller's client may throw synchronously (e.g. after `quit()`); never let it reach the handler.
        done(err);
      }
    }
  };

  /** One event by one PUBLISH per channel (a lone event, or a client without scripts). */
  private publishEach(jobId: string, payload: string): void {
    // Callbacks, not promises: an event counts as published once every channel has taken it.
    let left = this.publishGlobal ? 2 : 1;
    let error: unknown = null;
    const done = (err?: unknown): void => {
      if (err && error === null) error = err;
      if (--left === 0) this.settled(1, error, jobId);
    };
    const send = (channel: string): void => {
      try {
        this.redis.publish(channel, payload, done);
      } catch (err) {
        done(err);
      }
    };
    send(progressJobChannel(this.schema, jobId));
    if (this.publishGlobal) send(progressGlobalChannel(this.schema));
  }

  /** Counts `n` events answered (published, or failed with `err`). */
  private settled(n: number, err: unknown, firstJobId: string): void {
    this.inFlight -= n;
    if (!err) this.published += n;
    else this.fail(err, firstJobId, n);
    if (this.inFlight === 0) this.onIdle?.();
  }

  publishTerminal(
    jobId: string,
    actor: string,
    status: JobStatus,
    seq: number,
    state: Record<string, unknown>,
  ): void {
    this.publish(
      buildProgressEvent({ kind: 'state_change', jobId, actor, seq, status, state, terminal: true }),
    );
  }

  /**
   * Waits up to `closeTimeoutMs` for publishes in flight, then closes the client if the publisher
   * built it. Later publishes are dropped (and counted as failed). Safe to call twice.
   */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    if (this.inFlight > 0) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.onIdle = resolve;
        timer = setTimeout(resolve, this.closeTimeoutMs);
      });
      clearTimeout(timer);
      this.onIdle = null;
    }
    if (this.owned) await closeOwnedRedis(this.redis);
  }

  private fail(err: unknown, jobId: string, events: number): void {
    this.failed += events;
    this.failures.warn({
      err: err instanceof Error ? err.message : String(err),
      jobId,
      events,
      failed: this.failed,
    });
  }
}

let redisClass: typeof Redis | null = null;

/**
 * ioredis's client class, loaded on first use rather than imported: a process that never talks to
 * Redis (the default) never loads it. Importing ioredis adds noticeably to the memory and start-up
 * time of every worker and client process.
 */
function loadRedisClass(): typeof Redis {
  redisClass ??= (createRequire(import.meta.url)('ioredis') as { Redis: typeof Redis }).Redis;
  return redisClass;
}

/**
 * Builds a TaskQ-owned ioredis client that fails commands at once while disconnected (no offline
 * queue) and pipelines automatically: the commands issued in one turn of the event loop go out in
 * one socket write. A busy worker issues several per job (a rate limit's script, the lifecycle
 * events on the job's and the schema's progress channels), and a write per command costs a system
 * call and a wake-up of the Redis server each: about half of Redis's CPU per job, and a slower drain
 * (bench/NOTES.md).
 *
 * With `credentials` (a provider's), the URL must carry no credentials, a `redis://` URL logs
 * `redis-credential-over-plaintext`, and every (re)connect authenticates with a freshly fetched one.
 */
export function createOwnedRedis(
  url: unknown,
  field: string,
  extra: { connectionName: string; lazyConnect?: boolean; credentials?: ReloadableRedisCredentials | null },
): Redis {
  if (typeof url !== 'string' || url.trim() === '' || !/^rediss?:\/\//i.test(url.trim()))
    throw new InvalidArgumentError(field, url, 'must be a URL starting with redis:// or rediss://');
  const options = {
    connectionName: extra.connectionName,
    lazyConnect: extra.lazyConnect ?? false,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    enableAutoPipelining: true,
  };
  if (extra.credentials) {
    // With a provider, the credential is fetched at every (re)connect and never read from the URL.
    const checked = checkRedisUrlWithoutCredentials(url, field);
    warnPlaintextRedis(checked, extra.credentials.logger);
    return createCredentialedRedis(checked, options, extra.credentials);
  }
  const RedisClient = loadRedisClass();
  return new RedisClient(url.trim(), options);
}

/** Closes a client TaskQ owns: a polite QUIT when connected (bounded), else an immediate disconnect. */
export async function closeOwnedRedis(redis: Redis): Promise<void> {
  if (redis.status === 'ready') {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        redis.quit(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('quit timed out')), 1000);
        }),
      ]);
    } catch {
      // fall through to the hard disconnect
    } finally {
      clearTimeout(timer);
    }
  }
  redis.disconnect();
}
