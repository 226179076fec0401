/**
 * The job mix of `bench/mixed-load.ts`: its actors (declared the same way in the producer and in
 * the worker processes, since a job is routed by its actor's name and queue) and how the producer
 * draws each job's kind, priority and enqueue path. Shares are of all offered jobs.
 */
import type { JobContext } from '../../src/index.js';
import type { TaskqPackage } from '../systems/taskq-package.js';
import { sleep } from './common.js';

/** The main queue, and the second one a share of the jobs goes to. */
export const MIXED_QUEUE = 'mixed';
export const MIXED_SECOND_QUEUE = 'mixed-reports';

/** The kinds of job, in the order of {@link MIX} (a payload carries the index). */
export type MixedKind = 'noop' | 'sleep5' | 'sleep50' | 'flaky' | 'progress' | 'report';

/** One row of the mix. */
export interface MixRow {
  kind: MixedKind;
  /** Share of offered jobs, 0–1; the rows add up to 1. */
  share: number;
  /** What the handler does (for the README and the run's JSON). */
  what: string;
}

/**
 * The mix. Mostly no-op jobs (what a queue's throughput is bound by), a tail of short and long
 * sleeps (I/O-bound handlers holding a slot), a small share that fails once and is retried, a few
 * reporting progress, and a share on a second queue.
 */
export const MIX: readonly MixRow[] = [
  { kind: 'noop', share: 0.8, what: 'returns at once' },
  { kind: 'sleep5', share: 0.1, what: 'sleeps 5 ms' },
  { kind: 'sleep50', share: 0.03, what: 'sleeps 50 ms' },
  { kind: 'flaky', share: 0.02, what: 'throws on attempt 1, succeeds on attempt 2 (fixed 200 ms backoff)' },
  { kind: 'progress', share: 0.02, what: 'three ctx.progress() updates 5 ms apart' },
  {
    kind: 'report',
    share: 0.03,
    what: `returns at once, on the second queue "${MIXED_SECOND_QUEUE}"`,
  },
];

/** Share of jobs (of the kinds noop, sleep5, report) enqueued with priority {@link HIGH_PRIORITY}. */
export const HIGH_PRIORITY_SHARE = 0.1;
/** The high priority (the actors' default is 0; higher runs first). */
export const HIGH_PRIORITY = 10;
/**
 * Share of jobs enqueued through `enqueueBatch` (one call per producer tick); the rest one by one.
 * Each single enqueue is a commit of its own; at 2,000 jobs/s a quarter of them one by one is 500
 * commits/s beside 100 batch calls/s.
 */
export const BATCH_SHARE = 0.75;
/** Backoff before the flaky actor's second attempt. */
export const FLAKY_BACKOFF_MS = 200;

/** A mixed job's payload: the kind's index in {@link MIX}, `nowMs()` before the enqueue call, priority flag. */
export interface MixedPayload {
  k: number;
  t: number;
  /** 1 when enqueued with the high priority. */
  h?: 1;
}

/** What the worker process learns of each attempt. */
export interface MixedHooks {
  /** A handler started (every attempt). */
  onStart(payload: MixedPayload, attempt: number): void;
  /** A handler returned (the job succeeded). */
  onDone(payload: MixedPayload): void;
  /** A handler threw (the attempt failed; the policy decides whether it is retried). */
  onThrow(payload: MixedPayload): void;
}

/** The error the flaky actor's first attempt throws (retried by its policy). */
export class FlakyFailure extends Error {
  override name = 'FlakyFailure';
}

/**
 * The mix's actors, one per kind, in {@link MIX} order. The producer passes hooks that do nothing
 * (it only needs the refs to enqueue).
 */
export function mixedActors({ main }: TaskqPackage, hooks: MixedHooks) {
  const { actor } = main;
  const wrap =
    (body: (p: MixedPayload, ctx: JobContext) => Promise<void>) =>
    async (p: MixedPayload, ctx: JobContext) => {
      hooks.onStart(p, ctx.attempt);
      try {
        await body(p, ctx);
      } catch (err) {
        hooks.onThrow(p);
        throw err;
      }
      hooks.onDone(p);
      return undefined;
    };
  return [
    actor(
      { name: 'mixed_noop', queue: MIXED_QUEUE },
      wrap(async () => undefined),
    ),
    actor(
      { name: 'mixed_sleep5', queue: MIXED_QUEUE },
      wrap(() => sleep(5)),
    ),
    actor(
      { name: 'mixed_sleep50', queue: MIXED_QUEUE },
      wrap(() => sleep(50)),
    ),
    actor(
      {
        name: 'mixed_flaky',
        queue: MIXED_QUEUE,
        retry: { maxAttempts: 2, backoff: 'fixed', base: FLAKY_BACKOFF_MS, jitter: 0 },
      },
      wrap(async (_p, ctx) => {
        if (ctx.attempt === 1) throw new FlakyFailure('planned first-attempt failure');
      }),
    ),
    actor(
      { name: 'mixed_progress', queue: MIXED_QUEUE },
      wrap(async (_p, ctx) => {
        for (let step = 1; step <= 3; step++) {
          await ctx.progress({ step: `step ${step}`, percent: Math.round((step / 3) * 100) });
          await sleep(5);
        }
      }),
    ),
    actor(
      { name: 'mixed_report', queue: MIXED_SECOND_QUEUE },
      wrap(async () => undefined),
    ),
  ] as const;
}

/**
 * A small seeded PRNG (mulberry32): the same seed draws the same mix, so two runs offer the same
 * sequence of kinds, priorities and enqueue paths.
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One drawn job: its kind's index, whether it is high priority and whether it goes in the tick's batch. */
export interface DrawnJob {
  k: number;
  high: boolean;
  batched: boolean;
}

/** Draws the next job of the mix. */
export function drawJob(random: () => number): DrawnJob {
  const u = random();
  let acc = 0;
  let k = MIX.length - 1;
  for (let i = 0; i < MIX.length; i++) {
    acc += MIX[i]!.share;
    if (u < acc) {
      k = i;
      break;
    }
  }
  const kind = MIX[k]!.kind;
  const high = (kind === 'noop' || kind === 'sleep5' || kind === 'report') && random() < HIGH_PRIORITY_SHARE;
  return { k, high, batched: random() < BATCH_SHARE };
}
