import type { Backend } from '../backend/backend.js';
import type { EventRow } from '../backend/types.js';
import { toMs, type Duration } from '../core/duration.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import type { Logger } from '../obs/logger.js';
import { checkOptionsObject } from '../core/closest-name.js';

const WATCH_OPTION_KEYS: readonly string[] = ['afterId', 'pollTimeout', 'visibilityDelay', 'limit', 'signal'];

/** Default trailing watermark of the reclaim feed. */
export const RECLAIM_EVENT_VISIBILITY_DELAY_MS = 2000;
/** How often `watchReclaims` checks for long-running `job_events` writers. */
export const VISIBILITY_RISK_CHECK_INTERVAL_MS = 60_000;

/** Options of `watchReclaims()`. */
export interface WatchReclaimsOptions {
  /** Resume after this event id (a decimal string; persist it after processing). Default `'0'`. */
  afterId?: string;
  /** Longest wait between polls when no NOTIFY arrives. Default 30 s. */
  pollTimeout?: Duration;
  /** Trailing watermark: events younger than this are held back. Default 2 s. */
  visibilityDelay?: Duration;
  /** Events per poll. Default 100. */
  limit?: number;
  /** Stops the iteration when aborted. */
  signal?: AbortSignal;
}

/**
 * The fleet-wide crash-reclaim feed: every job a maintenance leader reclaimed after its worker's
 * lease expired (`to_state` pending, crashed or cancelled), in event-id order.
 *
 * Delivery is at-least-once: persist the cursor (`eventId`) after processing and dedupe on it. The
 * feed is gap-free as long as no `job_events` writer keeps its transaction open longer than the
 * visibility delay; once a minute the watcher looks for such transactions and logs
 * `watch-reclaims-visibility-delay-at-risk`. NOTIFY only wakes it; polling is the source of truth,
 * and a full page is followed by the next at once. Breaking out of the loop releases the LISTEN.
 */
export async function* watchReclaims(
  backend: Backend,
  logger: Logger,
  options: WatchReclaimsOptions = {},
): AsyncGenerator<EventRow> {
  checkOptionsObject(options, WATCH_OPTION_KEYS, 'watchReclaims.options', 'an option of watchReclaims()');
  let cursor = options.afterId ?? '0';
  if (typeof cursor !== 'string' || !/^\d+$/.test(cursor)) {
    throw new InvalidArgumentError(
      'watchReclaims.afterId',
      cursor,
      'must be a non-negative integer event id as a string',
    );
  }
  const pollMs = toMs(options.pollTimeout ?? 30_000, 'watchReclaims.pollTimeout');
  const delayMs = toMs(
    options.visibilityDelay ?? RECLAIM_EVENT_VISIBILITY_DELAY_MS,
    'watchReclaims.visibilityDelay',
    'nonNegative',
  );
  const limit = options.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1)
    throw new InvalidArgumentError('watchReclaims.limit', limit, 'must be an integer >= 1');

  let notifiedAt: number | null = null;
  let wake: () => void = () => undefined;
  const sub = await backend
    .subscribe({
      onWake: () => {
        notifiedAt = performance.now();
        wake();
      },
    })
    .catch((err: unknown) => {
      logger.warn({ err }, 'watch-reclaims-listen-unavailable-polling');
      return null;
    });
  const onAbort = (): void => wake();
  options.signal?.addEventListener('abort', onAbort);
  let lastRiskCheck = -Infinity;
  try {
    while (!options.signal?.aborted) {
      const riskCheck = backend.checkReclaimVisibilityDelayRisk?.bind(backend);
      if (riskCheck && performance.now() - lastRiskCheck >= VISIBILITY_RISK_CHECK_INTERVAL_MS) {
        lastRiskCheck = performance.now();
        try {
          for (const w of await riskCheck(delayMs)) {
            logger.warn(
              {
                pid: w.pid,
                openMs: w.openMs,
                applicationName: w.applicationName,
                query: w.query,
                marginMs: delayMs,
              },
              'watch-reclaims-visibility-delay-at-risk',
            );
          }
        } catch (err) {
          logger.debug({ err }, 'watch-reclaims-risk-check-failed');
        }
      }
      const rows = await backend.pollReclaimEvents(cursor, { limit, visibilityDelayMs: delayMs });
      for (const row of rows) {
        cursor = row.eventId;
        yield row;
      }
      if (rows.length === limit) continue;
      // After a NOTIFY the new events are held back until they clear the watermark: look again
      // shortly until then, rather than waiting a whole poll timeout.
      let waitMs = pollMs;
      if (notifiedAt !== null) {
        const since = performance.now() - notifiedAt;
        if (since < delayMs + 500)
          waitMs = Math.min(pollMs, Math.max(50, Math.min(250, delayMs + 100 - since)));
        else notifiedAt = null;
      }
      // An abort during the risk check or the poll found `wake` a no-op: look before sleeping.
      if (options.signal?.aborted) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, waitMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = () => undefined;
    }
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    await sub?.close().catch(() => undefined);
  }
}
