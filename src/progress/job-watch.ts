import type { Backend } from '../backend/backend.js';
import type { JobRow } from '../backend/types.js';
import { JobNotFoundError } from '../errors/job-errors.js';
import type { Logger } from '../obs/logger.js';
import { isTransientError } from '../db/transient-errors.js';
import type { JobNotificationFanout } from './job-notification-fanout.js';
import { decodeProgressEvent } from './progress-event-codec.js';
import { progressJobChannel } from './progress-channels.js';
import type { ProgressEvent } from './progress-event.js';
import type { RedisProgressSubscriber } from './redis-progress-subscriber.js';
import { RateLimitedWarning } from './rate-limited-warning.js';

/** Default re-read interval of a stream with no live push source for progress. */
export const STREAM_POLL_INTERVAL_MS = 500;
/** Default longest time between two row reads while push sources are live. */
export const STREAM_POLL_TIMEOUT_MS = 30_000;
/** A stream whose reads keep failing with transient errors gives up after this long. */
const READ_GIVE_UP_MS = 60_000;
/** How long a stream waits for its LISTEN before its first live read (it polls meanwhile). */
const LISTEN_SETUP_WAIT_MS = 5000;

/** Live transport of a client: Redis pub/sub, when configured. */
export interface RedisTransport {
  subscriber: RedisProgressSubscriber;
  schema: string;
}

/** What a watch reads from and listens to. */
export interface JobWatchSources {
  backend: Backend;
  logger: Logger;
  /** Redis pub/sub, when the client has it. */
  redis: RedisTransport | null;
  /** The client's shared LISTEN on the progress and done channels. */
  notifications: JobNotificationFanout;
}

/** Cadence of a watch. */
export interface JobWatchTiming {
  /** Re-read interval while nothing pushes progress (Redis down or absent). */
  pollIntervalMs: number;
  /** Longest time between reads while push sources are live (a safety net for lost messages). */
  pollTimeoutMs: number;
  /**
   * When true, a live LISTEN counts as a progress source (re-read on NOTIFY, else every
   * `pollTimeoutMs`); when false the watch keeps polling every `pollIntervalMs` without Redis.
   */
  listenCoversProgress: boolean;
}

/** One item of a watch: a fresh row (the truth) or a live event from Redis. */
export type WatchItem = { type: 'row'; row: JobRow } | { type: 'event'; event: ProgressEvent };

/**
 * Watches one job until the consumer stops iterating (it returns after the terminal row) or `stop`
 * aborts. First the current row (with no subscription made: a finished job costs one read); then
 * it subscribes — Redis channel `taskq:{schema}:progress:{jobId}` when configured, and the shared
 * LISTEN on the progress and done channels — reads the row again (so nothing published before the
 * subscription is missed), and from then on yields Redis events as they come and a fresh row
 * whenever something may have changed:
 *
 * - a terminal event on Redis, a done NOTIFY, or Redis (re)subscribing: read now;
 * - a progress NOTIFY while Redis is not live: read now;
 * - otherwise every `pollTimeoutMs` while a push source is live, every `pollIntervalMs` if not.
 *
 * Transient read errors (Postgres restarting) are retried every `pollIntervalMs` for up to a
 * minute. Everything is released when the iteration ends, however it ends.
 */
export async function* watchJob(
  jobId: string,
  sources: JobWatchSources,
  timing: JobWatchTiming,
  stop: AbortSignal,
): AsyncGenerator<WatchItem> {
  const { backend, logger } = sources;
  const readWarning = new RateLimitedWarning(logger, 'job-stream-read-failed', 10_000);
  let failingSince: number | null = null;
  /** The row; undefined after a transient failure (try again later). */
  const read = async (): Promise<JobRow | undefined> => {
    try {
      const row = await backend.get(jobId);
      failingSince = null;
      if (row === null) throw new JobNotFoundError(jobId);
      return row;
    } catch (err) {
      if (!isTransientError(err)) throw err;
      failingSince ??= performance.now();
      if (performance.now() - failingSince > READ_GIVE_UP_MS) throw err;
      readWarning.warn({ err, jobId });
      return undefined;
    }
  };

  // The snapshot, before any subscription: a finished job needs nothing more.
  let first: JobRow | undefined;
  while (!stop.aborted && (first = await read()) === undefined) await sleep(timing.pollIntervalMs, stop);
  if (stop.aborted || !first) return;
  yield { type: 'row', row: first };
  if (stop.aborted) return;

  const events: ProgressEvent[] = [];
  let readDue = true;
  let redisUp = false;
  let wakeUp: () => void = () => undefined;
  const wake = (): void => wakeUp();

  const lease = sources.redis?.subscriber.listen(progressJobChannel(sources.redis.schema, jobId), {
    onMessage: (text) => {
      const event = decodeProgressEvent(text, jobId);
      if (!event) {
        logger.debug({ jobId }, 'job-stream-bad-message');
        return;
      }
      // The terminal state is taken from the row, which the terminal write made durable first.
      if (event.terminal) readDue = true;
      else events.push(event);
      wake();
    },
    onUp: () => {
      redisUp = true;
      readDue = true;
      wake();
    },
    onDown: () => {
      redisUp = false;
      wake();
    },
  });
  const fanout = sources.notifications;
  const release = fanout.add(jobId, {
    onProgress: () => {
      if (redisUp) return;
      readDue = true;
      wake();
    },
    onDone: () => {
      readDue = true;
      wake();
    },
    onLost: () => wake(),
  });
  let released: Promise<void> | null = null;
  const releaseAll = (): Promise<void> =>
    (released ??= (async () => {
      await lease?.close().catch(() => undefined);
      await release();
    })());
  // Stopping releases at once, even while the consumer sits on a yielded item (client closed).
  const onStop = (): void => {
    wake();
    void releaseAll();
  };
  stop.addEventListener('abort', onStop);
  try {
    await Promise.race([fanout.ensure(), sleep(LISTEN_SETUP_WAIT_MS, stop)]);
    let nextReadAt = 0;
    while (!stop.aborted) {
      const event = events.shift();
      if (event) {
        yield { type: 'event', event };
        continue;
      }
      const now = performance.now();
      if (readDue || now >= nextReadAt) {
        readDue = false;
        const row = await read();
        if (stop.aborted) return;
        if (row === undefined) {
          nextReadAt = performance.now() + timing.pollIntervalMs;
          continue;
        }
        const listening = fanout.isLive;
        const pushed = redisUp || (listening && timing.listenCoversProgress);
        nextReadAt = performance.now() + (pushed ? timing.pollTimeoutMs : timing.pollIntervalMs);
        yield { type: 'row', row };
        continue;
      }
      if (!fanout.isLive) void fanout.ensure();
      // A source may have come or gone since the last read: never wait past the current cadence.
      const pushed = redisUp || (fanout.isLive && timing.listenCoversProgress);
      if (!pushed) nextReadAt = Math.min(nextReadAt, now + timing.pollIntervalMs);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, nextReadAt - now));
        wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
        if (stop.aborted || readDue || events.length > 0) wakeUp();
      });
      wakeUp = () => undefined;
    }
  } finally {
    stop.removeEventListener('abort', onStop);
    await releaseAll();
  }
}

/** Sleeps `ms`, cut short by `stop`. */
function sleep(ms: number, stop: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (stop.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      stop.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    stop.addEventListener('abort', done);
  });
}
